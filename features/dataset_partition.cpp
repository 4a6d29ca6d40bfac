#include "features/dataset_partition.hpp"

#include <algorithm>
#include <filesystem>

#include "core/checksum.hpp"
#include "features/dataset_placement.hpp"
#include "features/plan_manifest.hpp"
#include "graph/prepare.hpp"

namespace spindle::features {

std::uint64_t plan_checksum(const placement_plan& plan) {
  checksum_stream h;
  const std::uint64_t n = plan.lookup.num_nodes();
  h.update(&n, sizeof n);
  for (std::uint64_t v = 0; v < n; ++v) {
    const auto loc = plan.lookup.locate(v);
    for (const auto& o : loc.owners) {
      const std::uint64_t at[2] = {std::uint64_t(o.shard), o.start_row + loc.index};
      h.update(at, sizeof at);
    }
  }
  for (const auto& s : plan.shards) {
    const std::int64_t where[2] = {s.server, std::int64_t(s.tier)};
    h.update(where, sizeof where);
  }
  return h.digest();
}

std::vector<std::int64_t> rows_of_server(const placement_plan& plan, int server) {
  std::vector<std::int64_t> rows;
  for (std::size_t i = 0; i < plan.shards.size(); ++i) {
    if (plan.shards[i].server != server) continue;
    for (auto v : plan.lookup.shard_rows(shard_index(i))) rows.push_back(std::int64_t(v));
  }
  std::sort(rows.begin(), rows.end());
  rows.erase(std::unique(rows.begin(), rows.end()), rows.end());
  return rows;
}

namespace {

// Rank `rank`'s folder: every array but the features copied, its rows written.
status write_rank(const graph::dataset& ds, const placement_plan& plan, int rank, int ranks,
                  const std::string& dir, partition_report& report) {
  auto base = ds.metadata();
  base.build["partition_rank"] = std::to_string(rank);
  base.build["partition_ranks"] = std::to_string(ranks);
  base.build["partition_policy"] = plan.policy;
  base.build["partition_plan"] = checksum_hex(report.plan);
  SPINDLE_ASSIGN_OR_RETURN(auto w, graph::dataset_writer::create(dir, base));
  std::uint64_t replicated = 0;
  for (const auto& [name, r] : ds.metadata().arrays) {
    if (name == "features" || name == "part_rows" || name == "part_features") continue;
    SPINDLE_TRY(w.copy_array(ds.dir(), name, r));
    replicated += r.bytes;
  }
  const auto rows = rows_of_server(plan, rank);
  SPINDLE_TRY(w.write_partition(rows, ds.feature_dim(),
                                [&](std::int64_t v) { return ds.feature_row(v); }));
  if (ds.metadata().build.count("node_names")) {
    std::error_code ec;
    std::filesystem::copy_file(ds.dir() + "/node_names.txt", dir + "/node_names.txt", ec);
  }
  SPINDLE_TRY(write_plan_manifest(plan, dir));  // what the rank reads instead of placing again
  SPINDLE_TRY(w.finish());
  report.topology_bytes = replicated;
  report.ranks.push_back({std::int64_t(rows.size()),
                          std::uint64_t(rows.size()) * std::uint64_t(ds.feature_dim()) * 4});
  return status::ok();
}

}  // namespace

expected<partition_report> partition_dataset(const graph::dataset& ds, const config::topology& topo,
                                             const std::string& policy, const std::string& out,
                                             bool force) {
  if (ds.partitioned())
    return make_error(errc::invalid_argument,
                      "{}: is already one rank's partition; partition the whole dataset", ds.dir());
  SPINDLE_ASSIGN_OR_RETURN(auto plan, place_dataset(ds, topo, policy));
  partition_report report;
  report.plan = plan_checksum(plan);
  report.full_feature_bytes =
      std::uint64_t(ds.num_nodes()) * std::uint64_t(ds.feature_dim()) * sizeof(float);
  const int ranks = int(topo.servers.size());
  SPINDLE_TRY(graph::write_dataset_dir(out, force, [&](const std::string& staging) -> status {
    for (int r = 0; r < ranks; ++r)
      SPINDLE_TRY(write_rank(ds, plan, r, ranks, staging + "/rank-" + std::to_string(r), report));
    return status::ok();
  }));
  return report;
}

std::string rank_dataset_dir(const std::string& dir, int rank) {
  const std::string part = dir + "/rank-" + std::to_string(rank);
  std::error_code ec;
  return std::filesystem::exists(part + "/metadata.json", ec) ? part : dir;
}

std::string partition_policy(const graph::dataset& ds) {
  auto it = ds.metadata().build.find("partition_policy");
  return it == ds.metadata().build.end() ? "fap" : it->second;
}

status check_partition(const graph::dataset& ds, int rank, const placement_plan& plan) {
  if (!ds.partitioned()) return status::ok();
  const auto& b = ds.metadata().build;
  const std::string made_for = b.count("partition_rank") ? b.at("partition_rank") : "?";
  if (made_for != std::to_string(rank))
    return make_error(errc::invalid_argument, "{}: is rank {}'s partition, not rank {}'s", ds.dir(),
                      made_for, rank);
  const std::string want = b.count("partition_plan") ? b.at("partition_plan") : "";
  const std::string have = checksum_hex(plan_checksum(plan));
  if (want != have)
    return make_error(errc::invalid_argument,
                      "{}: was partitioned for another placement (plan {} in metadata.json, {} "
                      "here): its plan files come from another partition, or the cluster TOML's "
                      "servers or tiers changed since `spindle partition`; partition again",
                      ds.dir(), want, have);
  return status::ok();
}

}  // namespace spindle::features
