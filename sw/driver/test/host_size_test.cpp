// SPDX-License-Identifier: Apache-2.0
// Sizes from files checked before allocation (tpu/host_size.h), and messages
// that keep every byte (tpu::Error through tpu/text.h).
#include <gtest/gtest.h>

#include <string>

#include "tpu/error.h"
#include "tpu/host_size.h"
#include "tpu/text.h"

namespace {

std::string error_of(const std::string& what, const std::vector<int64_t>& dims, uint64_t elem) {
  try {
    tpu::checked_bytes(what, dims, elem, "int32");
  } catch (const tpu::Error& e) {
    return e.what();
  }
  return "";
}

TEST(HostSizeTest, ByteSizesInTheUnitThatKeepsThemSmall) {
  EXPECT_EQ(tpu::byte_size(0), "0 bytes");
  EXPECT_EQ(tpu::byte_size(1), "1 byte");
  EXPECT_EQ(tpu::byte_size(1023), "1023 bytes");
  EXPECT_EQ(tpu::byte_size(1024), "1 KiB");
  EXPECT_EQ(tpu::byte_size(1536), "1.5 KiB");
  EXPECT_EQ(tpu::byte_size(uint64_t(24) << 30), "24 GiB");
  EXPECT_EQ(tpu::byte_size(uint64_t(1) << 62), "4 EiB");
  EXPECT_EQ(tpu::byte_size(~uint64_t(0)), "16 EiB");
}

TEST(HostSizeTest, CountsTheBytesOfWhatFits) {
  EXPECT_EQ(tpu::checked_bytes("x", {3, 5}, 4, "int32"), 60u);
  EXPECT_EQ(tpu::checked_bytes("x", {}, 2, "bf16"), 2u);
  // A zero dimension makes nothing, however large the others.
  EXPECT_EQ(tpu::checked_bytes("x", {2147483647, 0, 2147483647}, 4, "int32"), 0u);
  EXPECT_EQ(tpu::checked_bytes("x", {int64_t(1) << 40, int64_t(1) << 40, 0}, 4, "int32"), 0u);
}

TEST(HostSizeTest, RefusesWhatDoesNotFitInMemoryOrSixtyFourBits) {
  ASSERT_GT(tpu::physical_memory_bytes(), 0u);
  const std::string mem = tpu::byte_size(tpu::physical_memory_bytes());
  EXPECT_EQ(error_of("the result", {2147483647, 2147483647}, 4),
            "the result, 2147483647x2147483647 int32 (16 EiB), is larger than this machine's memory (" + mem + ")");
  EXPECT_EQ(
      error_of("y", {int64_t(1) << 40, int64_t(1) << 40}, 4),
      "y, 1099511627776x1099511627776 int32 (more than 16 EiB), is larger than this machine's memory (" + mem + ")");
  EXPECT_EQ(error_of("z", {3, -1}, 4), "z has a negative dimension (3x-1)");
}

// A message built from a file's bytes keeps all of them, escaped: what()
// is a C string, so an unescaped NUL would end it there.
TEST(ErrorTest, MessagesKeepEveryByteEscaped) {
  const std::string name = std::string("a") + '\0' + "b\n\x1b[31m\xff" + "\xc3\xa9";
  EXPECT_STREQ(tpu::Error(name + " is bad").what(), "a\\x00b\\n\\x1b[31m\\xff\xc3\xa9 is bad");
  EXPECT_EQ(tpu::printable(std::string_view("tab\there", 8)), "tab\\there");
}

}  // namespace
