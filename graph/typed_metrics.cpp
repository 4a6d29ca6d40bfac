#include "graph/typed_metrics.hpp"

#include <algorithm>
#include <numeric>

namespace spindle::graph {
namespace {

double taken(std::int64_t deg, int fanout) {
  return double(fanout < 0 ? deg : std::min<std::int64_t>(deg, fanout));
}

// Calls f(type, begin, end) for each edge-type segment of row j (rows are
// sorted by edge type).
template <class F>
void segments(const csr_view& g, std::int64_t j, F&& f) {
  std::int64_t b = g.indptr[j];
  const std::int64_t e = g.indptr[j + 1];
  while (b < e) {
    const auto t = g.edge_types[std::size_t(b)];
    std::int64_t end = b + 1;
    while (end < e && g.edge_types[std::size_t(end)] == t) ++end;
    f(int(t), b, end);
    b = end;
  }
}

// r(j) = sum_t [min(d_t, l_t) + min(d_t, l_t)/d_t * sum_{u in segment t} next(u)]
// (next empty: the last hop, m_K alone).
void pull(const csr_view& g, const std::vector<int>& hop, std::span<const double> next,
          std::span<double> r, thread_pool& pool) {
  pool.parallel_for(0, g.num_nodes, 1 << 12, [&](std::int64_t lo, std::int64_t hi, std::size_t) {
    for (std::int64_t j = lo; j < hi; ++j) {
      double sum = 0;
      segments(g, j, [&](int t, std::int64_t b, std::int64_t e) {
        const double m = taken(e - b, hop[std::size_t(t)]);
        sum += m;
        if (next.empty() || m == 0) return;
        double s = 0;
        for (std::int64_t x = b; x < e; ++x) s += next[std::size_t(g.neighbour(x))];
        sum += m / double(e - b) * s;
      });
      r[std::size_t(j)] = sum;
    }
  });
}

// p_next = p_prev W (per-part accumulators summed in part order: deterministic).
void push(const csr_view& g, const std::vector<int>& hop, std::span<const double> p_prev,
          std::vector<std::vector<double>>& partial, std::span<double> p_next,
          thread_pool& pool, progress* prog) {
  const auto parts = std::int64_t(partial.size());
  pool.parallel_for(0, parts, 1, [&](std::int64_t part, std::int64_t, std::size_t) {
    auto& acc = partial[std::size_t(part)];
    std::fill(acc.begin(), acc.end(), 0.0);
    const std::int64_t lo = g.num_nodes * part / parts, hi = g.num_nodes * (part + 1) / parts;
    for (std::int64_t j = lo; j < hi; ++j) {
      if (p_prev[std::size_t(j)] == 0) continue;
      segments(g, j, [&](int t, std::int64_t b, std::int64_t e) {
        const double c = p_prev[std::size_t(j)] * taken(e - b, hop[std::size_t(t)]) / double(e - b);
        if (c == 0) return;
        for (std::int64_t x = b; x < e; ++x) acc[std::size_t(g.neighbour(x))] += c;
      });
    }
    if (prog) prog->advance(std::uint64_t(g.indptr[hi] - g.indptr[lo]));
  });
  for (std::size_t i = 0; i < p_next.size(); ++i) {
    double s = 0;
    for (const auto& a : partial) s += a[i];
    p_next[i] = s;
  }
}

status check(const csr_view& g, const std::vector<std::vector<int>>& fanouts,
             std::span<const double> p0) {
  if (!g.typed()) return make_error(errc::invalid_argument, "typed metrics: the graph is untyped");
  if (std::int64_t(p0.size()) != g.num_nodes)
    return make_error(errc::invalid_argument, "seed distribution has {} entries, graph has {} nodes",
                      p0.size(), g.num_nodes);
  if (fanouts.empty()) return make_error(errc::invalid_argument, "fanouts: at least one hop is needed");
  for (std::size_t k = 0; k < fanouts.size(); ++k)
    if (std::int64_t(fanouts[k].size()) != g.num_edge_types)
      return make_error(errc::invalid_argument,
                        "fanouts of hop {}: {} edge types given, the graph has {}", k + 1,
                        fanouts[k].size(), g.num_edge_types);
  return status::ok();
}

// r_k(j) of pull() for one node, read through `row` (and `segments` at the last
// hop, r_K(j) = sum_t m_K(d_t)). Negative once more than `budget` neighbours
// were read.
double horner(std::int64_t j, std::size_t k, const std::vector<int>& fanouts,
              const typed_row_reader& row, const typed_segment_reader& segments,
              std::int64_t& budget) {
  const int l = fanouts[k - 1];
  if (k == fanouts.size()) {
    std::vector<std::int64_t> sizes;
    segments(j, sizes);
    double sum = 0;
    for (auto d : sizes) sum += taken(d, l);
    return sum;
  }
  std::vector<std::int64_t> nbrs;
  std::vector<std::int16_t> types;
  row(j, nbrs, types);
  budget -= std::int64_t(nbrs.size());
  if (budget < 0) return -1;
  double sum = 0;
  for (std::size_t b = 0; b < nbrs.size();) {  // one segment per edge type
    const auto e = std::size_t(std::upper_bound(types.begin() + std::ptrdiff_t(b), types.end(),
                                                types[b]) - types.begin());
    const double m = taken(std::int64_t(e - b), l);
    sum += m;
    if (m > 0) {
      double s = 0;
      for (std::size_t x = b; x < e; ++x) {
        const double r = horner(nbrs[x], k + 1, fanouts, row, segments, budget);
        if (r < 0) return -1;
        s += r;
      }
      sum += m / double(e - b) * s;
    }
    b = e;
  }
  return sum;
}

}  // namespace

void segment_sizes(std::span<const std::int16_t> types, std::vector<std::int64_t>& sizes) {
  sizes.clear();
  for (auto b = types.begin(); b != types.end();) {
    const auto e = std::upper_bound(b, types.end(), *b);
    sizes.push_back(e - b);
    b = e;
  }
}

double typed_node_psgs(std::int64_t node, const std::vector<int>& fanouts,
                       const typed_row_reader& row, const typed_segment_reader& segments,
                       std::int64_t budget) {
  if (fanouts.empty()) return -1;
  const double r = horner(node, 1, fanouts, row, segments, budget);
  return r < 0 ? -1 : 1.0 + r;
}

std::vector<std::vector<int>> per_edge_type(const std::vector<int>& fanouts, int num_edge_types) {
  std::vector<std::vector<int>> out;
  for (int f : fanouts) out.emplace_back(std::size_t(num_edge_types), f);
  return out;
}

expected<workload_metrics> compute_typed_metrics(const csr_view& g,
                                                 const std::vector<std::vector<int>>& fanouts,
                                                 std::span<const double> p0, thread_pool& pool,
                                                 progress* prog) {
  SPINDLE_TRY(check(g, fanouts, p0));
  const auto n = std::size_t(g.num_nodes);
  const std::size_t K = fanouts.size();
  workload_metrics out{huge_array<double>(n), huge_array<double>(n), {1.0}};
  std::copy(p0.begin(), p0.end(), out.fap.begin());
  // FAP: p_k = p_{k-1} W_k, summed over hops.
  std::vector<std::vector<double>> partial(std::max<std::size_t>(1, pool.slots()),
                                           std::vector<double>(n));
  std::vector<double> p_prev(p0.begin(), p0.end()), p_next(n);
  for (std::size_t k = 0; k < K; ++k) {
    push(g, fanouts[k], p_prev, partial, p_next, pool, prog);
    for (std::size_t i = 0; i < n; ++i) out.fap[i] += p_next[i];
    out.hop_mass.push_back(std::accumulate(p_next.begin(), p_next.end(), 0.0));
    std::swap(p_prev, p_next);
  }
  // PSGS by Horner's rule from the last hop: r_K = m_K, r_k = m_k + W_k r_{k+1}.
  std::vector<double> r_next, r(n);
  for (std::size_t k = K; k-- > 0;) {
    pull(g, fanouts[k], r_next, r, pool);
    r_next.swap(r);
    r.assign(n, 0.0);
  }
  for (std::size_t j = 0; j < n; ++j) out.psgs[j] = 1.0 + r_next[j];
  return out;
}

}  // namespace spindle::graph
