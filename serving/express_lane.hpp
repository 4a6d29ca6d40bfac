// Run to completion for GNN calls that find their model idle: the thread that
// read them (a door's event loop) runs their batch itself, with a pipeline of
// its own, instead of handing it to the batcher and a pipeline thread and back
// (four hand-offs between threads, each a wake-up). Only while no call of the
// model is outstanding at its batcher and no other thread runs the lane, and only
// for a small batch, so a door thread holds other connections for at most one
// small batch's work; everything else goes to the batcher as before. Pure logic.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <vector>

#include "serving/gnn_pipeline.hpp"

namespace spindle::serving {

class express_lane {
 public:
  /// Batches of at most `max_requests` calls and `max_seeds` seeds run here
  /// (0 requests: never; changed live by set_max_requests). `device_routed`: the model's pipelines run large
  /// batches on a GPU, so the lane (on the host) takes only batches its router
  /// sends to the small executor, as those pipelines would run them.
  struct limits {
    std::size_t max_requests = 1;
    std::size_t max_seeds = 16;
    bool device_routed = false;
  };
  /// The references must outlive the lane (close() before they go).
  express_lane(const graph::dataset& ds, const nn::model& model, const psgs_router& router,
               thread_pool& pool, limits l);

  /// Calls handed to the model's batcher, counted until they are answered: the
  /// lane runs nothing while any is outstanding (it would race the pipelines for
  /// the cores, and a call behind a busy batcher is batched there anyway).
  void enter(std::size_t calls) { outstanding_.fetch_add(std::int64_t(calls)); }
  void leave(std::size_t calls) { outstanding_.fetch_sub(std::int64_t(calls)); }

  /// Runs `batch` on the calling thread when the lane may take it (within the
  /// limits, the model idle, the lane free, routed as the pipelines would run it),
  /// and returns its result; nullopt otherwise: hand it to the batcher. `entered`:
  /// how many of the outstanding calls (enter) are this batch's own; `counted`
  /// false: not in the counters (the server's warm-up call).
  std::optional<batch_result> try_run(const std::vector<gnn_request>& batch,
                                      std::size_t entered, bool counted = true);

  /// The fanouts tunable: the lane samples as the pipelines do.
  status set_fanouts(std::vector<int> fanouts);
  /// The model goes: the lane runs nothing more and frees its pipeline.
  void close();

  /// The batcher's `work_conserving` tunable: false (every call waits for its
  /// batch's deadline or size) turns the lane off until it is true again.
  void set_work_conserving(bool on) { work_conserving_.store(on, std::memory_order_relaxed); }
  /// The `express_max_requests` tunable (0: the lane runs nothing).
  void set_max_requests(std::size_t n) { max_requests_.store(n, std::memory_order_relaxed); }
  std::size_t max_requests() const { return max_requests_.load(std::memory_order_relaxed); }

  std::uint64_t batches() const { return batches_.load(std::memory_order_relaxed); }
  std::uint64_t requests() const { return requests_.load(std::memory_order_relaxed); }
  /// Of batches(): those its router sent to the large executor (the rest: small).
  std::uint64_t large_batches() const { return large_.load(std::memory_order_relaxed); }

 private:
  // The executor `batch` runs on, when the lane may take it (within the limits;
  // beside GPU pipelines only what the router sends to the host).
  std::optional<psgs_router::choice> route_of(const std::vector<gnn_request>& batch) const;

  const graph::dataset& ds_;
  const psgs_router& router_;
  const limits limits_;
  std::atomic<std::size_t> max_requests_;
  std::atomic<bool> work_conserving_{true};
  std::atomic<std::int64_t> outstanding_{0};
  std::mutex mu_;  // held while a thread runs the lane (try_lock: never waited for)
  std::unique_ptr<gnn_pipeline> pipeline_;  // null once closed
  std::atomic<std::uint64_t> batches_{0}, requests_{0}, large_{0};
};

}  // namespace spindle::serving
