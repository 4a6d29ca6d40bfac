// A loopback cluster serving Cora while a member fails: killed mid-run (only its
// requests fail, every other answer equals one process's), frozen (declared down,
// serving goes on), restarted (its rows are read again); over UCX's default
// transports and over tcp.
#include <gtest/gtest.h>
#include <signal.h>

#include <chrono>
#include <functional>
#include <sstream>
#include <thread>

#include "core/text_file.hpp"
#include "tests/integration/cluster_support.hpp"

namespace spindle {
namespace {

using namespace cluster_testing;

class cluster_serving_failure_test : public cora_transport_test {};

// Reads the coordinator's output up to its "answers" line, collecting failed request ids.
// `placement`, if given, gets the "placement epoch ..." line.
void read_answers(child_process& coord, int timeout_ms, std::vector<std::uint64_t>& failed,
                  std::string& answers, std::string* placement = nullptr) {
  for (;;) {
    auto line = coord.read_line(timeout_ms);
    ASSERT_TRUE(line.has_value()) << "coordinator hung or died";
    if (placement && line->rfind("placement epoch ", 0) == 0) *placement = *line;
    if (line->rfind("failed_ids ", 0) == 0) {
      std::stringstream ids(line->substr(11));
      for (std::string id; std::getline(ids, id, ',');) failed.push_back(std::stoull(id));
    }
    if (line->rfind("answers ", 0) == 0) {
      answers = *line;
      return;
    }
  }
}

// The file `log` (a process's log, written as it runs) from byte `from` on.
std::string log_since(const std::string& log, std::size_t from) {
  const auto held = read_text_file(log, "the coordinator's log");
  return held && from < held->size() ? held->substr(from) : std::string();
}

// Waits until `log` holds `text` past byte `from`; fails, showing the log, if
// `proc` ends first or `timeout_ms` pass.
void wait_for_log(child_process& proc, const std::string& log, std::size_t from,
                  std::string_view text, int timeout_ms) {
  const auto until = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
  while (log_since(log, from).find(text) == std::string::npos) {
    ASSERT_FALSE(proc.try_wait().has_value())
        << "the coordinator ended before logging '" << text << "':\n"
        << log_since(log, 0);
    ASSERT_LT(std::chrono::steady_clock::now(), until)
        << "no '" << text << "' in the coordinator's log:\n"
        << log_since(log, 0);
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
}

// Rank 1 (members[0]) is lost half a second into a 50,000-request workload by
// `lose`; the workload must still finish within `timeout_ms`, with some but not
// all requests failed and every other answer equal to one process's. Returns
// the failed requests' ids.
std::vector<std::uint64_t> lose_a_member_mid_run(const cora_cluster& c, child_process& coord,
                                                 const std::function<void()>& lose,
                                                 int timeout_ms) {
  std::vector<std::uint64_t> failed;
  EXPECT_TRUE(coord.wait_for("serving", 120'000).has_value());
  std::this_thread::sleep_for(std::chrono::milliseconds(500));
  lose();
  std::string answers;
  read_answers(coord, timeout_ms, failed, answers);
  EXPECT_LT(failed.size(), 50000u) << answers;  // requests before the loss were answered
  EXPECT_NE(answers.find("checksum " + checksum_hex(c.expected_checksum(50000, failed))),
            std::string::npos)
      << answers;
  return failed;
}

TEST_P(cluster_serving_failure_test, a_member_killed_mid_run_fails_only_its_requests) {
  cora_cluster c("cluster_kill");
  ASSERT_TRUE(c.ready()) << "spindle prepare failed";
  auto [members, coord] = c.start(50000, ucx_env(GetParam()));
  const auto failed = lose_a_member_mid_run(
      c, coord,
      [&] {
        members[0].signal(SIGKILL);
        members[0].wait();
      },
      120'000);
  EXPECT_FALSE(failed.empty());
  stop_cluster(coord, members, 1);  // members[0] was killed
}

// A frozen member (SIGSTOP) is declared down by heartbeats within the peer
// timeout (1 s by default), like a killed one: the workload finishes, only the
// requests it held or whose rows only it had fail, and every other answer
// equals one process's. Before: it stayed alive=true and requests waited the
// bridge's full 30 s.
TEST_P(cluster_serving_failure_test, a_frozen_member_is_declared_down_and_serving_goes_on) {
  // Over UCX's tcp transport this once made UCX 1.13 abort other processes
  // (ucs_fatal in ucp_get_req_handler, an assertion in ucp_worker_destroy);
  // reads now go as messages the owner answers (transport/ucx/am_reads.hpp)
  // and a worker with a request stuck on the frozen peer is kept until exit.
  cora_cluster c("cluster_freeze");
  ASSERT_TRUE(c.ready()) << "spindle prepare failed";
  auto [members, coord] = c.start(50000, ucx_env(GetParam()));
  std::chrono::steady_clock::time_point frozen;
  lose_a_member_mid_run(
      c, coord,
      [&] {
        members[0].signal(SIGSTOP);
        frozen = std::chrono::steady_clock::now();
      },
      60'000);
  EXPECT_LT(std::chrono::steady_clock::now() - frozen, std::chrono::seconds(20));
  members[0].signal(SIGCONT);
  members[0].signal(SIGKILL);  // woken, it has lost its coordinator: not part of this test
  members[0].wait();
  stop_cluster(coord, members, 1);
}

// A killed member that is restarted rejoins, publishes a new region, and the
// coordinator reads its shards again: requests fail only while it was gone.
TEST_P(cluster_serving_failure_test, a_restarted_member_is_read_again) {
  // Rejoining does not depend on the transport (the kill test covers tcp's
  // failure detection); one transport keeps the suite's time down.
  if (!GetParam().empty()) GTEST_SKIP() << "rejoin runs over UCX's default transports only";
  cora_cluster c("cluster_rejoin");
  ASSERT_TRUE(c.ready()) << "spindle prepare failed";
  const auto env = ucx_env(GetParam());
  constexpr std::size_t n = 120000;
  // Re-plans run meanwhile: the killed member restarts at epoch 0 and must
  // catch up with the cluster's epoch by itself before it is read again.
  auto members = c.members(env);
  const std::string log = c.dir + "/coordinator.log";
  struct show_log_on_failure {  // the folder is swept when the binary exits
    const std::string& log;
    ~show_log_on_failure() {
      if (::testing::Test::HasFailure())
        ADD_FAILURE() << "the coordinator's log:\n" << log_since(log, 0);
    }
  } show{log};
  auto coord = c.coordinator(n, env, kReplanSoon, log);
  ASSERT_TRUE(coord.wait_for("serving", 120'000).has_value());
  std::this_thread::sleep_for(std::chrono::milliseconds(1500));
  const std::size_t before_kill = log_since(log, 0).size();
  members[0].signal(SIGKILL);
  members[0].wait();
  // Restarted once the coordinator has marked its shards unreachable. Back before
  // that (seen under a loaded CI machine), no call fails: the ranks read its rows
  // from their own copies of the dataset meanwhile, which is right, but its
  // shards being read again would then go unchecked.
  ASSERT_NO_FATAL_FAILURE(
      wait_for_log(coord, log, before_kill, "rank 1 is down: its shards are unreachable", 60'000));
  members[0] = c.member(1, env);
  std::vector<std::uint64_t> failed;
  std::string answers, placement;
  ASSERT_NO_FATAL_FAILURE(read_answers(coord, 240'000, failed, answers, &placement));
  ASSERT_FALSE(failed.empty()) << answers;
  EXPECT_LT(*std::max_element(failed.begin(), failed.end()), n * 9 / 10)
      << "requests still failed near the end: the member was not read again";
  EXPECT_NE(answers.find("checksum " + checksum_hex(c.expected_checksum(n, failed))),
            std::string::npos)
      << answers;
  EXPECT_NE(placement.find(" applied: "), std::string::npos) << placement;
  coord.signal(SIGTERM);
  EXPECT_EQ(coord.wait(), 0);
  for (auto& m : members) m.signal(SIGTERM);
  for (auto& m : members) m.wait();
}

INSTANTIATE_TEST_SUITE_P(transports, cluster_serving_failure_test, ::testing::Values("", "tcp"),
                         [](const auto& info) {
                           return info.param.empty() ? "ucx_default" : info.param;
                         });

}  // namespace
}  // namespace spindle
