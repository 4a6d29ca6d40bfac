// Where a live graph lives on disk, for the graph log path a user names (P):
// P over the dataset's own base, or, once a compaction while serving has run,
// the compacted base directory and the log that P.current names. P.current is
// replaced atomically (and made durable), so a crash leaves the old pair or
// the new one, never a mix.
#pragma once

#include <cstdint>
#include <string>

#include "core/status.hpp"

namespace spindle::graph {

struct graph_files {
  std::string log;       // the log file to replay and append to
  std::string base_dir;  // the compacted base; empty: the dataset's own
};

/// The files a restart reads for the log path `log_path` (P itself when no
/// compaction ran). A P.current that names missing files is refused by name.
expected<graph_files> current_graph_files(const std::string& log_path);
/// The names a compaction at graph version `version` writes (beside P).
graph_files compaction_files(const std::string& log_path, std::uint64_t version);
/// Makes `f` the files a restart reads (P.current replaced, durable).
status adopt_graph_files(const std::string& log_path, const graph_files& f);
/// Removes what compactions of `log_path` left that `keep` does not name (the
/// replaced base and log, a compaction cut short), and empties P itself once a
/// compaction's files are current. Returns the bytes freed.
std::uint64_t remove_replaced_files(const std::string& log_path, const graph_files& keep);
/// fsyncs every regular file in `dir`, then `dir` itself.
status sync_directory(const std::string& dir);

}  // namespace spindle::graph
