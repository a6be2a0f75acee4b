// Builds the program for an int8 GEMM C = A x W (int32 result) on the core,
// for the reference model, the RTL testbench and the driver alike.
//
// Host memory layout (all written by build_gemm except A and W):
//   A        M x K int8, row-major (the caller's)
//   W        K x Nout int8, row-major (the caller's)
//   scratch  A padded to M x Kp (Kp = K rounded up to n, zeros), then the
//            weight tiles: tile (j, k) = W[k*n .. k*n+n-1][j*n .. j*n+n-1]
//            zero-padded, n x n row-major, stored at index j*Kb + k
//   C        the int32 result in column tiles: tile j (columns j*n .. j*n+n-1)
//            is an M x n int32 row-major block at C + j*M*4n, little-endian
//            (exactly what WHM of ACT RAW rows writes); read_gemm_result
//            turns it into an M x Nout matrix.
//
// Program, per pass over at most pass_rows rows of A:
//   RHM the Kb column blocks of A into UB (a LOOP);
//   for each output column tile j: MMC per k block into ACC region j % 2
//   (ACC on k > 0, POP each), the RWs interleaved so the weight stream stays
//   ahead without exceeding the tile capacity (WgtFifoTiles + 2); ACT RAW into
//   UB result region j % 2; WHM to C.
// The alternating ACC and UB result regions let the RTL run the MMCs of tile
// j+1 while the ACT and WHM of tile j are still in flight. The program starts
// with no tiles pending (as after HALT of a program that POPs every tile it
// loads, or after an error) and ends with HALT; load it at index 0.
#pragma once

#include <cstdint>
#include <vector>

#include "isa.h"
#include "ref_matmul.h"
#include "tpu_model.h"

namespace tpu::model {

struct GemmShape {
  int m = 0;      // rows of A and C
  int k = 0;      // columns of A, rows of W
  int n_out = 0;  // columns of W and C
};

struct GemmAddrs {
  uint64_t a = 0;        // M x K int8 input
  uint64_t w = 0;        // K x Nout int8 input
  uint64_t c = 0;        // gemm_result_bytes() bytes of output
  uint64_t scratch = 0;  // gemm_scratch_bytes() bytes for the padded copies
};

struct GemmOptions {
  int max_pass_rows = 0;  // cap on rows of A per pass (0: as many as fit)
};

struct GemmProgram {
  GemmShape shape;
  int n = 0;          // array size
  int k_blocks = 0;   // Kp / n
  int col_tiles = 0;  // Np / n
  int pass_rows = 0;  // rows of A per pass (the last pass may have fewer)
  int passes = 0;
  uint64_t a_padded = 0;  // host addresses of the scratch copies
  uint64_t w_tiles = 0;
  uint64_t c = 0;
  std::vector<isa::Instr> program;
};

uint64_t gemm_scratch_bytes(const GemmShape& shape, int n);
uint64_t gemm_result_bytes(const GemmShape& shape, int n);

// Reads A and W from mem, writes the padded copies to scratch and returns the
// program. Throws std::invalid_argument when the shape does not fit the core
// (K too large for the UB, or a program longer than the instruction memory).
GemmProgram build_gemm(HostMemory& mem, const GemmShape& shape, const GemmAddrs& addrs,
                       const CoreConfig& core, const GemmOptions& options = {});

// The M x Nout int32 result the program wrote to C.
MatrixI32 read_gemm_result(const HostMemory& mem, const GemmProgram& gemm);

// Row-major matrices in host memory.
void write_matrix(HostMemory& mem, uint64_t addr, const MatrixI8& m);
MatrixI8 read_matrix_i8(const HostMemory& mem, uint64_t addr, int rows, int cols);

}  // namespace tpu::model
