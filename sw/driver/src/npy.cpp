// SPDX-License-Identifier: Apache-2.0
// NumPy .npy reader and writer (docs/cli.md, "Files").
//
// The format (numpy.lib.format): the magic "\x93NUMPY", a major and a minor
// version byte, the header length (2 bytes little-endian in version 1.0, 4
// bytes in 2.0 and 3.0), then the header, a Python dict literal such as
//   {'descr': '<i4', 'fortran_order': False, 'shape': (3, 4), }
// padded with spaces and a final '\n', then the raw elements.
//
// The reader parses the dict with a small recursive-descent parser that takes
// exactly the literals numpy writes (strings, True/False, tuples of integers)
// and rejects everything else with a message naming the file. The writer
// emits version 1.0 the way numpy does (header padded to a multiple of 64
// bytes) into a temporary file in the destination directory and renames it.
#include "tpu/npy.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <bit>
#include <cerrno>
#include <cstdio>
#include <cstdint>
#include <cstring>
#include <limits>
#include <map>
#include <type_traits>

namespace tpu::npy {

static_assert(std::endian::native == std::endian::little,
              "the .npy data is kept little-endian and used in place");

namespace {

constexpr char kMagic[] = "\x93NUMPY";
constexpr size_t kMagicLen = 6;
constexpr size_t kAlign = 64;  // numpy aligns the data to 64 bytes

size_t item_size(Dtype d) {
  switch (d) {
    case Dtype::kInt8:
    case Dtype::kUint8: return 1;
    case Dtype::kUint16: return 2;
    case Dtype::kInt32:
    case Dtype::kFloat32: return 4;
  }
  return 1;
}

// numpy's name for a descriptor's type, for messages ("float64", "int16",
// "big-endian int32"); the descriptor itself when it names nothing known.
std::string describe_descr(const std::string& descr) {
  if (descr.size() < 2) return "'" + descr + "'";
  const char order = descr[0];
  const std::string body = (order == '<' || order == '>' || order == '|' || order == '=')
                               ? descr.substr(1)
                               : descr;
  static const std::map<std::string, std::string> kNames = {
      {"b1", "bool"},       {"i1", "int8"},        {"u1", "uint8"},     {"i2", "int16"},
      {"u2", "uint16"},     {"i4", "int32"},       {"u4", "uint32"},    {"i8", "int64"},
      {"u8", "uint64"},     {"f2", "float16"},     {"f4", "float32"},   {"f8", "float64"},
      {"f16", "float128"},  {"c8", "complex64"},   {"c16", "complex128"}, {"O", "object"},
      {"O8", "object"}};
  std::string name;
  if (auto it = kNames.find(body); it != kNames.end()) {
    name = it->second;
  } else if (!body.empty() && (body[0] == 'U' || body[0] == 'S' || body[0] == 'V' ||
                               body[0] == 'M' || body[0] == 'm')) {
    static const std::map<char, std::string> kKinds = {
        {'U', "unicode string"}, {'S', "bytes"}, {'V', "void (raw bytes)"},
        {'M', "datetime64"},     {'m', "timedelta64"}};
    name = kKinds.at(body[0]) + " ('" + descr + "')";
    return name;
  } else {
    return "'" + descr + "'";
  }
  if (order == '>' && name != "int8" && name != "uint8" && name != "bool") {
    name = "big-endian " + name;
  }
  return name;
}

// The dtype a descriptor stands for, when the tools take it. One-byte types
// have no byte order ('|'); numpy writes '<' for the others on little-endian
// hosts, and '=' means native, which is little-endian here.
bool parse_descr(const std::string& descr, Dtype* out) {
  static const std::map<std::string, Dtype> kAccepted = {
      {"|i1", Dtype::kInt8},  {"<i1", Dtype::kInt8},    {"=i1", Dtype::kInt8},
      {">i1", Dtype::kInt8},  {"i1", Dtype::kInt8},     {"|u1", Dtype::kUint8},
      {"<u1", Dtype::kUint8}, {"=u1", Dtype::kUint8},   {">u1", Dtype::kUint8},
      {"u1", Dtype::kUint8},  {"<i4", Dtype::kInt32},   {"=i4", Dtype::kInt32},
      {"<f4", Dtype::kFloat32}, {"=f4", Dtype::kFloat32}, {"<u2", Dtype::kUint16},
      {"=u2", Dtype::kUint16}};
  auto it = kAccepted.find(descr);
  if (it == kAccepted.end()) return false;
  *out = it->second;
  return true;
}

std::string shape_text(const std::vector<int64_t>& shape) {
  if (shape.empty()) return "a scalar (0-d)";
  std::string s;
  for (size_t i = 0; i < shape.size(); ++i) s += (i ? "x" : "") + std::to_string(shape[i]);
  return s;
}

// Python's repr of a shape tuple: (), (3,), (3, 4).
std::string shape_tuple(const std::vector<int64_t>& shape) {
  std::string s = "(";
  for (size_t i = 0; i < shape.size(); ++i) s += (i ? ", " : "") + std::to_string(shape[i]);
  if (shape.size() == 1) s += ",";
  return s + ")";
}

const char* kHeaderExample = "{'descr': '<i4', 'fortran_order': False, 'shape': (3, 4), }";

// What the header says.
struct Header {
  std::string descr;
  bool fortran_order = false;
  std::vector<int64_t> shape;
};

// Parses the header dict. Throws std::string (the problem) on anything numpy
// would not have written.
class HeaderParser {
 public:
  explicit HeaderParser(const std::string& text) : s_(text) {}

  Header parse() {
    Header h;
    bool have_descr = false, have_order = false, have_shape = false;
    skip_space();
    expect('{');
    for (;;) {
      skip_space();
      if (peek() == '}') {
        ++pos_;
        break;
      }
      const std::string key = parse_string();
      skip_space();
      expect(':');
      skip_space();
      if (key == "descr") {
        if (peek() == '[') throw std::string("structured dtypes (records) are not supported");
        h.descr = parse_string();
        have_descr = true;
      } else if (key == "fortran_order") {
        h.fortran_order = parse_bool();
        have_order = true;
      } else if (key == "shape") {
        h.shape = parse_shape();
        have_shape = true;
      } else {
        throw "unexpected key '" + key + "'";
      }
      skip_space();
      if (peek() == ',') {
        ++pos_;
      } else if (peek() != '}') {
        throw std::string("expected ',' or '}' after the value of '") + key + "'";
      }
    }
    skip_space();
    if (pos_ != s_.size()) throw std::string("text after the closing '}'");
    if (!have_descr) throw std::string("no 'descr' key");
    if (!have_order) throw std::string("no 'fortran_order' key");
    if (!have_shape) throw std::string("no 'shape' key");
    return h;
  }

 private:
  char peek() const { return pos_ < s_.size() ? s_[pos_] : '\0'; }
  void skip_space() {
    while (pos_ < s_.size() && (s_[pos_] == ' ' || s_[pos_] == '\t' || s_[pos_] == '\n' ||
                                s_[pos_] == '\r'))
      ++pos_;
  }
  void expect(char c) {
    if (peek() != c) {
      throw std::string("expected '") + c + "' at offset " + std::to_string(pos_) +
          (pos_ < s_.size() ? std::string(", found '") + s_[pos_] + "'" : ", found the end");
    }
    ++pos_;
  }
  std::string parse_string() {
    const char q = peek();
    if (q != '\'' && q != '"') throw "expected a quoted string at offset " + std::to_string(pos_);
    ++pos_;
    std::string out;
    while (pos_ < s_.size() && s_[pos_] != q) {
      if (s_[pos_] == '\\' || s_[pos_] == '\n') throw std::string("unsupported string literal");
      out += s_[pos_++];
    }
    if (pos_ >= s_.size()) throw std::string("unterminated string");
    ++pos_;
    return out;
  }
  bool parse_bool() {
    if (s_.compare(pos_, 4, "True") == 0) {
      pos_ += 4;
      return true;
    }
    if (s_.compare(pos_, 5, "False") == 0) {
      pos_ += 5;
      return false;
    }
    throw std::string("'fortran_order' must be True or False");
  }
  std::vector<int64_t> parse_shape() {
    std::vector<int64_t> shape;
    expect('(');
    skip_space();
    bool trailing_comma = false;
    while (peek() != ')') {
      if (peek() < '0' || peek() > '9') {
        throw std::string("'shape' must be a tuple of non-negative integers");
      }
      int64_t v = 0;
      while (peek() >= '0' && peek() <= '9') {
        const int digit = s_[pos_++] - '0';
        if (v > (std::numeric_limits<int64_t>::max() - digit) / 10) {
          throw std::string("a dimension in 'shape' is too large");
        }
        v = v * 10 + digit;
      }
      if (peek() == 'L') ++pos_;  // Python 2 long, as old numpy wrote it
      shape.push_back(v);
      skip_space();
      trailing_comma = false;
      if (peek() == ',') {
        ++pos_;
        trailing_comma = true;
        skip_space();
      } else if (peek() != ')') {
        throw std::string("expected ',' or ')' in 'shape'");
      }
    }
    ++pos_;
    // (3) is not a tuple in Python; numpy writes (3,).
    if (shape.size() == 1 && !trailing_comma) throw std::string("'shape' is not a tuple");
    return shape;
  }

  const std::string& s_;
  size_t pos_ = 0;
};

std::string errno_text() { return std::strerror(errno); }


// The suggestion for a file whose dtype is not `want`.
std::string convert_hint(Dtype want, const char* what) {
  return std::string("the TPU takes ") + dtype_name(want) + " " + what + " (convert with a.astype(np." +
         dtype_name(want) + "))";
}

// What the preamble and header of a .npy file say, checked against the
// file's size: the array without its data, and where the data starts.
struct Layout {
  Array array;  // dtype and shape; data empty
  size_t data_start = 0;
  size_t data_bytes = 0;
};

const char* kExpected = "; expected a NumPy .npy file (np.save)";

// The header's length from the first bytes of the file (at least
// min(size, 12) of them): where the header text starts and how long it is.
void read_preamble(const std::string& path, const uint8_t* p, size_t avail, uint64_t size,
                   size_t* header_at, size_t* header_len) {
  if (avail < kMagicLen || std::memcmp(p, kMagic, kMagicLen) != 0) {
    throw Error(path + ": not a .npy file (it does not start with \\x93NUMPY)" + kExpected);
  }
  if (avail < 8) throw Error(path + ": truncated in the preamble" + kExpected);
  const int major = p[6], minor = p[7];
  if ((major != 1 && major != 2 && major != 3) || minor != 0) {
    throw Error(path + ": .npy format version " + std::to_string(major) + "." +
                std::to_string(minor) + " is not supported; versions 1.0, 2.0 and 3.0 are");
  }
  const size_t len_bytes = major == 1 ? 2 : 4;
  if (avail < 8 + len_bytes) throw Error(path + ": truncated in the preamble" + kExpected);
  uint64_t len = 0;
  for (size_t i = 0; i < len_bytes; ++i) len |= uint64_t(p[8 + i]) << (8 * i);
  if (8 + len_bytes + len > size) {
    throw Error(path + ": truncated: the header is " + std::to_string(len) +
                " bytes but the file ends after " + std::to_string(size - 8 - len_bytes) + kExpected);
  }
  if (len > kMaxHeaderBytes) {
    throw Error(path + ": the header is " + std::to_string(len) + " bytes, more than the " +
                std::to_string(kMaxHeaderBytes) + " a .npy header may have; the file is corrupt" +
                kExpected);
  }
  *header_at = 8 + len_bytes;
  *header_len = size_t(len);
}

// Interprets the header text; `have` is the number of bytes after it. With
// `want` set, dtype problems are explained in terms of that dtype (`what`
// names the kind of array: "matrices").
Layout read_header(const std::string& path, const std::string& text, size_t data_start, uint64_t have,
                   const Dtype* want, const char* what) {
  Header h;
  try {
    h = HeaderParser(text).parse();
  } catch (const std::string& problem) {
    throw Error(path + ": malformed header (" + problem + "); expected a dict like " +
                kHeaderExample);
  }

  Layout l;
  Array& a = l.array;
  if (!parse_descr(h.descr, &a.dtype)) {
    const std::string name = describe_descr(h.descr);
    std::string hint;
    if (h.descr.size() > 1 && h.descr[0] == '>') {
      hint = want ? "; " + convert_hint(*want, what) + ", little-endian ('<')"
                  : "; save it little-endian (a.astype(a.dtype.newbyteorder('<')))";
    } else {
      hint = want ? "; " + convert_hint(*want, what)
                  : "; use int8, uint8, int32 or float32 (or uint16: bf16 bits)";
    }
    throw Error(path + ": dtype " + name + " is not supported" + hint);
  }
  if (want && a.dtype != *want) {
    throw Error(path + ": dtype " + dtype_name(a.dtype) + " where " + dtype_name(*want) +
                " is needed; " + convert_hint(*want, what));
  }
  a.shape = h.shape;

  // Fortran order only changes the layout of arrays with two or more
  // dimensions longer than 1; for the others both orders are the same bytes.
  int long_dims = 0;
  for (int64_t d : a.shape) long_dims += d > 1;
  if (h.fortran_order && long_dims > 1) {
    throw Error(path + ": Fortran-order (column-major) arrays are not supported; save a C-order "
                "array (np.save(path, np.ascontiguousarray(a)))");
  }

  // Size in bytes, without overflow: any product past the file size is wrong.
  uint64_t need = item_size(a.dtype);
  bool too_big = false;
  for (int64_t d : a.shape) {
    if (d == 0) {
      need = 0;
      too_big = false;
      break;
    }
    if (need > std::numeric_limits<uint64_t>::max() / uint64_t(d)) too_big = true;
    else need *= uint64_t(d);
  }
  if (too_big || need > have) {
    throw Error(path + ": truncated: the header promises a " + shape_text(a.shape) + " " +
                dtype_name(a.dtype) + " array" +
                (too_big ? std::string() : " (" + std::to_string(need) + " bytes of data)") +
                " but the file has " + std::to_string(have) + " bytes after the header" +
                kExpected);
  }
  if (need < have) {
    throw Error(path + ": " + std::to_string(have - need) +
                " bytes after the data of a " + shape_text(a.shape) + " " + dtype_name(a.dtype) +
                " array; the file is corrupt" + kExpected);
  }
  l.data_start = data_start;
  l.data_bytes = size_t(need);
  return l;
}

// The same checks on bytes in memory.
Array parse_impl(const std::string& path, std::span<const uint8_t> bytes, const Dtype* want,
                 const char* what) {
  size_t header_at = 0, header_len = 0;
  read_preamble(path, bytes.data(), bytes.size(), bytes.size(), &header_at, &header_len);
  const std::string text(reinterpret_cast<const char*>(bytes.data()) + header_at, header_len);
  const size_t data_start = header_at + header_len;
  Layout l = read_header(path, text, data_start, bytes.size() - data_start, want, what);
  l.array.data.assign(bytes.begin() + std::ptrdiff_t(data_start), bytes.end());
  return std::move(l.array);
}

// Reads and checks the file: its type and size first (fstat), then the
// preamble and header, and the data only when the header's shape accounts
// for exactly the bytes that follow it.
Array load_impl(const std::string& path, const Dtype* want, const char* what) {
  InputFile f(path, kMaxNpyBytes, "a .npy file");
  uint8_t pre[12] = {};
  const size_t avail = size_t(std::min<uint64_t>(f.size(), sizeof pre));
  f.read_at(0, pre, avail);
  size_t header_at = 0, header_len = 0;
  read_preamble(path, pre, avail, f.size(), &header_at, &header_len);
  std::string text(header_len, '\0');
  f.read_at(header_at, reinterpret_cast<uint8_t*>(text.data()), header_len);
  const size_t data_start = header_at + header_len;
  Layout l = read_header(path, text, data_start, f.size() - data_start, want, what);
  l.array.data.resize(l.data_bytes);
  f.read_at(data_start, l.array.data.data(), l.data_bytes);
  f.expect_end(data_start + l.data_bytes);
  return std::move(l.array);
}

Array load_ndim(const std::string& path, Dtype want, size_t ndim, const char* what) {
  Array a = load_impl(path, &want, what);
  if (a.shape.size() != ndim) {
    throw Error(path + ": the array is " +
                (a.shape.empty() ? std::string("a scalar (0-d)")
                                 : std::to_string(a.shape.size()) + "-d (" +
                                       shape_text(a.shape) + ")") +
                " but a " + std::to_string(ndim) + "-d array is needed; " +
                convert_hint(want, what));
  }
  return a;
}

}  // namespace

std::vector<uint8_t> read_file(const std::string& path, uint64_t max_bytes, const char* what) {
  InputFile f(path, max_bytes, what);
  std::vector<uint8_t> bytes(size_t(f.size()));
  f.read_at(0, bytes.data(), bytes.size());
  f.expect_end(f.size());
  return bytes;
}

std::string file_kind(uint32_t mode) {
  if (S_ISDIR(mode)) return "a directory";
  if (S_ISFIFO(mode)) return "a FIFO (named pipe)";
  if (S_ISCHR(mode)) return "a character device";
  if (S_ISBLK(mode)) return "a block device";
  if (S_ISSOCK(mode)) return "a socket";
  if (S_ISLNK(mode)) return "a symbolic link";
  if (S_ISREG(mode)) return "a regular file";
  return "not a regular file";
}

InputFile::InputFile(const std::string& path, uint64_t max_bytes, const char* what) : path_(path) {
  // stat first: a FIFO or a device is refused without opening it (opening a
  // FIFO for reading would wait for a writer).
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) throw Error(path + ": cannot open: " + errno_text());
  const auto refuse_kind = [&](mode_t mode) {
    if (S_ISDIR(mode)) throw Error(path + ": cannot read: it is a directory");
    if (!S_ISREG(mode)) {
      throw Error(path + ": cannot read: it is " + file_kind(mode) +
                  ", not a regular file; inputs are read from regular files only");
    }
  };
  refuse_kind(st.st_mode);
  fd_ = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
  if (fd_ < 0) throw Error(path + ": cannot open: " + errno_text());
  if (::fstat(fd_, &st) != 0) {
    const std::string why = errno_text();
    ::close(fd_);
    throw Error(path + ": cannot read: " + why);
  }
  try {
    refuse_kind(st.st_mode);  // it may have been replaced since the stat
    if (uint64_t(st.st_size) > max_bytes) {
      throw Error(path + ": cannot read: it is " + std::to_string(st.st_size) +
                  " bytes, more than the " + std::to_string(max_bytes) + " bytes (" +
                  human_bytes(max_bytes) + ") " + what + " may have");
    }
  } catch (...) {
    ::close(fd_);
    throw;
  }
  size_ = uint64_t(st.st_size);
}

InputFile::~InputFile() {
  if (fd_ >= 0) ::close(fd_);
}

void InputFile::read_at(uint64_t offset, uint8_t* out, size_t n) {
  size_t done = 0;
  while (done < n) {
    const ssize_t got = ::pread(fd_, out + done, n - done, off_t(offset + done));
    if (got < 0) {
      if (errno == EINTR) continue;
      throw Error(path_ + ": cannot read: " + errno_text());
    }
    if (got == 0) {
      throw Error(path_ + ": cannot read: the file shrank to " + std::to_string(offset + done) +
                  " bytes while it was read (it was " + std::to_string(size_) + ")");
    }
    done += size_t(got);
  }
}

void InputFile::expect_end(uint64_t offset) {
  uint8_t extra;
  for (;;) {
    const ssize_t got = ::pread(fd_, &extra, 1, off_t(offset));
    if (got < 0 && errno == EINTR) continue;
    if (got < 0) throw Error(path_ + ": cannot read: " + errno_text());
    if (got > 0) {
      throw Error(path_ + ": cannot read: the file grew while it was read (it was " +
                  std::to_string(size_) + " bytes)");
    }
    return;
  }
}

std::string human_bytes(uint64_t n) {
  static const char* kUnits[] = {"bytes", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
  int u = 0;
  uint64_t v = n;
  while (u < 6 && v >= 1024 && v % 1024 == 0) {
    v /= 1024;
    ++u;
  }
  return std::to_string(v) + " " + kUnits[u];
}

const char* dtype_name(Dtype d) {
  switch (d) {
    case Dtype::kInt8: return "int8";
    case Dtype::kUint8: return "uint8";
    case Dtype::kUint16: return "uint16";
    case Dtype::kInt32: return "int32";
    case Dtype::kFloat32: return "float32";
  }
  return "?";
}

const char* dtype_descr(Dtype d) {
  switch (d) {
    case Dtype::kInt8: return "|i1";
    case Dtype::kUint8: return "|u1";
    case Dtype::kUint16: return "<u2";
    case Dtype::kInt32: return "<i4";
    case Dtype::kFloat32: return "<f4";
  }
  return "?";
}

int64_t Array::elements() const {
  // A zero anywhere makes the array empty, whatever the other dimensions (a
  // (2**62, 2**62, 0) array is valid and has no data); otherwise the product
  // is at most the file's size, checked when it was read.
  for (int64_t d : shape)
    if (d == 0) return 0;
  uint64_t n = 1;
  for (int64_t d : shape) {
    if (d < 0 || uint64_t(d) > uint64_t(INT64_MAX) / n) return -1;
    n *= uint64_t(d);
  }
  return int64_t(n);
}

Array load(const std::string& path) { return load_impl(path, nullptr, "arrays"); }

Array parse(const std::string& name, std::span<const uint8_t> bytes) {
  return parse_impl(name, bytes, nullptr, "arrays");
}

Array load_matrix(const std::string& path, Dtype want) {
  return load_ndim(path, want, 2, "matrices");
}

Array load_vector(const std::string& path, Dtype want) {
  return load_ndim(path, want, 1, "vectors");
}

std::string temp_template(const std::string& path) {
  const size_t slash = path.find_last_of('/');
  const std::string dir = slash == std::string::npos ? "" : path.substr(0, slash + 1);
  const std::string base = slash == std::string::npos ? path : path.substr(slash + 1);
  return dir + "." + base.substr(0, 200) + ".tmp.XXXXXX";
}

int fill_temp(int fd, std::span<const uint8_t> bytes) {
  const mode_t mask = ::umask(0);
  ::umask(mask);
  if (::fchmod(fd, 0666 & ~mask) != 0) return errno;
  size_t done = 0;
  while (done < bytes.size()) {
    const ssize_t n = ::write(fd, bytes.data() + done, bytes.size() - done);
    if (n < 0) {
      if (errno == EINTR) continue;
      return errno;
    }
    done += size_t(n);
  }
  return ::fsync(fd) != 0 ? errno : 0;
}

void write_atomic(const std::string& path, std::span<const uint8_t> bytes) {
  if (path.empty() || path.back() == '/')
    throw Error(path + ": cannot write: the path names a directory");
  std::string tmpl = temp_template(path);
  const int fd = ::mkstemp(tmpl.data());
  if (fd < 0) throw Error(path + ": cannot write: " + errno_text());
  const auto fail = [&](int err) {
    ::unlink(tmpl.c_str());
    throw Error(path + ": cannot write: " + std::strerror(err));
  };
  if (const int err = fill_temp(fd, bytes)) {
    ::close(fd);
    fail(err);
  }
  if (::close(fd) != 0) fail(errno);
  if (::rename(tmpl.c_str(), path.c_str()) != 0) fail(errno);
}

std::vector<uint8_t> encode(const Array& a) {
  for (int64_t d : a.shape) {
    if (d < 0) throw Error("npy: negative dimension in shape " + shape_tuple(a.shape));
  }
  if (a.elements() < 0 || uint64_t(a.elements()) > SIZE_MAX / item_size(a.dtype)) {
    throw Error("npy: the shape " + shape_tuple(a.shape) + " is too large");
  }
  const size_t need = size_t(a.elements()) * item_size(a.dtype);
  if (a.data.size() != need) {
    throw Error("npy: a " + shape_text(a.shape) + " " + dtype_name(a.dtype) + " array needs " +
                std::to_string(need) + " bytes of data but has " + std::to_string(a.data.size()));
  }
  std::string header = std::string("{'descr': '") + dtype_descr(a.dtype) +
                       "', 'fortran_order': False, 'shape': " + shape_tuple(a.shape) + ", }";
  // numpy leaves room for the first dimension to grow to 21 digits in place
  // (numpy.lib.format.GROWTH_AXIS_MAX_DIGITS); the same padding makes the
  // bytes identical to np.save's.
  if (!a.shape.empty()) {
    const size_t digits = std::to_string(a.shape[0]).size();
    if (digits < 21) header.append(21 - digits, ' ');
  }
  // Version 1.0 unless the header does not fit its 2-byte length (thousands
  // of dimensions), as numpy does.
  const bool v1 = header.size() + 1 + 10 <= 0xffff;
  const size_t pre = v1 ? 10 : 12;
  const size_t total = (pre + header.size() + 1 + kAlign - 1) / kAlign * kAlign;
  header.append(total - pre - header.size() - 1, ' ');
  header += '\n';

  std::vector<uint8_t> out(kMagic, kMagic + kMagicLen);
  out.push_back(v1 ? 1 : 2);
  out.push_back(0);
  for (size_t i = 0; i < pre - 8; ++i) out.push_back(uint8_t(header.size() >> (8 * i)));
  out.insert(out.end(), header.begin(), header.end());
  out.insert(out.end(), a.data.begin(), a.data.end());
  return out;
}

void save(const std::string& path, const Array& a) {
  std::vector<uint8_t> bytes;
  try {
    bytes = encode(a);
  } catch (const Error& e) {
    throw Error(path + ": " + std::string(e.what()).substr(5));  // drop "npy: "
  }
  write_atomic(path, bytes);
}

template <class T>
std::vector<T> values(const Array& a) {
  Dtype d;
  if constexpr (std::is_same_v<T, int8_t>) d = Dtype::kInt8;
  else if constexpr (std::is_same_v<T, uint8_t>) d = Dtype::kUint8;
  else if constexpr (std::is_same_v<T, uint16_t>) d = Dtype::kUint16;
  else if constexpr (std::is_same_v<T, int32_t>) d = Dtype::kInt32;
  else d = Dtype::kFloat32;
  if (a.dtype != d) {
    throw Error(std::string("npy: the array is ") + dtype_name(a.dtype) + ", not " + dtype_name(d));
  }
  std::vector<T> out(a.data.size() / sizeof(T));
  if (!out.empty()) std::memcpy(out.data(), a.data.data(), out.size() * sizeof(T));
  return out;
}

template std::vector<int8_t> values<int8_t>(const Array&);
template std::vector<uint8_t> values<uint8_t>(const Array&);
template std::vector<uint16_t> values<uint16_t>(const Array&);
template std::vector<int32_t> values<int32_t>(const Array&);
template std::vector<float> values<float>(const Array&);

Array make(Dtype d, std::vector<int64_t> shape, const void* data) {
  Array a;
  a.dtype = d;
  a.shape = std::move(shape);
  for (int64_t dim : a.shape) {
    if (dim < 0) throw Error("npy: negative dimension in shape " + shape_tuple(a.shape));
  }
  if (a.elements() < 0 || uint64_t(a.elements()) > SIZE_MAX / item_size(d)) {
    throw Error("npy: the shape " + shape_tuple(a.shape) + " is too large");
  }
  a.data.resize(size_t(a.elements()) * item_size(d));
  if (!a.data.empty() && data) std::memcpy(a.data.data(), data, a.data.size());
  return a;
}

}  // namespace tpu::npy
