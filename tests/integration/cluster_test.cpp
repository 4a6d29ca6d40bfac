// Three real `spindle node` processes on loopback (coordinator + 2 nodes): they
// join over CAF's middleman, a killed node is seen down, a restarted one rejoins;
// they serve Cora (whole, with a disk tier, or partitioned) exactly like one
// process, through re-placements, member kills, freezes and restarts.
#include <caf/all.hpp>
#include <caf/io/all.hpp>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <random>
#include <set>
#include <sstream>
#include <thread>

#include "actors/node_actor.hpp"
#include "config/topology.hpp"
#include "runtime/token_file.hpp"
#include "transport/net/token_relay.hpp"
#include "tests/integration/cluster_support.hpp"

namespace spindle {
namespace {

using namespace cluster_testing;

// A stranger reaching the coordinator's CAF port without the cluster token
// never reaches CAF (the port is a token gate); one holding the token can
// neither set a placement plan nor speak for a member: `plan` is answered
// unauthorized, and `shard` / `ready` claiming rank 1 are dropped (before:
// every rank logged `placement epoch 1 failed` each second and rank 0 refused
// 20% of calls). Garbage on either rank's port closes that connection only
// (before: one packet got rank 1 declared down and made it rejoin).
TEST(cluster_test, a_stranger_cannot_change_the_placement_or_speak_for_a_member) {
  std::string dir = graph::testing::temp_dir("cluster_stranger");
  std::string config = dir + "/cluster.toml";
  const int coord_port = free_port(), member_port = free_port();
  std::ofstream f(config);
  f << "coordinator = \"coord\"\n[[server]]\nname = \"coord\"\nhost = \"127.0.0.1\"\nport = "
    << coord_port << "\nmemory = \"1GiB\"\n[[server]]\nname = \"shard-a\"\nhost = "
    << "\"127.0.0.1\"\nport = " << member_port << "\nmemory = \"1GiB\"\n";
  f.close();
  int caf_ports[2] = {0, 0};
  auto coord = start_node(config, 0, &caf_ports[0]);
  auto a = start_node(config, 1, &caf_ports[1]);
  ASSERT_TRUE(wait_member(config, 1, true, 1));
  const auto before = cluster_status(config);
  {
    caf::actor_system_config cfg;
    cfg.load<caf::io::middleman>();
    caf::actor_system sys{cfg};
    // Without the cluster token, CAF never gets past the coordinator's gate.
    auto direct = sys.middleman().remote_actor("127.0.0.1", std::uint16_t(coord_port));
    EXPECT_FALSE(direct) << "a stranger reached the coordinator's CAF port";
    // With it (a process that holds the token but did not join as rank 1),
    // control messages for rank 1 are still dropped and `plan` refused.
    auto topo = config::load_topology(config);
    ASSERT_TRUE(topo.has_value());
    auto token = runtime::token_file(topo->token_file, "cluster token file", false);
    ASSERT_TRUE(token.has_value()) << token.error().message();
    auto dialer = transport::net::token_relay::dialer("127.0.0.1", coord_port, *token, "dialer");
    ASSERT_TRUE(dialer.has_value());
    auto remote = sys.middleman().remote_actor("127.0.0.1", std::uint16_t((*dialer)->port()));
    ASSERT_TRUE(remote) << sys.render(remote.error());
    caf::scoped_actor self{sys};
    std::string refused;
    self->request(*remote, std::chrono::seconds(5), actors::plan_atom::value, 99,
                  std::string("forged"), 3, std::uint64_t{0})
        .receive([&](actors::ok_atom) { refused = "accepted"; },
                 [&](caf::error& e) { refused = sys.render(e); });
    EXPECT_NE(refused.find("unauthorized: plan"), std::string::npos) << refused;
    self->send(*remote, actors::shard_atom::value, 1, 7, std::string("forged-descriptor"));
    self->send(*remote, actors::ready_atom::value, 1, std::string("forged-bridge"));
    self->send(*remote, actors::retire_atom::value, 1, 0);
    std::this_thread::sleep_for(std::chrono::milliseconds(500));
  }
  const auto after = cluster_status(config);
  for (const auto& m : after) {
    if (m["rank"] != 1) continue;
    for (const auto& was : before)
      if (was["rank"] == 1) {
        EXPECT_EQ(m["descriptor"], was["descriptor"]);
        EXPECT_EQ(m["bridge"], was["bridge"]);
        EXPECT_EQ(m["epoch"], was["epoch"]);
      }
  }
  for (const auto& m : after) {
    if (m["rank"] == 0) {
      EXPECT_EQ(m["target"], 0) << "a stranger set the placement plan";
    }
  }
  // Garbage on either rank's CAF port (random 104-byte packets, and a BASP
  // header claiming a huge payload) closes that connection only: rank 1 stays
  // alive and joined once.
  std::mt19937 rng(104);
  std::vector<std::string> packets;
  for (int k = 0; k < 20; ++k) {
    std::string p(104, '\0');
    for (auto& c : p) c = char(rng() & 0xff);
    packets.push_back(p);
  }
  packets.push_back(std::string(1, '\x00') + std::string(39, '\xff') + std::string(64, 'x'));
  // Every port either rank listens on (its gate, the relays its links run
  // through, UCX's own listeners) but CAF's loopback port behind the gate,
  // which only processes on the rank's own host can reach.
  std::vector<int> ports;
  for (auto* c : {&a, &coord})
    for (int port : listening_ports(c->pid()))
      if (port != caf_ports[0] && port != caf_ports[1]) ports.push_back(port);
  EXPECT_GE(ports.size(), 2u);
  std::printf("garbage to %zu listening ports of the two ranks\n", ports.size());
  for (int port : ports)
    for (const auto& p : packets) send_and_close(port, p);
  for (auto* c : {&a, &coord}) EXPECT_FALSE(c->try_wait().has_value()) << "a rank died";
  // 400 unproven connections held on rank 0's gate from another address: a
  // process with the token still gets through (the oldest unproven make room).
  std::vector<int> held;
  for (int k = 0; k < 400; ++k) {
    const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in from{}, to{};
    from.sin_family = to.sin_family = AF_INET;
    ::inet_pton(AF_INET, "127.0.0.2", &from.sin_addr);
    to.sin_port = htons(std::uint16_t(coord_port));
    to.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (::bind(fd, reinterpret_cast<sockaddr*>(&from), sizeof from) == 0 &&
        ::connect(fd, reinterpret_cast<sockaddr*>(&to), sizeof to) == 0)
      held.push_back(fd);
    else
      ::close(fd);
  }
  const auto during = cluster_status(config);
  EXPECT_EQ(during.size(), 2u) << "cluster-status could not pass a flooded gate";
  std::printf("cluster-status through a gate holding %zu unproven connections: %zu members\n",
              held.size(), during.size());
  for (int fd : held) ::close(fd);
  for (int k = 0; k < 15; ++k) {
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    for (const auto& m : cluster_status(config))
      if (m["rank"] == 1) {
        EXPECT_TRUE(m["alive"].get<bool>()) << "garbage on a CAF port took rank 1 down";
        EXPECT_EQ(m["joins"], 1);
      }
  }
  for (auto* c : {&a, &coord}) c->signal(SIGTERM);
  for (auto* c : {&a, &coord}) c->wait();
}

TEST(cluster_test, nodes_join_a_killed_node_is_seen_down_and_a_restart_rejoins) {
  std::string dir = graph::testing::temp_dir("cluster");
  std::string config = dir + "/cluster.toml";
  std::ofstream f(config);
  f << "coordinator = \"coord\"\n";
  for (const char* name : {"coord", "shard-a", "shard-b"})
    f << "[[server]]\nname = \"" << name << "\"\nhost = \"127.0.0.1\"\nport = " << free_port()
      << "\nmemory = \"1GiB\"\n";
  f.close();
  auto coord = start_node(config, 0);
  auto a = start_node(config, 1);
  auto b = start_node(config, 2);
  // cluster-status lists descriptors and bridge addresses: only with the cluster
  // token (rank 0 created it with the user's state, mode 0600).
  EXPECT_EQ(std::filesystem::status(config::default_token_file(config)).permissions() &
                std::filesystem::perms::others_read,
            std::filesystem::perms::none);
  {
    const std::string wrong = dir + "/wrong.token";
    std::ofstream(wrong) << "0123456789abcdef0123\n";
    std::filesystem::permissions(
        wrong, std::filesystem::perms::owner_read | std::filesystem::perms::owner_write);
    auto c = child_process::spawn({"/bin/sh", "-c",
                                   std::string(SPINDLE_BINARY) + " cluster-status --config " +
                                       config + " --token-file " + wrong + " 2>&1"});
    std::string out;
    while (auto l = c->read_line(20'000)) out += *l;
    EXPECT_NE(c->wait(), 0);
    EXPECT_NE(out.find("refused the cluster token"), std::string::npos) << out;
    std::filesystem::permissions(wrong, std::filesystem::perms::others_read,
                                 std::filesystem::perm_options::add);
    c = child_process::spawn({"/bin/sh", "-c",
                              std::string(SPINDLE_BINARY) + " cluster-status --config " + config +
                                  " --token-file " + wrong + " 2>&1"});
    out.clear();
    while (auto l = c->read_line(20'000)) out += *l;
    EXPECT_NE(c->wait(), 0);
    EXPECT_NE(out.find("open to other users"), std::string::npos) << out;
  }
  EXPECT_TRUE(wait_member(config, 1, true, 1));
  EXPECT_TRUE(wait_member(config, 2, true, 1));
  a.signal(SIGKILL);
  a.wait();
  EXPECT_TRUE(wait_member(config, 1, false, 1));  // CAF down message, no hang
  EXPECT_TRUE(wait_member(config, 2, true, 1));
  auto again = start_node(config, 1);
  EXPECT_TRUE(wait_member(config, 1, true, 2));
  for (auto* c : {&again, &b, &coord}) c->signal(SIGTERM);
  for (auto* c : {&again, &b, &coord}) EXPECT_EQ(c->wait(), 0);
}

class cluster_serving_test : public cora_transport_test {};

// Reads the coordinator's "batches B here H on members M" line: members took
// some, the counts add up, and there were at least `least` batches.
void expect_members_took_batches(child_process& coord, std::uint64_t least) {
  auto batches = coord.wait_for("batches ", 240'000);
  ASSERT_TRUE(batches.has_value()) << batches.error().to_string();
  std::uint64_t total = 0, here = 0, on_members = 0;
  ASSERT_EQ(
      std::sscanf(batches->c_str(), "%lu here %lu on members %lu", &total, &here, &on_members), 3)
      << *batches;
  EXPECT_GT(on_members, 0u) << *batches;
  EXPECT_EQ(here + on_members, total) << *batches;
  EXPECT_GE(total, least) << *batches;
}

// Waits for the coordinator's `answers` line; every one of the `n` requests must
// be answered with the single-process checksum. Returns the line ("" if none).
std::string expect_single_process_answers(child_process& coord, const cora_cluster& c,
                                          std::size_t n, int timeout_ms) {
  auto line = coord.wait_for("answers ", timeout_ms);
  EXPECT_TRUE(line.has_value()) << line.error().to_string();
  if (!line) return {};
  EXPECT_NE(line->find("failed 0 checksum " + checksum_hex(c.expected_checksum(n))),
            std::string::npos)
      << *line;
  return *line;
}

// Three processes serve 10,000 GraphSAGE requests on Cora with the features
// partitioned by FAP over their shards (UCX one-sided reads across processes);
// the answers' checksum equals the single-process one computed here.
TEST_P(cluster_serving_test, three_processes_answer_exactly_like_one) {
  cora_cluster c("cluster_serving");
  ASSERT_TRUE(c.ready()) << "spindle prepare failed";
  auto [members, coord] = c.start(10000, ucx_env(GetParam()));
  // Members sampled and computed some of the batches (sent over the UCX bridge).
  expect_members_took_batches(coord, 0);
  const auto line = expect_single_process_answers(coord, c, 10000, 60'000);
  EXPECT_EQ(line.find("from other nodes 0\n"), std::string::npos) << line;  // rows crossed
  stop_cluster(coord, members);
}

// Every rank runs two pipelines (`--pipelines 2`, registered at the bridge as
// "pipeline" and "pipeline.1"); the coordinator's batcher feeds all six with
// batches of at most 8: members' pipelines take batches and the answers still
// equal one process's.
TEST(cluster_pipelines_test, two_pipelines_per_node_answer_exactly_like_one_process) {
  if (!have_cora()) GTEST_SKIP() << "the test data folder (SPINDLE_TEST_DATA_DIR) is not present";
  cora_cluster c("cluster_pipelines");
  ASSERT_TRUE(c.ready()) << "spindle prepare failed";
  const std::vector<std::string> flags = {"--pipelines", "2", "--max-batch", "8"};
  auto members = c.members({}, flags);
  auto coord = c.coordinator(4000, {}, flags);
  auto serving = coord.wait_for("serving ", 240'000);
  ASSERT_TRUE(serving.has_value()) << serving.error().to_string();
  EXPECT_NE(serving->find("on 6 pipelines (4 on 2 members)"), std::string::npos) << *serving;
  expect_members_took_batches(coord, 4000 / 8);  // no batch above --max-batch
  expect_single_process_answers(coord, c, 4000, 60'000);
  stop_cluster(coord, members);
}

// Servers with a disk tier beside host memory (3 MB of host memory each: most
// of Cora's 15.5 MB of features land in the disk tiers' shards). Each node
// publishes all its shards in one region and readers address each shard at
// its offset, so the answers equal one process's (before, every remote shard
// was read as its server's host shard: silently wrong answers).
TEST_P(cluster_serving_test, servers_with_a_disk_tier_answer_exactly_like_one_process) {
  cora_cluster c("cluster_tiers", "memory = 3000000\ndisk = 100000000\n");
  ASSERT_TRUE(c.ready()) << "spindle prepare failed";
  auto [members, coord] = c.start(3000, ucx_env(GetParam()));
  expect_single_process_answers(coord, c, 3000, 240'000);
  stop_cluster(coord, members);
}

// A partitioned dataset (`spindle partition`): each rank's folder holds the
// graph and only the feature rows of its shards, and the whole dataset is moved
// away before the ranks start, so no rank can read a row it does not own; the
// cluster re-plans while serving (rows moved over UCX from their owners) and the
// answers still equal one process's over the whole dataset.
TEST_P(cluster_serving_test, ranks_serving_only_their_partition_answer_like_one_process) {
  cora_cluster c("cluster_partition");
  ASSERT_TRUE(c.ready()) << "spindle prepare failed";
  ASSERT_NO_FATAL_FAILURE(partition(c));
  const std::string parts = c.serve;
  const auto full_bytes = std::filesystem::file_size(c.cora + "/features.npy");
  for (int rank : {0, 1, 2}) {
    const std::string r = parts + "/rank-" + std::to_string(rank);
    EXPECT_FALSE(std::filesystem::exists(r + "/features.npy")) << r;
    EXPECT_LT(std::filesystem::file_size(r + "/part_features.npy"), full_bytes) << r;
    EXPECT_TRUE(std::filesystem::exists(r + "/indices.npy")) << r;  // the graph, replicated
  }
  const auto env = ucx_env(GetParam());
  // With re-placement while serving: a partition has no copy of the rows it does
  // not own, so every row a new epoch moves is read from its owner over UCX.
  auto [members, coord] = c.start(30000, env, kReplanSoon);
  auto applied = coord.wait_for("placement epoch ", 240'000);
  ASSERT_TRUE(applied.has_value()) << applied.error().to_string();
  EXPECT_NE(applied->find(" applied: rows moved since epoch 0 "), std::string::npos) << *applied;
  expect_single_process_answers(coord, c, 30000, 240'000);
  stop_cluster(coord, members);
  // A rank's folder used for another rank is refused by name.
  auto wrong = child_process::spawn({SPINDLE_BINARY, "node", "--config", c.config, "--rank", "1",
                                     "--dataset", parts + "/rank-2", "--model", c.model},
                                    env);
  ASSERT_TRUE(wrong.has_value());
  EXPECT_NE(wrong->wait(), 0);
}

// Live re-placement: with a low drift threshold the coordinator's placement
// actor re-plans from the observed accesses while 30,000 requests are served;
// every node builds its shard of the new epoch beside the old one, readers
// switch, old shards are freed, and every answer still equals the
// single-process answer (no request fails, none is lost).
TEST_P(cluster_serving_test, a_replan_migrates_rows_while_serving) {
  cora_cluster c("cluster_replan");
  ASSERT_TRUE(c.ready()) << "spindle prepare failed";
  auto [members, coord] = c.start(30000, ucx_env(GetParam()), kReplanSoon);
  auto replans = coord.wait_for("placement replans ", 240'000);
  ASSERT_TRUE(replans.has_value()) << replans.error().to_string();
  unsigned long count = 0;
  ASSERT_EQ(std::sscanf(replans->c_str(), "%lu", &count), 1) << *replans;
  EXPECT_GE(count, 1u) << *replans;
  auto applied = coord.wait_for("placement epoch ", 60'000);
  ASSERT_TRUE(applied.has_value()) << applied.error().to_string();
  EXPECT_NE(applied->find(" applied: rows moved since epoch 0 "), std::string::npos) << *applied;
  unsigned long epoch = 0, moved = 0;
  ASSERT_EQ(
      std::sscanf(applied->c_str(), "%lu applied: rows moved since epoch 0 %lu", &epoch, &moved), 2)
      << *applied;
  EXPECT_GE(epoch, 1u);
  EXPECT_GT(moved, 0u) << *applied;
  auto line = coord.wait_for("answers ", 60'000);
  ASSERT_TRUE(line.has_value()) << line.error().to_string();
  EXPECT_NE(line->find("failed 0 checksum " + checksum_hex(c.expected_checksum(30000))),
            std::string::npos)
      << *line;
  stop_cluster(coord, members);
}

// Kill one member while the coordinator serves. Over tcp its gets fail; over
// UCX's default (shared memory) its mapped rows would stay readable, so the
// coordinator's down message (CAF monitor) marks its shards unreachable. Either
// way: no hang; the requests that lost every owner of a row fail with a clean
// error; rows with a live replica keep being served; every answered request
// still equals the single-process answer.
INSTANTIATE_TEST_SUITE_P(transports, cluster_serving_test, ::testing::Values("", "tcp"),
                         [](const auto& info) {
                           return info.param.empty() ? "ucx_default" : info.param;
                         });

}  // namespace
}  // namespace spindle
