#include "features/feature_shard.hpp"

#include <cstring>

namespace spindle::features {

status fill_rows(std::span<const std::uint64_t> rows, std::span<const float> features,
                 std::uint32_t dim, std::span<std::byte> dst) {
  const std::size_t row_bytes = std::size_t(dim) * sizeof(float);
  const std::uint64_t n = dim ? features.size() / dim : 0;
  if (dst.size() < rows.size() * row_bytes)
    return make_error(errc::invalid_argument, "fill_rows: {} rows need {} bytes, buffer has {}",
                      rows.size(), rows.size() * row_bytes, dst.size());
  for (std::size_t r = 0; r < rows.size(); ++r) {
    if (rows[r] >= n)
      return make_error(errc::invalid_argument, "fill_rows: row {} names node {} of {}", r, rows[r],
                        n);
    std::memcpy(dst.data() + r * row_bytes, features.data() + rows[r] * dim, row_bytes);
  }
  return status::ok();
}

status fill_shard(const features::feature_lookup& lookup, features::shard_index shard,
                  std::span<const float> features, std::uint32_t dim, std::span<std::byte> dst) {
  if (features.size() != lookup.num_nodes() * dim)
    return make_error(errc::invalid_argument,
                      "fill_shard: features hold {} floats, expected {} x {}", features.size(),
                      lookup.num_nodes(), dim);
  return fill_rows(lookup.shard_rows(shard), features, dim, dst);
}

}  // namespace spindle::features

namespace spindle::features {

status copy_owned_rows(const features::feature_lookup& lookup, features::shard_index shard,
                       const std::byte* rows, std::uint32_t dim, std::span<const std::int64_t> ids,
                       std::span<std::byte> out) {
  const std::size_t row_bytes = std::size_t(dim) * sizeof(float);
  if (out.size() != ids.size() * row_bytes)
    return make_error(errc::invalid_argument, "gather: {} bytes for {} rows of {} bytes",
                      out.size(), ids.size(), row_bytes);
  for (std::size_t i = 0; i < ids.size(); ++i) {
    const std::int64_t id = ids[i];
    if (id < 0 || std::uint64_t(id) >= lookup.num_nodes())
      return make_error(errc::invalid_argument, "gather: node {} out of range [0, {})", id,
                        lookup.num_nodes());
    const auto loc = lookup.locate(std::uint64_t(id));
    const features::class_owner* mine = nullptr;
    for (const auto& o : loc.owners)
      if (o.shard == shard) mine = &o;
    if (!mine) return make_error(errc::not_found, "gather: node {} is not on shard {}", id, shard);
    std::memcpy(out.data() + i * row_bytes, rows + (mine->start_row + loc.index) * row_bytes,
                row_bytes);
  }
  return status::ok();
}

}  // namespace spindle::features
