// Observed feature access (the measured side of Quiver's FAP): counts how often
// each node's feature row is gathered, and how far the observed distribution
// has drifted from the FAP a placement was planned with (total variation
// distance between the two normalized distributions, 0 = same, 1 = disjoint).
// The input to a re-plan on drift. One counter per gathering thread.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

namespace spindle::sched {

class access_counter {
 public:
  explicit access_counter(std::size_t nodes) : counts_(nodes, 0) {}
  /// Counts each id once per occurrence; ids out of range are ignored.
  void add(std::span<const std::int64_t> ids);
  std::span<const std::uint32_t> counts() const { return counts_; }
  std::uint64_t total() const { return total_; }

 private:
  std::vector<std::uint32_t> counts_;
  std::uint64_t total_ = 0;
};

/// Observed FAP: expected accesses per request (counts / requests), the
/// measured counterpart of graph/metrics' FAP for a re-plan.
std::vector<double> observed_fap(std::span<const std::uint32_t> counts, std::uint64_t requests);

/// Total variation distance between `planned` FAP (normalized here) and the
/// observed `counts` (normalized); 0 when either is empty or all zero.
double fap_drift(std::span<const double> planned, std::span<const std::uint32_t> counts);

}  // namespace spindle::sched
