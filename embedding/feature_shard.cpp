#include "embedding/feature_shard.hpp"

#include <cstring>

namespace spindle::embedding {

status fill_shard(const sched::feature_lookup& lookup, sched::shard_index shard,
                  std::span<const float> features, std::uint32_t dim, std::span<std::byte> dst) {
  const std::uint64_t n = lookup.num_nodes();
  if (features.size() != n * dim)
    return make_error(errc::invalid_argument, "fill_shard: features hold {} floats, expected {} x {}",
                      features.size(), n, dim);
  auto rows = lookup.shard_rows(shard);
  const std::size_t row_bytes = std::size_t(dim) * sizeof(float);
  if (dst.size() < rows.size() * row_bytes)
    return make_error(errc::invalid_argument, "fill_shard: shard {} needs {} bytes, buffer has {}",
                      shard, rows.size() * row_bytes, dst.size());
  for (std::size_t r = 0; r < rows.size(); ++r)
    std::memcpy(dst.data() + r * row_bytes, features.data() + rows[r] * dim, row_bytes);
  return status::ok();
}

}  // namespace spindle::embedding
