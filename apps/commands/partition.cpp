// `spindle partition DATASET --config CLUSTER.toml --out DIR`: splits a prepared
// dataset by cluster rank (features/dataset_partition): DIR/rank-N holds the graph
// and metrics whole and only the feature rows rank N's shards hold under the
// placement plan. `spindle node --dataset DIR` then serves from DIR/rank-N.
#include "apps/commands/command.hpp"
#include "core/checksum.hpp"
#include "features/dataset_partition.hpp"

namespace spindle::apps {
namespace {

struct partition_args {
  std::string dataset, config, out, policy = "fap";
  bool force = false;
};

double mib(std::uint64_t b) { return double(b) / 1048576.0; }

status run_partition(const partition_args& a) {
  SPINDLE_ASSIGN_OR_RETURN(auto ds, graph::dataset::open(a.dataset));
  SPINDLE_ASSIGN_OR_RETURN(auto topo, config::load_topology(a.config));
  SPINDLE_ASSIGN_OR_RETURN(auto r, features::partition_dataset(ds, topo, a.policy, a.out, a.force));
  fmt::print("partitioned {} over {} ranks ({} placement, plan {}) into {}\n", a.dataset,
             r.ranks.size(), a.policy, checksum_hex(r.plan), a.out);
  fmt::print("{:<8} {:<16} {:>10} {:>14} {:>12}\n", "rank", "server", "rows", "features MiB",
             "of all rows");
  for (std::size_t i = 0; i < r.ranks.size(); ++i)
    fmt::print("{:<8} {:<16} {:>10} {:>14.1f} {:>11.1f}%\n", i, topo.servers[i].name,
               r.ranks[i].rows, mib(r.ranks[i].feature_bytes),
               100.0 * double(r.ranks[i].rows) / double(std::max<std::int64_t>(1, ds.num_nodes())));
  fmt::print("every rank also holds the graph and metrics: {:.1f} MiB (the whole feature table "
             "is {:.1f} MiB)\n",
             mib(r.topology_bytes), mib(r.full_feature_bytes));
  return status::ok();
}

}  // namespace

void register_partition(CLI::App& app, global_options&) {
  auto [cmd, a] = add_command<partition_args>(
      app, "partition",
      "Split a prepared dataset by cluster rank: DIR/rank-N holds the graph and metrics whole "
      "and only the feature rows rank N holds under the placement plan (every tier); "
      "`spindle node`/`launch --dataset DIR` then read no row they do not own");
  cmd->add_option("dataset", a->dataset, "Prepared dataset directory (with metrics)")->required();
  cmd->add_option("--config", a->config, "Cluster TOML (its servers are the ranks)")->required();
  cmd->add_option("--out", a->out, "Output directory (new or empty)")->required();
  cmd->add_option("--policy", a->policy, "Placement: fap | hash | degree | random")
      ->check(CLI::IsMember({"fap", "hash", "degree", "random"}))
      ->capture_default_str();
  cmd->add_flag("--force", a->force, "Replace a non-empty --out whole");
  on_run(cmd, [a] { return run_partition(*a); });
}

}  // namespace spindle::apps
