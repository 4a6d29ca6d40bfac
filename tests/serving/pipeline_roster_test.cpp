#include "serving/pipeline_roster.hpp"

#include <gtest/gtest.h>

namespace spindle::serving {
namespace {

using action = roster_action;

roster_member toml(std::string bridge) { return {true, false, false, std::move(bridge)}; }
roster_member joined(std::string bridge) { return {true, false, true, std::move(bridge)}; }
// A member as the process of its `incarnation`-th join lists it.
roster_member again(roster_member m, std::uint64_t incarnation) {
  m.incarnation = incarnation;
  return m;
}

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

TEST(pipeline_roster_test,
     a_joined_rank_back_as_a_new_process_between_two_lists_is_gone_and_added) {
  pipeline_roster r;
  r.update({{1, toml("b1")}, {3, again(joined("b3"), 1)}});
  // It died and joined again (and serves) between two polls: same rank, same flags.
  const std::vector<roster_change> want = {{3, action::gone, ""}, {3, action::add, "b3-new"}};
  EXPECT_EQ(r.update({{1, toml("b1")}, {3, again(joined("b3-new"), 2)}}), want);
  EXPECT_TRUE(r.update({{1, toml("b1")}, {3, again(joined("b3-new"), 2)}}).empty());
  // Even with the very member entry of the last list but the incarnation.
  const std::vector<roster_change> same = {{3, action::gone, ""}, {3, action::add, "b3-new"}};
  EXPECT_EQ(r.update({{1, toml("b1")}, {3, again(joined("b3-new"), 3)}}), same);
  EXPECT_EQ(r.ranks(), (std::vector<int>{1, 3}));
}

TEST(pipeline_roster_test, a_new_process_not_serving_yet_is_gone_now_and_added_once_it_serves) {
  pipeline_roster r;
  r.update({{2, again(toml("b2"), 1)}, {3, again(joined("b3"), 1)}});
  auto toml_waiting = again(toml(""), 2), joined_waiting = again(joined(""), 2);
  toml_waiting.serving = joined_waiting.serving = false;
  EXPECT_EQ(r.update({{2, toml_waiting}, {3, joined_waiting}}),
            (std::vector<roster_change>{{2, action::gone, ""}, {3, action::gone, ""}}));
  EXPECT_TRUE(r.ranks().empty());
  EXPECT_EQ(r.update({{2, again(toml("b2-new"), 2)}, {3, again(joined("b3-new"), 2)}}),
            (std::vector<roster_change>{{2, action::add, "b2-new"}, {3, action::add, "b3-new"}}));
}

TEST(pipeline_roster_test, a_rank_that_left_and_joined_again_between_two_lists_is_fed_again) {
  pipeline_roster r;
  r.update({{1, toml("b1")}, {3, again(joined("b3"), 1)}});
  auto leaving = again(joined("b3"), 1);
  leaving.leaving = true;
  r.update({{1, toml("b1")}, {3, leaving}});
  // It exited and a new process joined as rank 3 before the next poll.
  EXPECT_EQ(r.update({{1, toml("b1")}, {3, again(joined("b3-new"), 2)}}),
            (std::vector<roster_change>{{3, action::gone, ""}, {3, action::add, "b3-new"}}));
}

TEST(pipeline_roster_test, a_thousand_joins_and_leaves_hold_at_most_the_live_ranks) {
  pipeline_roster r;
  std::size_t most = 0;
  for (std::uint64_t i = 1; i <= 1000; ++i) {
    auto m = again(joined("b3-" + std::to_string(i)), i);
    r.update({{1, toml("b1")}, {3, m}});
    most = std::max(most, r.ranks().size());
    if (i % 3 == 0) continue;  // it dies: gone at the next list, or replaced by the next one
    m.leaving = true;
    r.update({{1, toml("b1")}, {3, m}});
    r.update({{1, toml("b1")}});
    EXPECT_EQ(r.ranks(), (std::vector<int>{1})) << "cycle " << i;
  }
  EXPECT_EQ(most, 2u);
}

TEST(pipeline_roster_test, names_every_action) {
  for (auto a : {action::add, action::up, action::down, action::leave, action::gone})
    EXPECT_NE(to_string(a), "unknown");
  EXPECT_EQ(to_string(action::gone), "gone");
}

}  // namespace
}  // namespace spindle::serving
