// Shared by the cluster tests (cluster_test.cpp, cluster_door_test.cpp,
// cluster_restart_test.cpp): free ports, real `spindle node` processes and their
// status, a three-server Cora cluster (whole or partitioned) with a GraphSAGE
// model and its single-process reference, and calls through a door.
#pragma once

#include <arpa/inet.h>
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iterator>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>
#include <thread>

#include "../graph/test_util.hpp"
#include "core/checksum.hpp"
#include "core/subprocess.hpp"
#include "nn/ops.hpp"
#include "runtime/graph_updates.hpp"
#include "serving/gnn_pipeline.hpp"
#include "tests/support/loopback_socket.hpp"
#include "transport/net/proc_net.hpp"

namespace spindle::cluster_testing {

// A port free now, below Linux's ephemeral range (32768-60999): the nodes bind it
// seconds later, and a port from the ephemeral range could meanwhile be handed to
// any socket another test opens on port 0. Starts at an offset hashed from this
// process's pid (neighbouring pids land far apart), so parallel test binaries
// rarely probe the same ports.
inline int free_port() {
  static int next = 20000 + int(std::uint64_t(::getpid()) * 2654435761u % 12000);
  for (int tries = 0; tries < 12000; ++tries) {
    const int port = next;
    next = next + 1 >= 32760 ? 20000 : next + 1;
    int fd = ::socket(AF_INET, SOCK_STREAM, 0);
    int one = 1;
    ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    a.sin_port = htons(std::uint16_t(port));
    const bool ok = ::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0;
    ::close(fd);
    if (ok) return port;
  }
  ADD_FAILURE() << "no free port in 20000-32759";
  return 0;
}

/// Starts rank `rank` and waits until it is ready; `caf_port` gets the
/// loopback port CAF listens on behind the rank's gate.
inline child_process start_node(const std::string& config, int rank, int* caf_port = nullptr) {
  auto c = child_process::spawn(
      {SPINDLE_BINARY, "node", "--config", config, "--rank", std::to_string(rank)});
  EXPECT_TRUE(c.has_value());
  auto behind = c->wait_for("node ", 30'000);
  EXPECT_TRUE(behind.has_value()) << "rank " << rank;
  if (caf_port && behind) *caf_port = testing::port_of(*behind);
  EXPECT_TRUE(c->wait_for("ready", 30'000).has_value()) << "rank " << rank;
  return std::move(*c);
}

inline nlohmann::json cluster_status(const std::string& config) {
  auto c = child_process::spawn({SPINDLE_BINARY, "cluster-status", "--config", config, "--json"});
  auto line = c->read_line(20'000);
  EXPECT_TRUE(line.has_value());
  c->wait();
  return line ? nlohmann::json::parse(*line) : nlohmann::json::array();
}

// Polls the coordinator until member `rank` has the wanted state.
inline bool wait_member(const std::string& config, int rank, bool alive, int joins) {
  for (int i = 0; i < 100; ++i) {
    for (const auto& m : cluster_status(config))
      if (m["rank"] == rank && m["alive"] == alive && m["joins"] == joins) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  return false;
}

inline bool have_cora() {
  return std::filesystem::exists(graph::testing::shared_data("cora/cora.cites"));
}

// Cluster tests run over each UCX transport (the parameter; "" for UCX's
// default) on Cora, skipped where the test data folder is not present.
class cora_transport_test : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    if (!have_cora()) GTEST_SKIP() << "the test data folder (SPINDLE_TEST_DATA_DIR) is not present";
  }
};

inline std::string prepare_cora(const std::string& dir) {
  std::string out = dir + "/cora";
  auto c = child_process::spawn(
      {SPINDLE_BINARY, "prepare", "--input", graph::testing::shared_data("cora/cora.cites"),
       "--features", graph::testing::shared_data("cora/cora.content.gz"), "--undirected", "--out",
       out},
      {"SPINDLE_PROGRESS=0"});
  EXPECT_EQ(c->wait(), 0);
  return out;
}

// Cora prepared, a GraphSAGE model, and a 3-server cluster file with 40% of the
// 15.5 MB feature table per server (FAP partitions most rows, replicates the hottest).
struct cora_cluster {
  std::string dir, cora, model, config;
  std::string serve;  // what the ranks get as --dataset: cora, or a partition of it
  /// `tiers`: each server's memory (and other tiers) in the cluster file.
  explicit cora_cluster(const std::string& name, const std::string& tiers = "memory = 6500000\n")
      : dir(graph::testing::temp_dir(name)) {
    // Answers are bit for bit only under the same BLAS threading: `spindle`
    // runs OpenBLAS single-threaded, so the single-process reference here does too.
    nn::set_blas_threads(1);
    cora = prepare_cora(dir);
    serve = cora;
    model = dir + "/sage";
    EXPECT_EQ(child_process::spawn({SPINDLE_BINARY, "model", "init", "--arch", "graphsage", "--in",
                                    "1433", "--hidden", "32", "--classes", "7", "--out-dir", model})
                  ->wait(),
              0);
    config = dir + "/cluster.toml";
    std::ofstream f(config);
    f << "coordinator = \"coord\"\n[links]\nintra = \"shm\"\ninter = \"infiniband\"\n";
    for (const char* name : {"coord", "shard-a", "shard-b"})
      f << "[[server]]\nname = \"" << name << "\"\nhost = \"127.0.0.1\"\nport = " << free_port()
        << "\n"
        << tiers;
  }
  bool ready() const { return std::filesystem::exists(cora + "/metadata.json"); }
  /// The single-process checksum of `n` requests minus `skip`.
  std::uint64_t expected_checksum(std::size_t n,
                                  const std::vector<std::uint64_t>& skip = {}) const {
    auto ds = graph::dataset::open(cora);
    nn::heap_allocator weights;
    auto m = nn::model::load(model, weights);
    serving::psgs_router router(serving::psgs_calibration{}, serving::routing_policy::fixed);
    thread_pool pool(1, "test");
    serving::gnn_pipeline local(*ds, *m, router, pool);
    auto sum = serving::answer_checksum_except(local, serving::degree_requests(*ds, n), skip);
    EXPECT_TRUE(sum.has_value());
    return sum ? *sum : 0;
  }
  /// Ranks 1 and 2, started with `env`.
  std::vector<child_process> members(const std::vector<std::string>& env,
                                      const std::vector<std::string>& extra = {}) const {
    std::vector<child_process> out;
    for (int rank : {1, 2}) out.push_back(member(rank, env, extra));
    return out;
  }
  child_process member(int rank, const std::vector<std::string>& env,
                       const std::vector<std::string>& extra = {}) const {
    std::vector<std::string> argv = {SPINDLE_BINARY, "node",    "--config", config,
                                     "--rank",       std::to_string(rank), "--dataset", serve,
                                     "--model",      model};
    argv.insert(argv.end(), extra.begin(), extra.end());
    return std::move(*child_process::spawn(argv, env));
  }
  /// With `log_file` its log (stderr) goes to that file, its output still to read_line.
  child_process coordinator(std::size_t workload, const std::vector<std::string>& env,
                            const std::vector<std::string>& extra = {},
                            const std::string& log_file = {}) const {
    std::vector<std::string> argv = {SPINDLE_BINARY, "node", "--config",   config,
                                     "--rank",       "0",    "--dataset",  serve,
                                     "--model",      model,  "--workload", std::to_string(workload),
                                     "--expect",     "2"};
    argv.insert(argv.end(), extra.begin(), extra.end());
    if (log_file.empty()) return std::move(*child_process::spawn(argv, env));
    argv.insert(argv.begin(), {"/bin/sh", "-c", "exec \"$0\" \"$@\" 2> \"$SPINDLE_TEST_LOG\""});
    auto with_log = env;  // info: the tests wait for its warnings (the last setting wins)
    with_log.insert(with_log.end(), {"SPINDLE_TEST_LOG=" + log_file, "SPINDLE_LOG=info"});
    return std::move(*child_process::spawn(argv, with_log));
  }
  /// Ranks 1 and 2, then the coordinator serving `workload` requests, all with
  /// `env`; `extra` goes to the coordinator.
  struct running {
    std::vector<child_process> members;
    child_process coord;
  };
  running start(std::size_t workload, const std::vector<std::string>& env,
                const std::vector<std::string>& extra = {}) const {
    auto m = members(env);
    return {std::move(m), coordinator(workload, env, extra)};
  }
};

// `spindle partition` of c's Cora over its servers into c.dir/parts; the whole
// dataset is then moved away (only the test process reads it, for the
// single-process answers) and the ranks are given the partition.
inline void partition(cora_cluster& c) {
  const std::string parts = c.dir + "/parts";
  auto part = child_process::spawn(
      {SPINDLE_BINARY, "partition", c.cora, "--config", c.config, "--out", parts},
      {"SPINDLE_PROGRESS=0"});
  ASSERT_TRUE(part.has_value());
  auto summary = part->wait_for("every rank also holds", 120'000);
  ASSERT_TRUE(summary.has_value()) << summary.error().to_string();
  ASSERT_EQ(part->wait(), 0);
  const std::string full = c.dir + "/whole";
  std::filesystem::rename(c.cora, full);
  c.cora = full;
  c.serve = parts;
}

// The coordinator's flags for re-planning the placement while serving, soon.
inline const std::vector<std::string> kReplanSoon = {"--replan-drift", "0.05",
                                                     "--replan-min-requests", "2000"};

// One process's answers to `reqs` on the cluster's whole dataset, with graph
// update `batches` applied first (none: the dataset as prepared).
inline serving::batch_result single_process_results(
    const cora_cluster& c, const std::vector<serving::gnn_request>& reqs,
    const std::vector<graph::graph_update>& batches = {}) {
  auto ds = graph::dataset::open(c.cora);
  if (!batches.empty()) {
    ds->set_live(std::make_shared<graph::live_graph>(ds->graph(), runtime::live_options_of(*ds)));
    for (const auto& u : batches) EXPECT_TRUE(ds->live()->apply(u));
  }
  nn::heap_allocator weights;
  auto model = nn::model::load(c.model, weights);
  serving::psgs_router router(serving::psgs_calibration{}, serving::routing_policy::fixed);
  thread_pool pool(1, "test");
  serving::gnn_pipeline local(*ds, *model, router, pool);
  return local.run(reqs);
}

// SIGTERM to the coordinator and the members from index `first` on (those
// before it were killed by the test); each must exit 0.
inline void stop_cluster(child_process& coord, std::vector<child_process>& members,
                         std::size_t first = 0) {
  coord.signal(SIGTERM);
  EXPECT_EQ(coord.wait(), 0);
  for (std::size_t i = first; i < members.size(); ++i) members[i].signal(SIGTERM);
  for (std::size_t i = first; i < members.size(); ++i) EXPECT_EQ(members[i].wait(), 0);
}

// The local addresses `pid` listens on (TCP, IPv4 and IPv6), as hex strings
// from /proc/net/tcp{,6} matched to the process's socket inodes (what `ss
// -ltnp` shows, without needing iproute2).
inline std::vector<std::string> listening_addresses(pid_t pid) {
  const auto inodes = transport::net::socket_inodes(std::to_string(pid));
  std::vector<std::string> out;
  for (const char* table : {"/proc/net/tcp", "/proc/net/tcp6"})
    for (const auto& row : transport::net::read_tcp_table(table))
      if (row.state == "0A" && inodes.count(row.inode)) out.push_back(row.local);
  return out;
}

// The TCP ports process `pid` listens on.
inline std::vector<int> listening_ports(int pid) {
  std::vector<int> ports;
  for (const auto& local : listening_addresses(pid))
    ports.push_back(std::stoi(local.substr(local.rfind(':') + 1), nullptr, 16));
  return ports;
}

// Sends `bytes` on a new connection to 127.0.0.1:`port`, waits 50 ms, closes.
inline void send_and_close(int port, const std::string& bytes) {
  const int fd = testing::dial_loopback(port);
  if (fd < 0) return;
  [[maybe_unused]] auto w = ::send(fd, bytes.data(), bytes.size(), MSG_NOSIGNAL);
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  ::close(fd);
}

/// `spindle client --connect endpoint --token-file token ARGS...`: its output, exit 0 expected.
inline std::function<std::string(std::vector<std::string>)> door_client(const std::string& endpoint,
                                                                        const std::string& token) {
  return [endpoint, token](std::vector<std::string> args) {
    std::vector<std::string> argv = {SPINDLE_BINARY, "client",       "--connect",
                                     endpoint,       "--token-file", token};
    argv.insert(argv.end(), args.begin(), args.end());
    auto p = child_process::spawn(argv);
    std::string out;
    while (auto line = p->read_line(30'000)) out += *line;
    EXPECT_EQ(p->wait(), 0) << out;
    return out;
  };
}

/// Requests 0..63 of the workload generator and one process's answers to them.
struct one_process_answers {
  std::vector<serving::gnn_request> reqs;
  serving::batch_result want;
  explicit one_process_answers(const cora_cluster& c)
      : reqs(serving::degree_requests(*graph::dataset::open(c.cora), 64)),
        want(single_process_results(c, reqs)) {}
};

/// Every `step`-th request through the door `client` answers as one process does.
inline void expect_door_answers(const std::function<std::string(std::vector<std::string>)>& client,
                                const one_process_answers& one, std::size_t step) {
  for (std::size_t i = 0; i < one.reqs.size(); i += step) {
    auto out = nlohmann::json::parse(
        client({"--model", "graphsage", "infer", "--seeds", std::to_string(one.reqs[i].seeds[0]),
                "--sampler-seed", std::to_string(one.reqs[i].sampler_seed), "--json"}));
    EXPECT_EQ(out["status"], "ok") << out.dump();
    if (out["status"] != "ok") return;
    EXPECT_EQ(out["outputs"].get<std::vector<float>>(), one.want.outputs[i]) << "request " << i;
  }
}

// The environment selecting a UCX transport ("" keeps UCX's default).
inline std::vector<std::string> ucx_env(const std::string& tls) {
  if (tls.empty()) return {};
  return {"UCX_TLS=" + tls};
}

}  // namespace spindle::cluster_testing
