// SPDX-License-Identifier: Apache-2.0
#include "tpu/isa.h"
#include "tpu/text.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cstdio>
#include <optional>
#include <set>
#include <sstream>

namespace tpu::isa {

// ---- Encoding --------------------------------------------------------------------

std::array<uint64_t, 2> Instr::encode() const {
  const uint64_t w0 = uint64_t{op} | uint64_t{flags} << 8 | uint64_t{count} << 16 |
                      uint64_t{a} << 32 | uint64_t{b} << 48;
  return {w0, c};
}

Instr decode(uint64_t w0, uint64_t w1) {
  Instr in;
  in.op = uint8_t(w0);
  in.flags = uint8_t(w0 >> 8);
  in.count = uint16_t(w0 >> 16);
  in.a = uint16_t(w0 >> 32);
  in.b = uint16_t(w0 >> 48);
  in.c = w1;
  return in;
}

// ---- Table lookups -----------------------------------------------------------------

const OpInfo* find_op(uint8_t op) {
  for (const OpInfo& info : kOps)
    if (uint8_t(info.op) == op) return &info;
  return nullptr;
}

const VopInfo* find_vop(uint8_t vop_op) {
  for (const VopInfo& info : kVops)
    if (uint8_t(info.op) == vop_op) return &info;
  return nullptr;
}

std::string_view err_name(ErrCode code) {
  for (const ErrInfo& e : kErrors)
    if (e.code == code) return e.name;
  return "ERR_UNKNOWN";
}

std::string_view op_name(uint8_t op) {
  const OpInfo* info = find_op(op);
  return info ? info->name : "ILLEGAL";
}

namespace {

uint64_t low_mask(int width) { return width >= 64 ? ~uint64_t{0} : (uint64_t{1} << width) - 1; }

uint64_t field_bits(const Instr& in, Field f) {
  switch (f) {
    case Field::kCount:
      return in.count;
    case Field::kA:
      return in.a;
    case Field::kB:
      return in.b;
    case Field::kC:
      return in.c;
  }
  return 0;
}

void or_field_bits(Instr& in, Field f, uint64_t bits) {
  switch (f) {
    case Field::kCount:
      in.count = uint16_t(in.count | bits);
      break;
    case Field::kA:
      in.a = uint16_t(in.a | bits);
      break;
    case Field::kB:
      in.b = uint16_t(in.b | bits);
      break;
    case Field::kC:
      in.c |= bits;
      break;
  }
}

uint64_t operand_bits(const Instr& in, const OperandInfo& o) {
  return (field_bits(in, o.field) >> o.lsb) & low_mask(o.width);
}

int64_t sign_extend(uint64_t bits, int width) {
  if (width >= 64) return int64_t(bits);
  const uint64_t sign = uint64_t{1} << (width - 1);
  return int64_t((bits ^ sign) - sign);
}

const FlagInfo* positional_flag(const OpInfo& info) {
  for (const FlagInfo& f : info.flags)
    if (f.syntax == FlagSyntax::kPositional) return &f;
  return nullptr;
}

}  // namespace

bool is_canonical(const Instr& in) {
  const OpInfo* info = find_op(in.op);
  if (!info) return false;
  if ((in.flags & ~info->flags_mask) || (in.a & ~info->a_mask) || (in.b & ~info->b_mask) ||
      (in.c & ~info->c_mask))
    return false;
  // Where count must be 0 the syntax has no place for it.
  if (info->count == CountRule::kZero && in.count != 0) return false;
  for (const FlagInfo& f : info->flags)
    if (f.values == ValueNames::kVop && !find_vop(flag_field(in.flags, f.lsb, f.width)))
      return false;
  return true;
}

int act_rows_for_lanes(uint64_t lanes, int lane_bytes, int n) {
  return int((lanes * uint64_t(lane_bytes) + uint64_t(n) - 1) / uint64_t(n));
}

int act_ub_rows_per_row(const Instr& act, int n) {
  // Bytes a lane takes in the result: a RAW int32 or fp32, a bf16, an int8.
  const int lane_bytes = (act.flags & kFlagActRawMask) ? 4 : (act.flags & kFlagActF32Mask) ? 2 : 1;
  const uint64_t lanes = act.c == 0 ? uint64_t(n) : act.c;
  if (lanes > uint64_t(n)) return 0;
  return act_rows_for_lanes(lanes, lane_bytes, n);
}

// ---- Builders ------------------------------------------------------------------------

namespace {

uint16_t fit16(uint64_t value, const char* what) {
  if (value > 0xFFFF)
    throw std::invalid_argument(std::string(what) + " = " + std::to_string(value) +
                                " does not fit 16 bits");
  return uint16_t(value);
}

uint64_t fit_signed(int64_t value, int width, const char* what) {
  const int64_t hi = (int64_t{1} << (width - 1)) - 1, lo = -hi - 1;
  if (value < lo || value > hi)
    throw std::invalid_argument(std::string(what) + " = " + std::to_string(value) +
                                " does not fit a signed " + std::to_string(width) + "-bit field");
  return uint64_t(value) & low_mask(width);
}

Instr make(Op op, uint32_t count = 0, uint32_t a = 0, uint32_t b = 0, uint64_t c = 0,
           uint8_t flags = 0) {
  Instr in;
  in.op = uint8_t(op);
  in.flags = flags;
  in.count = fit16(count, "count");
  in.a = fit16(a, "a");
  in.b = fit16(b, "b");
  in.c = c;
  return in;
}

}  // namespace

std::optional<HostSpan> host_span(const Instr& in, uint64_t host_offset, int n) {
  const bool rw = in.op == uint8_t(Op::kRw);
  if ((!rw && in.op != uint8_t(Op::kRhm) && in.op != uint8_t(Op::kWhm)) || in.count == 0 || n < 1)
    return std::nullopt;
  // rows < 2^24 and b < 2^16: the extent cannot overflow 64 bits.
  const uint64_t rows = uint64_t(in.count) * (rw ? uint64_t(n) : 1);
  // RHM/WHM WIDE and RW BF16 share bit 0: a row of 2n bytes.
  static_assert(kFlagRhmWideMask == kFlagWhmWideMask && kFlagRhmWideMask == kFlagRwBf16Mask);
  const uint64_t row_bytes = uint64_t(n) * ((in.flags & kFlagRhmWideMask) ? 2 : 1);
  const uint64_t extent = (rows - 1) * in.b + row_bytes - 1;
  HostSpan s;
  s.first = in.c + host_offset;  // host addresses wrap at 2^64 (docs/isa.md)
  s.write = in.op == uint8_t(Op::kWhm);
  s.wraps = extent > UINT64_MAX - s.first;
  s.last = s.wraps ? UINT64_MAX : s.first + extent;
  return s;
}

Instr rhm(uint32_t ub_row, uint32_t rows, uint64_t host_addr, uint32_t stride, bool wide) {
  return make(Op::kRhm, rows, ub_row, stride, host_addr, wide ? kFlagRhmWideMask : 0);
}

Instr whm(uint32_t ub_row, uint32_t rows, uint64_t host_addr, uint32_t stride, bool wide) {
  return make(Op::kWhm, rows, ub_row, stride, host_addr, wide ? kFlagWhmWideMask : 0);
}

Instr rw(uint64_t host_addr, uint32_t tiles, uint32_t stride, bool bf16) {
  return make(Op::kRw, tiles, 0, stride, host_addr, bf16 ? kFlagRwBf16Mask : 0);
}

Instr mmc(uint32_t ub_row, uint32_t acc_row, uint32_t rows, bool accumulate, bool pop, bool bf16) {
  const uint8_t flags = (accumulate ? kFlagMmcAccMask : 0) | (pop ? kFlagMmcPopMask : 0) |
                        (bf16 ? kFlagMmcBf16Mask : 0);
  return make(Op::kMmc, rows, ub_row, acc_row, 0, flags);
}

Instr act(uint32_t acc_row, uint32_t ub_row, uint32_t rows, Act func, bool bias, bool raw,
          bool f32, uint32_t lanes) {
  const uint8_t flags = (raw ? kFlagActRawMask : 0) | (bias ? kFlagActBiasMask : 0) |
                        uint8_t((uint8_t(func) << kFlagActFuncLsb) & kFlagActFuncMask) |
                        (f32 ? kFlagActF32Mask : 0);
  return make(Op::kAct, rows, acc_row, ub_row, fit16(lanes, "act lanes"), flags);
}

Instr vop(VopOp op, uint32_t src_a, uint32_t src_b, uint32_t dst, uint32_t rows, int shift,
          bool bf16) {
  if (shift < 0 || shift > int(low_mask(kFlagVopShiftWidth)))
    throw std::invalid_argument("vop shift = " + std::to_string(shift) + " does not fit 4 bits");
  const uint8_t flags = uint8_t(uint8_t(op) << kFlagVopOpLsb | shift << kFlagVopShiftLsb |
                                (bf16 ? kFlagVopBf16Mask : 0));
  return make(Op::kVop, rows, src_a, src_b, fit16(dst, "vop dst"), flags);
}

Instr cfg(uint32_t index, uint32_t value) { return make(Op::kCfg, 0, index, 0, value); }

Instr sync(uint8_t unit_mask) {
  if (unit_mask >> kNumUnits) throw std::invalid_argument("sync mask has bits past the units");
  return make(Op::kSync, 0, 0, 0, 0, unit_mask);
}

Instr loop(uint32_t iterations, uint32_t body_len, int32_t ub_inc, int32_t acc_inc,
           int64_t host_inc) {
  const uint64_t c =
      fit_signed(acc_inc, 16, "loop acc_inc") | fit_signed(host_inc, 32, "loop host_inc") << 32;
  return make(Op::kLoop, iterations, body_len, uint32_t(fit_signed(ub_inc, 16, "loop ub_inc")), c);
}

Instr irq() { return make(Op::kIrq); }
Instr halt() { return make(Op::kHalt); }

// ---- Disassembler ----------------------------------------------------------------------

namespace {

std::string hex(uint64_t v) {
  char buf[24];
  std::snprintf(buf, sizeof buf, "0x%llx", static_cast<unsigned long long>(v));
  return buf;
}

std::string lower(std::string_view s) {
  std::string out(s);
  for (char& ch : out) ch = char(std::tolower(static_cast<unsigned char>(ch)));
  return out;
}

std::string_view value_name(std::span<const NamedValue> names, uint8_t value) {
  for (const NamedValue& v : names)
    if (v.value == value) return v.name;
  return {};
}

std::string raw_word(const Instr& in) {
  const auto w = in.encode();
  char buf[64];
  std::snprintf(buf, sizeof buf, ".word 0x%016llx 0x%016llx", static_cast<unsigned long long>(w[0]),
                static_cast<unsigned long long>(w[1]));
  return buf;
}

std::string format_operand(const OperandInfo& o, uint64_t bits) {
  if (o.kind == Kind::kHostAddr) return hex(bits);
  if (o.is_signed) return std::to_string(sign_extend(bits, o.width));
  return std::to_string(bits);
}

// The name a CFG index is written with: QSHIFT, BIAS+3, or a number.
std::string cfg_index_name(uint16_t index) {
  for (const CfgInfo& r : kCfgRegs) {
    if (r.count == 1 && index == r.index) return std::string(r.name);
    if (r.count != 1 && index >= r.index && index < r.index + 256)
      return std::string(r.name) + "+" + std::to_string(index - r.index);
  }
  return hex(index);
}

std::string disassemble_cfg(const Instr& in) {
  const uint32_t value = uint32_t(in.c);
  // Q31 multipliers, fp32 bits and unknown registers read best in hex, the rest signed.
  const std::string name = cfg_index_name(in.a);
  const bool fp32 = std::any_of(std::begin(kCfgRegs), std::end(kCfgRegs),
                                [&](const CfgInfo& r) { return r.fp32 && r.index == in.a; });
  const bool as_hex =
      in.a == kCfgQmult || fp32 || name.starts_with("CH_MULT+") || name.starts_with("0x");
  return "cfg " + name + " " +
         (as_hex ? hex(value) : std::to_string(int32_t(value)));
}

std::string disassemble_sync(const Instr& in) {
  std::string units;
  for (const NamedValue& u : kUnitNames)
    if (in.flags & (1u << u.value)) units += (units.empty() ? "" : "|") + std::string(u.name);
  return units.empty() ? "sync" : "sync " + units;
}

std::string disassemble_flags(const OpInfo& info, uint8_t flags) {
  std::string out;
  for (const FlagInfo& f : info.flags) {
    const uint8_t v = flag_field(flags, f.lsb, f.width);
    if (v == 0 || f.syntax == FlagSyntax::kPositional) continue;
    if (f.syntax == FlagSyntax::kWord) {
      out += " " + lower(f.name);
    } else {
      const std::string_view name =
          f.values == ValueNames::kActFunc ? value_name(kActFuncNames, v) : std::string_view{};
      out += " " + lower(f.name) + "=" + (name.empty() ? std::to_string(v) : std::string(name));
    }
  }
  return out;
}

std::string disassemble_generic(const OpInfo& info, const Instr& in) {
  std::string out(info.mnemonic);
  if (const FlagInfo* pos = positional_flag(info))  // VOP's operation
    out += " " + std::string(find_vop(flag_field(in.flags, pos->lsb, pos->width))->mnemonic);
  for (const OperandInfo& o : info.operands) {
    const uint64_t bits = operand_bits(in, o);
    if (o.optional && bits == 0) continue;
    out += " " + std::string(o.key) + "=" + format_operand(o, bits);
  }
  return out + disassemble_flags(info, in.flags);
}

}  // namespace

std::string disassemble(const Instr& in) {
  if (!is_canonical(in)) return raw_word(in);
  const OpInfo& info = *find_op(in.op);
  if (info.op == Op::kCfg) return disassemble_cfg(in);
  if (info.op == Op::kSync) return disassemble_sync(in);
  return disassemble_generic(info, in);
}

std::string disassemble(const std::vector<Instr>& program) {
  std::string out;
  for (const Instr& in : program) out += disassemble(in) + "\n";
  return out;
}

// ---- Assembler --------------------------------------------------------------------------

AsmError::AsmError(int line, const std::string& message)
    : std::runtime_error(printable("line " + std::to_string(line) + ": " + message)), line_(line) {}

namespace {

// A parsed integer literal: sign and magnitude, so that both -2^63 and 2^64-1 fit.
struct Number {
  bool negative = false;
  uint64_t magnitude = 0;

  bool within(int64_t lo, uint64_t hi) const {
    if (!negative || magnitude == 0) return magnitude <= hi;
    return lo < 0 && magnitude <= uint64_t(-(lo + 1)) + 1;
  }
  uint64_t bits() const { return negative ? uint64_t{0} - magnitude : magnitude; }
};

std::optional<Number> parse_number(std::string_view text) {
  Number n;
  if (!text.empty() && (text[0] == '-' || text[0] == '+')) {
    n.negative = text[0] == '-';
    text.remove_prefix(1);
  }
  int base = 10;
  if (text.size() > 2 && text[0] == '0' && (text[1] == 'x' || text[1] == 'X')) {
    base = 16;
    text.remove_prefix(2);
  }
  if (text.empty()) return std::nullopt;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), n.magnitude, base);
  if (ec != std::errc{} || end != text.data() + text.size()) return std::nullopt;
  return n;
}

// One source line being assembled; errors carry its number.
class LineParser {
 public:
  LineParser(int line, std::vector<std::string> tokens) : line_(line), tokens_(std::move(tokens)) {}

  Instr parse() {
    const std::string mnemonic = lower(tokens_[0]);
    if (mnemonic == ".word") return parse_word();
    const OpInfo* info = nullptr;
    for (const OpInfo& op : kOps)
      if (op.mnemonic == mnemonic) info = &op;
    if (!info) fail("unknown mnemonic '" + tokens_[0] + "'");
    Instr in;
    in.op = uint8_t(info->op);
    if (info->op == Op::kCfg) return parse_cfg(in);
    if (info->op == Op::kSync) return parse_sync(in);
    return parse_generic(*info, in);
  }

 private:
  [[noreturn]] void fail(const std::string& message) const { throw AsmError(line_, message); }

  uint64_t number(std::string_view text, std::string_view what, int64_t lo, uint64_t hi) const {
    const std::optional<Number> n = parse_number(text);
    if (!n) fail("bad number '" + std::string(text) + "' for " + std::string(what));
    if (!n->within(lo, hi))
      fail(std::string(what) + " = " + std::string(text) + " is out of range " +
           std::to_string(lo) + ".." + std::to_string(hi));
    return n->bits();
  }

  void expect_operands(size_t count, std::string_view usage) const {
    if (tokens_.size() != count + 1)
      fail("expected " + std::string(usage) + ", got " + std::to_string(tokens_.size() - 1) +
           " operand(s)");
  }

  Instr parse_word() const {
    expect_operands(2, ".word <w0> <w1>");
    return decode(number(tokens_[1], "w0", 0, ~uint64_t{0}),
                  number(tokens_[2], "w1", 0, ~uint64_t{0}));
  }

  uint16_t cfg_index(const std::string& text) const {
    const size_t plus = text.find('+');
    const std::string name = lower(text.substr(0, plus));
    for (const CfgInfo& r : kCfgRegs) {
      if (lower(r.name) != name) continue;
      if (plus == std::string::npos) return r.index;
      if (r.count == 1) fail("cfg register " + std::string(r.name) + " is not an array");
      return uint16_t(r.index +
                      number(text.substr(plus + 1), std::string(r.name) + " element", 0, 255));
    }
    if (!parse_number(text)) fail("unknown cfg register '" + text + "'");
    return uint16_t(number(text, "cfg index", 0, 0xFFFF));
  }

  Instr parse_cfg(Instr in) const {
    expect_operands(2, "cfg <register> <value>");
    in.a = cfg_index(tokens_[1]);
    in.c = uint32_t(number(tokens_[2], "cfg value", INT32_MIN, 0xFFFFFFFF));
    return in;
  }

  Instr parse_sync(Instr in) const {
    if (tokens_.size() > 2) fail("sync takes one operand, a unit list such as mem|mmc");
    const std::string units = tokens_.size() == 2 ? lower(tokens_[1]) : "all";
    if (units == "all") return in;
    std::stringstream list(units);
    for (std::string unit; std::getline(list, unit, '|');) {
      const NamedValue* found = nullptr;
      for (const NamedValue& u : kUnitNames)
        if (u.name == unit) found = &u;
      if (!found) fail("unknown unit '" + unit + "' (mem, wgt, mmc, vpu or all)");
      in.flags = uint8_t(in.flags | 1u << found->value);
    }
    return in;
  }

  void parse_positional(const OpInfo& info, const FlagInfo& f, Instr& in) {
    if (tokens_.size() < 2) fail(std::string(info.mnemonic) + ": missing operation");
    const std::string name = lower(tokens_[1]);
    for (const VopInfo& v : kVops)
      if (v.mnemonic == name) {
        in.flags = uint8_t(in.flags | uint8_t(v.op) << f.lsb);
        return;
      }
    fail("unknown " + std::string(info.mnemonic) + " operation '" + tokens_[1] + "'");
  }

  void parse_flag_value(const FlagInfo& f, const std::string& key, const std::string& value,
                        Instr& in) const {
    uint64_t v = 0;
    if (f.values == ValueNames::kActFunc) {
      const auto it = std::find_if(std::begin(kActFuncNames), std::end(kActFuncNames),
                                   [&](const NamedValue& n) { return n.name == lower(value); });
      if (it == std::end(kActFuncNames)) fail("unknown " + key + " '" + value + "'");
      v = it->value;
    } else {
      v = number(value, key, 0, low_mask(f.width));
    }
    in.flags = uint8_t(in.flags | v << f.lsb);
  }

  // key=value: an operand, or a flag field written as key=value.
  void parse_keyed(const OpInfo& info, const std::string& token, Instr& in) {
    const size_t eq = token.find('=');
    const std::string key = lower(token.substr(0, eq)), value = token.substr(eq + 1);
    if (!seen_.insert(key).second) fail("duplicate field '" + key + "'");
    for (const OperandInfo& o : info.operands) {
      if (o.key != key) continue;
      const int64_t lo = o.is_signed ? -(int64_t{1} << (o.width - 1)) : 0;
      const uint64_t hi = o.is_signed ? low_mask(o.width - 1) : low_mask(o.width);
      or_field_bits(in, o.field, (number(value, key, lo, hi) & low_mask(o.width)) << o.lsb);
      return;
    }
    for (const FlagInfo& f : info.flags)
      if (f.syntax == FlagSyntax::kKey && lower(f.name) == key)
        return parse_flag_value(f, key, value, in);
    fail("unknown field '" + key + "' for " + std::string(info.mnemonic));
  }

  void parse_word_flag(const OpInfo& info, const std::string& token, Instr& in) {
    const std::string word = lower(token);
    if (!seen_flags_.insert(word).second) fail("duplicate flag '" + word + "'");
    for (const FlagInfo& f : info.flags)
      if (f.syntax == FlagSyntax::kWord && lower(f.name) == word) {
        in.flags = uint8_t(in.flags | 1u << f.lsb);
        return;
      }
    fail("unexpected '" + token + "' for " + std::string(info.mnemonic) +
         " (operands are key=value)");
  }

  Instr parse_generic(const OpInfo& info, Instr in) {
    size_t first = 1;
    if (const FlagInfo* pos = positional_flag(info)) {
      parse_positional(info, *pos, in);
      first = 2;
    }
    for (size_t i = first; i < tokens_.size(); ++i) {
      if (tokens_[i].find('=') != std::string::npos)
        parse_keyed(info, tokens_[i], in);
      else
        parse_word_flag(info, tokens_[i], in);
    }
    for (const OperandInfo& o : info.operands)
      if (!o.optional && !seen_.contains(std::string(o.key)))
        fail(std::string(info.mnemonic) + ": missing field '" + std::string(o.key) + "'");
    return in;
  }

  int line_;
  std::vector<std::string> tokens_;
  std::set<std::string> seen_;        // key=value fields
  std::set<std::string> seen_flags_;  // bare words (MMC's `acc` flag is not its acc= field)
};

std::vector<std::string> tokenize(std::string line) {
  line = line.substr(0, line.find_first_of("#;"));
  std::istringstream words(line);
  std::vector<std::string> tokens;
  for (std::string w; words >> w;) tokens.push_back(w);
  return tokens;
}

}  // namespace

std::vector<Instr> assemble(const std::string& source) {
  std::vector<Instr> program;
  std::istringstream lines(source);
  int number = 0;
  for (std::string line; std::getline(lines, line);) {
    ++number;
    std::vector<std::string> tokens = tokenize(line);
    if (!tokens.empty()) program.push_back(LineParser(number, std::move(tokens)).parse());
  }
  return program;
}

}  // namespace tpu::isa
