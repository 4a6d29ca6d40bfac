// Online embedding updates (HugeCTR HPS §6) over a real broker, Redis Streams:
// the producer appends (table, keys, vectors) messages to one stream per table;
// consumers in a consumer group share the streams, apply each message in
// stream order and acknowledge it only after it was applied, so a consumer that
// crashes re-reads its unacknowledged messages when it restarts (at-least-once;
// applying an update twice is harmless since updates overwrite). Messages that
// can never apply (malformed) are moved to "<stream>:rejected" with the reason.
// Ordering: per consumer. With several consumers, two updates of one key may be
// applied by different consumers in either order; one consumer per table keeps
// strict order. One owner thread per producer / consumer (hiredis contexts).
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <vector>

#include "core/status.hpp"
#include "hps/pdb/persistent_db.hpp"
#include "hps/updates/stream_group.hpp"
#include "hps/vdb/redis_connection.hpp"
#include "hps/vdb/volatile_db.hpp"

namespace spindle::hps {

/// One stream message: updates of `keys` of `table` to `vectors` ([keys x dim]).
struct update_batch {
  std::string table;
  std::string id;  // the stream entry id ("1700000000000-0")
  std::uint32_t dim = 0;
  std::vector<cache_key> keys;
  std::vector<float> vectors;
};

/// The stream that carries `table`'s updates.
std::string update_stream_name(std::string_view prefix, std::string_view table);

class update_producer {
 public:
  static expected<update_producer> connect(const std::string& host, int port,
                                           std::string prefix = "spindle",
                                           std::uint32_t max_keys_per_message = 1024);
  /// Appends the updates as messages of at most max_keys_per_message keys
  /// (pipelined XADDs); returns the number of messages written.
  expected<std::uint64_t> publish(std::string_view table, std::uint32_t dim,
                                  std::span<const cache_key> keys, std::span<const float> vectors);

 private:
  update_producer(redis_connection c, std::string prefix, std::uint32_t max_keys)
      : conn_(std::move(c)), prefix_(std::move(prefix)), max_keys_(max_keys) {}
  redis_connection conn_;
  std::string prefix_;
  std::uint32_t max_keys_;
};

struct consumer_options {
  std::string prefix = "spindle";
  std::string group = "spindle-updaters";
  std::string consumer;  // unique per process; reuse it after a restart
  std::vector<std::string> tables;
  /// Each table's rows, beside `tables` (empty: unchecked): a message with a key
  /// past its table's rows is refused whole, as a call reading it would be.
  std::vector<std::uint64_t> table_rows;
  std::uint32_t read_count = 16;        // messages per XREADGROUP
  std::uint32_t block_ms = 200;         // wait for new messages at most this long
  double max_keys_per_second = 0;       // rate limit; 0: none
  std::uint32_t claim_idle_ms = 30000;  // take over other consumers' messages idle this long
};

struct consumer_stats {
  std::uint64_t applied_messages = 0, applied_keys = 0, rejected = 0, claimed = 0;
};

/// Field list for CAF's inspectors (the updater actor answers with it); a
/// template, so this header needs no CAF.
template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, consumer_stats& x) {
  return f(x.applied_messages, x.applied_keys, x.rejected, x.claimed);
}

class update_consumer {
 public:
  /// Connects and creates the group on every table's stream (from the start of
  /// the stream; an existing group is kept with its position).
  static expected<update_consumer> connect(const std::string& host, int port,
                                           consumer_options options);
  /// Reads the next messages: this consumer's unacknowledged ones first (after a
  /// restart), then idle ones of dead consumers, then new ones (waiting up to
  /// block_ms). Applies each in order with `apply` and acknowledges it; stops at
  /// the first failing apply (that message stays pending and is retried).
  /// Returns the number of messages applied.
  expected<std::uint64_t> poll(const std::function<status(const update_batch&)>& apply);
  /// Messages delivered to the group but not yet acknowledged, over all tables.
  expected<std::uint64_t> pending();
  const consumer_stats& stats() const { return stats_; }

 private:
  update_consumer(stream_group g, consumer_options o) : group_(std::move(g)), o_(std::move(o)) {}
  void throttle(std::uint64_t keys);
  status check_keys(const update_batch& b) const;

  stream_group group_;
  consumer_options o_;
  consumer_stats stats_;
  std::chrono::steady_clock::time_point started_ = std::chrono::steady_clock::now();
};

/// Applies one update message to the VDB partitions and the PDB (either may be null).
status apply_update(const update_batch& b, volatile_db* vdb, persistent_db* pdb);

}  // namespace spindle::hps
