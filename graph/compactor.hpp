// Compaction while serving: folds a live graph's delta into a new base on disk
// (graph, features, labels, removed nodes; PSGS and FAP recomputed), switches
// readers to it at the same version, then starts a new log holding only the
// batches after it and removes the old log and base. Runs on its own thread
// when the delta reaches a size, or when asked; serving and updates go on.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include "core/status.hpp"
#include "graph/dataset.hpp"
#include "graph/graph_log.hpp"

namespace spindle::graph {

struct compactor_options {
  std::string log_path;  // the log path the user named (P; graph/compaction_files.hpp)
  /// Compact when the delta holds this many changed rows, feature rows and
  /// removed nodes together; 0: only when asked (compact_now).
  std::uint64_t at_changes = 0;
  /// How often the delta's size is looked at.
  std::chrono::milliseconds poll{250};
};

/// The delta's size as compactor_options::at_changes counts it.
std::uint64_t delta_changes(const graph_delta& d);

class compactor {
 public:
  /// Starts the watching thread (none when at_changes is 0). `ds` holds the
  /// live graph; `log` is its write-ahead log.
  compactor(dataset& ds, std::shared_ptr<graph_log> log, compactor_options o);
  ~compactor();
  compactor(const compactor&) = delete;
  compactor& operator=(const compactor&) = delete;

  /// Runs one compaction now on the calling thread (refused while one runs;
  /// nothing is written when the delta is empty).
  status compact_now();

 private:
  status compact_once();
  void watch();

  dataset& ds_;
  std::shared_ptr<graph_log> log_;
  compactor_options options_;
  std::mutex run_mu_;  // one compaction at a time
  std::mutex stop_mu_;
  std::condition_variable stop_cv_;
  bool stop_ = false;
  bool given_up_ = false;  // the automatic one failed: not retried until asked
  std::thread thread_;
};

}  // namespace spindle::graph
