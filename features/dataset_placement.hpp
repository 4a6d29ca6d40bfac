// Placement of a prepared dataset: reads its FAP, degrees and feature width,
// runs a policy over a topology, and evaluates the plan with the dataset's own
// p_0 and fanouts. The glue the CLI, the shard server and benchmarks share.
// Pure; thread-safe.
#pragma once

#include <string_view>

#include "config/topology.hpp"
#include "features/placement.hpp"
#include "features/placement_eval.hpp"
#include "graph/dataset.hpp"

namespace spindle::features {

/// Bytes of one feature row of `ds` (float32 x feature_dim).
std::uint64_t row_bytes_of(const graph::dataset& ds);

/// Runs `policy` on `ds`; fails when the dataset has no features or no metrics
/// (run `spindle prepare` first), naming the directory.
expected<placement_plan> place_dataset(const graph::dataset& ds, const config::topology& topo,
                                       std::string_view policy, std::uint64_t seed = 1);

/// Re-plans `ds` with the FAP policy over an observed `fap` (features/access_stats)
/// in place of the precomputed one, keeping rows on their `home` server (the
/// previous plan's home_servers, or empty) where the balance allows; fails
/// naming the length when either does not match the node count. A function of
/// its inputs only: every node given the same fap and homes builds the same plan.
expected<placement_plan> replace_dataset(const graph::dataset& ds, const config::topology& topo,
                                         std::span<const double> fap,
                                         std::span<const std::int32_t> home);

/// Nodes whose set of owner shards differs between two plans of the same graph
/// (the rows a migration from `a` to `b` moves).
std::uint64_t rows_moved(const placement_plan& a, const placement_plan& b);

/// Evaluates `plan` with the dataset's seed distribution; empty `fanouts` in
/// `options` means the fanouts the dataset's metrics were computed with.
expected<eval_result> evaluate_dataset(const graph::dataset& ds, const config::topology& topo,
                                       const placement_plan& plan, eval_options options);

}  // namespace spindle::features
