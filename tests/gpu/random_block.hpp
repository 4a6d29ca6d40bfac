// Random sampled blocks and values for the kernel tests: the device element
// functions are checked against the host operators on them.
#pragma once

#include <cstdint>
#include <random>
#include <vector>

namespace spindle::gpu {

// A random block's CSR: rows of 0..max_deg-1 edges (some empty); with
// `self_loops`, every fifth row's first edge points at itself.
struct csr_block {
  std::vector<std::int64_t> indptr{0};
  std::vector<std::int32_t> indices;
};
inline csr_block random_block(std::mt19937& rng, std::int64_t dst, std::int64_t src, int max_deg,
                       bool self_loops) {
  csr_block b;
  for (std::int64_t r = 0; r < dst; ++r) {
    for (int e = 0, d = int(rng() % unsigned(max_deg)); e < d; ++e)
      b.indices.push_back(self_loops && e == 0 && r % 5 == 0 ? std::int32_t(r)
                                                             : std::int32_t(rng() % src));
    b.indptr.push_back(std::int64_t(b.indices.size()));
  }
  return b;
}

// n standard-normal floats.
inline std::vector<float> normal_values(std::mt19937& rng, std::int64_t n) {
  std::normal_distribution<float> d(0, 1);
  std::vector<float> out(static_cast<std::size_t>(n));
  for (auto& f : out) f = d(rng);
  return out;
}

}  // namespace spindle::gpu
