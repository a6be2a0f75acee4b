// SPDX-License-Identifier: Apache-2.0
// The driver in a few lines: open the simulated TPU, run a matmul and a dense
// layer through the operators, and a hand-written program. docs/driver.md
// walks through it.
#include <cstdio>

#include "tpu/device.h"
#include "tpu/ops.h"
#include "tpu/ref_matmul.h"

// The build also links this example with the model: transport alone, to
// prove the driver needs no RTL simulator (examples/CMakeLists.txt).
#ifndef TPU_EXAMPLE_URI
#define TPU_EXAMPLE_URI "sim:?config=default"
#endif

int main() try {
  // The simulated TPU, in this process: 16x16 MXU, 500-cycle host latency.
  tpu::Device dev = tpu::Device::open(TPU_EXAMPLE_URI);
  std::printf("%s: %dx%d MXU, %d UB rows\n", dev.info().name.c_str(), dev.info().n,
              dev.info().n, dev.info().ub_rows);

  // int8 x int8 -> int32, tiled and padded to the array by the driver.
  tpu::MatrixI8 a(100, 300), b(300, 70);
  for (size_t i = 0; i < a.data.size(); ++i) a.data[i] = int8_t(i * 7);
  for (size_t i = 0; i < b.data.size(); ++i) b.data[i] = int8_t(i * 13);
  tpu::OpStats stats;
  const tpu::MatrixI32 c = tpu::matmul(dev, a, b, &stats);
  const bool exact = c == tpu::ref::matmul_i8(a, b);
  std::printf("matmul: %s, %llu cycles, utilization %.1f%%\n", exact ? "exact" : "WRONG",
              (unsigned long long)stats.cycles, 100 * stats.utilization());

  // A dense layer: y = relu(requantize(x W + bias)).
  const tpu::QuantParams q{.multiplier = 1 << 30, .shift = 8};
  const tpu::MatrixI8 y = tpu::dense(dev, a, b, std::vector<int32_t>(70, 100), q,
                                     tpu::Activation::kRelu);
  std::printf("dense: y[0][0] = %d\n", y.at(0, 0));

  // A hand-written program: copy 4 rows through the unified buffer. It may
  // read `in` and write `out`, and reach no other host memory.
  tpu::Buffer in = dev.alloc(64), out = dev.alloc(64);
  in.write(std::vector<uint8_t>(64, 42));
  dev.run(tpu::isa::assemble("rhm ub=0 rows=4 host=" + std::to_string(in.addr()) +
                             " stride=16\n"
                             "whm ub=0 rows=4 host=" + std::to_string(out.addr()) +
                             " stride=16\nhalt\n"),
          {in.read_only(), out.write_only()});
  std::printf("copied: %d\n", out.read(0, 1)[0]);
  return exact ? 0 : 1;
} catch (const tpu::Error& e) {
  std::fprintf(stderr, "error: %s\n", e.what());
  return 1;
}
