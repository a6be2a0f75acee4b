// SPDX-License-Identifier: Apache-2.0
// The virtual platforms of this process, one per configuration the build has
// (TPU_CONFIGS), for the sc: transport and tests.
//
// SystemC elaborates once per process: no module may be built after the
// first sc_start. So the first acquire() builds a platform for every built
// configuration (their clocks stopped), and later ones hand out the same
// ones again; a platform serves one user at a time. The platforms live until
// the process ends.
#pragma once

#include <string>
#include <vector>

#include "platform.h"

namespace tpu::systemc {

// The built configurations, "tiny, default".
std::string built_configs();

// The platform of a configuration, for one user: nullptr when the build has
// no model of it. Throws tpu::Error when it is in use, or when SystemC was
// already started without these platforms.
PlatformBase* acquire_platform(const std::string& config);
void release_platform(PlatformBase* platform);

// The platform of a configuration whoever holds it (nullptr when not built),
// for tests and tools that look at it while a device uses it: its memory
// (faults), its module's statistics.
PlatformBase* find_platform(const std::string& config);

}  // namespace tpu::systemc
