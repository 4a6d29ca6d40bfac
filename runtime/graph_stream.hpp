// Graph updates from a Redis Stream: a server started with --graph-stream reads
// update batches from one stream through its own consumer group and applies
// each like a door's batch (checked whole, logged, then visible). Every server
// needs every batch, in stream order, so each server reads through a group of
// its own (one consumer). Delivery is at-least-once and applying is
// exactly-once: each batch is logged with its entry id, and an entry at or
// before the last one applied (redelivered after a crash between logging and
// acknowledging) is acknowledged without being applied again. A batch the
// graph refuses, or an entry that is malformed, goes to "<stream>:rejected"
// with the reason.
//
// Entry fields (little-endian binary, each optional, at least one change):
//   add_src, add_dst: int64 [n]   add_weight: float32 [n] (weighted graphs)
//   remove_src, remove_dst: int64 [m]
//   add_nodes: float32 [k x feature width]   add_count: decimal k (needed
//     only when the graph has no features)
//   set_ids: int64 [s]   set_rows: float32 [s x feature width]
//   remove_nodes: int64 [r]
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "core/status.hpp"
#include "graph/live_graph.hpp"
#include "hps/updates/stream_group.hpp"

namespace spindle::runtime {

struct graph_stream_options {
  std::string endpoint;             // Redis HOST:PORT
  std::string stream = "spindle:graph";
  std::string group;                // empty: graph_stream_group_of(the graph log)
  std::uint32_t read_count = 64;    // entries per read
  std::uint32_t block_ms = 200;     // wait for new entries at most this long
};

/// The batch an entry holds for a graph of `feature_dim` columns; errors name
/// the field.
expected<graph::graph_update> graph_update_of_entry(const hps::stream_entry& e,
                                                    std::int64_t feature_dim);
/// An entry's fields for `u` (what a producer appends).
std::vector<std::pair<std::string, std::string>> entry_fields_of(const graph::graph_update& u);

/// The default group of a server: its host name and its graph log's path, so
/// two servers never share one (each must see every batch).
std::string graph_stream_group_of(const std::string& graph_log_path);

/// Appends `u` to `stream` at `endpoint`; returns the entry id.
expected<std::string> publish_graph_update(const std::string& endpoint, const std::string& stream,
                                           const graph::graph_update& u);

class graph_stream_follower {
 public:
  /// Connects, creates the group (at the last entry `live` holds from this
  /// stream, else at the stream's start) and starts applying on a thread.
  static expected<std::unique_ptr<graph_stream_follower>> start(graph::live_graph& live,
                                                                std::int64_t feature_dim,
                                                                graph_stream_options o);
  ~graph_stream_follower();
  graph_stream_follower(const graph_stream_follower&) = delete;
  graph_stream_follower& operator=(const graph_stream_follower&) = delete;

  graph::stream_follow_stats stats() const;
  /// Waits until a read of the stream finds nothing new (its backlog applied),
  /// up to `timeout`: a cluster rank catches up before it serves. False if not.
  bool wait_caught_up(std::chrono::milliseconds timeout);

 private:
  graph_stream_follower(graph::live_graph& live, std::int64_t feature_dim, hps::stream_group g,
                        graph_stream_options o);
  void run();
  status apply(const hps::stream_entry& e);
  status commit();

  graph::live_graph& live_;
  std::int64_t feature_dim_;
  hps::stream_group group_;
  graph_stream_options o_;
  mutable std::mutex mu_;
  graph::stream_follow_stats stats_;
  std::uint64_t last_ticket_ = 0;  // the newest batch staged and not committed (run's thread)
  std::string staged_id_;
  std::vector<double> staged_ms_;  // the staged entries' append times (ms since the epoch)
  std::atomic<bool> stop_{false};
  std::condition_variable caught_up_cv_;
  bool caught_up_ = false;  // under mu_
  std::thread thread_;
};

}  // namespace spindle::runtime
