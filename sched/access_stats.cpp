#include "sched/access_stats.hpp"

#include <cmath>

namespace spindle::sched {

void access_counter::add(std::span<const std::int64_t> ids) {
  for (auto id : ids) {
    if (id < 0 || std::size_t(id) >= counts_.size()) continue;
    // Saturate instead of wrapping: a wrapped count would look like a cold row.
    if (counts_[std::size_t(id)] != UINT32_MAX) ++counts_[std::size_t(id)];
    ++total_;
  }
}

std::vector<double> observed_fap(std::span<const std::uint32_t> counts, std::uint64_t requests) {
  std::vector<double> out(counts.size(), 0.0);
  if (requests == 0) return out;
  for (std::size_t i = 0; i < counts.size(); ++i) out[i] = double(counts[i]) / double(requests);
  return out;
}

double fap_drift(std::span<const double> planned, std::span<const std::uint32_t> counts) {
  const std::size_t n = std::min(planned.size(), counts.size());
  double p_sum = 0, c_sum = 0;
  for (std::size_t i = 0; i < n; ++i) {
    p_sum += planned[i] > 0 ? planned[i] : 0;
    c_sum += counts[i];
  }
  if (p_sum <= 0 || c_sum <= 0) return 0;
  double tv = 0;
  for (std::size_t i = 0; i < n; ++i)
    tv += std::abs((planned[i] > 0 ? planned[i] : 0) / p_sum - double(counts[i]) / c_sum);
  return tv / 2;
}

}  // namespace spindle::sched
