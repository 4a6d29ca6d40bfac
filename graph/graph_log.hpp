// The write-ahead log of a live graph's update batches: each accepted batch is
// appended (with its version and an XXH3-64 checksum) before it is published
// and acknowledged, and replayed on the next start, so an acknowledged update
// survives kill -9. A torn last record (the process died while writing it) is
// detected by its length or checksum and dropped; damage before the last
// record is refused by offset. The header names the base (node and edge
// counts), so a log is never replayed onto another dataset; an exclusive lock
// keeps a second process from writing the same log.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>

#include "core/status.hpp"
#include "graph/live_graph.hpp"

namespace spindle::graph {

/// How an appended record reaches the disk before the acknowledgement.
/// data: fdatasync per batch (survives power loss; the default);
/// os: written to the kernel (survives kill -9 of the server, not a power cut).
enum class log_sync { data, os };
std::string_view to_string(log_sync s);
expected<log_sync> parse_log_sync(std::string_view text);

struct log_replay {
  std::uint64_t records = 0;        // batches applied
  std::uint64_t torn_bytes = 0;     // dropped from the end (a torn last record)
  std::uint64_t skipped = 0;        // records the base already held (after a compaction)
};

/// The bytes of an empty log (its header): a longer log holds records.
inline constexpr std::uint64_t kGraphLogHeaderBytes = 24;

class graph_log {
 public:
  /// Opens (or creates) `path` for the base `g`; a log written for another
  /// base (node or edge count) is refused by name.
  static expected<std::unique_ptr<graph_log>> open(const std::string& path, const csr_view& g,
                                                   log_sync sync);
  graph_log(const graph_log&) = delete;
  graph_log& operator=(const graph_log&) = delete;

  /// Applies every whole record to `lg` in order (through live_graph::replay),
  /// truncates a torn tail, and leaves the log ready to append.
  expected<log_replay> replay(live_graph& lg);
  /// Appends one batch as `version` and makes it as durable as `sync` says.
  status append(const graph_update& u, std::uint64_t version);
  /// Appends one batch without waiting for the disk (group commit: sync() later).
  status write(const graph_update& u, std::uint64_t version);
  /// Makes every record written so far durable (fdatasync under log_sync::data;
  /// nothing under os). Safe beside write() on another thread.
  status sync();
  /// Cuts the records written since the last good sync (after a failed one).
  void rollback();
  /// Compaction: goes on in a new file at `path`, for the compacted base `g`,
  /// holding this log's records after `after_version` (copied and made durable
  /// before the switch); later records go there. `adopt` runs between the copy
  /// and the switch (it makes the new file the one a restart reads); appends
  /// wait meanwhile. On an error the log goes on in its old file.
  status continue_in(const std::string& path, const csr_view& g, std::uint64_t after_version,
                     const std::function<status()>& adopt);

  std::string path() const;
  std::uint64_t bytes() const;
  log_sync sync_mode() const { return sync_; }
  /// fdatasync calls made for records (a measure of group commit).
  std::uint64_t syncs() const;

 private:
  struct file {  // an open log file, closed when the last user lets go
    explicit file(int f) : fd(f) {}
    ~file();
    file(const file&) = delete;
    file& operator=(const file&) = delete;
    int fd;
  };
  graph_log(std::string path, std::shared_ptr<file> f, log_sync sync)
      : path_(std::move(path)), file_(std::move(f)), sync_(sync) {}
  std::string path_;
  std::shared_ptr<file> file_;
  log_sync sync_ = log_sync::data;
  mutable std::mutex mu_;     // file_, path_, end_, synced_end_, syncs_ (write and sync may race)
  std::uint64_t generation_ = 0;  // file switches (continue_in)
  std::uint64_t end_ = 0;     // bytes of whole records (and header)
  std::uint64_t synced_end_ = 0;  // bytes known durable
  std::uint64_t syncs_ = 0;
};

/// What a log holds, read without replaying or locking it (`spindle info`):
/// whole records by their lengths (checksums are checked at replay).
struct log_summary {
  std::uint64_t records = 0, last_version = 0, bytes = 0;
};
expected<log_summary> summarize_log(const std::string& path);

/// A batch as the log stores it, and back (errors name the field).
std::string encode_update(const graph_update& u);
expected<graph_update> decode_update(std::string_view bytes);

}  // namespace spindle::graph
