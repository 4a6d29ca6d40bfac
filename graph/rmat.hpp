// R-MAT graph generator (Chakrabarti et al.; Graph500 parameters a=0.57,
// b=0.19, c=0.19) with scrambled vertex ids, plus deterministic synthetic node
// features: the embedded default dataset `spindle generate` and `make demo`
// use. Pure functions; output depends only on the options, not on thread count.
#pragma once

#include <cstdint>
#include <span>

#include "core/progress.hpp"
#include "core/status.hpp"
#include "core/thread_pool.hpp"
#include "graph/edge_list.hpp"

namespace spindle::graph {

struct rmat_options {
  int scale = 16;        // 2^scale nodes
  int edge_factor = 16;  // edge_factor * 2^scale generated (directed) edges
  double a = 0.57, b = 0.19, c = 0.19;  // d = 1 - a - b - c
  std::uint64_t seed = 1;
};

/// Checks scale in [1, 40], edge factor >= 1, probabilities in (0,1) summing below 1.
status validate(const rmat_options& o);

/// Generates edge_factor * 2^scale directed edges (self-loops and repeats
/// included, as R-MAT draws them; build_csr decides what to keep).
expected<edge_list> generate_rmat(const rmat_options& o, thread_pool& pool, progress* prog = nullptr);

/// Fills `row` with node `node`'s synthetic features: values in [-1, 1) from a
/// hash of (seed, node, column); the same inputs always give the same row.
void synthetic_features(std::uint64_t seed, std::int64_t node, std::span<float> row);

}  // namespace spindle::graph
