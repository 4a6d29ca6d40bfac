// A typed update batch lowered to the untyped form live_graph builds deltas
// from: each flat edge's type and each added node's type and local id, and the
// batch as sent (so a refusal names its typed item). Internal to live_graph.
#pragma once

#include <cstdint>
#include <span>
#include <string_view>
#include <utility>
#include <vector>

#include "graph/live_graph.hpp"

namespace spindle::graph {

struct live_graph::lowered_types {
  const graph_update* original = nullptr;
  std::vector<std::int16_t> add, remove;  // each flat added / removed edge's type
  std::vector<std::pair<std::size_t, std::size_t>> remove_at;  // (group, index) in original
  std::vector<std::int32_t> nodes;                             // each added node's type
  std::vector<std::int64_t> new_local;  // each added node's id within its type
};

namespace detail {
/// Refuses `values` unless they are `rows` finite rows of width `dim`, naming `what`.
status check_rows(std::span<const float> values, std::size_t rows, std::int64_t dim,
                  std::string_view what);
}  // namespace detail

}  // namespace spindle::graph
