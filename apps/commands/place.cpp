// `spindle place`: computes a feature placement of a dataset over a topology and
// prints the plan summary and the evaluator's aggregation latency (Quiver §5.2).
#include <nlohmann/json.hpp>

#include "apps/commands/command.hpp"
#include "config/sampling.hpp"
#include "core/progress.hpp"
#include "features/dataset_placement.hpp"

namespace spindle::apps {
namespace {

struct place_args {
  std::string dir, topology, policy = "fap", fanouts;
  std::size_t requests = 1000, batch = 64;
  std::uint64_t seed = 1;
  bool json = false;
};

struct shard_summary {
  std::vector<std::uint64_t> rows;
  std::vector<double> fap;
  double surviving = 0;  // share of the FAP mass readable after any one server's loss
};

shard_summary summarise(const features::placement_plan& plan, std::span<const double> fap) {
  shard_summary s{plan.shard_rows(), std::vector<double>(plan.shards.size(), 0.0),
                  features::surviving_fap_share(plan, fap)};
  for (std::uint64_t v = 0; v < plan.lookup.num_nodes(); ++v)
    for (const auto& o : plan.lookup.locate(v).owners) s.fap[o.shard] += fap[v];
  return s;
}

nlohmann::json to_json(const config::topology& topo, const features::placement_plan& plan,
                       const shard_summary& sum, const features::eval_result& r, const place_args& a) {
  nlohmann::json shards = nlohmann::json::array();
  for (std::size_t i = 0; i < plan.shards.size(); ++i) {
    const auto& sh = plan.shards[i];
    shards.push_back({{"server", topo.servers[sh.server].name},
                      {"tier", features::to_string(sh.tier)},
                      {"device", sh.device},
                      {"rows", sum.rows[i]},
                      {"capacity_rows", sh.capacity_rows},
                      {"fap_sum", sum.fap[i]}});
  }
  nlohmann::json links = nlohmann::json::object();
  for (int k = 0; k < config::kLinkKinds; ++k)
    if (r.rows_per_link[k] > 0)
      links[std::string(config::to_string(config::link_kind(k)))] = {
          {"share", r.share(config::link_kind(k))}, {"bytes", r.bytes_per_link[k]}};
  return {{"policy", plan.policy},
          {"dataset", a.dir},
          {"topology", a.topology},
          {"nodes", plan.lookup.num_nodes()},
          {"row_bytes", plan.row_bytes},
          {"replicated_rows", plan.replicated_rows},
          {"surviving_fap_share", sum.surviving},
          {"min_replicas", topo.placement.min_replicas},
          {"replica_fap_share", topo.placement.replica_fap_share},
          {"lookup_bytes", plan.lookup.per_node_bytes()},
          {"owner_classes", plan.lookup.num_classes()},
          {"shards", shards},
          {"requests", a.requests},
          {"batch", a.batch},
          {"latency_us", {{"p50", r.p50_us}, {"p99", r.p99_us}, {"mean", r.mean_us}}},
          {"links", links}};
}

void print_text(const config::topology& topo, const features::placement_plan& plan,
                const shard_summary& sum, const features::eval_result& r, const place_args& a) {
  fmt::print(
      "placement '{}' of {} ({} nodes, {} B rows) over {} ({} servers, {} devices; "
      "intra {}, inter {})\n",
      plan.policy, a.dir, plan.lookup.num_nodes(), plan.row_bytes, a.topology, topo.servers.size(),
      topo.device_count(), config::to_string(topo.intra), config::to_string(topo.inter));
  fmt::print("{:>5}  {:<12} {:<6} {:>6} {:>12} {:>12} {:>6} {:>10}\n", "shard", "server", "tier",
             "device", "rows", "capacity", "fill", "fap-sum");
  for (std::size_t i = 0; i < plan.shards.size(); ++i) {
    const auto& sh = plan.shards[i];
    double fill = sh.capacity_rows ? 100.0 * double(sum.rows[i]) / double(sh.capacity_rows) : 0;
    fmt::print("{:>5}  {:<12} {:<6} {:>6} {:>12} {:>12} {:>5.1f}% {:>10.2f}\n", i,
               topo.servers[sh.server].name, features::to_string(sh.tier), sh.device, sum.rows[i],
               sh.capacity_rows, fill, sum.fap[i]);
  }
  fmt::print(
      "replicated rows: {} ({:.1f}%); lookup table: {:.2f} MiB (6 B/node), {} owner classes\n",
      plan.replicated_rows, 100.0 * double(plan.replicated_rows) / double(plan.lookup.num_nodes()),
      double(plan.lookup.per_node_bytes()) / 1048576.0, plan.lookup.num_classes());
  fmt::print(
      "FAP mass readable after losing any one server: {:.1f}% ([placement] min_replicas {}, "
      "replica_fap_share {})\n",
      100.0 * sum.surviving, topo.placement.min_replicas, topo.placement.replica_fap_share);
  fmt::print(
      "evaluator: {} requests x {} seeds; aggregation latency p50 {:.1f} us, p99 {:.1f} us, "
      "mean {:.1f} us\n",
      a.requests, a.batch, r.p50_us, r.p99_us, r.mean_us);
  fmt::print("rows by link:");
  for (int k = 0; k < config::kLinkKinds; ++k)
    if (r.rows_per_link[k] > 0)
      fmt::print(" {} {:.1f}% ({:.1f} MiB)", config::to_string(config::link_kind(k)),
                 100.0 * r.share(config::link_kind(k)), double(r.bytes_per_link[k]) / 1048576.0);
  fmt::print("\n");
}

status run_place(const place_args& a) {
  SPINDLE_ASSIGN_OR_RETURN(auto topo, config::load_topology(a.topology));
  SPINDLE_ASSIGN_OR_RETURN(auto ds, graph::dataset::open(a.dir));
  SPINDLE_ASSIGN_OR_RETURN(auto plan, features::place_dataset(ds, topo, a.policy, a.seed));
  features::eval_options opt;
  opt.requests = a.requests;
  opt.batch = a.batch;
  opt.seed = a.seed;
  opt.fanouts.clear();
  if (!a.fanouts.empty()) {
    SPINDLE_ASSIGN_OR_RETURN(opt.fanouts, config::parse_fanouts(a.fanouts));
  }
  SPINDLE_ASSIGN_OR_RETURN(auto result, features::evaluate_dataset(ds, topo, plan, opt));
  auto sum = summarise(plan, ds.fap());
  if (a.json)
    fmt::print("{}\n", to_json(topo, plan, sum, result, a).dump(2));
  else
    print_text(topo, plan, sum, result, a);
  return status::ok();
}

}  // namespace

void register_place(CLI::App& app, global_options&) {
  auto [cmd, a] = add_command<place_args>(
      app, "place",
      "Place a dataset's feature rows over a topology (Quiver's FAP algorithm or a "
      "baseline) and estimate feature-aggregation latency per request");
  cmd->add_option("dataset", a->dir, "Prepared dataset directory (with metrics)")->required();
  cmd->add_option("--topology", a->topology, "Topology TOML (see examples/topology-*.toml)")
      ->required();
  cmd->add_option("--policy", a->policy, "fap | hash | degree | random")
      ->check(CLI::IsMember({"fap", "hash", "degree", "random"}))
      ->capture_default_str();
  cmd->add_option("--requests", a->requests, "Requests the evaluator replays")
      ->capture_default_str();
  cmd->add_option("--batch", a->batch, "Seeds per request")->capture_default_str();
  cmd->add_option("--fanouts", a->fanouts,
                  "Sampler fanouts (default: the dataset's metrics fanouts)");
  cmd->add_option("--seed", a->seed, "Seed for request generation and the baselines")
      ->capture_default_str();
  cmd->add_flag("--json", a->json, "Print one JSON object (for scripts)");
  on_run(cmd, [a] {
    if (a->json) set_progress_enabled(false);
    return run_place(*a);
  });
}

}  // namespace spindle::apps
