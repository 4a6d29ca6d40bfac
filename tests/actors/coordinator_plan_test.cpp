// The coordinator's placement targets as ranks join and die: a joined rank that
// dies before every member read the plan it holds rows of leaves that plan
// unfinishable, and the next re-plan is refused naming that rank and the way
// out (a rank joining as it), which then completes the plan.
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
std::string plan_to(caf::scoped_actor& self, const caf::actor& coord, int epoch, int ranks) {
  std::string out = "no answer";
  self->request(coord, std::chrono::seconds(5), plan_atom::value, epoch,
                "fap-" + std::to_string(epoch), ranks)
      .receive([&](ok_atom) { out.clear(); }, [&](caf::error& e) { out = to_string(e); });
  return out;
}

bool rank_alive(caf::scoped_actor& self, const caf::actor& coord, int rank) {
  bool alive = false;
  self->request(coord, std::chrono::seconds(5), status_atom::value)
      .receive(
          [&](const std::string& text) {
            for (const auto& m : nlohmann::json::parse(text))
              if (m["rank"] == rank) alive = m["alive"].get<bool>();
          },
          [](caf::error&) {});
  return alive;
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
  for (int i = 0; i < 500 && rank_alive(self, coord, 3); ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  ASSERT_FALSE(rank_alive(self, coord, 3));
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

}  // namespace
}  // namespace spindle::actors
