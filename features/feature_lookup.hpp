// Quiver's feature lookup table (§5.3): node id -> the shard(s) that hold its row
// and the row offset inside each. Rows that share an owner set form a "class" laid
// out as one contiguous block in every owner, so each node needs only a class id
// (u16) and an index within the class (u32): 6 bytes per node for any number of
// replicas. Immutable once built; safe to share read-only across threads.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "core/status.hpp"

namespace spindle::features {

using shard_index = std::uint16_t;

/// One owner of a class: the shard, and where the class's block starts in it.
struct class_owner {
  shard_index shard = 0;
  std::uint64_t start_row = 0;
};

/// Where one node's row lives: every owner's (shard, row) pair.
struct row_location {
  std::span<const class_owner> owners;
  std::uint32_t index = 0;  // row = owners[k].start_row + index
};

class feature_lookup;

/// Rebuilds a table from its parts (a plan stored by `spindle partition`): each
/// node's class and index in it, and each class's owner shards in layout order.
/// Fails naming the first node or class that does not fit.
expected<feature_lookup> restore_lookup(std::vector<std::uint16_t> class_of,
                                        std::vector<std::uint32_t> index,
                                        const std::vector<std::vector<shard_index>>& class_shards,
                                        std::size_t num_shards);

class feature_lookup {
 public:
  feature_lookup() = default;
  std::uint64_t num_nodes() const { return class_of_.size(); }
  std::size_t num_classes() const { return owners_.size(); }
  row_location locate(std::uint64_t node) const { return {owners_[class_of_[node]], index_[node]}; }
  std::size_t class_of(std::uint64_t node) const { return class_of_[node]; }
  std::uint32_t index_of(std::uint64_t node) const { return index_[node]; }
  /// Hints the CPU to load `node`'s entry (gathers resolve ids ahead of use).
  void prefetch(std::uint64_t node) const {
    __builtin_prefetch(class_of_.data() + node);
    __builtin_prefetch(index_.data() + node);
  }
  std::span<const class_owner> class_owners(std::size_t c) const { return owners_[c]; }
  /// Nodes of class c in block order (index 0, 1, ...): what an owner stores.
  std::span<const std::uint64_t> class_rows(std::size_t c) const { return rows_[c]; }
  /// Bytes the per-node part takes (the O(|V|) part of the table).
  std::uint64_t per_node_bytes() const { return class_of_.size() * 6; }
  /// Rows stored by `shard`, in its row order (the shard's layout).
  std::vector<std::uint64_t> shard_rows(shard_index shard) const;
  std::uint64_t shard_row_count(shard_index shard) const;

 private:
  friend class lookup_builder;
  friend expected<feature_lookup> restore_lookup(std::vector<std::uint16_t>,
                                                 std::vector<std::uint32_t>,
                                                 const std::vector<std::vector<shard_index>>&,
                                                 std::size_t);
  std::vector<std::uint16_t> class_of_;
  std::vector<std::uint32_t> index_;
  std::vector<std::vector<class_owner>> owners_;
  std::vector<std::vector<std::uint64_t>> rows_;
};

/// Builds a lookup table: assign each node an owner set once, then finish()
/// lays out every shard as the concatenation of its classes' blocks.
class lookup_builder {
 public:
  lookup_builder(std::uint64_t num_nodes, std::size_t num_shards);
  /// Places `node` on every shard in `owners` (deduplicated, order-insensitive).
  status assign(std::uint64_t node, std::vector<shard_index> owners);
  /// Fails naming the first node that was never assigned.
  expected<feature_lookup> finish() &&;

 private:
  std::size_t num_shards_;
  std::vector<std::uint16_t> class_of_;
  std::vector<std::uint32_t> index_;
  std::vector<std::vector<shard_index>> sets_;
  std::vector<std::vector<std::uint64_t>> rows_;
  std::vector<std::pair<std::vector<shard_index>, std::uint16_t>> set_ids_;  // sorted for lookup
};

}  // namespace spindle::features
