// The graph-update log on R-MAT (scale 20 by default), three rows, each beside
// its baseline from the same run:
//  1. Group commit: batches of 10 and of 1,000 new edges, fdatasync'd before
//     they are acknowledged, from 8 writer threads through live_graph's group
//     commit, beside one writer syncing every batch (one fdatasync per batch).
//  2. Recovery: the time to replay 1M logged edge updates (1,000 batches of
//     1,000) into a fresh live graph, beside reading the same log's bytes.
//  3. The delta's memory per update byte after that replay (resident set growth
//     over the 16 bytes an edge takes in the batch).
//     usage: graph_log_bench [SCALE=20] [DIR=/var/tmp]
#include <fcntl.h>
#include <fmt/format.h>
#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <thread>

#include "bench_util.hpp"
#include "graph/graph_log.hpp"

namespace spindle::bench {
namespace {

constexpr int kEdgesPerBatch = 1000;

graph::graph_update edges_batch(std::int64_t nodes, std::uint64_t& x, int edges = kEdgesPerBatch) {
  graph::graph_update u;
  for (int i = 0; i < edges; ++i) {
    x = x * 6364136223846793005ULL + 1442695040888963407ULL;
    u.add_src.push_back(std::int64_t((x >> 20) % std::uint64_t(nodes)));
    u.add_dst.push_back(std::int64_t((x >> 40) % std::uint64_t(nodes)));
  }
  return u;
}

double resident_mb() {
  std::ifstream f("/proc/self/statm");
  std::uint64_t size = 0, resident = 0;
  f >> size >> resident;
  return double(resident) * double(::sysconf(_SC_PAGESIZE)) / 1e6;
}

graph::live_graph_options grouped(const std::shared_ptr<graph::graph_log>& l) {
  graph::live_graph_options o;
  o.log = [l](const graph::graph_update& u, std::uint64_t v) { return l->write(u, v); };
  o.sync = [l] { return l->sync(); };
  o.rollback = [l] { l->rollback(); };
  return o;
}

// Batches per second with `threads` writers, each applying `per_thread` batches.
double write_rate(const graph::csr_view& g, const std::string& path, int threads, int per_thread,
                  int edges, bool group, std::uint64_t& syncs) {
  std::filesystem::remove(path);
  std::shared_ptr<graph::graph_log> log = graph::graph_log::open(path, g, graph::log_sync::data).value();
  graph::live_graph_options o = grouped(log);
  if (!group) {  // every batch synced on its own, under the writer lock
    o.log = [log](const graph::graph_update& u, std::uint64_t v) { return log->append(u, v); };
    o.sync = nullptr;
  }
  graph::live_graph lg(g, o);
  std::vector<std::vector<graph::graph_update>> work(static_cast<std::size_t>(threads));
  std::uint64_t x = 7;
  for (auto& w : work)
    for (int i = 0; i < per_thread; ++i) w.push_back(edges_batch(g.num_nodes, x, edges));
  const auto t0 = std::chrono::steady_clock::now();
  std::vector<std::thread> ts;
  for (auto& w : work)
    ts.emplace_back([&lg, &w] {
      for (const auto& u : w)
        if (!lg.apply(u)) std::abort();
    });
  for (auto& t : ts) t.join();
  const double s = seconds_since(t0);
  syncs = log->syncs();
  return double(threads * per_thread) / s;
}

void group_commit_row(const graph::csr_view& g, const std::string& dir, int edges) {
  const std::string path = dir + "/graph_log_bench.log";
  std::uint64_t one_syncs = 0, group_syncs = 0;
  const double one = write_rate(g, path, 1, 200, edges, false, one_syncs);
  const double group = write_rate(g, path, 8, 50, edges, true, group_syncs);
  const double mb = double(edges) * 16 / 1e6;
  fmt::print("group commit, {} edges per batch (8 writers, 400 batches, fdatasync): {:.0f} "
             "batches/s = {:.0f} edges/s = {:.2f} MB/s, {:.2f} batches per fdatasync\n",
             edges, group, group * edges, group * mb, 400.0 / double(group_syncs));
  fmt::print("  baseline, one fdatasync per batch (1 writer): {:.0f} batches/s = {:.2f} MB/s  "
             "ratio {:.2f}x\n",
             one, one * mb, group / one);
  std::filesystem::remove(path);
}

void recovery_rows(const graph::csr_view& g, const std::string& dir) {
  const std::string path = dir + "/graph_log_bench_replay.log";
  std::filesystem::remove(path);
  constexpr int kBatches = 1000;
  {
    std::shared_ptr<graph::graph_log> log = graph::graph_log::open(path, g, graph::log_sync::os).value();
    graph::live_graph lg(g, grouped(log));
    std::uint64_t x = 11;
    for (int b = 0; b < kBatches; ++b)
      if (!lg.apply(edges_batch(g.num_nodes, x))) std::abort();
  }
  // Baseline: the log's bytes read back (what any replay must at least do).
  const auto r0 = std::chrono::steady_clock::now();
  std::uint64_t sum = 0;
  {
    std::ifstream f(path, std::ios::binary);
    std::vector<char> buf(1 << 20);
    while (f.read(buf.data(), std::streamsize(buf.size())) || f.gcount() > 0) {
      for (std::streamsize i = 0; i < f.gcount(); i += 4096) sum += std::uint64_t(buf[std::size_t(i)]);
    }
  }
  const double read_s = seconds_since(r0);
  const double before = resident_mb();
  auto log = graph::graph_log::open(path, g, graph::log_sync::os).value();
  graph::live_graph lg(g, {});
  const auto t0 = std::chrono::steady_clock::now();
  auto replayed = log->replay(lg).value();
  const double replay_s = seconds_since(t0);
  const double grown = resident_mb() - before;
  const double update_mb = double(kBatches) * kEdgesPerBatch * 16 / 1e6;
  fmt::print("recovery: replay {} logged edge updates ({} batches, {:.1f} MB log): {:.2f} s "
             "({:.2f} M edges/s)\n",
             replayed.records * kEdgesPerBatch, replayed.records, double(log->bytes()) / 1e6,
             replay_s, double(replayed.records * kEdgesPerBatch) / replay_s / 1e6);
  fmt::print("  baseline, reading the log's bytes: {:.3f} s  ratio {:.1f}x (checksum {})\n", read_s,
             replay_s / read_s, sum % 10);
  fmt::print("delta memory after the replay: {:.1f} MB resident for {:.1f} MB of edge updates "
             "({:.1f} bytes per update byte; rows touched {}, graph version {})\n",
             grown, update_mb, grown / update_mb, lg.current()->rows.size(), lg.version());
  std::filesystem::remove(path);
}

}  // namespace
}  // namespace spindle::bench

int main(int argc, char** argv) {
  using namespace spindle;
  const int scale = argc > 1 ? std::atoi(argv[1]) : 20;
  const std::string dir = argc > 2 ? argv[2] : "/var/tmp";
  thread_pool pool(2);
  auto g = bench::rmat_graph(scale, 16, pool);
  fmt::print("graph_log_bench: R-MAT scale {} ({} nodes, {} edges), logs in {}\n", scale,
             g.num_nodes, g.view().num_edges(), dir);
  bench::group_commit_row(g.view(), dir, 10);
  bench::group_commit_row(g.view(), dir, 1000);
  bench::recovery_rows(g.view(), dir);
  return 0;
}
