// Dynamic batching policy of a model's batcher (Quiver §4.2.2): a batch closes
// at its deadline (measured from its first request), at the maximum batch size,
// or when the summed PSGS of its seeds reaches a threshold (the router's point);
// and, work-conserving (the default), as soon as a pipeline is idle, so the
// deadline only bounds waiting while every pipeline is busy.
// Pure state machine; one owner.
#pragma once

#include <chrono>
#include <cstddef>
#include <limits>
#include <vector>

namespace spindle::serving {

struct batch_policy {
  std::chrono::microseconds deadline{2000};
  std::size_t max_batch = 64;
  double psgs_threshold = std::numeric_limits<double>::infinity();
  /// An idle pipeline takes the open batch at once (false: batches close only on
  /// deadline, size or PSGS, e.g. to measure fixed-size batching).
  bool work_conserving = true;
  /// Batches a pipeline may hold at once. 2 with GNNSched: a pipeline samples
  /// its next (queued) batch while its last forward pass waits for its group.
  /// Only a pipeline holding none takes an open batch early (work conservation).
  std::size_t pipeline_depth = 1;
  /// A batch that closes while two or more pipelines are idle is dealt out
  /// between them, each part at least this many calls (0: never split); see
  /// split_parts.
  std::size_t split_min = 16;
};

/// How many batches a closing batch of `calls` becomes when `idle` pipelines
/// wait for one: a part per idle pipeline, each of at least `min_part` calls
/// (1 when min_part is 0). On the host, parts running side by side, each on
/// its pipeline's thread, cost less a call than one batch spread over the
/// pool (no hand-off between a batch's steps), and a closed loop's burst of calls then
/// comes back as several bursts, so the door's turnaround overlaps the
/// pipelines' work. Parts smaller than `min_part` share too few sampled rows.
inline std::size_t split_parts(std::size_t calls, std::size_t idle, std::size_t min_part) {
  if (min_part == 0 || idle < 2) return 1;
  const std::size_t parts = calls / min_part;
  return parts < 1 ? 1 : (parts > idle ? idle : parts);
}

/// Field list for CAF's inspectors (a policy changes live through the batcher
/// actor); a template, so this header needs no CAF.
template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, batch_policy& x) {
  return f(x.deadline, x.max_batch, x.psgs_threshold, x.work_conserving, x.pipeline_depth,
           x.split_min);
}

template <class Request>
class batch_builder {
 public:
  using clock = std::chrono::steady_clock;
  explicit batch_builder(batch_policy p) : policy_(p) {}
  void set_policy(batch_policy p) { policy_ = p; }
  const batch_policy& policy() const { return policy_; }

  /// Adds a request; returns true when the batch must close now (size or PSGS).
  bool add(Request r, double psgs, clock::time_point now) {
    if (items_.empty()) opened_ = now;
    items_.push_back(std::move(r));
    psgs_ += psgs;
    return items_.size() >= policy_.max_batch || psgs_ >= policy_.psgs_threshold;
  }
  /// True when the open batch has reached its deadline.
  bool expired(clock::time_point now) const {
    return !items_.empty() && now - opened_ >= policy_.deadline;
  }
  clock::time_point deadline() const { return opened_ + policy_.deadline; }
  bool empty() const { return items_.empty(); }
  double psgs() const { return psgs_; }
  /// Closes the batch and returns its requests.
  std::vector<Request> take() {
    psgs_ = 0;
    return std::exchange(items_, {});
  }

 private:
  batch_policy policy_;
  std::vector<Request> items_;
  double psgs_ = 0;
  clock::time_point opened_{};
};

}  // namespace spindle::serving
