// Folds a live graph's delta into a new dataset directory: the graph as the
// updates left it (removed nodes keep their ids, with no edges), feature rows
// set or added, labels extended with -1 for new nodes. The new directory
// records the graph version it holds, so a server taking updates over it goes
// on from that version. Metrics (PSGS, FAP) are for the caller to recompute.
// A typed graph's nodes are renumbered so each type holds one range again
// (graph/compact_typed.cpp); ids within a type do not change.
#pragma once

#include <map>
#include <string>
#include <string_view>

#include "core/status.hpp"
#include "graph/dataset.hpp"
#include "graph/graph_delta.hpp"

namespace spindle::graph {

/// The metadata key (in "build") holding the graph version a dataset starts at.
inline constexpr const char* kGraphVersionKey = "graph_version";

/// Metadata keys (in "build") "graph_source:STREAM" hold the last entry of
/// each update stream a compacted dataset holds.
inline constexpr std::string_view kGraphSourcePrefix = "graph_source:";
/// The file a typed compaction writes its seed file's ids into, renumbered with
/// the nodes (where the metrics were computed for a file of seed ids and the
/// renumbering moved any): the caller recomputing the metrics reads that instead.
inline constexpr const char* kRenumberedSeeds = "seed_ids.txt";
/// Metadata keys (in "build") "added_while_served:TYPE" (see added_while_served).
inline constexpr std::string_view kAddedWhileServed = "added_while_served:";

/// Writes `ds` with `d` applied into `out_dir` (new or empty), recording the
/// streams' last applied entries `sources`. Refuses added nodes on a dataset
/// that names its nodes by input ids (they have none).
status compact_dataset(const dataset& ds, const graph_delta& d,
                       const std::map<std::string, std::string>& sources,
                       const std::string& out_dir);

/// compact_dataset's typed case: every node type's nodes numbered into one
/// range (its base nodes, then those added, in the order they were added), so
/// each node keeps its type and its id within the type; rows renumbered and
/// sorted by (edge type, neighbour). Global ids change: not for a graph served
/// while it is compacted (its readers hold them).
status compact_typed_dataset(const dataset& ds, const graph_delta& d,
                             const std::map<std::string, std::string>& sources,
                             const std::string& out_dir);
/// Node v's feature row at `d` into `out` (feature_dim values): set or added by
/// an update, else the base's, else zeros (an added node of a featureless type).
void feature_row_at(const dataset& ds, const graph_delta& d, std::int64_t v, float* out);
/// Copies node_names.txt (the input names) into `out_dir` where `ds` has one.
status copy_node_names(const dataset& ds, const std::string& out_dir);

/// Nodes of node type `type` a compacted typed dataset holds that were added
/// while served (metadata "build" key "added_while_served:TYPE"; 0 when none):
/// rows past those a model's embedding table learnt.
std::int64_t added_while_served(const dataset_metadata& m, const std::string& type);

/// The graph version a dataset's base holds (0 unless it was compacted).
std::uint64_t base_version(const dataset_metadata& m);
/// The stream entries a dataset's base holds (stream -> last entry id).
std::map<std::string, std::string> base_sources(const dataset_metadata& m);

}  // namespace spindle::graph
