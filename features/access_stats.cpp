#include "features/access_stats.hpp"

#include <algorithm>
#include <cmath>

namespace spindle::features {

access_counter::access_counter(std::size_t nodes)
    : size_(nodes), counts_(std::make_unique<std::atomic<std::uint32_t>[]>(nodes)) {
  for (std::size_t i = 0; i < nodes; ++i) counts_[i].store(0, std::memory_order_relaxed);
}

void access_counter::add(std::span<const std::int64_t> ids) {
  std::uint64_t added = 0;
  for (auto id : ids) {
    if (id < 0 || std::size_t(id) >= size_) continue;
    // One writer: load + store is enough and avoids a locked add per row.
    // Saturate instead of wrapping: a wrapped count would look like a cold row.
    auto& c = counts_[std::size_t(id)];
    const auto v = c.load(std::memory_order_relaxed);
    if (v != UINT32_MAX) c.store(v + 1, std::memory_order_relaxed);
    ++added;
  }
  total_.store(total() + added, std::memory_order_relaxed);
}

std::vector<std::uint32_t> access_counter::snapshot() const {
  std::vector<std::uint32_t> out(size_);
  for (std::size_t i = 0; i < size_; ++i) out[i] = counts_[i].load(std::memory_order_relaxed);
  return out;
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

drift_monitor::drift_monitor(std::vector<double> planned_fap, double threshold,
                             std::uint64_t min_requests)
    : planned_(std::move(planned_fap)), threshold_(threshold), min_requests_(min_requests) {}

std::vector<std::uint32_t> drift_monitor::window(std::span<const std::uint32_t> counts) const {
  std::vector<std::uint32_t> w(counts.begin(), counts.end());
  for (std::size_t i = 0; i < std::min(w.size(), base_counts_.size()); ++i)
    w[i] = w[i] >= base_counts_[i] ? w[i] - base_counts_[i] : 0;
  return w;
}

drift_monitor::reading drift_monitor::observe(std::span<const std::uint32_t> counts,
                                              std::uint64_t requests) const {
  reading r;
  r.window_requests = requests >= base_requests_ ? requests - base_requests_ : 0;
  r.drift = fap_drift(planned_, window(counts));
  r.replan = threshold_ > 0 && r.window_requests >= min_requests_ && r.drift > threshold_;
  return r;
}

std::vector<double> drift_monitor::replan_fap(std::span<const std::uint32_t> counts,
                                              std::uint64_t requests) const {
  const auto w = window(counts);
  const double n = double(requests >= base_requests_ ? requests - base_requests_ : 0);
  const double prior = double(min_requests_);
  std::vector<double> out(w.size(), 0.0);
  if (n + prior <= 0) return out;
  for (std::size_t i = 0; i < w.size(); ++i) {
    const double planned = i < planned_.size() && planned_[i] > 0 ? planned_[i] : 0;
    out[i] = (double(w[i]) + prior * planned) / (n + prior);
  }
  return out;
}

void drift_monitor::rebase(std::vector<double> planned_fap, std::span<const std::uint32_t> counts,
                           std::uint64_t requests) {
  planned_ = std::move(planned_fap);
  base_counts_.assign(counts.begin(), counts.end());
  base_requests_ = requests;
}

}  // namespace spindle::features
