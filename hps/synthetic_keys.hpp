// Synthetic embedding keys for demos, the in-process load generator and the
// benchmarks: a power-law (Zipf) stream like HPS's Synthetic A (alpha 1.2:
// about 10% of the keys take ~95% of the lookups), ranks scrambled over the key
// space so hot keys are not neighbours; and a table whose vector for key k is a
// function of k. One owner thread per generator.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <random>
#include <vector>

namespace spindle::hps {

class zipf_keys {
 public:
  zipf_keys(std::uint64_t n, double alpha, std::uint64_t seed) : n_(n), cdf_(n), rng_(seed) {
    double sum = 0;
    for (std::uint64_t r = 0; r < n; ++r) cdf_[r] = sum += std::pow(double(r + 1), -alpha);
    for (auto& c : cdf_) c /= sum;
  }
  /// A key in [0, n): rank r drawn by the power law, mapped to a fixed permutation.
  std::uint64_t next() {
    const double u = std::uniform_real_distribution<double>(0, 1)(rng_);
    const auto r = std::uint64_t(std::lower_bound(cdf_.begin(), cdf_.end(), u) - cdf_.begin());
    return scramble(std::min(r, n_ - 1));
  }
  std::vector<std::uint64_t> batch(std::size_t size) {
    std::vector<std::uint64_t> b(size);
    for (auto& k : b) k = next();
    return b;
  }
  /// Share of the probability mass on the hottest `fraction` of the keys.
  double head_mass(double fraction) const {
    const auto k = std::max<std::uint64_t>(1, std::uint64_t(fraction * double(n_)));
    return cdf_[k - 1];
  }
  /// rank -> key: multiplication by an odd constant mod the next power of two,
  /// cycle-walked into [0, n) (a bijection on [0, n)).
  std::uint64_t scramble(std::uint64_t r) const {
    std::uint64_t m = 1;
    while (m < n_) m <<= 1;
    do r = (r * 0x9E3779B97F4A7C15ULL + 0x632BE59BD9B4E019ULL) & (m - 1);
    while (r >= n_);
    return r;
  }

 private:
  std::uint64_t n_;
  std::vector<double> cdf_;
  std::mt19937_64 rng_;
};

/// The benchmark table's vector for key k (dim floats).
inline void table_vector(std::uint64_t k, std::uint32_t dim, float* out) {
  for (std::uint32_t d = 0; d < dim; ++d) out[d] = float(k % 1000) * 0.001f + float(d);
}

}  // namespace spindle::hps
