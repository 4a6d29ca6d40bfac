// path_template: the KServe routes matched by hand (no regex, no recursion).
#include "transport/http/path_template.hpp"

#include <gtest/gtest.h>

#include <string>

namespace spindle::transport::http {
namespace {

TEST(path_template_test, captures_segments_and_optional_parts) {
  auto t = path_template::parse("/v2/models/{}[/versions/{}]/ready");
  ASSERT_TRUE(t.has_value()) << t.error().to_string();
  auto a = t->match("/v2/models/sage/ready");
  ASSERT_TRUE(a.has_value());
  EXPECT_EQ((*a)[1], "sage");
  EXPECT_EQ((*a)[2], "");
  a = t->match("/v2/models/sage/versions/3/ready");
  ASSERT_TRUE(a.has_value());
  EXPECT_EQ((*a)[1], "sage");
  EXPECT_EQ((*a)[2], "3");
  EXPECT_FALSE(t->match("/v2/models//ready"));          // an empty segment
  EXPECT_FALSE(t->match("/v2/models/a/b/ready"));       // a capture is one segment
  EXPECT_FALSE(t->match("/v2/models/sage/ready/x"));    // the whole path
  EXPECT_FALSE(t->match("/v2/models/sage/versions/ready"));
  EXPECT_FALSE(t->match("/v2/model"));
}

TEST(path_template_test, words_restrict_a_capture) {
  auto t = path_template::parse("/v2/repository/models/{}/{load|unload}");
  ASSERT_TRUE(t.has_value());
  EXPECT_EQ((*t->match("/v2/repository/models/m/unload"))[2], "unload");
  EXPECT_FALSE(t->match("/v2/repository/models/m/reload"));
  auto lit = path_template::parse("/v2/models/stats");
  ASSERT_TRUE(lit.has_value());
  EXPECT_TRUE(lit->match("/v2/models/stats"));
  EXPECT_FALSE(lit->match("/v2/models/stat"));
}

TEST(path_template_test, long_paths_match_in_linear_time) {
  auto t = path_template::parse("/v2/models/{}[/versions/{}]/ready");
  ASSERT_TRUE(t.has_value());
  const std::string name(1'000'000, 'A');
  auto a = t->match("/v2/models/" + name + "/ready");
  ASSERT_TRUE(a.has_value());
  EXPECT_EQ((*a)[1].size(), name.size());
}

TEST(path_template_test, malformed_templates_are_refused) {
  EXPECT_FALSE(path_template::parse("/a/[b[c]]").has_value());
  EXPECT_FALSE(path_template::parse("/a/{b").has_value());
  EXPECT_FALSE(path_template::parse("/a/[b").has_value());
  EXPECT_FALSE(path_template::parse("/a/b]").has_value());
}

}  // namespace
}  // namespace spindle::transport::http
