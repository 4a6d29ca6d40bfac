// The neighbour draw of uniform k-hop sampling (Quiver §4.2, PyG NeighborLoader
// semantics), shared by the host samplers (graph/sampler) and the CUDA sampling
// kernel (gpu/cuda/gnn_kernels.cu): a counter-seeded generator whose draws
// depend only on (sampler seed, hop, node), and Floyd's algorithm for fanout
// distinct positions. Same seed, hop and node: the same neighbours on both.
#pragma once

#include <cstdint>

#include "gpu/host_device.hpp"

namespace spindle::gpu {

/// The largest fanout Floyd's draw serves; past it the host takes a partial
/// shuffle (O(degree) scratch) and the device kernel refuses the call.
inline constexpr int kMaxFloydFanout = 64;

/// splitmix64's finaliser.
SPINDLE_HOST_DEVICE inline std::uint64_t splitmix64(std::uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

/// High 64 bits of a 64 x 64-bit product.
SPINDLE_HOST_DEVICE inline std::uint64_t mul_high(std::uint64_t a, std::uint64_t b) {
#if defined(__CUDA_ARCH__)
  return __umul64hi(a, b);
#else
  __extension__ typedef unsigned __int128 uint128;
  return static_cast<std::uint64_t>((static_cast<uint128>(a) * b) >> 64);
#endif
}

/// A node's generator: its stream depends only on (seed, a, b) = (sampler
/// seed, hop, node), so executors, thread counts and devices agree.
struct draw_rng {
  std::uint64_t state;
  SPINDLE_HOST_DEVICE explicit draw_rng(std::uint64_t seed) : state(seed) {}
  SPINDLE_HOST_DEVICE draw_rng(std::uint64_t seed, std::uint64_t a, std::uint64_t b)
      : state(splitmix64(seed ^ splitmix64(a ^ splitmix64(b)))) {}
  SPINDLE_HOST_DEVICE std::uint64_t next() { return splitmix64(state += 0x9e3779b97f4a7c15ull); }
  /// Uniform in [0, n) by multiply-shift (bias below 2^-32 for n < 2^32).
  SPINDLE_HOST_DEVICE std::uint64_t below(std::uint64_t n) { return mul_high(next(), n); }
  /// Uniform in (0, 1].
  SPINDLE_HOST_DEVICE double unit_open0() {
    return (static_cast<double>(next() >> 11) + 1.0) * 0x1.0p-53;
  }
};

/// Floyd's draw of `fanout` distinct positions in [0, deg) (0 < fanout < deg,
/// fanout <= kMaxFloydFanout) into out[0, fanout): for j in [deg - fanout, deg)
/// draw t in [0, j]; take t unless already taken, else j. Every subset is
/// equally likely.
SPINDLE_HOST_DEVICE inline void floyd_draw(draw_rng& r, std::int64_t deg, int fanout,
                                           std::int64_t* out) {
  int n = 0;
  for (std::int64_t j = deg - fanout; j < deg; ++j) {
    const auto t = static_cast<std::int64_t>(r.below(static_cast<std::uint64_t>(j + 1)));
    bool taken = false;
    for (int k = 0; k < n; ++k) taken = taken || out[k] == t;
    out[n++] = taken ? j : t;
  }
}

/// The positions one frontier row samples: all of [0, deg) when fanout < 0 or
/// deg <= fanout, else Floyd's draw. Returns how many were written to `out`
/// (room for min(deg, fanout) needed).
SPINDLE_HOST_DEVICE inline std::int64_t draw_row(std::uint64_t seed, int hop, std::int64_t node,
                                                 std::int64_t deg, int fanout, std::int64_t* out) {
  if (fanout < 0 || deg <= fanout) {
    for (std::int64_t i = 0; i < deg; ++i) out[i] = i;
    return deg;
  }
  draw_rng r(seed, static_cast<std::uint64_t>(hop), static_cast<std::uint64_t>(node));
  floyd_draw(r, deg, fanout, out);
  return fanout;
}

}  // namespace spindle::gpu
