// SPDX-License-Identifier: Apache-2.0
// The C++ view of the configuration table (tpu/config.h, generated).
#include <gtest/gtest.h>

#include "tpu/config.h"

namespace {

TEST(Config, FindsEveryNamedConfigurationAndNothingElse) {
  for (const tpu::Config& c : tpu::kConfigs) {
    const tpu::Config* found = tpu::find_config(c.name);
    ASSERT_NE(found, nullptr) << c.name;
    EXPECT_EQ(found->name, c.name);
  }
  EXPECT_EQ(tpu::find_config("huge"), nullptr);
  EXPECT_EQ(tpu::find_config(""), nullptr);
  ASSERT_NE(tpu::find_config(tpu::kDefaultConfig), nullptr);
  EXPECT_EQ(tpu::config_names(), "tiny, small, default, wide, v2, v1, tiny_bf16, default_bf16");
}

TEST(Config, ArraySizesOfTheNamedConfigurations) {
  EXPECT_EQ(tpu::find_config("tiny")->array_n, 4);
  EXPECT_EQ(tpu::find_config("small")->array_n, 8);
  EXPECT_EQ(tpu::find_config("default")->array_n, 16);
  EXPECT_EQ(tpu::find_config("wide")->array_n, 32);
  EXPECT_EQ(tpu::find_config("v2")->array_n, 128);
  EXPECT_EQ(tpu::find_config("v1")->array_n, 256);
  EXPECT_EQ(tpu::find_config("tiny_bf16")->array_n, 4);
  EXPECT_EQ(tpu::find_config("default_bf16")->array_n, 16);
}

TEST(Config, Datapaths) {
  for (const char* name : {"tiny", "small", "default", "wide", "v1"})
    EXPECT_EQ(tpu::find_config(name)->datapath, tpu::Datapath::kInt8) << name;
  for (const char* name : {"tiny_bf16", "default_bf16", "v2"})
    EXPECT_EQ(tpu::find_config(name)->datapath, tpu::Datapath::kBoth) << name;
}

TEST(Config, CoreConfigCarriesTheCoreSizes) {
  for (const tpu::Config& c : tpu::kConfigs) {
    const tpu::CoreConfig core = tpu::core_config(c);
    EXPECT_EQ(core.n, c.array_n);
    EXPECT_EQ(core.ub_rows, c.ub_rows);
    EXPECT_EQ(core.acc_rows, c.acc_rows);
    EXPECT_EQ(core.imem_depth, c.imem_depth);
    EXPECT_EQ(core.wgt_fifo_tiles, c.wgt_fifo_tiles);
    EXPECT_EQ(core.datapath, c.datapath);
  }
}

}  // namespace
