// A feature shard's contents: the rows a placement assigned to one shard, laid
// out in the lookup table's order, written into memory the caller provides
// (UCX-mapped memory for shards that remote readers get from). Pure functions.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>

#include "core/status.hpp"
#include "features/feature_lookup.hpp"

namespace spindle::features {

/// Bytes a shard needs for `rows` rows of `dim` float32 features.
inline std::uint64_t shard_bytes(std::uint64_t rows, std::uint32_t dim) {
  return rows * dim * sizeof(float);
}

/// Copies rows `rows` (node ids, in shard order) of the [N x dim] matrix into `dst`.
status fill_rows(std::span<const std::uint64_t> rows, std::span<const float> features,
                 std::uint32_t dim, std::span<std::byte> dst);

/// Copies the rows of `shard` (per `lookup`) from the full [N x dim] matrix into
/// `dst`, which must hold shard_bytes(lookup.shard_row_count(shard), dim).
status fill_shard(const features::feature_lookup& lookup, features::shard_index shard,
                  std::span<const float> features, std::uint32_t dim, std::span<std::byte> dst);

/// The owner's side of a gather, for readers that cannot read one-sidedly:
/// copies the rows of `ids` from `shard`'s memory `rows` (its layout per
/// `lookup`) into `out` (ids.size() x dim floats). Fails naming the first id
/// that is out of range or not held by this shard.
status copy_owned_rows(const features::feature_lookup& lookup, features::shard_index shard,
                       const std::byte* rows, std::uint32_t dim, std::span<const std::int64_t> ids,
                       std::span<std::byte> out);

}  // namespace spindle::features
