// The parameter-server stack a serving command opens for a DLRM: settings from
// flags, the model's [hps] section and --hps-config; the RocksDB PDB (filled
// from the model's weights on first start); the VDB; the lookup session. Shared
// by `spindle serve-dlrm` and `spindle serve --dlrm-model`.
#pragma once

#include <memory>
#include <string>

#include "config/hps.hpp"
#include "config/model.hpp"
#include "hps/lookup_session.hpp"

namespace spindle::runtime {

struct hps_stack_args {
  std::string hps_config, model, pdb, vdb = "hash_map", vdb_redis;
  double cache_fraction = 0.1, threshold = 0.8;
  std::uint32_t refresh_ms = 0, partitions = 16;
  bool warm_up = true;  // fill the in-process VDB (and an L1 that holds a whole table) at start
};

struct hps_stack {
  std::unique_ptr<hps::persistent_db> pdb;
  std::unique_ptr<hps::volatile_db> vdb;
  std::shared_ptr<hps::lookup_session> session;
};

/// Flags give the defaults; the model's model.toml [hps] section, then --hps-config, win.
expected<config::hps_config> hps_settings(const hps_stack_args& a);

/// Opens PDB (bulk-loading missing tables from the model), VDB and session for model `d`.
expected<hps_stack> open_stack(const hps_stack_args& a, const config::model_desc& d,
                               const config::hps_config& hc);

}  // namespace spindle::runtime
