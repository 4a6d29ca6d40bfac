// Quiver §4.2 PSGS-guided hybrid sampling: calibration curves of batch latency
// against summed PSGS for a "small" executor (CPU in the paper; here inline)
// and a "large" one (GPU; here pooled), the four crossover points, and the
// router that sends a batch to one executor by its summed PSGS. On a host-only
// machine the same points are computed between inline and pooled sampling.
// The router's policy and threshold change live (atomics; any thread).
#pragma once

#include <atomic>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.hpp"

namespace spindle::serving {

/// Latency statistics of one PSGS bucket.
struct psgs_bucket {
  double psgs_lo = 0, psgs_hi = 0;
  double psgs_mean = 0;  // mean summed PSGS of the batches in the bucket
  std::size_t count = 0;
  double mean_s = 0, max_s = 0;
};

/// A least-squares line latency = a + b * psgs.
struct line_fit {
  double a = 0, b = 0;
  double at(double psgs) const { return a + b * psgs; }
};

struct executor_curve {
  std::string executor;
  std::vector<psgs_bucket> buckets;
  line_fit mean, max;
};

/// Where two curves cross; `exists` is false when they do not cross at a positive
/// PSGS (then `psgs` is 0 if the large executor is always better, +inf if never).
struct crossover {
  double psgs = 0;
  bool exists = false;
};

struct psgs_calibration {
  executor_curve small, large;
  crossover cpu_preferred;         // small max  x large mean
  crossover gpu_preferred;         // small mean x large max
  crossover latency_preferred;     // small max  x large max  (PSGS-Strict)
  crossover throughput_preferred;  // small mean x large mean (PSGS-Loose)

  std::string to_json() const;
  static expected<psgs_calibration> from_json(std::string_view text, std::string_view origin);
  /// A text table of both curves and the four points.
  std::string table() const;
  /// One line: the batches measured and the strict and loose routing points
  /// (for a server's start-up log).
  std::string summary() const;
};

/// Buckets (psgs, seconds) samples into `buckets` geometric PSGS ranges and fits lines.
executor_curve build_curve(std::string executor, std::vector<std::pair<double, double>> samples,
                           int buckets);
/// The four crossover points of Quiver §4.2.1.
void compute_crossovers(psgs_calibration& c);

enum class routing_policy { strict, loose, fixed };
std::string_view to_string(routing_policy p);
expected<routing_policy> parse_routing_policy(std::string_view text);

/// Picks an executor per batch: strict uses the latency-preferred point, loose the
/// throughput-preferred point, fixed always the executor set by set_fixed().
class psgs_router {
 public:
  explicit psgs_router(psgs_calibration c, routing_policy p = routing_policy::strict);
  enum class choice { small, large };
  choice route(double summed_psgs) const;
  void set_policy(routing_policy p) { policy_.store(p, std::memory_order_relaxed); }
  routing_policy policy() const { return policy_.load(std::memory_order_relaxed); }
  void set_fixed(choice c) { fixed_.store(c, std::memory_order_relaxed); }
  /// Overrides the strict/loose routing point with `psgs` (an operator's
  /// choice, e.g. after re-calibrating elsewhere); NaN or < 0 restores the
  /// calibrated points. The fixed policy ignores it.
  void set_threshold_override(double psgs);
  /// The override, or NaN when the calibrated points are used.
  double threshold_override() const { return override_.load(std::memory_order_relaxed); }
  /// The PSGS threshold the current policy uses.
  double threshold() const;
  const psgs_calibration& calibration() const { return c_; }

 private:
  psgs_calibration c_;
  std::atomic<routing_policy> policy_;
  std::atomic<choice> fixed_{choice::small};
  std::atomic<double> override_;
};

/// Where the large executor is the host's thread pool (not a GPU's), its calibrated
/// latencies hold only while the pool's cores are free: a batch routed to it
/// runs inline instead once `running` batches (itself included) are at least
/// the pool's `slots` (its workers and the calling thread). Every core then
/// already runs a batch's thread, and spreading one batch's steps over them
/// adds hand-offs and wake-ups without adding cores (docs/architecture.md:
/// "Parallel within a batch or across").
psgs_router::choice host_executor_while_busy(psgs_router::choice routed, std::size_t running,
                                             std::size_t slots);

}  // namespace spindle::serving
