// Observed feature access (the measured side of Quiver's FAP): counts how often
// each node's feature row is gathered, and how far the observed distribution
// has drifted from the FAP a placement was planned with (total variation
// distance between the two normalized distributions, 0 = same, 1 = disjoint).
// drift_monitor turns that into the re-plan decision of the placement actor.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <span>
#include <vector>

namespace spindle::features {

/// One writer (the gathering thread) adds; any thread may take a snapshot while
/// it does (relaxed atomics: a snapshot may miss the adds of a gather in flight).
class access_counter {
 public:
  explicit access_counter(std::size_t nodes);
  /// Counts each id once per occurrence; ids out of range are ignored. One writer.
  void add(std::span<const std::int64_t> ids);
  /// Counts one request (the denominator of the observed FAP). One writer.
  void add_request() { requests_.store(requests() + 1, std::memory_order_relaxed); }
  std::size_t size() const { return size_; }
  std::vector<std::uint32_t> snapshot() const;
  std::uint64_t total() const { return total_.load(std::memory_order_relaxed); }
  std::uint64_t requests() const { return requests_.load(std::memory_order_relaxed); }

 private:
  std::size_t size_;
  std::unique_ptr<std::atomic<std::uint32_t>[]> counts_;
  std::atomic<std::uint64_t> total_{0};
  std::atomic<std::uint64_t> requests_{0};
};

/// Observed FAP: expected accesses per request (counts / requests), the
/// measured counterpart of graph/metrics' FAP for a re-plan.
std::vector<double> observed_fap(std::span<const std::uint32_t> counts, std::uint64_t requests);

/// Total variation distance between `planned` FAP (normalized here) and the
/// observed `counts` (normalized); 0 when either is empty or all zero.
double fap_drift(std::span<const double> planned, std::span<const std::uint32_t> counts);

/// Decides when the observed accesses have drifted far enough from the FAP the
/// current plan was made with to re-plan. Drift is measured over a window: the
/// accesses since the last re-plan (so an old workload does not dilute a new
/// one), and only once the window holds `min_requests` requests (a handful of
/// requests touch too few rows to estimate a FAP from). threshold <= 0 never
/// triggers (re-plans then happen only on request).
class drift_monitor {
 public:
  drift_monitor(std::vector<double> planned_fap, double threshold, std::uint64_t min_requests);
  struct reading {
    double drift = 0;
    std::uint64_t window_requests = 0;
    bool replan = false;  // drift > threshold with enough requests
  };
  /// Judges the cumulative `counts` / `requests` against the window's base.
  reading observe(std::span<const std::uint32_t> counts, std::uint64_t requests) const;
  /// What the next plan is made from: the window's observed FAP, with the
  /// current plan's FAP as a prior worth `min_requests` requests,
  ///   (window counts + min_requests * planned) / (window requests + min_requests),
  /// so a re-plan asked for after a few requests stays close to the current plan
  /// and a long window follows what was observed (noise does not reshuffle rows).
  std::vector<double> replan_fap(std::span<const std::uint32_t> counts,
                                 std::uint64_t requests) const;
  /// A new plan was made from `planned_fap`: the window restarts at `counts`.
  void rebase(std::vector<double> planned_fap, std::span<const std::uint32_t> counts,
              std::uint64_t requests);
  double threshold() const { return threshold_; }
  void set_threshold(double t) { threshold_ = t; }
  std::uint64_t min_requests() const { return min_requests_; }

 private:
  std::vector<std::uint32_t> window(std::span<const std::uint32_t> counts) const;
  std::vector<double> planned_;
  double threshold_;
  std::uint64_t min_requests_;
  std::vector<std::uint32_t> base_counts_;
  std::uint64_t base_requests_ = 0;
};

}  // namespace spindle::features
