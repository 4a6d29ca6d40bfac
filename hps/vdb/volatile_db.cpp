#include "hps/vdb/volatile_db.hpp"

#include <xxhash.h>

#include <algorithm>
#include <charconv>

#include "core/enum_names.hpp"

namespace spindle::hps {

constexpr enum_names<eviction_policy, 3> kEvictionPolicies{{{
    {eviction_policy::evict_oldest, "evict_oldest"},
    {eviction_policy::evict_least_used, "evict_least_used"},
    {eviction_policy::evict_random, "evict_random"}}}};

std::string_view to_string(eviction_policy p) { return kEvictionPolicies.name(p); }

expected<eviction_policy> parse_eviction_policy(std::string_view text) {
  return kEvictionPolicies.parse(text, "eviction policy");
}

expected<std::uint64_t> volatile_db::size(std::string_view table) {
  std::uint64_t n = 0;
  const std::uint32_t parts = partitions(table);
  for (std::uint32_t p = 0; p < parts; ++p) {
    SPINDLE_ASSIGN_OR_RETURN(std::uint64_t k, partition_size(table, p));
    n += k;
  }
  return n;
}

status validate(const vdb_options& o) {
  if (o.partitions == 0) return make_error(errc::invalid_argument, "vdb: partitions must be >= 1");
  if (o.overflow_margin == 0) {
    return make_error(errc::invalid_argument, "vdb: overflow_margin must be >= 1");
  }
  if (!(o.overflow_resolution > 0.0 && o.overflow_resolution <= 1.0)) {
    return make_error(errc::invalid_argument, "vdb: overflow_resolution={} (must be in (0, 1])",
                      o.overflow_resolution);
  }
  return status::ok();
}

std::uint32_t partition_of(cache_key key, std::uint32_t partitions) {
  unsigned char bytes[8];
  for (int i = 0; i < 8; ++i) bytes[i] = static_cast<unsigned char>(key >> (8 * i));
  return static_cast<std::uint32_t>(XXH64(bytes, sizeof bytes, 0) % partitions);
}

std::vector<std::vector<std::uint32_t>> partition_groups(std::span<const cache_key> keys,
                                                         std::uint32_t partitions) {
  std::vector<std::vector<std::uint32_t>> g(partitions);
  for (std::size_t i = 0; i < keys.size(); ++i) {
    g[partition_of(keys[i], partitions)].push_back(static_cast<std::uint32_t>(i));
  }
  return g;
}

expected<std::uint32_t> parse_stored_dim(std::string_view text, std::string_view where) {
  std::uint32_t dim = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), dim);
  if (ec != std::errc() || end != text.data() + text.size() || dim == 0) {
    return make_error(errc::corrupt_data, "{}: stored dim '{}' is not a positive integer", where,
                      text);
  }
  return dim;
}

expected<std::uint64_t> volatile_db::lookup(std::string_view table, std::uint32_t dim,
                                            std::span<const cache_key> keys,
                                            std::span<float> values,
                                            std::span<std::uint8_t> found) {
  SPINDLE_TRY(check_vdb_batch(table, dim, keys.size(), values.size(), "lookup"));
  std::fill(found.begin(), found.end(), std::uint8_t{0});
  return lookup_checked(table, dim, keys, values, found);
}

status volatile_db::insert(std::string_view table, std::uint32_t dim,
                           std::span<const cache_key> keys, std::span<const float> values) {
  SPINDLE_TRY(check_vdb_batch(table, dim, keys.size(), values.size(), "insert"));
  return insert_checked(table, dim, keys, values);
}

status check_vdb_batch(std::string_view table, std::uint32_t dim, std::size_t keys,
                       std::size_t values, const char* op) {
  if (table.empty()) return make_error(errc::invalid_argument, "vdb {}: empty table name", op);
  if (dim == 0)
    return make_error(errc::invalid_argument, "vdb {} '{}': dim must be > 0", op, table);
  if (values != keys * dim) {
    return make_error(errc::invalid_argument,
                      "vdb {} '{}': {} keys need {} values (dim {}), got {}", op, table, keys,
                      keys * dim, dim, values);
  }
  return status::ok();
}

}  // namespace spindle::hps
