// SPDX-License-Identifier: Apache-2.0
// The simulator transports (sim:, sc:) where the driver's own suite cannot
// look: the device model's RTL assertions.
#include <gtest/gtest.h>
#include <verilated.h>

#include <string>

#include "tpu/device.h"
#include "tpu/error.h"
#include "tpu/isa.h"

namespace {

// A failed RTL assertion is a bug in the device, whatever the host did: the
// call that sees it and every later one fail with the cycle and what to do,
// and the next device opened (on sc:, the same platform) starts clean. No
// host action makes a correct device fail one, so the test marks the model's
// context as the Verilator runtime does when an assertion's $error runs. The
// model's context is the thread's current one after any call that evaluated
// it.
TEST(SimTransports, AFailedRtlAssertionFailsEveryLaterCall) {
  for (const std::string scheme : {"sim", "sc"}) {
    SCOPED_TRACE(scheme);
    {
      tpu::Device dev = tpu::Device::open(scheme + ":?config=tiny");
      ASSERT_TRUE(dev.run({tpu::isa::halt()}).ok());
      Verilated::threadContextp()->gotError(true);
      for (int i = 0; i < 2; ++i) {
        try {
          dev.run({tpu::isa::halt()});
          ADD_FAILURE() << "a call after a failed assertion succeeded";
        } catch (const tpu::Error& e) {
          const std::string what = e.what();
          EXPECT_NE(what.find(scheme + ":config=tiny: the device's RTL assertions failed, the first by device cycle "),
                    std::string::npos) << what;
          EXPECT_NE(what.find("This is a bug in the device model"), std::string::npos) << what;
        }
      }
    }
    tpu::Device dev = tpu::Device::open(scheme + ":?config=tiny");
    EXPECT_TRUE(dev.run({tpu::isa::halt()}).ok());
  }
}

}  // namespace
