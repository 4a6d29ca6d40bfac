// Placement evaluator table (Quiver Fig. 15 analogue): p50/p99 feature-
// aggregation latency of FAP placement next to the hash (DGL) and degree
// (PaGraph/AliGraph) baselines on simulated clusters of 2, 8 and 32 servers.
//
// usage: placement_bench TOPOLOGY_DIR DATASET_DIR...  (datasets prepared with metrics)
// Cluster memory (devices + host) is 1.2x the table, as Quiver §6.5 gives every
// device 20% extra memory to replicate; devices hold a quarter of it. Rows are
// 512 B (128 float32), the gather benchmark's width. Requests: 64 seeds each,
// sampled with the dataset's own fanouts and p_0.
#include <fmt/format.h>

#include <filesystem>
#include <map>

#include "core/log.hpp"
#include "core/progress.hpp"
#include "features/dataset_placement.hpp"
#include "graph/dataset.hpp"

using namespace spindle;

namespace {

constexpr std::uint64_t kRowBytes = 512;

config::topology sized_cluster(const config::topology& base, int servers, std::uint64_t rows) {
  config::topology t = base.with_server_count(servers);
  const double per_server = 1.2 * double(rows * kRowBytes) / servers;
  for (auto& s : t.servers) {
    for (auto& d : s.devices) d.memory_bytes = std::uint64_t(0.25 * per_server / s.devices.size());
    s.memory_bytes = std::uint64_t(0.75 * per_server);
    s.disk_bytes = rows * kRowBytes;
  }
  return t;
}

struct outcome {
  double p50 = 0, p99 = 0, local = 0;
};

expected<outcome> run(const graph::dataset& ds, const config::topology& topo,
                      std::string_view policy, std::span<const std::int64_t> degree) {
  SPINDLE_ASSIGN_OR_RETURN(auto p, features::make_policy(policy));
  SPINDLE_ASSIGN_OR_RETURN(auto plan, p->place(topo, {ds.fap(), degree, kRowBytes, 1}));
  features::eval_options opt;
  opt.requests = 500;
  opt.batch = 64;
  opt.fanouts.clear();
  SPINDLE_ASSIGN_OR_RETURN(auto r, features::evaluate_dataset(ds, topo, plan, opt));
  return outcome{r.p50_us, r.p99_us, r.share(config::link_kind::local)};
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 3) {
    fmt::print(stderr, "usage: placement_bench TOPOLOGY_DIR DATASET_DIR...\n");
    return 2;
  }
  set_progress_enabled(false);
  fmt::print(
      "{:<14} {:>3} {:<10} | {:>9} {:>9} | {:>9} {:>9} | {:>9} {:>9} | {:>10} {:>10} | {:>6} "
      "{:>6}\n",
      "dataset", "S", "network", "fap p50", "fap p99", "hash p50", "hash p99", "deg p50", "deg p99",
      "hash/fap", "deg/fap", "loc%F", "loc%H");
  for (int i = 2; i < argc; ++i) {
    auto ds = graph::dataset::open(argv[i]);
    if (!ds) return fmt::print(stderr, "{}\n", ds.error().to_string()), 1;
    auto degree = graph::in_degrees(ds->graph());
    std::string name = std::filesystem::path(argv[i]).filename().string();
    for (std::string net : {"infiniband", "ethernet"}) {
      auto base = config::load_topology(fmt::format("{}/topology-2server-{}.toml", argv[1], net));
      if (!base) return fmt::print(stderr, "{}\n", base.error().to_string()), 1;
      for (int servers : {2, 8, 32}) {
        auto topo = sized_cluster(*base, servers, std::uint64_t(ds->num_nodes()));
        std::map<std::string, outcome> out;
        for (std::string policy : {"fap", "hash", "degree"}) {
          auto r = run(*ds, topo, policy, degree);
          if (!r) return fmt::print(stderr, "{} {}: {}\n", name, policy, r.error().to_string()), 1;
          out[policy] = *r;
        }
        fmt::print(
            "{:<14} {:>3} {:<10} | {:>9.1f} {:>9.1f} | {:>9.1f} {:>9.1f} | {:>9.1f} {:>9.1f} | "
            "{:>9.2f}x {:>9.2f}x | {:>6.1f} {:>6.1f}\n",
            name, servers, net, out["fap"].p50, out["fap"].p99, out["hash"].p50, out["hash"].p99,
            out["degree"].p50, out["degree"].p99, out["hash"].p99 / out["fap"].p99,
            out["degree"].p99 / out["fap"].p99, 100 * out["fap"].local, 100 * out["hash"].local);
      }
    }
  }
  return 0;
}
