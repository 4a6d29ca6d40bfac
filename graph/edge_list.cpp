#include "graph/edge_list.hpp"

#include <algorithm>
#include <numeric>

namespace spindle::graph {
namespace {

std::vector<std::int64_t> sorted_unique_ids(const edge_list& e) {
  std::vector<std::int64_t> ids;
  ids.reserve(e.src.size() + e.dst.size());
  ids.insert(ids.end(), e.src.begin(), e.src.end());
  ids.insert(ids.end(), e.dst.begin(), e.dst.end());
  std::sort(ids.begin(), ids.end());
  ids.erase(std::unique(ids.begin(), ids.end()), ids.end());
  return ids;
}

void symmetrise(edge_list& e) {
  std::size_t m = e.src.size();
  e.src.resize(2 * m);
  e.dst.resize(2 * m);
  std::copy_n(e.dst.begin(), m, e.src.begin() + m);
  std::copy_n(e.src.begin(), m, e.dst.begin() + m);
  if (!e.weight.empty()) {
    e.weight.resize(2 * m);
    std::copy_n(e.weight.begin(), m, e.weight.begin() + m);
  }
}

// Sorts one row by neighbour id, then drops self-loops and duplicates as asked.
// Returns the row's new length; `scratch` holds (neighbour, weight) pairs.
// `loops` and `dups` count what the row held (kept or dropped): a repeated
// self-loop counts as a self-loop only.
std::int64_t tidy_row(std::int64_t v, std::int64_t* nbr, float* w, std::int64_t len,
                      const build_options& opt, std::vector<std::pair<std::int64_t, float>>& scratch,
                      std::int64_t& loops, std::int64_t& dups) {
  scratch.resize(len);
  for (std::int64_t i = 0; i < len; ++i) scratch[i] = {nbr[i], w ? w[i] : 0.0f};
  // Largest weight first among equal neighbours, so dedup keeps the max.
  std::sort(scratch.begin(), scratch.end(),
            [](const auto& a, const auto& b) { return a.first < b.first || (a.first == b.first && a.second > b.second); });
  std::int64_t out = 0;
  for (std::int64_t i = 0; i < len; ++i) {
    auto [u, wt] = scratch[i];
    const bool loop = u == v, dup = !loop && i > 0 && scratch[i - 1].first == u;
    loops += loop;
    dups += dup;
    if (loop && !opt.keep_self_loops) continue;
    if (dup && !opt.keep_duplicates) continue;
    nbr[out] = u;
    if (w) w[out] = wt;
    ++out;
  }
  return out;
}

// Counting sort of edges into rows, then per-row tidy and compaction.
built_graph to_csr(edge_list& e, std::int64_t n, const build_options& opt, thread_pool* pool) {
  built_graph out;
  bool weighted = !e.weight.empty();
  std::vector<std::int64_t> start(n + 1, 0);
  for (auto s : e.src) ++start[s + 1];
  std::partial_sum(start.begin(), start.end(), start.begin());
  std::vector<std::int64_t> nbr(e.src.size());
  std::vector<float> w(weighted ? e.src.size() : 0);
  {
    std::vector<std::int64_t> fill(start.begin(), start.end() - 1);
    for (std::size_t i = 0; i < e.src.size(); ++i) {
      std::int64_t pos = fill[e.src[i]]++;
      nbr[pos] = e.dst[i];
      if (weighted) w[pos] = e.weight[i];
    }
  }
  e = edge_list{};  // release input before the tidy pass
  std::vector<std::int64_t> len(n);
  std::size_t slots = pool ? pool->slots() : 1;
  std::vector<std::int64_t> loops(slots, 0), dups(slots, 0);
  auto tidy = [&](std::int64_t lo, std::int64_t hi, std::size_t slot) {
    std::vector<std::pair<std::int64_t, float>> scratch;
    for (std::int64_t v = lo; v < hi; ++v)
      len[v] = tidy_row(v, nbr.data() + start[v], weighted ? w.data() + start[v] : nullptr,
                        start[v + 1] - start[v], opt, scratch, loops[slot], dups[slot]);
  };
  if (pool) pool->parallel_for(0, n, 4096, tidy);
  else tidy(0, n, 0);
  out.self_loops = std::accumulate(loops.begin(), loops.end(), std::int64_t{0});
  out.duplicates = std::accumulate(dups.begin(), dups.end(), std::int64_t{0});
  out.self_loops_dropped = opt.keep_self_loops ? 0 : out.self_loops;
  out.duplicates_dropped = opt.keep_duplicates ? 0 : out.duplicates;

  csr_graph& g = out.csr;
  g.num_nodes = n;
  g.indptr.assign(n + 1, 0);
  for (std::int64_t v = 0; v < n; ++v) g.indptr[v + 1] = g.indptr[v] + len[v];
  bool wide = needs_wide_indices(n);
  (wide ? g.indices64.resize(g.indptr[n]) : g.indices32.resize(g.indptr[n]));
  if (weighted) g.edge_weight.resize(g.indptr[n]);
  for (std::int64_t v = 0; v < n; ++v) {
    for (std::int64_t i = 0; i < len[v]; ++i) {
      std::int64_t dst_pos = g.indptr[v] + i;
      if (wide) g.indices64[dst_pos] = nbr[start[v] + i];
      else g.indices32[dst_pos] = static_cast<std::int32_t>(nbr[start[v] + i]);
      if (weighted) g.edge_weight[dst_pos] = w[start[v] + i];
    }
  }
  return out;
}

}  // namespace

void relabel_in_place(std::vector<std::int64_t>& ids, const std::vector<std::int64_t>& sorted_ids) {
  for (auto& id : ids)
    id = std::lower_bound(sorted_ids.begin(), sorted_ids.end(), id) - sorted_ids.begin();
}

expected<built_graph> build_csr(edge_list edges, const build_options& options, thread_pool* pool) {
  if (edges.src.size() != edges.dst.size())
    return make_error(errc::internal, "edge list has {} sources but {} destinations",
                      edges.src.size(), edges.dst.size());
  if (!edges.weight.empty() && edges.weight.size() != edges.src.size())
    return make_error(errc::invalid_argument, "edge list has {} edges but {} weights",
                      edges.src.size(), edges.weight.size());
  std::vector<std::int64_t> ids;
  std::int64_t n = options.num_nodes;
  bool relabel = options.relabel == relabel_mode::always;
  if (options.relabel == relabel_mode::auto_detect) {
    ids = sorted_unique_ids(edges);
    relabel = !ids.empty() && (ids.front() < 0 || ids.back() + 1 > static_cast<std::int64_t>(ids.size()));
    if (!relabel) n = ids.empty() ? 0 : ids.back() + 1;
  }
  if (relabel) {
    if (ids.empty()) ids = sorted_unique_ids(edges);
    relabel_in_place(edges.src, ids);
    relabel_in_place(edges.dst, ids);
    n = static_cast<std::int64_t>(ids.size());
  } else if (options.relabel == relabel_mode::never) {
    std::int64_t max_id = -1;
    for (std::size_t i = 0; i < edges.src.size(); ++i) {
      std::int64_t a = edges.src[i], b = edges.dst[i];
      if (a < 0 || b < 0 || (n > 0 && (a >= n || b >= n)))
        return make_error(errc::invalid_argument, "edge {}: {} -> {} out of range (num_nodes={})", i, a, b, n);
      max_id = std::max({max_id, a, b});
    }
    if (n == 0) n = max_id + 1;
  }
  if (options.undirected) symmetrise(edges);
  built_graph out = to_csr(edges, n, options, pool);
  if (relabel) out.original_ids = std::move(ids);
  return out;
}

}  // namespace spindle::graph
