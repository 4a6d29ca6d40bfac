// Small counter-seeded random generator for samplers: a node's draws depend
// only on (sampler seed, hop, node), so every executor and thread count gives
// the same sample. Value type; one instance per thread.
#pragma once

#include <cstdint>

namespace spindle::graph::detail {

__extension__ typedef unsigned __int128 uint128;

inline std::uint64_t mix64(std::uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

class rng {
 public:
  explicit rng(std::uint64_t seed) : state_(seed) {}
  rng(std::uint64_t seed, std::uint64_t a, std::uint64_t b)
      : state_(mix64(seed ^ mix64(a ^ mix64(b)))) {}

  std::uint64_t next() { return mix64(state_ += 0x9e3779b97f4a7c15ull); }
  /// Uniform in [0, n) by multiply-shift (bias below 2^-32 for n < 2^32).
  std::uint64_t below(std::uint64_t n) {
    return static_cast<std::uint64_t>((static_cast<uint128>(next()) * n) >> 64);
  }
  /// Uniform in (0, 1].
  double unit_open0() { return (static_cast<double>(next() >> 11) + 1.0) * 0x1.0p-53; }

 private:
  std::uint64_t state_;
};

}  // namespace spindle::graph::detail
