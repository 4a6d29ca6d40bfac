// Warm-up of the parameter server at start (HPS deploys its tables into the
// VDB before serving): every row of each table is read from the PDB in chunks
// and written to the in-process VDB, and into the L1 cache when the cache holds
// the whole table, so the first batches hit memory instead of fetching every
// miss from RocksDB synchronously. A table whose L1 holds only part of it is
// left to the insertion policy there (which rows are hot is not known at start).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/status.hpp"
#include "hps/lookup_session.hpp"
#include "hps/pdb/persistent_db.hpp"
#include "hps/vdb/volatile_db.hpp"

namespace spindle::hps {

struct warm_up_report {
  std::string table;
  std::uint64_t rows = 0, to_vdb = 0, to_l1 = 0;
  double seconds = 0;
};

/// Warms every table of `session` from `pdb` (rows 0 .. rows-1, as the PDB was
/// bulk-loaded): into `vdb` when given, and into the L1 cache when it holds
/// every row. Errors name the table.
expected<std::vector<warm_up_report>> warm_up(lookup_session& session, persistent_db& pdb,
                                              volatile_db* vdb, std::uint64_t chunk_rows = 16384);

}  // namespace spindle::hps
