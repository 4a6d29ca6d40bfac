// Gathers feature rows for a list of global node ids into one contiguous
// [n x F] buffer through the feature lookup table: rows in this process are read
// by pointer, remote rows by one-sided batched reads (sorted by address,
// adjacent rows coalesced, one completion wait per shard per batch). When an
// owner fails, its rows are read from the next-nearest replica and the failure
// is reported. One gatherer per thread (it owns the readers while gathering).
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "core/batched_read.hpp"
#include "core/status.hpp"
#include "features/feature_lookup.hpp"

namespace spindle::features {

/// How this process reaches one shard: exactly one of `local` / `remote` is set
/// (a remote whose region is mapped into this process is read like a local one).
/// `cost` orders replicas: the gatherer reads from the reachable owner with the
/// lowest cost (e.g. the link's single-row cost from the placement model).
struct shard_access {
  const std::byte* local = nullptr;
  batched_reader* remote = nullptr;
  double cost = 0;
  bool mapped = false;  // set by the gatherer: `local` is another process's memory
};

struct gather_report {
  std::uint64_t local_rows = 0;     // read by pointer (this process or a mapped peer)
  std::uint64_t mapped_rows = 0;    // of those, rows in another process's shared memory
  std::uint64_t remote_rows = 0;    // read by one-sided gets
  std::uint64_t remote_ops = 0;     // gets issued after coalescing
  std::uint64_t fallback_rows = 0;  // rows re-read from another replica
  std::vector<int> failed_shards;   // shards that failed during this gather
};

class feature_gatherer {
 public:
  /// `lookup` must outlive the gatherer; `shards` is indexed by shard id.
  feature_gatherer(const features::feature_lookup& lookup, std::uint32_t row_bytes,
                   std::vector<shard_access> shards);

  /// out[i * row_bytes ..] = row of ids[i]. Fails (errc::unavailable) naming the
  /// node when none of its owners is reachable; errc::invalid_argument for an
  /// id out of range. `out` must hold ids.size() * row_bytes bytes.
  expected<gather_report> gather(std::span<const std::int64_t> ids, std::span<std::byte> out);

  /// Shards marked unreachable so far (never read again by this gatherer).
  std::vector<int> unreachable() const;
  /// Marks a shard unreachable on word from the control plane (a monitor saw its
  /// owner die). Needed on shared memory, where a dead owner's rows stay readable.
  void mark_unreachable(int shard);
  /// Reaches `shard` through `access` again (its owner restarted and published a
  /// new region): the shard is readable again and preferred by cost as before.
  void reattach(int shard, shard_access access);

 private:
  struct pending {
    std::uint64_t row;  // row inside the shard
    std::uint32_t pos;  // index into ids / out
  };
  struct resolved {
    int shard;
    std::uint64_t row;
  };
  int nearest_owner(std::size_t cls) const;
  status resolve(std::uint64_t node, resolved& r) const;
  status dispatch(std::span<const std::int64_t> ids, std::span<std::byte> out,
                  gather_report& report);
  status redispatch(std::span<const std::int64_t> ids, const std::vector<pending>& rows,
                    std::span<std::byte> out, gather_report& report);
  void refresh_choices();
  status read_remote(int shard, std::vector<pending>& rows, std::span<std::byte> out,
                     gather_report& report);

  const features::feature_lookup& lookup_;
  std::uint32_t row_bytes_;
  std::vector<shard_access> shards_;
  std::vector<bool> down_;
  std::vector<int> choice_;                  // per class: nearest reachable owner, -1 if none
  std::vector<std::uint64_t> choice_start_;  // per class: its block's start in that owner
  std::vector<resolved> resolved_;
  std::vector<std::vector<pending>> per_shard_;
  std::vector<std::byte> staging_;
  std::vector<read_op> ops_;
};

}  // namespace spindle::features
