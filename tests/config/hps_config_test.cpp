// The [hps] settings: defaults, per-table overrides on top of them, command-line
// defaults kept where the file is silent, and errors that name the field.
#include <gtest/gtest.h>

#include "config/hps.hpp"

namespace spindle::config {
namespace {

TEST(hps_config_test, tables_override_the_defaults_which_override_the_base) {
  hps_config base;
  base.defaults.vdb_partitions = 4;
  auto c = parse_hps_config(R"(
[model]
arch = "dlrm"
[hps]
cache_fraction = 0.2
eviction_policy = "evict_random"
refresh_interval_ms = 500
l1_gpus = 2
[hps.tables.emb1]
hit_rate_threshold = 1.0
overflow_margin = 1000
)",
                            "m.toml", base);
  ASSERT_TRUE(c.has_value()) << c.error().to_string();
  EXPECT_EQ(c->refresh_interval_ms, 500u);
  EXPECT_EQ(c->l1_gpus, 2);
  EXPECT_EQ(c->for_table("emb0").cache_fraction, 0.2);
  EXPECT_EQ(c->for_table("emb0").vdb_partitions, 4u);
  EXPECT_EQ(c->for_table("emb0").hit_rate_threshold, 0.8);
  EXPECT_EQ(c->for_table("emb1").hit_rate_threshold, 1.0);
  EXPECT_EQ(c->for_table("emb1").cache_fraction, 0.2);
  EXPECT_EQ(c->for_table("emb1").eviction_policy, "evict_random");
  EXPECT_EQ(c->for_table("emb1").overflow_margin, 1000u);
  auto none = parse_hps_config("[model]\narch = \"dlrm\"\n", "m.toml", base);
  ASSERT_TRUE(none.has_value());
  EXPECT_EQ(none->defaults.vdb_partitions, 4u);
}

TEST(hps_config_test, bad_values_name_the_file_and_field) {
  auto expect_error = [](const char* text, const char* needle) {
    auto c = parse_hps_config(text, "h.toml");
    ASSERT_FALSE(c.has_value()) << text;
    EXPECT_NE(c.error().message().find(needle), std::string::npos) << c.error().message();
  };
  expect_error("[hps]\ncache_fraction = 1.5\n", "h.toml: hps.cache_fraction = 1.5");
  expect_error("[hps]\ncache_fracton = 0.5\n", "unknown field hps.cache_fracton");
  expect_error("[hps.tables.emb0]\neviction_policy = \"lru\"\n",
               "hps.tables.emb0.eviction_policy = 'lru'");
  expect_error("[hps]\nvdb_partitions = 0\n", "hps.vdb_partitions must be an integer >= 1");
  expect_error("[hps\n", "h.toml: line 1");
  expect_error("[hps]\nl1_gpus = 0\n", "hps.l1_gpus must be an integer in 1..64");
  expect_error("[hps.tables.emb0]\nl1_gpus = 2\n", "unknown field hps.tables.emb0.l1_gpus");
}

}  // namespace
}  // namespace spindle::config
