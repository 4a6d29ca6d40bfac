// One consumer of a Redis Streams consumer group, whatever its messages hold:
// it reads its own unacknowledged entries first (after a restart), then entries
// other consumers left idle (XAUTOCLAIM), then new ones, hands each to the
// caller in stream order and acknowledges it only after the caller applied it
// (at-least-once). An entry the caller can never apply (it answers
// invalid_argument) is moved to "<stream>:rejected" with the reason and
// acknowledged; any other failure stops the poll and the entry is retried.
// The embedding updates (update_stream.hpp) and the served graph's updates
// both read through it. One owner thread (a hiredis context).
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/status.hpp"
#include "hps/vdb/redis_connection.hpp"

namespace spindle::hps {

/// One stream entry: its stream, id ("1700000000000-0") and field/value pairs.
struct stream_entry {
  std::string stream, id;
  std::vector<std::pair<std::string, std::string>> fields;
  /// The value of `name` ("" when the entry has no such field).
  std::string_view field(std::string_view name) const;
  bool has(std::string_view name) const;
};

struct stream_group_options {
  std::string group;
  std::string consumer;  // unique in the group; reuse it after a restart
  std::vector<std::string> streams;
  std::string create_at = "0";          // where a new group starts ("0": the first entry)
  std::uint32_t read_count = 16;        // entries per XREADGROUP
  std::uint32_t block_ms = 200;         // wait for new entries at most this long
  std::uint32_t claim_idle_ms = 30000;  // take over others' entries idle this long; 0: never
};

struct stream_group_stats {
  std::uint64_t applied = 0, rejected = 0, claimed = 0;
};

class stream_group {
 public:
  using apply_fn = std::function<status(const stream_entry&)>;

  /// Connects and creates the group on every stream (an existing group keeps
  /// its position).
  static expected<stream_group> connect(const std::string& host, int port,
                                        stream_group_options options);
  /// Applies the next entries in order; returns how many were applied. With
  /// `before_ack`, the entries of one read are applied, then before_ack runs
  /// once (making them all durable), then they are acknowledged together; if
  /// it fails none is acknowledged and they are read again. Without it each
  /// entry is acknowledged as soon as it is applied.
  expected<std::uint64_t> poll(const apply_fn& apply,
                               const std::function<status()>& before_ack = {});
  /// Creates the group again at `at` on every stream that lost it (Redis
  /// restarted without persistence, or the stream was deleted); an existing
  /// group keeps its position.
  status recreate(std::string_view at);
  /// Moves `e` to "<stream>:rejected" (fields id, reason, group) and acknowledges it.
  status reject(const stream_entry& e, const std::string& why);
  /// Entries delivered to the group and not yet acknowledged, over all streams.
  expected<std::uint64_t> pending();
  const stream_group_stats& stats() const { return stats_; }
  const stream_group_options& options() const { return o_; }
  redis_connection& connection() { return conn_; }

 private:
  stream_group(redis_connection c, stream_group_options o) : conn_(std::move(c)), o_(std::move(o)) {}
  expected<std::vector<stream_entry>> read(std::string_view start, bool block);
  expected<std::vector<stream_entry>> claim();
  status apply_all(const std::vector<stream_entry>& entries, const apply_fn& apply,
                   const std::function<status()>& before_ack, std::uint64_t& n);
  status ack(const std::vector<const stream_entry*>& entries);

  redis_connection conn_;
  stream_group_options o_;
  stream_group_stats stats_;
  bool pending_drained_ = false;
  std::chrono::steady_clock::time_point last_claim_{};
};

/// Stream entry ids in order: (milliseconds, sequence); -1, 0 or 1 as a < b.
/// An id that is not "MS-SEQ" orders before every valid one.
int compare_stream_ids(std::string_view a, std::string_view b);

}  // namespace spindle::hps
