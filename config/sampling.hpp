// Validated sampling settings shared by the CLI, the dataset metadata and
// later the cluster config: fanouts per hop and the seed distribution p_0.
// Plain values; parse functions are pure and thread-safe.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "core/status.hpp"

namespace spindle::config {

/// Fanout value meaning "take every neighbour" (PyG's -1).
inline constexpr int kAllNeighbours = -1;

/// Parses "25,10" into {25, 10}; -1 means all neighbours. Errors name the bad item.
expected<std::vector<int>> parse_fanouts(std::string_view text);
/// "25,10" form of a fanout list.
std::string format_fanouts(const std::vector<int>& fanouts);

enum class seed_distribution_kind { uniform, degree, file };
std::string_view to_string(seed_distribution_kind k);

/// p_0 of Quiver §5.1: uniform over nodes, proportional to out-degree, or the
/// empirical distribution of node ids observed in a file of request seeds.
struct seed_distribution {
  seed_distribution_kind kind = seed_distribution_kind::uniform;
  std::string path;  // set when kind == file
  /// "uniform", "degree", or the file path.
  std::string to_string() const;
};

/// "uniform" | "degree" | anything else is taken as a file path.
seed_distribution parse_seed_distribution(std::string_view text);

}  // namespace spindle::config
