// A cluster's dataset split by rank (`spindle partition`): each rank's folder
// holds the graph and metrics whole (replicated, as Quiver does) and only the
// feature rows that rank's shards hold under the placement plan, every tier,
// and the plan itself (features/plan_manifest): a rank started on its folder
// reads the plan and checks it by its checksum. Pure functions over files.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "config/topology.hpp"
#include "features/placement.hpp"
#include "graph/dataset.hpp"

namespace spindle::features {

/// A digest of which shards hold each node's row, and where: equal plans, equal checksums.
std::uint64_t plan_checksum(const placement_plan& plan);

/// The nodes whose rows server `server` holds in any of its shards, ascending.
std::vector<std::int64_t> rows_of_server(const placement_plan& plan, int server);

struct partition_report {
  struct rank_part {
    std::int64_t rows = 0;
    std::uint64_t feature_bytes = 0;
  };
  std::vector<rank_part> ranks;
  std::uint64_t topology_bytes = 0;  // graph + metrics, on every rank
  std::uint64_t full_feature_bytes = 0;
  std::uint64_t plan = 0;
};

/// Writes OUT/rank-N/ for every server of `topo` from the whole dataset `ds`,
/// placed by `policy` (staged beside OUT and renamed in place; a non-empty OUT is
/// refused unless `force`).
expected<partition_report> partition_dataset(const graph::dataset& ds, const config::topology& topo,
                                             const std::string& policy, const std::string& out,
                                             bool force);

/// The folder rank `rank` serves from: DIR/rank-RANK when DIR is a partition
/// (DIR/rank-RANK/metadata.json exists), else DIR itself.
std::string rank_dataset_dir(const std::string& dir, int rank);

/// Checks that `ds` (a partition) was made for `rank` and that `plan` (placed here
/// by the partition's policy) is the plan it was made with; errors name the mismatch.
status check_partition(const graph::dataset& ds, int rank, const placement_plan& plan);

/// The placement policy a partition was made with ("fap" for a whole dataset).
std::string partition_policy(const graph::dataset& ds);

}  // namespace spindle::features
