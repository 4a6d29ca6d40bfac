// The placement plan a partition was made with, stored beside each rank's rows
// (`spindle partition`), so a rank reads the plan instead of placing the whole
// graph again: each node's class and index, each class's owner shards, and the
// shards with the plan's checksum. Pure functions over files.
#pragma once

#include <cstdint>
#include <string>

#include "config/topology.hpp"
#include "features/placement.hpp"

namespace spindle::features {

/// Writes DIR/plan.json, DIR/plan_nodes.npy and DIR/plan_classes.npy for `plan`.
status write_plan_manifest(const placement_plan& plan, const std::string& dir);

/// Whether DIR holds a stored plan (any of its three files: one left alone is
/// then refused by read_plan_manifest, not silently replaced by a new plan).
bool has_plan_manifest(const std::string& dir);

/// Reads the plan stored in DIR for `topo` and a dataset of `num_nodes` rows of
/// `row_bytes` placed by `policy`; errors name the file and the fault: a damaged
/// or mistyped file, content that does not match the stored checksum, another
/// node count or row size, or shards that differ from the topology's (its
/// servers or tiers changed).
expected<placement_plan> read_plan_manifest(const std::string& dir, const config::topology& topo,
                                            std::uint64_t row_bytes, std::uint64_t num_nodes,
                                            const std::string& policy);

}  // namespace spindle::features
