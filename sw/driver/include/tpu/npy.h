// SPDX-License-Identifier: Apache-2.0
// NumPy .npy files (format versions 1.0, 2.0 and 3.0), for the tools and
// tests. Only C-order (row-major) arrays of the dtypes the TPU uses are read:
// int8, uint8, int32 and float32, and uint16 (the bits of bf16 values),
// little-endian. Anything else is rejected
// with a tpu::Error that names the file and says what was expected.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "tpu/error.h"

namespace tpu::npy {

enum class Dtype { kInt8, kUint8, kInt32, kFloat32, kUint16 };

// "int8", ...; and the .npy descriptor "|i1", "<i4", ...
const char* dtype_name(Dtype d);
const char* dtype_descr(Dtype d);

struct Array {
  Dtype dtype = Dtype::kInt8;
  std::vector<int64_t> shape;  // empty for a 0-d array
  std::vector<uint8_t> data;   // raw little-endian elements, C order
  int64_t elements() const;  // 0 when a dimension is 0; -1 past INT64_MAX
};

// Limits of what the readers take (docs/cli.md, "Guarantees"): a .npy file
// is at most kMaxNpyBytes long and its header at most kMaxHeaderBytes (numpy
// itself writes a few hundred bytes, and by default reads at most 10000).
constexpr uint64_t kMaxNpyBytes = uint64_t{4} << 30;  // 4 GiB
constexpr uint64_t kMaxHeaderBytes = uint64_t{1} << 20;  // 1 MiB
// read_file's default limit.
constexpr uint64_t kMaxFileBytes = uint64_t{256} << 20;  // 256 MiB

// Throws tpu::Error for a missing/unreadable file, a corrupt or truncated
// file, Fortran order, or an unsupported dtype ("A.npy: dtype float64 is not
// supported; use int8"-style messages). The file is checked before its data
// is read: it must be a regular file (a FIFO, a device or a directory is
// refused without blocking) of at most kMaxNpyBytes, and the header's shape
// times the item size must be exactly the bytes after the header.
Array load(const std::string& path);
// The same checks on a file's bytes in memory; `name` starts the messages.
Array parse(const std::string& name, std::span<const uint8_t> bytes);

// Writes atomically: to a temporary file in the same directory, then renamed,
// so a failure never leaves a partial file at path.
void save(const std::string& path, const Array& a);

// The bytes save() writes: version 1.0, byte-identical to np.save's. Throws
// tpu::Error ("npy: ...") for an array whose data does not match its shape.
std::vector<uint8_t> encode(const Array& a);

// Convenience: 2-D arrays of a given dtype. load_matrix throws tpu::Error
// when the array is not 2-D or its dtype is not `want`.
Array load_matrix(const std::string& path, Dtype want);
// The same for 1-D arrays (a bias vector).
Array load_vector(const std::string& path, Dtype want);
template <class T>
std::vector<T> values(const Array& a);  // T = int8_t, uint8_t, uint16_t, int32_t, float
// Copies elements() items from data (zeros when data is null).
Array make(Dtype d, std::vector<int64_t> shape, const void* data);

// A whole file; tpu::Error "<path>: cannot open: <reason>" when it cannot be
// read, "<path>: cannot read: it is a FIFO (named pipe), not a regular file..."
// for anything but a regular file (checked with stat before opening, so a
// FIFO never blocks), and "<path>: cannot read: it is N bytes, more than the
// M bytes (...) <what> may have" past max_bytes.
std::vector<uint8_t> read_file(const std::string& path, uint64_t max_bytes = kMaxFileBytes,
                               const char* what = "an input file");

// A regular file open for reading, its size known before anything is read
// (the checks of read_file). read_at reads exactly n bytes or throws.
class InputFile {
 public:
  InputFile(const std::string& path, uint64_t max_bytes, const char* what);
  ~InputFile();
  InputFile(const InputFile&) = delete;
  InputFile& operator=(const InputFile&) = delete;
  uint64_t size() const { return size_; }
  void read_at(uint64_t offset, uint8_t* out, size_t n);
  // Throws when the file has bytes at or past offset (it grew while read).
  void expect_end(uint64_t offset);

 private:
  std::string path_;
  int fd_ = -1;
  uint64_t size_ = 0;
};

// "a FIFO (named pipe)", "a directory", ... for a stat st_mode.
std::string file_kind(uint32_t mode);
// "256 MiB", "4 GiB", "1000 bytes".
std::string human_bytes(uint64_t n);
// Writes any file the way save() does: all of it, or nothing at path.
void write_atomic(const std::string& path, std::span<const uint8_t> bytes);

// The two steps of an atomic write, shared with the tool's outputs:
// the mkstemp template of a temporary file beside path, ".<name>.tmp.XXXXXX"
// in path's directory (rename() then stays within one file system), at most
// 212 bytes of name whatever the name's length;
std::string temp_template(const std::string& path);
// and filling it: the mode a plain open() would give (mkstemp makes 0600),
// all of bytes, fsync. Returns 0, or the errno of the step that failed.
int fill_temp(int fd, std::span<const uint8_t> bytes);

}  // namespace tpu::npy
