// A featureless node type's embedding table read from outside the model (the
// parameter server's tables, wired in where the serve stack is assembled) instead
// of held in its parameters. CAF-free; nn/ knows only this interface.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <span>
#include <string>
#include <vector>

#include "core/status.hpp"

namespace spindle::nn {

/// Writes row ids[i] of a type's table to out[i*in .. (i+1)*in) for every i (ids
/// are checked to lie in the table before the call). Exact or an error: a row it
/// cannot read fails the call naming the type and the id, never a default row.
/// Called from many pipeline threads at once, so it must be thread-safe.
using type_row_reader =
    std::function<status(std::span<const std::int64_t> ids, std::span<float> out)>;

/// Node type name -> the reader of its table. A type listed is not loaded into
/// the model's parameters (its tensor's shape is still checked against model.toml).
using type_row_readers = std::map<std::string, type_row_reader>;

/// One type's table as read so far (the parameter server's counters, for the
/// stats and the metrics): rows asked (unique per call), where they came from,
/// and what the server streamed into the PDB for the table (0 when it was
/// already whole at start).
struct type_table_stats {
  std::string type, table;
  std::uint64_t lookups = 0;  // calls to the reader
  std::uint64_t l1_hits = 0, l1_misses = 0;
  std::uint64_t vdb_hits = 0, pdb_reads = 0;  // the misses, by the level that answered
  std::uint64_t bytes_read = 0;               // bytes of the rows the VDB and PDB gave
  std::uint64_t rows_loaded = 0, bytes_loaded = 0;
};
using type_table_stats_fn = std::function<std::vector<type_table_stats>()>;

}  // namespace spindle::nn
