// The placement policies behind make_policy(), and the helpers they share.
// Internal to features/.
#pragma once

#include <memory>
#include <utility>
#include <vector>

#include "features/placement.hpp"

namespace spindle::features {

std::unique_ptr<placement_policy> make_fap_policy();
std::unique_ptr<placement_policy> make_hash_policy();
std::unique_ptr<placement_policy> make_degree_policy();
std::unique_ptr<placement_policy> make_random_policy();

namespace detail {

/// Shard indices of one server: its devices, host memory and disk (-1 = none).
struct server_shards {
  std::vector<int> devices;
  int host = -1;
  int disk = -1;
};
std::vector<server_shards> index_shards(const config::topology& topo,
                                        const std::vector<shard_info>& shards);

/// Node ids sorted by descending score (ties by id): Quiver §5.2 step (i).
std::vector<std::uint64_t> rank_descending(std::span<const double> score);

/// Collects (node, shard) placements and turns them into a plan.
class plan_assembler {
 public:
  plan_assembler(std::uint64_t num_nodes, std::vector<shard_info> shards);
  void put(std::uint64_t node, int shard) { pairs_.push_back({node, shard_index(shard)}); }
  /// Checks capacities, builds the lookup table, counts replicated rows.
  expected<placement_plan> finish(std::string policy, std::uint64_t row_bytes) &&;

 private:
  std::uint64_t num_nodes_;
  std::vector<shard_info> shards_;
  std::vector<std::pair<std::uint64_t, shard_index>> pairs_;
};

/// Error for a topology too small for the table.
status capacity_error(std::uint64_t rows, std::uint64_t capacity, std::uint64_t row_bytes);

/// splitmix64: the hash behind hash partitioning (stable across platforms).
inline std::uint64_t mix64(std::uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

}  // namespace detail
}  // namespace spindle::features
