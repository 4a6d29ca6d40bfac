// The coordinator's placement targets as ranks join and die: a joined rank that
// dies before every member read the plan it holds rows of leaves that plan
// unfinishable, and the next re-plan is refused naming that rank and the way
// out (a rank joining as it), which then completes the plan. One that dies or
// leaves below a live joined rank is planned as absent.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <thread>

#include "actors/node_actor.hpp"

namespace spindle::actors {
namespace {

const std::string kPlanTestToken(64, 'c');

// Rank `rank` joins `coord` from `self`, a rank past the TOML's when `address` is set.
void join_as(caf::scoped_actor& self, const caf::actor& coord, int rank,
             const std::string& address = {}) {
  const std::string who = "rank-" + std::to_string(rank);
  // A joined rank holds no rows until it builds its shard of a plan with it.
  const std::string descriptor = address.empty() ? "d" + std::to_string(rank) : "";
  auto fail = [&](caf::error& e) { ADD_FAILURE() << who << ": " << to_string(e); };
  if (address.empty())
    self->request(coord, std::chrono::seconds(5), join_atom::value, rank, who, 100 + rank,
                  descriptor, std::string(), kPlanTestToken)
        .receive([](ok_atom, const std::string&) {}, fail);
  else
    self->request(coord, std::chrono::seconds(5), join_atom::value, rank, who, 100 + rank,
                  descriptor, std::string(), kPlanTestToken, address)
        .receive([](ok_atom, const std::string&) {}, fail);
}

// Rank 0's placement asks for a new target plan: "" if taken, else the refusal.
std::string plan_to(caf::scoped_actor& self, const caf::actor& coord, int epoch, int ranks,
                    std::uint64_t absent = 0) {
  std::string out = "no answer";
  self->request(coord, std::chrono::seconds(5), plan_atom::value, epoch,
                "fap-" + std::to_string(epoch), ranks, absent)
      .receive([&](ok_atom) { out.clear(); }, [&](caf::error& e) { out = to_string(e); });
  return out;
}

// The coordinator's member list (empty on no answer).
nlohmann::json members(caf::scoped_actor& self, const caf::actor& coord) {
  nlohmann::json out = nlohmann::json::array();
  self->request(coord, std::chrono::seconds(5), status_atom::value)
      .receive([&](const std::string& text) { out = nlohmann::json::parse(text); },
               [](caf::error&) {});
  return out;
}

bool rank_alive(caf::scoped_actor& self, const caf::actor& coord, int rank) {
  for (const auto& m : members(self, coord))
    if (m["rank"] == rank) return m["alive"].get<bool>();
  return false;
}

void wait_dead(caf::scoped_actor& self, const caf::actor& coord, int rank) {
  for (int i = 0; i < 500 && rank_alive(self, coord, rank); ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  ASSERT_FALSE(rank_alive(self, coord, rank));
}

// Every live member holds epoch `epoch`'s shard, reads it and freed the one before.
void all_read(caf::scoped_actor& self, const caf::actor& coord, std::vector<int> ranks, int epoch) {
  for (int r : ranks) {
    self->send(coord, shard_atom::value, r, epoch, "d" + std::to_string(r) + "-" + std::to_string(epoch));
    self->send(coord, reading_atom::value, r, epoch, std::string());
    self->send(coord, retire_atom::value, r, epoch - 1);
  }
}

// Rank 0's line of the member list: the ranks the next plan should have.
std::pair<int, std::uint64_t> next_ranks(caf::scoped_actor& self, const caf::actor& coord) {
  for (const auto& m : members(self, coord))
    if (m["rank"] == 0) return {m.value("ranks", 0), m.value("absent_next", std::uint64_t{0})};
  return {-1, 0};
}

TEST(coordinator_plan_test, a_joined_rank_dead_before_its_plan_was_read_is_named_until_replaced) {
  caf::actor_system_config cfg;
  caf::actor_system sys{cfg};
  auto coord = spawn_coordinator(sys, "coord", "d0", "", kPlanTestToken, "", {}, 3);
  caf::scoped_actor self{sys};
  caf::scoped_actor rank1{sys}, rank2{sys};
  join_as(rank1, coord, 1);
  join_as(rank2, coord, 2);
  auto rank3 = std::make_unique<caf::scoped_actor>(sys);
  join_as(*rank3, coord, 3, "127.0.0.1:7003");
  // The placement re-plans over four ranks; the three TOML ranks build their shards.
  ASSERT_EQ(plan_to(self, coord, 1, 4), "");
  for (int r = 0; r < 3; ++r)
    self->send(coord, shard_atom::value, r, 1, "d" + std::to_string(r) + "-1");
  // Rank 3 dies before it published its shard: no member can read epoch 1.
  rank3.reset();
  wait_dead(self, coord, 3);
  const auto why = plan_to(self, coord, 2, 3);
  EXPECT_NE(why.find("epoch 1 cannot be applied: rank 3 (joined from 127.0.0.1:7003)"),
            std::string::npos)
      << why;
  EXPECT_NE(why.find("read epoch 0 on"), std::string::npos) << why;
  EXPECT_NE(why.find("a rank joining as rank 3"), std::string::npos) << why;

  // A rank joining as rank 3 builds its shard: every member reads epoch 1, frees
  // epoch 0, and the next re-plan is taken.
  caf::scoped_actor again{sys};
  join_as(again, coord, 3, "127.0.0.1:7013");
  self->send(coord, shard_atom::value, 3, 1, std::string("d3-1"));
  for (int r = 0; r < 4; ++r) {
    self->send(coord, reading_atom::value, r, 1, std::string());
    self->send(coord, retire_atom::value, r, 0);
  }
  EXPECT_EQ(plan_to(self, coord, 2, 4), "");
  caf::anon_send_exit(coord, caf::exit_reason::user_shutdown);
}

// A joined rank that dies or leaves below a live joined one stays in the plan
// as an absent rank (no rows): rank 0 lists the next plan's ranks with it
// absent, a plan that leaves it absent is taken though it died, and a rank
// joining in its place makes it present again. A TOML rank is never absent.
TEST(coordinator_plan_test, a_joined_rank_gone_below_a_live_one_is_planned_as_absent) {
  caf::actor_system_config cfg;
  caf::actor_system sys{cfg};
  auto coord = spawn_coordinator(sys, "coord", "d0", "", kPlanTestToken, "", {}, 3);
  caf::scoped_actor self{sys};
  caf::scoped_actor rank1{sys}, rank2{sys}, rank4{sys};
  join_as(rank1, coord, 1);
  join_as(rank2, coord, 2);
  auto rank3 = std::make_unique<caf::scoped_actor>(sys);
  join_as(*rank3, coord, 3, "127.0.0.1:7003");
  join_as(rank4, coord, 4, "127.0.0.1:7004");
  EXPECT_EQ(next_ranks(self, coord), std::make_pair(5, std::uint64_t{0}));
  ASSERT_EQ(plan_to(self, coord, 1, 5), "");
  all_read(self, coord, {0, 1, 2, 3, 4}, 1);
  rank3.reset();
  wait_dead(self, coord, 3);
  EXPECT_EQ(next_ranks(self, coord), std::make_pair(5, std::uint64_t{1} << 3));
  // A plan made from the member list before rank 3 died would hold its rows.
  const auto stale = plan_to(self, coord, 2, 5);
  EXPECT_NE(stale.find("epoch 2 is over 5 ranks, but the cluster now has 5 ranks, 3 absent"),
            std::string::npos)
      << stale;
  ASSERT_EQ(plan_to(self, coord, 2, 5, std::uint64_t{1} << 3), "");
  for (const auto& m : members(self, coord))
    if (m["rank"] == 0) {
      EXPECT_EQ(m["absent"], std::uint64_t{1} << 3);
      EXPECT_EQ(m["absent_ranks"], nlohmann::json::array({3}));
      EXPECT_EQ(m["absent_next_ranks"], nlohmann::json::array({3}));
      EXPECT_EQ(m["from_absent"], 0u);
    }
  // Rank 3 holds no rows of epoch 2: its death does not make the plan unfinishable.
  all_read(self, coord, {0, 1, 2, 4}, 2);
  EXPECT_EQ(plan_to(self, coord, 3, 5, std::uint64_t{1} << 3), "");
  all_read(self, coord, {0, 1, 2, 4}, 3);
  // A rank joining as rank 3 is planned again; it may leave though rank 4 is
  // above it (it is then absent again); a TOML rank may not leave.
  caf::scoped_actor again{sys};
  join_as(again, coord, 3, "127.0.0.1:7013");
  EXPECT_EQ(next_ranks(self, coord), std::make_pair(5, std::uint64_t{0}));
  std::string refused;
  self->request(coord, std::chrono::seconds(5), leave_atom::value, 1, kPlanTestToken)
      .receive([&](ok_atom) { refused = "accepted"; }, [&](caf::error& e) { refused = to_string(e); });
  EXPECT_NE(refused.find("rank 1 is one of the TOML's 3 ranks"), std::string::npos) << refused;
  self->request(coord, std::chrono::seconds(5), leave_atom::value, 0, kPlanTestToken)
      .receive([&](ok_atom) { refused = "accepted"; }, [&](caf::error& e) { refused = to_string(e); });
  EXPECT_NE(refused.find("rank 0 coordinates the cluster and cannot leave it"), std::string::npos)
      << refused;
  self->request(coord, std::chrono::seconds(5), leave_atom::value, 3, kPlanTestToken)
      .receive([&](ok_atom) { refused.clear(); }, [&](caf::error& e) { refused = to_string(e); });
  EXPECT_EQ(refused, "");
  EXPECT_EQ(next_ranks(self, coord), std::make_pair(5, std::uint64_t{1} << 3));
  caf::anon_send_exit(coord, caf::exit_reason::user_shutdown);
}

}  // namespace
}  // namespace spindle::actors
