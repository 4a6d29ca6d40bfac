// Settings of the embedding parameter server (HugeCTR HPS) from TOML: defaults
// for every table under [hps] and per-table overrides under [hps.tables.<name>].
// Validation names the field and the value. Plain values; thread-safe to copy.
//
//   [hps]
//   cache_fraction = 0.1          # L1 slots as a fraction of the table's rows
//   hit_rate_threshold = 0.8      # below it misses are fetched synchronously
//   default_value = 0.0           # every element of a missed key's default vector
//   slabs_per_set = 2
//   vdb_partitions = 16
//   overflow_margin = 1048576     # entries per VDB partition before pruning
//   overflow_resolution = 0.8     # prune down to margin * resolution
//   eviction_policy = "evict_oldest"   # evict_oldest | evict_least_used | evict_random
//   refresh_interval_ms = 0       # periodic L1 refresh (0: on command only)
//   l1_gpus = 1                   # GPUs holding an L1 replica (updates broadcast over NCCL)
//   [hps.tables.emb0]
//   cache_fraction = 0.5
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>

#include "core/status.hpp"

namespace spindle::config {

struct hps_table_config {
  double cache_fraction = 0.1;
  double hit_rate_threshold = 0.8;
  float default_value = 0.0f;
  std::uint32_t slabs_per_set = 2;
  std::uint32_t vdb_partitions = 16;
  std::uint64_t overflow_margin = 1u << 20;
  double overflow_resolution = 0.8;
  std::string eviction_policy = "evict_oldest";
};

struct hps_config {
  hps_table_config defaults;
  std::map<std::string, hps_table_config> tables;  // overrides, by table name
  std::uint32_t refresh_interval_ms = 0;
  int l1_gpus = 1;  // with the L1 on GPUs: how many hold a replica

  /// The settings of `table`: its override when present, else the defaults.
  const hps_table_config& for_table(const std::string& table) const;
};

/// Parses the [hps] part of a TOML document (absent: all defaults), starting from
/// `base` (so command-line defaults apply where the file is silent).
expected<hps_config> parse_hps_config(std::string_view toml_text, std::string_view origin,
                                      const hps_config& base = {});
/// Reads `path` and parses it.
expected<hps_config> load_hps_config(const std::string& path, const hps_config& base = {});

}  // namespace spindle::config
