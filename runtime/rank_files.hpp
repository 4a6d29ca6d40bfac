// What a rank needs on its own disk, and how it gets it when it is not there:
// `spindle node --fetch-from` fetches its partition (DIR/rank-N of `spindle
// partition`'s output, or a whole dataset) and its model folder from file doors
// before it opens them; `--files` opens this node's own file door, serving
// the folders it was started with. Called once at start, on the node's thread.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "core/status.hpp"
#include "transport/net/file_door.hpp"

namespace spindle::runtime {

struct rank_files_args {
  std::string files;                    // --files HOST:PORT: this node's file door ("": none)
  std::vector<std::string> fetch_from;  // --fetch-from HOST:PORT,...: doors to fetch from
  int fetch_wait_s = 120;               // --fetch-wait-s: retry without progress this long
  double files_mbit = 0;                // --files-rate: the door's cap in Mbit/s (0: none)
};

/// Fetches `dataset` (rank `rank`'s share) and `model` from --fetch-from's doors
/// when they are not on this rank's disk, and checks them against the door's
/// copy when they are (a stale or other folder is refused by name; when no door
/// answers within 3 s it is used unchecked, with a warning); nothing without a
/// door. Errors name the folder, the file and the door.
status fetch_missing(const rank_files_args& f, const std::string& dataset, const std::string& model,
                     int rank, const std::string& token);

/// Opens the file door --files asks for, serving `dataset` (rank N asks for
/// DIR/rank-N of a partition output, or the whole dataset) and `model`.
expected<std::unique_ptr<transport::net::file_door>> open_file_door(const rank_files_args& f,
                                                                    const std::string& dataset,
                                                                    const std::string& model,
                                                                    const std::string& token);

}  // namespace spindle::runtime
