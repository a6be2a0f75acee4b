// SPDX-License-Identifier: Apache-2.0
// .npy reader and writer: round trips of every dtype and rank, files laid out
// byte for byte as numpy writes them, and one rejection per kind of bad file,
// each with the start of its message checked.
#include "tpu/npy.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <dirent.h>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

namespace tpu::npy {
namespace {

// A fresh directory per test, removed afterwards.
class NpyTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/npy_test.XXXXXX";
    ASSERT_NE(::mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
  }
  void TearDown() override {
    for (const std::string& f : files()) std::remove((dir_ + "/" + f).c_str());
    ::rmdir(dir_.c_str());
  }

  std::string path(const std::string& name) const { return dir_ + "/" + name; }

  // Every name in the directory (to see that no temporary file is left).
  std::vector<std::string> files() const {
    std::vector<std::string> out;
    if (DIR* d = ::opendir(dir_.c_str())) {
      while (dirent* e = ::readdir(d)) {
        const std::string n = e->d_name;
        if (n != "." && n != "..") out.push_back(n);
      }
      ::closedir(d);
    }
    return out;
  }

  std::string write(const std::string& name, const std::string& bytes) const {
    std::ofstream(path(name), std::ios::binary) << bytes;
    return path(name);
  }

  std::string read(const std::string& p) const {
    std::ifstream f(p, std::ios::binary);
    return {std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>()};
  }

  std::string dir_;
};

// A .npy file as numpy.lib.format writes it: magic, version, header length,
// the dict padded with spaces (room for the first dimension to grow to 21
// digits, then to a multiple of 64 bytes) and '\n', then the data.
std::string numpy_file(const std::string& dict, const std::string& data, int major = 1,
                       size_t growth = 0) {
  const size_t pre = major == 1 ? 10 : 12;
  std::string header = dict + std::string(growth, ' ');
  const size_t total = (pre + header.size() + 1 + 63) / 64 * 64;
  header.append(total - pre - header.size() - 1, ' ');
  header += '\n';
  std::string out = "\x93NUMPY";
  out += char(major);
  out += '\0';
  for (size_t i = 0; i < pre - 8; ++i) out += char((header.size() >> (8 * i)) & 0xff);
  return out + header + data;
}

std::string dict(const std::string& descr, const std::string& shape, bool fortran = false) {
  return "{'descr': '" + descr + "', 'fortran_order': " + (fortran ? "True" : "False") +
         ", 'shape': " + shape + ", }";
}

// The message of the tpu::Error that f throws ("" when it throws none).
template <class F>
std::string error_of(F&& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

bool starts_with(const std::string& s, const std::string& prefix) {
  return s.compare(0, prefix.size(), prefix) == 0;
}

// Whether msg is a one-line rejection containing every part.
::testing::AssertionResult rejected(const std::string& msg, std::initializer_list<std::string> parts) {
  if (msg.empty()) return ::testing::AssertionFailure() << "no tpu::Error was thrown";
  if (msg.find('\n') != std::string::npos) {
    return ::testing::AssertionFailure() << "message is not one line: " << msg;
  }
  for (const std::string& part : parts) {
    if (msg.find(part) == std::string::npos) {
      return ::testing::AssertionFailure() << "message: " << msg << "\nmissing: " << part;
    }
  }
  return ::testing::AssertionSuccess();
}

#define EXPECT_REJECTED(expr, ...) \
  EXPECT_TRUE(rejected(error_of([&] { (void)(expr); }), {__VA_ARGS__})) << #expr

// ---- Files as numpy writes them --------------------------------------------------

TEST_F(NpyTest, ReadsInt8MatrixWrittenByNumpy) {
  // np.save("a.npy", np.array([[1, -2, 3], [4, 5, -6]], dtype=np.int8)): 134 bytes.
  const std::string bytes =
      numpy_file(dict("|i1", "(2, 3)"), std::string("\x01\xfe\x03\x04\x05\xfa", 6), 1, 20);
  ASSERT_EQ(bytes.size(), 134u);
  ASSERT_EQ(bytes.substr(6, 4), std::string("\x01\x00\x76\x00", 4));
  const Array a = load(write("a.npy", bytes));
  EXPECT_EQ(a.dtype, Dtype::kInt8);
  EXPECT_EQ(a.shape, (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(values<int8_t>(a), (std::vector<int8_t>{1, -2, 3, 4, 5, -6}));
}

TEST_F(NpyTest, ReadsInt32VectorAndFloatScalarWrittenByNumpy) {
  // np.array([7, -8, 2**31 - 1], dtype=np.int32)
  const Array v = load(write("v.npy", numpy_file(dict("<i4", "(3,)"),
                                                 std::string("\x07\0\0\0\xf8\xff\xff\xff"
                                                             "\xff\xff\xff\x7f",
                                                             12),
                                                 1, 20)));
  EXPECT_EQ(v.shape, (std::vector<int64_t>{3}));
  EXPECT_EQ(values<int32_t>(v), (std::vector<int32_t>{7, -8, 2147483647}));

  // np.array(1.5, dtype=np.float32): a 0-d array, shape ().
  const Array s =
      load(write("s.npy", numpy_file(dict("<f4", "()"), std::string("\0\0\xc0\x3f", 4))));
  EXPECT_TRUE(s.shape.empty());
  EXPECT_EQ(s.elements(), 1);
  EXPECT_EQ(values<float>(s), (std::vector<float>{1.5f}));
}

TEST_F(NpyTest, ReadsVersions2And3) {
  for (int major : {2, 3}) {
    const Array a = load(write("v.npy", numpy_file(dict("|i1", "(1, 2)"), "\x01\x02", major, 20)));
    EXPECT_EQ(a.shape, (std::vector<int64_t>{1, 2})) << "version " << major;
    EXPECT_EQ(values<int8_t>(a), (std::vector<int8_t>{1, 2})) << "version " << major;
  }
}

TEST_F(NpyTest, ReadsHeaderSpellingsNumpyAccepts) {
  // Keys in another order, double quotes, no trailing comma, no spaces.
  const Array a = load(write(
      "a.npy", numpy_file("{\"shape\":(2,),\"fortran_order\":False,\"descr\":\"|u1\"}", "\xff\x01")));
  EXPECT_EQ(a.dtype, Dtype::kUint8);
  EXPECT_EQ(values<uint8_t>(a), (std::vector<uint8_t>{255, 1}));
  // Fortran order of a 1-d array is the same layout as C order.
  const Array f = load(write("f.npy", numpy_file(dict("|i1", "(3,)", true), "\x01\x02\x03")));
  EXPECT_EQ(values<int8_t>(f), (std::vector<int8_t>{1, 2, 3}));
}

TEST_F(NpyTest, SaveWritesExactlyWhatNumpyWrites) {
  const int8_t i8[] = {1, -2, 3, 4, 5, -6};
  save(path("a.npy"), make(Dtype::kInt8, {2, 3}, i8));
  EXPECT_EQ(read(path("a.npy")),
            numpy_file(dict("|i1", "(2, 3)"), std::string("\x01\xfe\x03\x04\x05\xfa", 6), 1, 20));

  const int32_t i32[] = {7, -8, 2147483647};
  save(path("v.npy"), make(Dtype::kInt32, {3}, i32));
  EXPECT_EQ(read(path("v.npy")),
            numpy_file(dict("<i4", "(3,)"),
                       std::string("\x07\0\0\0\xf8\xff\xff\xff\xff\xff\xff\x7f", 12), 1, 20));

  const float f = 1.5f;
  save(path("s.npy"), make(Dtype::kFloat32, {}, &f));
  EXPECT_EQ(read(path("s.npy")), numpy_file(dict("<f4", "()"), std::string("\0\0\xc0\x3f", 4)));

  save(path("e.npy"), make(Dtype::kUint8, {0, 4}, nullptr));
  EXPECT_EQ(read(path("e.npy")), numpy_file(dict("|u1", "(0, 4)"), "", 1, 20));
  EXPECT_EQ(read(path("e.npy")).size(), 128u);  // np.save(np.zeros((0, 4), np.uint8))
}

// ---- Round trips ----------------------------------------------------------------

TEST_F(NpyTest, RoundTripsEveryDtypeAndRank) {
  const std::vector<std::vector<int64_t>> shapes = {{}, {5}, {3, 4}, {2, 3, 2}, {0}, {0, 7}, {7, 0}};
  for (Dtype d : {Dtype::kInt8, Dtype::kUint8, Dtype::kInt32, Dtype::kFloat32, Dtype::kUint16}) {
    for (const auto& shape : shapes) {
      Array a = make(d, shape, nullptr);
      for (size_t i = 0; i < a.data.size(); ++i) a.data[i] = uint8_t(i * 37 + 11);
      save(path("r.npy"), a);
      const Array b = load(path("r.npy"));
      EXPECT_EQ(b.dtype, d) << dtype_name(d);
      EXPECT_EQ(b.shape, shape) << dtype_name(d);
      EXPECT_EQ(b.data, a.data) << dtype_name(d);
      EXPECT_EQ(read(path("r.npy")).size() % 64, a.data.size() % 64) << "data starts 64-aligned";
    }
  }
}

TEST_F(NpyTest, ValuesAndMake) {
  const float in[] = {-1.25f, 0.0f, 3.5f, 1e30f};
  const Array a = make(Dtype::kFloat32, {2, 2}, in);
  EXPECT_EQ(a.elements(), 4);
  EXPECT_EQ(values<float>(a), (std::vector<float>{-1.25f, 0.0f, 3.5f, 1e30f}));
  EXPECT_REJECTED(values<int8_t>(a), "float32", "int8");
  EXPECT_EQ(make(Dtype::kInt32, {2, 3}, nullptr).data, std::vector<uint8_t>(24, 0));
  EXPECT_EQ(dtype_name(Dtype::kUint8), std::string("uint8"));
  EXPECT_EQ(dtype_descr(Dtype::kInt32), std::string("<i4"));
  // uint16: the bits of bf16 values (tpu matmul --dtype bf16 --raw-bf16), as numpy writes them.
  const uint16_t bits[] = {0x3F80, 0xFFC1};
  const Array u = make(Dtype::kUint16, {2}, bits);
  EXPECT_EQ(dtype_descr(Dtype::kUint16), std::string("<u2"));
  EXPECT_EQ(values<uint16_t>(u), (std::vector<uint16_t>{0x3F80, 0xFFC1}));
  save(path("u2.npy"), u);
  EXPECT_EQ(read(path("u2.npy")), numpy_file(dict("<u2", "(2,)"), std::string("\x80\x3f\xc1\xff", 4)));
}

TEST_F(NpyTest, LoadMatrixAndVector) {
  const int8_t m[] = {1, 2, 3, 4, 5, 6};
  save(path("m.npy"), make(Dtype::kInt8, {3, 2}, m));
  const Array a = load_matrix(path("m.npy"), Dtype::kInt8);
  EXPECT_EQ(a.shape, (std::vector<int64_t>{3, 2}));

  EXPECT_REJECTED(load_matrix(path("m.npy"), Dtype::kInt32), path("m.npy") + ": dtype int8",
                  "int8 where int32 is needed", "a.astype(np.int32)");
  EXPECT_REJECTED(load_vector(path("m.npy"), Dtype::kInt8),
                  path("m.npy") + ": the array is 2-d (3x2)", "1-d array is needed");
  save(path("v.npy"), make(Dtype::kInt32, {4}, nullptr));
  EXPECT_EQ(load_vector(path("v.npy"), Dtype::kInt32).shape, (std::vector<int64_t>{4}));
  EXPECT_REJECTED(load_matrix(path("v.npy"), Dtype::kInt32), "the array is 1-d (4)",
                  "2-d array is needed");
  save(path("s.npy"), make(Dtype::kInt8, {}, m));
  EXPECT_REJECTED(load_matrix(path("s.npy"), Dtype::kInt8), "the array is a scalar (0-d)");
}

// ---- Rejections -------------------------------------------------------------------

// Writes the bytes as `name` and loads them: the message must start with the
// file's path and contain every part.
#define EXPECT_FILE_REJECTED(name, bytes, ...)                        \
  do {                                                                \
    const std::string p_ = write(name, bytes);                        \
    const std::string m_ = error_of([&] { load(p_); });               \
    EXPECT_TRUE(starts_with(m_, p_ + ": ")) << "message: " << m_;     \
    EXPECT_TRUE(rejected(m_, {__VA_ARGS__})) << name;                 \
  } while (0)

TEST_F(NpyTest, RejectsUnsupportedDtypes) {
  EXPECT_FILE_REJECTED("f8.npy", numpy_file(dict("<f8", "(2,)"), std::string(16, '\0')),
                       "dtype float64 is not supported", "int8, uint8, int32 or float32");
  EXPECT_FILE_REJECTED("i2.npy", numpy_file(dict("<i2", "(2,)"), std::string(4, '\0')),
                       "dtype int16 is not supported");
  EXPECT_FILE_REJECTED("i8.npy", numpy_file(dict("<i8", "(1,)"), std::string(8, '\0')),
                       "dtype int64 is not supported");
  EXPECT_FILE_REJECTED("be.npy", numpy_file(dict(">i4", "(3,)"), std::string(12, '\0')),
                       "dtype big-endian int32 is not supported", "little-endian");
  EXPECT_FILE_REJECTED("obj.npy", numpy_file(dict("|O", "(2,)"), std::string(16, '\0')),
                       "dtype object is not supported");
  EXPECT_FILE_REJECTED("b.npy", numpy_file(dict("|b1", "(2,)"), std::string(2, '\0')),
                       "dtype bool is not supported");
  EXPECT_FILE_REJECTED("u.npy", numpy_file(dict("<U3", "(1,)"), std::string(12, '\0')),
                       "dtype unicode string ('<U3') is not supported");
  EXPECT_FILE_REJECTED(
      "rec.npy",
      numpy_file("{'descr': [('a', '<i4')], 'fortran_order': False, 'shape': (1,), }",
                 std::string(4, '\0')),
      "structured dtypes");
}

TEST_F(NpyTest, WantedDtypeGivesConversionHint) {
  const std::string p = write("A.npy", numpy_file(dict("<f8", "(2, 2)"), std::string(32, '\0')));
  EXPECT_EQ(error_of([&] { load_matrix(p, Dtype::kInt8); }),
            p + ": dtype float64 is not supported; the TPU takes int8 matrices (convert with "
                "a.astype(np.int8))");
  const std::string q = write("B.npy", numpy_file(dict("<i2", "(2, 2)"), std::string(8, '\0')));
  EXPECT_EQ(error_of([&] { load_matrix(q, Dtype::kInt8); }),
            q + ": dtype int16 is not supported; the TPU takes int8 matrices (convert with "
                "a.astype(np.int8))");
}

// A header's bytes reach the message whole, escaped: a NUL byte in the
// dtype string does not cut the message (and its hint) short.
TEST_F(NpyTest, MessageKeepsEveryByteOfTheHeaderEscaped) {
  const std::string descr = std::string("\xff\xfe") + '\0' + "zz";
  const std::string p = write("nul.npy", numpy_file(dict(descr, "(2, 2)"), std::string(4, '\0')));
  EXPECT_EQ(error_of([&] { load_matrix(p, Dtype::kInt8); }),
            p + ": dtype '\\xff\\xfe\\x00zz' is not supported; the TPU takes int8 matrices (convert with "
                "a.astype(np.int8))");
}

TEST_F(NpyTest, RejectsFortranOrder) {
  // np.save(np.asfortranarray(np.arange(6, dtype=np.int8).reshape(2, 3)))
  EXPECT_FILE_REJECTED("f.npy",
                       numpy_file(dict("|i1", "(2, 3)", true), "\x00\x03\x01\x04\x02\x05", 1, 20),
                       "Fortran-order", "np.ascontiguousarray");
}

TEST_F(NpyTest, RejectsBadMagicAndVersion) {
  EXPECT_FILE_REJECTED("magic.npy", "PK\x03\x04 this is a zip file, maybe an .npz",
                       "not a .npy file", "expected a NumPy .npy file");
  EXPECT_FILE_REJECTED("empty.npy", "", "not a .npy file");
  EXPECT_FILE_REJECTED("short.npy", std::string("\x93NUMPY\x01", 7), "truncated");
  std::string v4 = numpy_file(dict("|i1", "(1,)"), "\x01");
  v4[6] = 4;
  EXPECT_FILE_REJECTED("v4.npy", v4, "format version 4.0 is not supported");
}

TEST_F(NpyTest, RejectsTruncatedFiles) {
  const std::string good =
      numpy_file(dict("<i4", "(3, 4)"), std::string(48, '\x01'), 1, 20);
  EXPECT_FILE_REJECTED("data.npy", good.substr(0, good.size() - 5),
                       "truncated: the header promises a 3x4 int32 array (48 bytes of data) but "
                       "the file has 43 bytes after the header");
  EXPECT_FILE_REJECTED("header.npy", good.substr(0, 40), "truncated: the header is 118 bytes");
  EXPECT_FILE_REJECTED("extra.npy", good + "xyz", "3 bytes after the data", "corrupt");
  // A shape whose byte count overflows 64 bits.
  EXPECT_FILE_REJECTED(
      "huge.npy",
      numpy_file(dict("<i4", "(9223372036854775807, 9223372036854775807)"), "abcd"),
      "truncated: the header promises a 9223372036854775807x9223372036854775807 int32 array but");
}

TEST_F(NpyTest, RejectsMalformedHeaders) {
  const std::string data(4, '\0');
  EXPECT_FILE_REJECTED("nodescr.npy", numpy_file("{'fortran_order': False, 'shape': (4,), }", data),
                       "malformed header (no 'descr' key)", "expected a dict like {'descr'");
  EXPECT_FILE_REJECTED("noshape.npy",
                       numpy_file("{'descr': '|i1', 'fortran_order': False, }", data),
                       "no 'shape' key");
  EXPECT_FILE_REJECTED("extra.npy",
                       numpy_file("{'descr': '|i1', 'fortran_order': False, 'shape': (4,), "
                                  "'x': 1}",
                                  data),
                       "unexpected key 'x'");
  EXPECT_FILE_REJECTED("neg.npy", numpy_file(dict("|i1", "(-4,)"), data),
                       "'shape' must be a tuple of non-negative integers");
  EXPECT_FILE_REJECTED("notuple.npy", numpy_file(dict("|i1", "(4)"), data),
                       "'shape' is not a tuple");
  EXPECT_FILE_REJECTED("order.npy", numpy_file("{'descr': '|i1', 'fortran_order': 0, 'shape': (4,), }", data),
                       "'fortran_order' must be True or False");
  EXPECT_FILE_REJECTED("brace.npy", numpy_file("['descr', '|i1']", data), "expected '{'");
  EXPECT_FILE_REJECTED("garbage.npy", numpy_file(dict("|i1", "(4,)") + " junk", data),
                       "text after the closing '}'");
  EXPECT_FILE_REJECTED("quote.npy",
                       numpy_file("{'descr: '|i1', 'fortran_order': False, 'shape': (4,), }", data),
                       "malformed header");
}

TEST_F(NpyTest, RejectsMissingFileAndDirectory) {
  const std::string p = path("missing.npy");
  EXPECT_EQ(error_of([&] { load(p); }), p + ": cannot open: No such file or directory");
  EXPECT_REJECTED(load(dir_), dir_ + ": cannot read: it is a directory");
}

// ---- Checked before read: the kind of file, its size, the header against the size ----

TEST_F(NpyTest, RefusesFifosAndDevicesWithoutBlocking) {
  const std::string fifo = path("in.fifo");
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  // Opening a FIFO to read blocks until a writer comes; this must return.
  EXPECT_EQ(error_of([&] { load(fifo); }),
            fifo + ": cannot read: it is a FIFO (named pipe), not a regular file; inputs are read "
                   "from regular files only");
  EXPECT_REJECTED(read_file(fifo), fifo + ": cannot read: it is a FIFO");
  EXPECT_REJECTED(load("/dev/zero"), "/dev/zero: cannot read: it is a character device, not a regular file");
  EXPECT_REJECTED(read_file("/dev/zero"), "/dev/zero: cannot read: it is a character device");
}

TEST_F(NpyTest, ChecksTheSizeBeforeReading) {
  // Sparse files: large on paper, nothing on disk.
  const auto sparse = [&](const std::string& name, const std::string& head, off_t size) {
    const std::string p = write(name, head);
    EXPECT_EQ(::truncate(p.c_str(), size), 0);
    return p;
  };
  const std::string header = numpy_file(dict("|i1", "(2, 3)"), "");
  const std::string big = sparse("big.npy", header, off_t(kMaxNpyBytes) + 1);
  EXPECT_EQ(error_of([&] { load(big); }),
            big + ": cannot read: it is 4294967297 bytes, more than the 4294967296 bytes (4 GiB) a .npy "
                  "file may have");
  // Under the limit, a header that does not account for the file's size is
  // rejected from the size alone (the data is never read).
  const std::string odd = sparse("odd.npy", header, off_t(1) << 31);
  EXPECT_REJECTED(load(odd), odd + ": " + std::to_string((uint64_t(1) << 31) - header.size() - 6) +
                                 " bytes after the data of a 2x3 int8 array");
  const std::string text = sparse("big.txt", "hello", 1000);
  EXPECT_EQ(error_of([&] { read_file(text, 999, "a program file"); }),
            text + ": cannot read: it is 1000 bytes, more than the 999 bytes (999 bytes) a program file may have");
  EXPECT_EQ(read_file(text, 1000).size(), 1000u);
  // A header longer than any numpy writes.
  std::string long_header = "\x93NUMPY\x02";
  long_header += '\0';
  for (uint32_t v = uint32_t(kMaxHeaderBytes) + 1, i = 0; i < 4; ++i, v >>= 8) long_header += char(v & 0xff);
  const std::string lh = sparse("long_header.npy", long_header, off_t(kMaxHeaderBytes) + 100);
  EXPECT_REJECTED(load(lh), "the header is 1048577 bytes, more than the 1048576 a .npy header may have");
}

TEST_F(NpyTest, ParseTakesBytesInMemoryLikeLoad) {
  const int8_t m[] = {1, 2, 3, 4, 5, 6};
  const std::vector<uint8_t> bytes = encode(make(Dtype::kInt8, {2, 3}, m));
  const Array a = parse("mem.npy", bytes);
  EXPECT_EQ(a.shape, (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(values<int8_t>(a), (std::vector<int8_t>{1, 2, 3, 4, 5, 6}));
  std::vector<uint8_t> cut(bytes.begin(), bytes.end() - 1);
  EXPECT_REJECTED(parse("mem.npy", cut), "mem.npy: truncated");
}

TEST_F(NpyTest, AZeroDimensionMakesAnEmptyArrayWhateverTheOthers) {
  // np.zeros((2**62, 2**62, 0)) is a valid, empty array.
  const std::string p = write("empty.npy", numpy_file(dict("|i1", "(4611686018427387904, 4611686018427387904, 0)"), ""));
  const Array a = load(p);
  EXPECT_EQ(a.elements(), 0);
  EXPECT_TRUE(a.data.empty());
  EXPECT_EQ(parse("again.npy", encode(a)).shape, a.shape);
}

// ---- Atomic save -------------------------------------------------------------------

TEST_F(NpyTest, SaveReplacesAtomicallyAndLeavesNothingOnFailure) {
  const int8_t one[] = {1};
  save(path("out.npy"), make(Dtype::kInt8, {1}, one));
  const std::string before = read(path("out.npy"));

  // A malformed array is rejected before anything is written.
  Array bad = make(Dtype::kInt32, {2, 2}, nullptr);
  bad.data.resize(10);
  EXPECT_REJECTED(save(path("out.npy"), bad), path("out.npy") + ": a 2x2 int32 array needs 16 bytes");
  EXPECT_EQ(read(path("out.npy")), before);
  EXPECT_REJECTED(save(path("new.npy"), bad), path("new.npy") + ": ");

  // A directory that does not exist: nothing appears anywhere.
  EXPECT_REJECTED(save(path("nodir/x.npy"), make(Dtype::kInt8, {1}, one)),
                  path("nodir/x.npy") + ": cannot write: No such file or directory");
  EXPECT_EQ(files(), std::vector<std::string>{"out.npy"});

  // Overwriting replaces the whole file and leaves no temporary behind.
  const int32_t many[] = {1, 2, 3, 4, 5, 6, 7, 8};
  save(path("out.npy"), make(Dtype::kInt32, {8}, many));
  EXPECT_EQ(values<int32_t>(load(path("out.npy"))), (std::vector<int32_t>{1, 2, 3, 4, 5, 6, 7, 8}));
  EXPECT_EQ(files(), std::vector<std::string>{"out.npy"});

  // The file gets the usual permissions, not mkstemp's 0600.
  struct stat st {};
  ASSERT_EQ(::stat(path("out.npy").c_str(), &st), 0);
  const mode_t mask = ::umask(0);
  ::umask(mask);
  EXPECT_EQ(st.st_mode & 0777, 0666u & ~mask);
}

TEST_F(NpyTest, WriteAtomicRelativePath) {
  const std::string cwd = [] {
    char buf[4096];
    return std::string(::getcwd(buf, sizeof buf) ? buf : ".");
  }();
  ASSERT_EQ(::chdir(dir_.c_str()), 0);
  const uint8_t bytes[] = {'h', 'i'};
  write_atomic("plain.bin", bytes);
  EXPECT_EQ(::chdir(cwd.c_str()), 0);
  EXPECT_EQ(read(path("plain.bin")), "hi");
}

TEST_F(NpyTest, WriteAtomicTakesTheLongestNames) {
  const std::string name(255, 'n');  // NAME_MAX: the temporary file's name must fit too
  const uint8_t bytes[] = {'o', 'k'};
  write_atomic(path(name), bytes);
  EXPECT_EQ(read(path(name)), "ok");
  EXPECT_EQ(files(), std::vector<std::string>{name});
}

}  // namespace
}  // namespace tpu::npy
