// SPDX-License-Identifier: Apache-2.0
// The training arithmetic (tpu/train_f32.h) behind a pipe, so that
// train_f32_numpy_test.py can compare scripts/tpu_fp32.py with it bit for
// bit. Little-endian uint32 words in on stdin, out on stdout:
//
//   train_f32_probe <op>
//       in: records of the op's input words, out: records of its output
//       words (fp32 bits; ints as two's complement; bools 0/1; bf16 bits in
//       the low half):
//         neg, recip, rsqrt, sqrt, exp, log, significand   x -> r
//         exponent, rint                                   x -> int
//         i2f                                              k -> r
//         sub, gt, eq, ldexp (b an int)                    a b -> r
//         mask (a a bf16)                                  y a -> r
//         sgd                                              w g lr -> w' w_bf16
//         momentum                                         w v g lr mom -> w' v' w_bf16
//         adam_step                                        b1p b2p lr beta1 beta2 -> b1p' b2p' alpha
//         adam                                             w m v g alpha c1 c2 eps -> w' m' v' w_bf16
//   train_f32_probe softmax_ce <c>
//       in: per lane c logits, the label (int), inv_b; out: c gradients
//       (bf16), loss, correct
//
// Exit status 0 on success, 1 (and one line on stderr) on a bad request.
#include <cstdint>
#include <cstdio>
#include <functional>
#include <iostream>
#include <iterator>
#include <map>
#include <stdexcept>
#include <string>
#include <vector>

#include "tpu/train_f32.h"

namespace {

using namespace tpu;
using Words = std::vector<uint32_t>;

Words read_words() {
  std::freopen(nullptr, "rb", stdin);
  const std::vector<uint8_t> in{std::istreambuf_iterator<char>(std::cin), std::istreambuf_iterator<char>()};
  if (in.size() % 4) throw std::invalid_argument("input is not whole uint32 words");
  Words w(in.size() / 4);
  for (size_t i = 0; i < w.size(); ++i)
    w[i] = uint32_t(in[4 * i]) | uint32_t(in[4 * i + 1]) << 8 | uint32_t(in[4 * i + 2]) << 16 |
           uint32_t(in[4 * i + 3]) << 24;
  return w;
}

void write_words(const Words& out) {
  std::freopen(nullptr, "wb", stdout);
  std::fwrite(out.data(), sizeof(uint32_t), out.size(), stdout);  // little-endian hosts only
}

// One record: its input words -> appends its output words.
struct Op {
  size_t in;
  std::function<void(const uint32_t*, Words&)> run;
};

Op unary(fp32 (*f)(fp32)) {
  return {1, [f](const uint32_t* x, Words& o) { o.push_back(f(x[0])); }};
}

const std::map<std::string, Op>& ops() {
  static const std::map<std::string, Op> table = {
      {"neg", unary(fp32_neg)},
      {"recip", unary(fp32_recip)},
      {"rsqrt", unary(fp32_rsqrt)},
      {"sqrt", unary(fp32_sqrt)},
      {"exp", unary(fp32_exp)},
      {"log", unary(fp32_log)},
      {"significand", unary(fp32_significand)},
      {"exponent", {1, [](const uint32_t* x, Words& o) { o.push_back(uint32_t(fp32_exponent(x[0]))); }}},
      {"rint", {1, [](const uint32_t* x, Words& o) { o.push_back(uint32_t(fp32_rint(x[0]))); }}},
      {"i2f", {1, [](const uint32_t* x, Words& o) { o.push_back(fp32_from_int(int32_t(x[0]))); }}},
      {"sub", {2, [](const uint32_t* x, Words& o) { o.push_back(fp32_sub(x[0], x[1])); }}},
      {"gt", {2, [](const uint32_t* x, Words& o) { o.push_back(fp32_gt(x[0], x[1])); }}},
      {"eq", {2, [](const uint32_t* x, Words& o) { o.push_back(fp32_eq(x[0], x[1])); }}},
      {"ldexp", {2, [](const uint32_t* x, Words& o) { o.push_back(fp32_ldexp(x[0], int32_t(x[1]))); }}},
      {"mask", {2, [](const uint32_t* x, Words& o) { o.push_back(train::mask_lane(x[0], bf16(x[1]))); }}},
      {"sgd",
       {3,
        [](const uint32_t* x, Words& o) {
          const train::Weight r = train::sgd_lane(x[0], x[1], x[2]);
          o.insert(o.end(), {r.w, r.w_bf16});
        }}},
      {"momentum",
       {5,
        [](const uint32_t* x, Words& o) {
          const train::MomentumLane r = train::momentum_lane(x[0], x[1], x[2], x[3], x[4]);
          o.insert(o.end(), {r.w.w, r.v, r.w.w_bf16});
        }}},
      {"adam_step",
       {5,
        [](const uint32_t* x, Words& o) {
          train::AdamParams p;
          p.beta1 = x[3];
          p.beta2 = x[4];
          const train::AdamStep r = train::adam_step(x[0], x[1], x[2], p);
          o.insert(o.end(), {r.b1p, r.b2p, r.alpha});
        }}},
      {"adam",
       {8,
        [](const uint32_t* x, Words& o) {
          train::AdamParams p;
          p.c1 = x[5];
          p.c2 = x[6];
          p.eps = x[7];
          const train::AdamLane r = train::adam_lane(x[0], x[1], x[2], x[3], x[4], p);
          o.insert(o.end(), {r.w.w, r.m, r.v, r.w.w_bf16});
        }}},
  };
  return table;
}

Op softmax_ce(int c) {
  if (c < 1 || c > 4096) throw std::invalid_argument("softmax_ce: c must be 1..4096");
  return {size_t(c) + 2, [c](const uint32_t* x, Words& o) {
            std::vector<bf16> grad(static_cast<size_t>(c));
            const train::SoftmaxCe r = train::softmax_ce_lane(x, c, int32_t(x[c]), x[c + 1], grad.data());
            o.insert(o.end(), grad.begin(), grad.end());
            o.insert(o.end(), {r.loss, r.correct});
          }};
}

int run(const Op& op) {
  const Words in = read_words();
  if (in.size() % op.in) throw std::invalid_argument("input is not whole records");
  Words out;
  for (size_t i = 0; i < in.size(); i += op.in) op.run(&in[i], out);
  write_words(out);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    const std::vector<std::string> args(argv + 1, argv + argc);
    if (args.size() == 2 && args[0] == "softmax_ce") return run(softmax_ce(std::stoi(args[1])));
    if (args.size() == 1) {
      const auto it = ops().find(args[0]);
      if (it == ops().end()) throw std::invalid_argument("unknown op '" + args[0] + "'");
      return run(it->second);
    }
    throw std::invalid_argument("usage: train_f32_probe <op> | softmax_ce <c>");
  } catch (const std::exception& e) {
    std::fprintf(stderr, "train_f32_probe: %s\n", e.what());
    return 1;
  }
}
