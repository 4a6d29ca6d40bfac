#include "graph/sampler.hpp"

#include <algorithm>

#include "graph/detail/id_map.hpp"
#include "graph/detail/neighbour_pick.hpp"
#include "graph/graph_delta.hpp"

namespace spindle::graph {
namespace {

struct chunk_result {
  std::vector<std::int64_t> globals;
  std::vector<std::int64_t> row_sizes;
  std::vector<std::int16_t> types;  // typed graphs: each global's edge type
  std::vector<std::int64_t> ids;    // with edge_ids: each global's CSR position
};

// Per-thread scratch reused across calls, so steady-state sampling allocates
// nothing once its output has grown to size.
struct thread_scratch {
  std::vector<chunk_result> chunks;  // the pooled executor's per-chunk results
  detail::id_map map;
  std::vector<std::int64_t> positions;
  std::vector<std::int64_t> picks;  // sample_rows_plain: a chunk's drawn CSR positions
  std::vector<std::pair<double, std::int64_t>> keys;
  std::vector<std::int64_t> globals;
  std::vector<std::int64_t> row_sizes;
  std::vector<std::int16_t> types;     // typed graphs: each global's edge type
  std::vector<std::int64_t> ids;       // with edge_ids: each global's CSR position
  std::vector<std::int64_t> frontier;  // sample_with_drawer's hop rows
  std::vector<std::int64_t> row;       // a row read through a graph delta
  std::vector<float> row_weights;
  std::vector<std::int16_t> row_types;  // its edge types (typed graphs)
};

thread_scratch& scratch() {
  thread_local thread_scratch s;
  return s;
}

// The draws of one row of `deg` neighbours: all of them, or `fanout` picked
// as PyG does (by weight when asked); `at(i)` is the i-th neighbour. `stream`
// keys the draws with (seed, node): the hop, and on typed graphs the edge type.
// With `ids`, each draw's CSR position (`first` + its index in the row) too.
template <class At>
void draw_row(std::int64_t v, std::int64_t deg, const float* weights, int fanout,
              std::uint64_t stream, const sample_options& o, thread_scratch& s,
              std::vector<std::int64_t>& out, At&& at, std::int64_t first = 0,
              std::vector<std::int64_t>* ids = nullptr) {
  if (!o.weighted && (fanout < 0 || deg <= fanout)) {  // common case: take the whole row
    for (std::int64_t e = 0; e < deg; ++e) out.push_back(at(e));
    if (ids)
      for (std::int64_t e = 0; e < deg; ++e) ids->push_back(first + e);
    return;
  }
  detail::rng r(o.seed, stream, static_cast<std::uint64_t>(v));
  s.positions.clear();
  if (o.weighted)
    detail::pick_weighted(r, weights, deg, fanout, s.keys, s.positions);
  else
    detail::pick_uniform(r, deg, fanout, s.positions);
  for (auto p : s.positions) out.push_back(at(p));
  if (ids)
    for (auto p : s.positions) ids->push_back(first + p);
}

// Appends the global ids of the neighbours sampled for node v at hop `hop`:
// from the base CSR, or through the graph's delta when it changed v's row or
// removed nodes (never with `ids`: validate_sample_options refuses edge_ids there).
void sample_row(const csr_view& g, std::int64_t v, int hop, const sample_options& o,
                thread_scratch& s, std::vector<std::int64_t>& out, std::vector<std::int64_t>* ids) {
  if (g.delta && (!g.delta->removed.empty() || v >= g.num_nodes || g.delta->rows.find(v))) {
    const auto r = read_row(g, *g.delta, v, s.row, s.row_weights);
    draw_row(v, std::int64_t(r.neighbours.size()), r.weights.data(), o.fanouts[hop - 1],
             std::uint64_t(hop), o, s, out,
             [&](std::int64_t i) { return r.neighbours[std::size_t(i)]; });
    return;
  }
  const std::int64_t begin = g.indptr[v];
  draw_row(
      v, g.indptr[v + 1] - begin, g.weighted() ? g.edge_weight.data() + begin : nullptr,
      o.fanouts[hop - 1], std::uint64_t(hop), o, s, out,
      [&](std::int64_t i) { return g.neighbour(begin + i); }, begin, ids);
}

// Draws each edge type's segment of one typed row (sorted by type): `type_at(i)`
// and `at(i)` are the i-th edge's type and neighbour, `weights` the row's (or
// null), `first` its CSR position (ids only from the base's rows).
template <class TypeAt, class At>
void draw_typed_segments(std::int64_t v, std::int64_t deg, const float* weights, int hop,
                         const sample_options& o, thread_scratch& s,
                         std::vector<std::int64_t>& out, std::vector<std::int16_t>& types,
                         TypeAt&& type_at, At&& at, std::int64_t first,
                         std::vector<std::int64_t>* ids) {
  const auto& per_type = o.typed_fanouts;
  for (std::int64_t a = 0; a < deg;) {
    const std::int16_t t = type_at(a);
    std::int64_t b = a + 1;
    while (b < deg && type_at(b) == t) ++b;
    const int fanout = per_type.empty() ? o.fanouts[hop - 1] : per_type[hop - 1][std::size_t(t)];
    const std::size_t before = out.size();
    const std::uint64_t stream = std::uint64_t(hop) | (std::uint64_t(t) + 1) << 32;
    if (fanout != 0)
      draw_row(
          v, b - a, weights ? weights + a : nullptr, fanout, stream, o, s, out,
          [&](std::int64_t i) { return at(a + i); }, first + a, ids);
    types.insert(types.end(), out.size() - before, t);
    a = b;
  }
}

// A typed graph's row: its edges come in one segment per edge type (sorted by
// type); each segment is drawn on its own, with its type's fanout and draws
// keyed by (seed, hop, node, type). Appends each draw's type to `types`. A row
// the graph's delta changed (or filters) is read through it, with its types.
void sample_row_typed(const csr_view& g, std::int64_t v, int hop, const sample_options& o,
                      thread_scratch& s, std::vector<std::int64_t>& out,
                      std::vector<std::int16_t>& types, std::vector<std::int64_t>* ids) {
  if (g.delta && (!g.delta->removed.empty() || v >= g.num_nodes || g.delta->rows.find(v))) {
    const auto r = read_row(g, *g.delta, v, s.row, s.row_weights, &s.row_types);
    draw_typed_segments(
        v, std::int64_t(r.neighbours.size()), r.weights.empty() ? nullptr : r.weights.data(), hop,
        o, s, out, types, [&](std::int64_t i) { return r.types[std::size_t(i)]; },
        [&](std::int64_t i) { return r.neighbours[std::size_t(i)]; }, 0, nullptr);
    return;
  }
  const std::int64_t begin = g.indptr[v];
  draw_typed_segments(
      v, g.indptr[v + 1] - begin, g.weighted() ? g.edge_weight.data() + begin : nullptr, hop, o, s,
      out, types, [&](std::int64_t i) { return g.edge_types[std::size_t(begin + i)]; },
      [&](std::int64_t i) { return g.neighbour(begin + i); }, begin, ids);
}

// Room for `n` more elements, growing geometrically: the pooled executor calls
// append_rows once per chunk, and an exact reserve each time would copy the
// output over and over (quadratic in the hop's chunks on a fresh subgraph).
template <class T>
void reserve_more(std::vector<T>& v, std::size_t n) {
  if (v.size() + n > v.capacity()) v.reserve(std::max(v.size() + n, 2 * v.capacity()));
}

// Maps sampled global ids to local ids (new ones appended to nodes) and
// closes one CSR row per entry of row_sizes.
void append_rows(std::span<const std::int64_t> globals, std::span<const std::int64_t> row_sizes,
                 std::span<const std::int16_t> types, std::span<const std::int64_t> ids,
                 detail::id_map& map, sampled_subgraph& out) {
  out.edge_types.insert(out.edge_types.end(), types.begin(), types.end());
  out.edge_ids.insert(out.edge_ids.end(), ids.begin(), ids.end());
  constexpr std::size_t kAhead = 8;  // hash slots are random: overlap their misses
  map.reserve(globals.size());
  reserve_more(out.indices, globals.size());
  reserve_more(out.nodes, globals.size());
  reserve_more(out.indptr, row_sizes.size());
  std::size_t next = 0;
  for (std::int64_t size : row_sizes) {
    for (std::int64_t i = 0; i < size; ++i) {
      if (next + kAhead < globals.size()) map.prefetch(globals[next + kAhead]);
      std::int64_t u = globals[next++];
      bool inserted;
      auto local = map.find_or_insert(u, static_cast<std::int32_t>(out.nodes.size()), inserted);
      if (inserted) out.nodes.push_back(u);
      out.indices.push_back(local);
    }
    out.indptr.push_back(static_cast<std::int64_t>(out.indices.size()));
  }
}

void add_seeds(std::span<const std::int64_t> seeds, detail::id_map& map, sampled_subgraph& out) {
  map.clear();
  out.indptr.assign(1, 0);
  out.seed_local.reserve(seeds.size());
  for (std::int64_t s : seeds) {
    bool inserted;
    auto local = map.find_or_insert(s, static_cast<std::int32_t>(out.nodes.size()), inserted);
    if (inserted) out.nodes.push_back(s);
    out.seed_local.push_back(local);
  }
  out.hop_end.push_back(static_cast<std::int64_t>(out.nodes.size()));
}

// Rows are random in the graph: load row r+4's offsets and row r+2's first
// neighbours ahead of use (their offsets were requested two rows earlier).
void prefetch_rows(const csr_view& g, const sampled_subgraph& out, std::int64_t r,
                   std::int64_t end) {
  if (g.delta && g.delta->num_nodes > g.num_nodes) return;  // ids past the base's arrays
  if (r + 4 < end) __builtin_prefetch(&g.indptr[out.nodes[r + 4]]);
  if (r + 2 < end) {
    std::int64_t e = g.indptr[out.nodes[r + 2]];
    if (g.wide())
      __builtin_prefetch(g.indices64.data() + e);
    else
      __builtin_prefetch(g.indices32.data() + e);
  }
}

// Untyped rows [lo, hi) of a hop, the common case (no weights, no live delta)
// in two passes: first every row's draws as CSR positions, each prefetched as
// it is drawn, then the neighbours they name. Drawing and reading row by row
// left each read waiting for its cache miss; here the misses overlap. The
// same draws in the same order as sample_row (tested against it).
void sample_rows_plain(const csr_view& g, const sampled_subgraph& out, std::int64_t lo,
                       std::int64_t hi, int hop, const sample_options& o, thread_scratch& s,
                       std::vector<std::int64_t>& globals, std::vector<std::int64_t>& row_sizes,
                       std::vector<std::int64_t>* ids) {
  const int fanout = o.fanouts[hop - 1];
  const auto at = [&](std::int64_t e) -> const void* {
    return g.wide() ? static_cast<const void*>(g.indices64.data() + e)
                    : static_cast<const void*>(g.indices32.data() + e);
  };
  auto& picks = s.picks;
  picks.clear();
  constexpr std::int64_t kRowsAhead = 8;  // rows' offsets are random in the graph
  for (std::int64_t r = lo; r < std::min(hi, lo + kRowsAhead); ++r)
    __builtin_prefetch(&g.indptr[out.nodes[r]]);
  for (std::int64_t r = lo; r < hi; ++r) {
    if (r + kRowsAhead < hi) __builtin_prefetch(&g.indptr[out.nodes[r + kRowsAhead]]);
    const std::int64_t v = out.nodes[r], first = g.indptr[v], deg = g.indptr[v + 1] - first;
    const std::size_t before = picks.size();
    draw_row(v, deg, nullptr, fanout, std::uint64_t(hop), o, s, picks, [&](std::int64_t i) {
      __builtin_prefetch(at(first + i));
      return first + i;
    });
    row_sizes.push_back(static_cast<std::int64_t>(picks.size() - before));
  }
  reserve_more(globals, picks.size());
  for (auto e : picks) globals.push_back(g.neighbour(e));
  if (ids) ids->insert(ids->end(), picks.begin(), picks.end());
}

// Untyped rows [lo, hi) of a hop: each row's draws appended to `globals`, its
// count to `row_sizes`.
void sample_rows(const csr_view& g, const sampled_subgraph& out, std::int64_t lo, std::int64_t hi,
                 int hop, const sample_options& o, thread_scratch& s,
                 std::vector<std::int64_t>& globals, std::vector<std::int64_t>& row_sizes,
                 std::vector<std::int64_t>* ids) {
  if (!o.weighted && !g.delta)
    return sample_rows_plain(g, out, lo, hi, hop, o, s, globals, row_sizes, ids);
  for (std::int64_t r = lo; r < hi; ++r) {
    prefetch_rows(g, out, r, hi);
    const std::size_t before = globals.size();
    sample_row(g, out.nodes[r], hop, o, s, globals, ids);
    row_sizes.push_back(static_cast<std::int64_t>(globals.size() - before));
  }
}

// One hop on the calling thread: sample every row, then map ids in one pass.
// Typed graphs take their own instance, so the untyped loop stays as it was.
template <bool Typed>
void sample_hop_inline(const csr_view& g, const sample_options& o, int hop, thread_scratch& s,
                       sampled_subgraph& out) {
  std::int64_t begin = out.hop_begin(hop), end = out.hop_end[hop - 1];
  s.globals.clear();
  s.row_sizes.clear();
  s.types.clear();
  s.ids.clear();
  auto* ids = o.edge_ids ? &s.ids : nullptr;
  if constexpr (Typed) {
    for (std::int64_t r = begin; r < end; ++r) {
      prefetch_rows(g, out, r, end);
      std::size_t before = s.globals.size();
      sample_row_typed(g, out.nodes[r], hop, o, s, s.globals, s.types, ids);
      s.row_sizes.push_back(static_cast<std::int64_t>(s.globals.size() - before));
    }
  } else {
    sample_rows(g, out, begin, end, hop, o, s, s.globals, s.row_sizes, ids);
  }
  append_rows(s.globals, s.row_sizes, s.types, s.ids, s.map, out);
}

// One hop with rows split over the pool; merged in row order so the result
// equals the inline executor's.
template <bool Typed>
void sample_hop_pooled(const csr_view& g, const sample_options& o, int hop, thread_pool& pool,
                       std::int64_t grain, thread_scratch& caller, sampled_subgraph& out) {
  std::int64_t begin = out.hop_begin(hop), end = out.hop_end[hop - 1];
  auto& chunks = caller.chunks;
  const auto count = static_cast<std::size_t>((end - begin + grain - 1) / grain);
  if (chunks.size() < count) chunks.resize(count);
  for (std::size_t i = 0; i < count; ++i)
    chunks[i].globals.clear(), chunks[i].row_sizes.clear(), chunks[i].types.clear(),
        chunks[i].ids.clear();
  pool.parallel_for(begin, end, grain, [&](std::int64_t lo, std::int64_t hi, std::size_t) {
    thread_scratch& s = scratch();
    chunk_result& c = chunks[static_cast<std::size_t>((lo - begin) / grain)];
    auto* ids = o.edge_ids ? &c.ids : nullptr;
    if constexpr (Typed) {
      for (std::int64_t r = lo; r < hi; ++r) {
        prefetch_rows(g, out, r, hi);
        std::size_t before = c.globals.size();
        sample_row_typed(g, out.nodes[r], hop, o, s, c.globals, c.types, ids);
        c.row_sizes.push_back(static_cast<std::int64_t>(c.globals.size() - before));
      }
    } else {
      sample_rows(g, out, lo, hi, hop, o, s, c.globals, c.row_sizes, ids);
    }
  });
  for (std::size_t i = 0; i < count; ++i)
    append_rows(chunks[i].globals, chunks[i].row_sizes, chunks[i].types, chunks[i].ids, caller.map,
                out);
}

status validate_call(const csr_view& g, std::span<const std::int64_t> seeds,
                     const sample_options& o) {
  SPINDLE_TRY(validate_sample_options(g, o));
  return validate_seeds(g, seeds);
}

// The frame both executors share: validate, add seeds, run each hop with
// `run_hop`, close the hop.
template <class HopFn>
status sample_hops(const csr_view& g, std::span<const std::int64_t> seeds, const sample_options& o,
                   sampled_subgraph& out, HopFn&& run_hop) {
  SPINDLE_TRY(validate_call(g, seeds, o));
  thread_scratch& s = scratch();
  out.nodes.clear();
  out.hop_end.clear();
  out.seed_local.clear();
  out.indices.clear();
  out.edge_types.clear();
  out.edge_ids.clear();
  add_seeds(seeds, s.map, out);
  for (int hop = 1; hop <= static_cast<int>(o.fanouts.size()); ++hop) {
    run_hop(hop, s, out);
    out.hop_end.push_back(static_cast<std::int64_t>(out.nodes.size()));
  }
  return status::ok();
}

}  // namespace

block_view sampled_subgraph::layer_block(int layer) const {
  int k = num_hops();
  block_view b;
  b.num_dst = hop_end[k - 1 - layer];
  b.num_src = hop_end[k - layer];
  b.indptr = std::span<const std::int64_t>(indptr.data(), b.num_dst + 1);
  b.indices = std::span<const std::int32_t>(indices.data(), indptr[b.num_dst]);
  if (!edge_types.empty())
    b.edge_types = std::span<const std::int16_t>(edge_types.data(), indptr[b.num_dst]);
  return b;
}

status validate_seeds(const csr_view& g, std::span<const std::int64_t> seeds) {
  const std::int64_t n = g.delta ? g.delta->num_nodes : g.num_nodes;
  for (std::size_t i = 0; i < seeds.size(); ++i) {
    if (seeds[i] < 0 || seeds[i] >= n)
      return make_error(errc::invalid_argument, "seed {} (position {}) out of range (num_nodes={})",
                        seeds[i], i, n);
    if (g.delta && g.delta->is_removed(seeds[i])) {
      const auto* at = g.delta->removed.find(seeds[i]);
      if (!at) at = g.delta->retired.find(seeds[i]);
      return make_error(errc::invalid_argument,
                        "seed {} (position {}) was removed from the graph (version {})", seeds[i],
                        i, *at);
    }
  }
  return status::ok();
}

namespace {

status validate_typed_options(const csr_view& g, const sample_options& o) {
  const auto& tf = o.typed_fanouts;
  if (!g.typed()) {
    if (!tf.empty())
      return make_error(errc::invalid_argument, "typed_fanouts: the graph is untyped");
    return status::ok();
  }
  if (tf.empty()) return status::ok();
  if (tf.size() != o.fanouts.size())
    return make_error(errc::invalid_argument, "typed_fanouts: {} hops, but fanouts has {}",
                      tf.size(), o.fanouts.size());
  for (std::size_t k = 0; k < tf.size(); ++k) {
    if (std::int64_t(tf[k].size()) != g.num_edge_types)
      return make_error(errc::invalid_argument,
                        "typed_fanouts[{}]: {} values, but the graph has {} edge types", k,
                        tf[k].size(), g.num_edge_types);
    for (std::size_t t = 0; t < tf[k].size(); ++t)
      if (tf[k][t] < -1)
        return make_error(errc::invalid_argument,
                          "typed_fanouts[{}][{}] = {}: must be -1 (all), 0 (none) or positive", k,
                          t, tf[k][t]);
  }
  return status::ok();
}

}  // namespace

status validate_sample_options(const csr_view& g, const sample_options& o) {
  if (o.fanouts.empty())
    return make_error(errc::invalid_argument, "fanouts: at least one hop is needed");
  for (int f : o.fanouts)
    if (f == 0 || f < -1)
      return make_error(errc::invalid_argument, "fanouts: {} must be positive or -1", f);
  if (o.weighted && !g.weighted())
    return make_error(errc::invalid_argument,
                      "weighted sampling asked but the graph has no edge_weight");
  if (o.edge_ids && g.delta)
    return make_error(errc::unsupported,
                      "edge_ids: a graph with live updates has no CSR position for its changed "
                      "edges; models reading edge attributes are served on static graphs");
  return validate_typed_options(g, o);
}

status sample_with_drawer(const csr_view& g, std::span<const std::int64_t> seeds,
                          const sample_options& o, const hop_drawer& draw,
                          sampled_subgraph& result) {
  if (g.typed())
    return make_error(errc::unsupported,
                      "sample_with_drawer: the device draw does not sample typed graphs");
  if (o.edge_ids)
    return make_error(errc::unsupported,
                      "sample_with_drawer: edge_ids: the device draw returns neighbours, not their "
                      "CSR positions (models reading edge attributes are sampled on the host)");
  status failed = status::ok();
  auto st =
      sample_hops(g, seeds, o, result, [&](int hop, thread_scratch& s, sampled_subgraph& out) {
        if (!failed.is_ok()) return;
        s.globals.clear();
        s.row_sizes.clear();
        const std::int64_t begin = out.hop_begin(hop), end = out.hop_end[hop - 1];
        // Copied: out.nodes grows while the hop's ids are mapped.
        s.frontier.assign(out.nodes.begin() + begin, out.nodes.begin() + end);
        failed = draw(s.frontier, hop, o.fanouts[std::size_t(hop - 1)], s.globals, s.row_sizes);
        if (failed.is_ok() && s.row_sizes.size() != s.frontier.size())
          failed = make_error(errc::internal, "hop {}: {} row sizes for {} rows", hop,
                              s.row_sizes.size(), s.frontier.size());
        if (failed.is_ok()) append_rows(s.globals, s.row_sizes, {}, {}, s.map, out);
      });
  SPINDLE_TRY(st);
  return failed;
}

status inline_executor::sample_into(const csr_view& g, std::span<const std::int64_t> seeds,
                                    const sample_options& o, sampled_subgraph& result) {
  return sample_hops(g, seeds, o, result, [&](int hop, thread_scratch& s, sampled_subgraph& out) {
    if (g.typed())
      sample_hop_inline<true>(g, o, hop, s, out);
    else
      sample_hop_inline<false>(g, o, hop, s, out);
  });
}

status pooled_executor::sample_into(const csr_view& g, std::span<const std::int64_t> seeds,
                                    const sample_options& o, sampled_subgraph& result) {
  return sample_hops(g, seeds, o, result, [&](int hop, thread_scratch& s, sampled_subgraph& out) {
    std::int64_t rows = out.hop_end[hop - 1] - out.hop_begin(hop);
    const bool typed = g.typed();
    if (rows < 2 * grain_ && typed)
      sample_hop_inline<true>(g, o, hop, s, out);
    else if (rows < 2 * grain_)
      sample_hop_inline<false>(g, o, hop, s, out);
    else if (typed)
      sample_hop_pooled<true>(g, o, hop, pool_, grain_, s, out);
    else
      sample_hop_pooled<false>(g, o, hop, pool_, grain_, s, out);
  });
}

}  // namespace spindle::graph
