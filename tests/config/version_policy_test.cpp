// Model repository version policies (model.toml version_policy) and the
// serving settings a model.toml may carry.
#include <gtest/gtest.h>

#include "config/model.hpp"

namespace spindle::config {
namespace {

std::vector<int> picked(const std::string& policy, std::vector<int> have) {
  auto v = pick_versions(policy, have);
  EXPECT_TRUE(v.has_value()) << policy << ": " << v.error().message();
  return v ? *v : std::vector<int>{};
}

TEST(version_policy_test, picks_versions_highest_first) {
  const std::vector<int> have = {1, 3, 2, 10};
  EXPECT_EQ(picked("", have), std::vector<int>{10});
  EXPECT_EQ(picked("latest", have), std::vector<int>{10});
  EXPECT_EQ(picked("latest:2", have), (std::vector<int>{10, 3}));
  EXPECT_EQ(picked("latest:9", have), (std::vector<int>{10, 3, 2, 1}));
  EXPECT_EQ(picked("specific:1,3", have), (std::vector<int>{3, 1}));
  EXPECT_EQ(picked("all", have), (std::vector<int>{10, 3, 2, 1}));
}

TEST(version_policy_test, bad_policies_are_named) {
  auto missing = pick_versions("specific:4", {1, 2});
  ASSERT_FALSE(missing.has_value());
  EXPECT_EQ(missing.error().message(), "version_policy 'specific:4': no version 4 (have: 2, 1)");
  EXPECT_NE(pick_versions("newest", {1}).error().message().find("expected latest, latest:N"),
            std::string::npos);
  EXPECT_NE(pick_versions("latest:0", {1}).error().message().find("'0' is not a number >= 1"),
            std::string::npos);
  EXPECT_FALSE(pick_versions("latest", {}).has_value());
}

TEST(version_policy_test, model_toml_carries_serving_settings) {
  const std::string base = "[model]\narch = \"graphsage\"\nin = 4\nhidden = 8\nout = 2\n";
  auto d = parse_model_desc(base +
                                "max_batch = 32\nbatch_deadline_us = 500\nslo_ms = 20\n"
                                "version_policy = \"latest:2\"\n",
                            "m/model.toml");
  ASSERT_TRUE(d.has_value()) << d.error().message();
  EXPECT_EQ(d->max_batch, 32);
  EXPECT_EQ(d->batch_deadline_us, 500);
  EXPECT_EQ(d->slo_ms, 20);
  EXPECT_EQ(d->version_policy, "latest:2");
  auto again = parse_model_desc(to_toml(*d), "again");
  ASSERT_TRUE(again.has_value());
  EXPECT_EQ(again->version_policy, "latest:2");
  auto bad = parse_model_desc(base + "version_policy = \"newest\"\n", "m/model.toml");
  ASSERT_FALSE(bad.has_value());
  EXPECT_NE(bad.error().message().find("m/model.toml: model.version_policy 'newest'"),
            std::string::npos)
      << bad.error().message();
  EXPECT_FALSE(parse_model_desc(base + "max_batch = -1\n", "x").has_value());
}

}  // namespace
}  // namespace spindle::config
