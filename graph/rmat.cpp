#include "graph/rmat.hpp"

#include <numeric>

#include "graph/detail/rng.hpp"

namespace spindle::graph {
namespace {

constexpr std::int64_t kChunk = 1 << 16;  // edges per deterministic RNG stream

// Draws one edge by descending `scale` levels of the recursive quadrant split.
// Each 64-bit draw feeds three levels with 21 bits of resolution apiece.
std::pair<std::int64_t, std::int64_t> draw_edge(detail::rng& r, const rmat_options& o) {
  constexpr double kUnit = 0x1.0p-21;
  const double ab = o.a + o.b, abc = o.a + o.b + o.c;
  std::int64_t u = 0, v = 0;
  std::uint64_t bits = 0;
  for (int level = 0; level < o.scale; ++level) {
    if (level % 3 == 0) bits = r.next();
    double x = static_cast<double>(bits & 0x1fffff) * kUnit;
    bits >>= 21;
    int bit_u = x >= ab ? 1 : 0;
    int bit_v = (x >= o.a && x < ab) || x >= abc ? 1 : 0;
    u = (u << 1) | bit_u;
    v = (v << 1) | bit_v;
  }
  return {u, v};
}

// Graph500-style scramble so hubs are not clustered at small ids.
std::vector<std::int64_t> scramble(std::int64_t n, std::uint64_t seed) {
  std::vector<std::int64_t> perm(static_cast<std::size_t>(n));
  std::iota(perm.begin(), perm.end(), 0);
  detail::rng r(seed, 0x5ca1ab1eULL, 0);
  for (std::int64_t i = n - 1; i > 0; --i)
    std::swap(perm[i], perm[static_cast<std::int64_t>(r.below(static_cast<std::uint64_t>(i + 1)))]);
  return perm;
}

}  // namespace

status validate(const rmat_options& o) {
  if (o.scale < 1 || o.scale > 40)
    return make_error(errc::invalid_argument, "--scale {} must be in [1, 40]", o.scale);
  if (o.edge_factor < 1)
    return make_error(errc::invalid_argument, "--edge-factor {} must be >= 1", o.edge_factor);
  if (o.a <= 0 || o.b <= 0 || o.c <= 0 || o.a + o.b + o.c >= 1)
    return make_error(errc::invalid_argument, "R-MAT probabilities a={} b={} c={} must be > 0 and sum below 1",
                      o.a, o.b, o.c);
  return status::ok();
}

expected<edge_list> generate_rmat(const rmat_options& o, thread_pool& pool, progress* prog) {
  SPINDLE_TRY(validate(o));
  const std::int64_t n = std::int64_t{1} << o.scale;
  const std::int64_t m = n * o.edge_factor;
  edge_list out;
  out.src.resize(static_cast<std::size_t>(m));
  out.dst.resize(static_cast<std::size_t>(m));
  auto perm = scramble(n, o.seed);
  pool.parallel_for(0, m, kChunk, [&](std::int64_t lo, std::int64_t hi, std::size_t) {
    detail::rng r(o.seed, 0xed9e5ULL, static_cast<std::uint64_t>(lo / kChunk));
    for (std::int64_t i = lo; i < hi; ++i) {
      auto [u, v] = draw_edge(r, o);
      out.src[i] = perm[u];
      out.dst[i] = perm[v];
    }
    if (prog) prog->advance(static_cast<std::uint64_t>(hi - lo));
  });
  return out;
}

void synthetic_features(std::uint64_t seed, std::int64_t node, std::span<float> row) {
  detail::rng r(seed, 0xfea7u, static_cast<std::uint64_t>(node));
  for (auto& x : row) x = static_cast<float>(static_cast<double>(r.next() >> 40) * 0x1.0p-23 - 1.0);
}

}  // namespace spindle::graph
