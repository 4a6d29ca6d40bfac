#include "embedding/feature_shard.hpp"

#include <cstring>

namespace spindle::embedding {

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

status fill_shard(const sched::feature_lookup& lookup, sched::shard_index shard,
                  std::span<const float> features, std::uint32_t dim, std::span<std::byte> dst) {
  if (features.size() != lookup.num_nodes() * dim)
    return make_error(errc::invalid_argument,
                      "fill_shard: features hold {} floats, expected {} x {}", features.size(),
                      lookup.num_nodes(), dim);
  return fill_rows(lookup.shard_rows(shard), features, dim, dst);
}

}  // namespace spindle::embedding
