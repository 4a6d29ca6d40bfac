#include "serving/pipeline_roster.hpp"

#include <gtest/gtest.h>

namespace spindle::serving {
namespace {

using action = roster_action;

roster_member toml(std::string bridge) { return {true, false, false, std::move(bridge)}; }
roster_member joined(std::string bridge) { return {true, false, true, std::move(bridge)}; }

TEST(pipeline_roster_test, feeds_every_serving_member_but_its_own_rank) {
  pipeline_roster r;
  const auto out = r.update({{0, toml("b0")}, {1, toml("b1")}, {2, toml("b2")}});
  const std::vector<roster_change> want = {{1, action::add, "b1"}, {2, action::add, "b2"}};
  EXPECT_EQ(out, want);
  EXPECT_EQ(r.ranks(), (std::vector<int>{1, 2}));
  EXPECT_TRUE(r.update({{0, toml("b0")}, {1, toml("b1")}, {2, toml("b2")}}).empty());
}

TEST(pipeline_roster_test, adds_a_member_only_once_it_serves) {
  pipeline_roster r;
  r.update({{0, toml("b0")}, {1, toml("b1")}});
  auto waiting = joined("");
  waiting.serving = false;  // joined, still building its shard
  EXPECT_TRUE(r.update({{0, toml("b0")}, {1, toml("b1")}, {3, waiting}}).empty());
  const std::vector<roster_change> want = {{3, action::add, "b3"}};
  EXPECT_EQ(r.update({{0, toml("b0")}, {1, toml("b1")}, {3, joined("b3")}}), want);
}

TEST(pipeline_roster_test, keeps_a_dead_toml_rank_down_until_it_serves_again) {
  pipeline_roster r;
  r.update({{1, toml("b1")}, {2, toml("b2")}});
  EXPECT_EQ(r.update({{2, toml("b2")}}), (std::vector<roster_change>{{1, action::down, ""}}));
  EXPECT_TRUE(r.update({{2, toml("b2")}}).empty());
  EXPECT_EQ(r.ranks(), (std::vector<int>{1, 2}));
  EXPECT_EQ(r.update({{1, toml("b1-again")}, {2, toml("b2")}}),
            (std::vector<roster_change>{{1, action::up, "b1-again"}}));
}

TEST(pipeline_roster_test, announces_a_new_bridge_of_a_serving_rank) {
  pipeline_roster r;
  r.update({{1, toml("b1")}});
  EXPECT_EQ(r.update({{1, toml("b1-restarted")}}),
            (std::vector<roster_change>{{1, action::up, "b1-restarted"}}));
}

TEST(pipeline_roster_test, takes_a_dead_joined_rank_off_for_good_and_adds_it_if_it_joins_again) {
  pipeline_roster r;
  r.update({{1, toml("b1")}, {3, joined("b3")}});
  EXPECT_EQ(r.update({{1, toml("b1")}}), (std::vector<roster_change>{{3, action::gone, ""}}));
  EXPECT_EQ(r.ranks(), (std::vector<int>{1}));
  EXPECT_TRUE(r.update({{1, toml("b1")}}).empty());
  EXPECT_EQ(r.update({{1, toml("b1")}, {3, joined("b3-new")}}),
            (std::vector<roster_change>{{3, action::add, "b3-new"}}));
}

TEST(pipeline_roster_test, stops_feeding_a_leaving_rank_at_once_and_forgets_it_when_it_exits) {
  pipeline_roster r;
  r.update({{1, toml("b1")}, {3, joined("b3")}});
  auto leaving = joined("b3");
  leaving.leaving = true;
  EXPECT_EQ(r.update({{1, toml("b1")}, {3, leaving}}),
            (std::vector<roster_change>{{3, action::leave, ""}}));
  EXPECT_TRUE(r.update({{1, toml("b1")}, {3, leaving}}).empty()) << "still serving its batches";
  EXPECT_EQ(r.update({{1, toml("b1")}}), (std::vector<roster_change>{{3, action::gone, ""}}));
  EXPECT_TRUE(r.ranks() == std::vector<int>{1});
}

TEST(pipeline_roster_test, never_feeds_a_rank_first_seen_leaving) {
  pipeline_roster r;
  auto leaving = joined("b3");
  leaving.leaving = true;
  EXPECT_TRUE(r.update({{3, leaving}}).empty());
  EXPECT_TRUE(r.update({}).empty());
}

TEST(pipeline_roster_test, names_every_action) {
  for (auto a : {action::add, action::up, action::down, action::leave, action::gone})
    EXPECT_NE(to_string(a), "unknown");
  EXPECT_EQ(to_string(action::gone), "gone");
}

}  // namespace
}  // namespace spindle::serving
