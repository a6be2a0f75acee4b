// The simulator transport: the Verilated device (tpu_top) in this process,
// with the root-complex model serving its DMA from simulated host memory.
#pragma once

#include <map>
#include <memory>
#include <string>

#include "tpu/transport.h"

namespace tpu {

// Query keys: config (default | tiny), latency (cycles), seed, waves (FST
// path). Throws tpu::Error for unknown keys or values.
std::unique_ptr<Transport> open_sim(const std::map<std::string, std::string>& query);

}  // namespace tpu
