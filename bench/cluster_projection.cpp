// Projects a served cluster's throughput to more servers than this machine can
// hold (Quiver §6, Fig. 12): the per-call CPU cost measured on the namespace
// test bed, C0 + CR x remote rows per call (bench/netns_cluster.sh fits it),
// applied to the remote rows per call that the placement evaluator finds for
// each policy on S servers of the same shape (host memory only, 1.35x the
// feature table split evenly, Ethernet between servers), with the evaluator's
// simulated feature-aggregation p50/p99 beside it. Calls are single-seed
// [25,10] GraphSAGE requests, as the bed serves them. Throughput assumes the
// calls spread evenly over S x CORES cores and the CPU is the limit (as it is
// on the bed); what it leaves out is said in docs/benchmarks.md.
//
// usage: cluster_projection TOPOLOGY_DIR DATASET_DIR C0_US CR_US CORES [SERVERS...]
//        (default servers: 2 3 4 8 32; the first three are the bed's sizes, to compare)
#include <fmt/format.h>

#include <cstdlib>
#include <vector>

#include "core/progress.hpp"
#include "features/dataset_placement.hpp"
#include "graph/dataset.hpp"

using namespace spindle;

namespace {

constexpr std::uint64_t kRowBytes = 512;  // 128 float32, the bed's rows

config::topology bed_like(const config::topology& base, int servers, std::uint64_t rows) {
  config::topology t = base.with_server_count(servers);
  const auto per_server = std::uint64_t(1.35 * double(rows * kRowBytes) / servers);
  for (auto& s : t.servers) {
    s.devices.clear();
    s.numa_groups = 1;
    s.memory_bytes = per_server;
    s.disk_bytes = 0;
  }
  return t;
}

struct projected {
  double remote_rows = 0, p50_us = 0, p99_us = 0;
};

expected<projected> evaluate(const graph::dataset& ds, const config::topology& topo,
                             std::string_view policy) {
  SPINDLE_ASSIGN_OR_RETURN(auto plan, features::place_dataset(ds, topo, policy));
  features::eval_options opt;
  opt.requests = 2000;
  opt.batch = 1;
  opt.fanouts = {25, 10};
  SPINDLE_ASSIGN_OR_RETURN(auto r, features::evaluate_dataset(ds, topo, plan, opt));
  const auto local = r.rows_per_link[std::size_t(config::link_kind::local)];
  return projected{double(r.rows - local) / double(opt.requests), r.p50_us, r.p99_us};
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 6) {
    fmt::print(stderr,
               "usage: cluster_projection TOPOLOGY_DIR DATASET_DIR C0_US CR_US CORES "
               "[SERVERS...]\n");
    return 2;
  }
  set_progress_enabled(false);
  const double c0 = std::atof(argv[3]), cr = std::atof(argv[4]);
  const int cores = std::atoi(argv[5]);
  std::vector<int> sizes;
  for (int i = 6; i < argc; ++i) sizes.push_back(std::atoi(argv[i]));
  if (sizes.empty()) sizes = {2, 3, 4, 8, 32};
  if (c0 <= 0 || cr < 0 || cores <= 0)
    return fmt::print(stderr, "cluster_projection: C0_US > 0, CR_US >= 0 and CORES > 0\n"), 2;
  auto ds = graph::dataset::open(argv[2]);
  if (!ds) return fmt::print(stderr, "{}\n", ds.error().to_string()), 1;
  auto base = config::load_topology(fmt::format("{}/topology-2server-ethernet.toml", argv[1]));
  if (!base) return fmt::print(stderr, "{}\n", base.error().to_string()), 1;
  fmt::print("projection: {:.2f} us + {:.4f} us per remote row per call, {} cores per server\n", c0,
             cr, cores);
  fmt::print("| servers | policy | remote rows per call | projected calls/s | simulated feature "
             "p50 / p99 us |\n|---|---|---|---|---|\n");
  const auto rows = std::uint64_t(ds->num_nodes());
  for (int s : sizes) {
    const auto topo = bed_like(*base, s, rows);
    for (const char* policy : {"fap", "hash", "degree"}) {
      auto p = evaluate(*ds, topo, policy);
      if (!p) return fmt::print(stderr, "{} servers, {}: {}\n", s, policy, p.error().to_string()), 1;
      const double per_call_us = c0 + cr * p->remote_rows;
      fmt::print("| {} | {} | {:.1f} | {:.0f} | {:.1f} / {:.1f} |\n", s, policy, p->remote_rows,
                 double(s) * cores * 1e6 / per_call_us, p->p50_us, p->p99_us);
    }
  }
  return 0;
}
