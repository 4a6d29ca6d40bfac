// The q-quantile of a sample by its floor rank (q in [0, 1]; 0 for no sample):
// what the load generators and `serve` report as p50/p99.
#pragma once

#include <algorithm>
#include <vector>

namespace spindle {

inline double pct(std::vector<double> v, double q) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v[std::min(v.size() - 1, std::size_t(q * double(v.size())))];
}

}  // namespace spindle
