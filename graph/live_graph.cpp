#include "graph/live_graph.hpp"

#include <fmt/format.h>

#include <atomic>
#include <cmath>
#include <map>
#include <set>
#include <tuple>

#include "graph/dataset.hpp"
#include "graph/detail/lowered_types.hpp"
#include "graph/metrics.hpp"

namespace spindle::graph {

namespace detail {

status check_rows(std::span<const float> values, std::size_t rows, std::int64_t dim,
                  std::string_view what) {
  // Compared by division: rows x dim may not fit in 64 bits.
  const bool fits = dim <= 0 ? values.empty()
                             : values.size() % std::size_t(dim) == 0 &&
                                   values.size() / std::size_t(dim) == rows;
  if (!fits)
    return make_error(errc::invalid_argument, "{}: {} values for {} rows of width {}", what,
                      values.size(), rows, dim);
  for (std::size_t i = 0; i < values.size(); ++i)
    if (!std::isfinite(values[i]))
      return make_error(errc::invalid_argument, "{}: row {} column {} is not finite ({})", what,
                        i / std::size_t(dim), i % std::size_t(dim), values[i]);
  return status::ok();
}

}  // namespace detail

namespace {

using detail::check_rows;

// A row's current neighbours (and weights) at `d`, copied for editing.
node_row current_row(const csr_view& base, const graph_delta& d, std::int64_t v) {
  if (const auto* r = d.rows.find(v)) return **r;
  node_row out;
  if (v >= base.num_nodes) return out;
  const std::int64_t b = base.indptr[v], e = base.indptr[v + 1];
  out.neighbours.reserve(std::size_t(e - b));
  for (std::int64_t i = b; i < e; ++i) out.neighbours.push_back(base.neighbour(i));
  if (base.weighted()) out.weights.assign(base.edge_weight.begin() + b, base.edge_weight.begin() + e);
  if (base.typed()) out.types.assign(base.edge_types.begin() + b, base.edge_types.begin() + e);
  return out;
}

// Node ids a batch may name: every current or newly added id, not removed.
struct id_check {
  const graph_delta& d;
  std::int64_t limit;
  const std::set<std::int64_t>& removing;
  status operator()(std::int64_t v, std::string_view what, std::size_t i) const {
    if (v < 0 || v >= limit)
      return make_error(errc::invalid_argument, "{}[{}]: node {} out of range (the graph has {} "
                        "nodes)", what, i, v, limit);
    if (d.is_removed(v) || removing.count(v))
      return make_error(errc::invalid_argument, "{}[{}]: node {} is removed", what, i, v);
    return status::ok();
  }
};

// One edge's effect on the rows, as the direction stores it.
template <class F>
void for_rows(row_direction dir, std::int64_t u, std::int64_t v, F&& f) {
  switch (dir) {
    case row_direction::in: f(v, u); break;
    case row_direction::out: f(u, v); break;
    case row_direction::both:
      f(v, u);
      if (u != v) f(u, v);
      break;
  }
}

// Each listed removal takes one copy of its edge (of its type, on a typed graph:
// `types` gives each removal's) out of the rows it occupies, one pass per row (a
// batch removing k copies from a row of d neighbours costs O(k + d), not O(k d)).
// A removal with no copy left names its item (`missing` says how).
template <class Row, class Missing>
status remove_edges_from(row_direction dir, const graph_update& u,
                         std::span<const std::int16_t> types, Row&& row, Missing&& missing) {
  // (row, type, neighbour) -> the items removing it, in order.
  using key = std::tuple<std::int64_t, std::int16_t, std::int64_t>;
  std::map<key, std::vector<std::size_t>> wanted;
  for (std::size_t i = 0; i < u.remove_src.size(); ++i) {
    const std::int16_t t = types.empty() ? 0 : types[i];
    for_rows(dir, u.remove_src[i], u.remove_dst[i],
             [&](std::int64_t r, std::int64_t n) { wanted[{r, t, n}].push_back(i); });
  }
  std::size_t first_missing = SIZE_MAX;
  auto it = wanted.begin();
  while (it != wanted.end()) {
    const std::int64_t r = std::get<0>(it->first);
    auto& x = row(r);
    std::map<std::pair<std::int16_t, std::int64_t>, std::size_t> left;  // copies still to remove
    auto end = it;
    for (; end != wanted.end() && std::get<0>(end->first) == r; ++end)
      left[{std::get<1>(end->first), std::get<2>(end->first)}] = end->second.size();
    std::size_t keep = 0;
    for (std::size_t k = 0; k < x.neighbours.size(); ++k) {
      auto l = left.find({x.types.empty() ? std::int16_t(0) : x.types[k], x.neighbours[k]});
      if (l != left.end() && l->second > 0) {
        --l->second;
        continue;
      }
      x.neighbours[keep] = x.neighbours[k];
      if (!x.weights.empty()) x.weights[keep] = x.weights[k];
      if (!x.types.empty()) x.types[keep] = x.types[k];
      ++keep;
    }
    x.neighbours.resize(keep);
    if (!x.weights.empty()) x.weights.resize(keep);
    if (!x.types.empty()) x.types.resize(keep);
    for (; it != end; ++it) {
      const std::size_t gone = left[{std::get<1>(it->first), std::get<2>(it->first)}];
      if (gone > 0) first_missing = std::min(first_missing, it->second[it->second.size() - gone]);
    }
  }
  if (first_missing != SIZE_MAX) return missing(first_missing);
  return status::ok();
}

// A typed batch's added nodes in d: each one's type and local id, each type's
// added globals and count.
void note_added_types(graph_delta& d, std::int64_t first, std::span<const std::int32_t> types,
                      std::span<const std::int64_t> locals,
                      std::span<const node_type_info> node_types) {
  d.added_per_type.resize(node_types.size(), 0);
  for (std::size_t k = 0; k < types.size(); ++k) {
    const std::int64_t id = first + std::int64_t(k);
    const int type = types[k];
    const std::int64_t local = locals[k];
    d.added.set(id, added_node{type, local});
    d.added_globals.set(
        graph_delta::added_key(type, local - node_types[std::size_t(type)].count), id);
    ++d.added_per_type[std::size_t(type)];
  }
}

// Adds edge (type t, neighbour n) to a typed row, which stays as the base's rows
// are: sorted by (edge type, neighbour), a repeated edge after its copies.
void insert_typed(node_row& x, std::int16_t t, std::int64_t n, const float* w) {
  std::size_t lo = 0, hi = x.neighbours.size();
  while (lo < hi) {  // upper bound of (t, n)
    const std::size_t mid = (lo + hi) / 2;
    if (std::pair(t, n) < std::pair(x.types[mid], x.neighbours[mid]))
      hi = mid;
    else
      lo = mid + 1;
  }
  const auto at = std::ptrdiff_t(lo);
  x.neighbours.insert(x.neighbours.begin() + at, n);
  x.types.insert(x.types.begin() + at, t);
  if (w) x.weights.insert(x.weights.begin() + at, *w);
}

}  // namespace

live_graph::live_graph(csr_view base, live_graph_options options)
    : base_(base), options_(std::move(options)) {
  auto d = std::make_shared<graph_delta>();
  d->base = options_.base_dataset;
  d->base_nodes = d->num_nodes = base_of(*d).num_nodes;
  d->version = options_.base_version;
  const auto removed = d->base ? d->base->removed_nodes() : options_.removed_nodes;
  for (auto v : removed) d->retired.set(v, d->version);
  current_ = std::move(d);
  last_source_ = options_.base_sources;
}

std::shared_ptr<const graph_delta> live_graph::current() const {
  return std::atomic_load_explicit(&current_, std::memory_order_acquire);
}

expected<std::shared_ptr<graph_delta>> live_graph::build_flat(const graph_delta& from,
                                                              const graph_update& u,
                                                              const lowered_types* types,
                                                              update_result& result) const {
  if (u.add_src.size() != u.add_dst.size())
    return make_error(errc::invalid_argument, "add_edges: {} sources for {} targets",
                      u.add_src.size(), u.add_dst.size());
  const csr_view base = base_of(from);
  if (u.remove_src.size() != u.remove_dst.size())
    return make_error(errc::invalid_argument, "remove_edges: {} sources for {} targets",
                      u.remove_src.size(), u.remove_dst.size());
  if (base.weighted() && u.add_weight.size() != u.add_src.size())
    return make_error(errc::invalid_argument,
                      "add_edges: the graph is weighted: give one weight per edge ({} for {})",
                      u.add_weight.size(), u.add_src.size());
  if (!base.weighted() && !u.add_weight.empty())
    return make_error(errc::invalid_argument, "add_edges: weights given, but the graph has none");
  for (std::size_t i = 0; i < u.add_weight.size(); ++i)
    if (!(std::isfinite(u.add_weight[i]) && u.add_weight[i] >= 0))  // as edge_weight.npy's
      return make_error(errc::invalid_argument, "add_edges[{}]: weight {} must be finite and >= 0",
                        i, u.add_weight[i]);
  if (u.add_nodes < 0 || u.add_nodes > kMaxNodesPerBatch)
    return make_error(errc::invalid_argument, "add_nodes: {} nodes (0 to {} per batch)",
                      u.add_nodes, kMaxNodesPerBatch);
  const std::int64_t dim = options_.feature_dim;
  // Without features a count is all a batch carries (a Redis entry's add_count):
  // capped, so a few bytes cannot ask for the server's memory (each node costs
  // its map entries here and in every replay of the log).
  constexpr std::int64_t kMaxCountedNodes = std::int64_t{1} << 20;
  if (dim == 0 && u.add_nodes > kMaxCountedNodes)
    return make_error(errc::invalid_argument,
                      "add_nodes: {} nodes on a graph without features (0 to {} a batch; send "
                      "more in further batches)",
                      u.add_nodes, kMaxCountedNodes);
  SPINDLE_TRY(check_rows(u.add_node_features, std::size_t(u.add_nodes), dim, "add_nodes"));
  SPINDLE_TRY(check_rows(u.set_rows, u.set_ids.size(), dim, "set_features"));
  if (u.empty()) return make_error(errc::invalid_argument, "the update batch changes nothing");

  auto d = std::make_shared<graph_delta>(from);
  d->version = from.version + 1;
  d->num_nodes = from.num_nodes + u.add_nodes;
  std::set<std::int64_t> removing;
  const id_check valid{from, d->num_nodes, removing};
  for (std::size_t i = 0; i < u.remove_nodes.size(); ++i) {
    if (removing.count(u.remove_nodes[i]))
      return make_error(errc::invalid_argument, "remove_nodes[{}]: node {} is listed twice", i,
                        u.remove_nodes[i]);
    SPINDLE_TRY(valid(u.remove_nodes[i], "remove_nodes", i));
    removing.insert(u.remove_nodes[i]);
  }
  for (std::size_t i = 0; i < u.add_src.size(); ++i) {
    SPINDLE_TRY(valid(u.add_src[i], "add_edges.src", i));
    SPINDLE_TRY(valid(u.add_dst[i], "add_edges.dst", i));
  }
  for (std::size_t i = 0; i < u.remove_src.size(); ++i) {
    SPINDLE_TRY(valid(u.remove_src[i], "remove_edges.src", i));
    SPINDLE_TRY(valid(u.remove_dst[i], "remove_edges.dst", i));
  }
  for (std::size_t i = 0; i < u.set_ids.size(); ++i) SPINDLE_TRY(valid(u.set_ids[i], "set_features", i));

  // Rows: every touched row edited once, removals first, then additions.
  std::map<std::int64_t, node_row> edited;
  auto row = [&](std::int64_t v) -> node_row& {
    auto it = edited.find(v);
    if (it == edited.end()) it = edited.emplace(v, current_row(base, from, v)).first;
    return it->second;
  };
  auto missing = [&](std::size_t i) {
    if (!types)
      return make_error(errc::invalid_argument, "remove_edges[{}]: no edge {} -> {} in the graph",
                        i, u.remove_src[i], u.remove_dst[i]);
    const auto [group, k] = types->remove_at[i];
    const auto& e = types->original->remove_typed[group];
    return make_error(errc::invalid_argument,
                      "remove_edges['{}'][{}]: no edge {} -> {} of this type in the graph",
                      e.type.substr(0, 64), k, e.src[k], e.dst[k]);
  };
  SPINDLE_TRY(remove_edges_from(options_.direction, u,
                                types ? std::span<const std::int16_t>(types->remove)
                                      : std::span<const std::int16_t>(),
                                row, missing));
  for (std::size_t i = 0; i < u.add_src.size(); ++i)
    for_rows(options_.direction, u.add_src[i], u.add_dst[i], [&](std::int64_t r, std::int64_t n) {
      auto& x = row(r);
      const float* w = base.weighted() ? &u.add_weight[i] : nullptr;
      if (types) return insert_typed(x, types->add[i], n, w);
      x.neighbours.push_back(n);
      if (base.weighted()) x.weights.push_back(u.add_weight[i]);
    });
  std::vector<std::int64_t> changed;
  changed.reserve(edited.size() + std::size_t(std::max<std::int64_t>(u.add_nodes, 0)));
  for (auto& [v, x] : edited) {
    changed.push_back(v);
    d->rows.set(v, std::make_shared<const node_row>(std::move(x)));
  }
  d->edges_added += u.add_src.size();
  d->edges_removed += u.remove_src.size();

  if (types)
    note_added_types(*d, from.num_nodes, types->nodes, types->new_local, options_.node_types);
  for (std::int64_t k = 0; k < u.add_nodes; ++k) {
    const std::int64_t id = from.num_nodes + k;
    result.new_ids.push_back(id);
    auto first = u.add_node_features.begin() + k * dim;
    d->features.set(id, std::make_shared<const std::vector<float>>(first, first + dim));
  }
  for (std::size_t i = 0; i < u.set_ids.size(); ++i) {
    auto first = u.set_rows.begin() + std::int64_t(i) * dim;
    d->features.set(u.set_ids[i], std::make_shared<const std::vector<float>>(first, first + dim));
  }
  for (std::int64_t v : removing) d->removed.set(v, d->version);
  for (std::int64_t id : result.new_ids)
    if (!edited.count(id)) changed.push_back(id);
  refresh_psgs(*d, changed);
  result.version = d->version;
  return d;
}

expected<live_graph::staged> live_graph::stage(const graph_update& u) {
  std::lock_guard lock(write_mu_);
  const auto from = staged_ ? staged_ : current();
  staged out;
  SPINDLE_ASSIGN_OR_RETURN(auto next, build(*from, u, out.result));
  if (options_.log) SPINDLE_TRY(options_.log(u, next->version));
  if (compacting_) recorded_.emplace_back(next->version, u);
  staged_ = std::move(next);
  out.ticket = next_ticket_++;
  if (!u.source_stream.empty()) {
    graph_update source;
    source.source_stream = u.source_stream;
    source.source_id = u.source_id;
    staged_sources_.emplace_back(out.ticket, std::move(source));
  }
  return out;
}

std::uint64_t live_graph::lead_sync(std::unique_lock<std::mutex>& lock) {
  syncing_ = true;
  const std::uint64_t target = next_ticket_ - 1;
  auto delta = staged_;
  lock.unlock();
  status s = options_.sync ? options_.sync() : status::ok();
  lock.lock();
  syncing_ = false;
  if (!s) {  // nothing staged so far is durable: drop it all, log and deltas alike
    failed_.emplace_back(durable_ticket_, next_ticket_ - 1);
    sync_error_ = std::move(s);
    staged_.reset();
    staged_sources_.clear();
    const std::uint64_t durable = current()->version;
    std::erase_if(recorded_, [&](const auto& r) { return r.first > durable; });
    if (options_.rollback) options_.rollback();
    return 0;
  }
  durable_ticket_ = target;
  std::atomic_store_explicit(&current_, std::move(delta), std::memory_order_release);
  auto it = staged_sources_.begin();
  for (; it != staged_sources_.end() && it->first <= target; ++it) note_source(it->second);
  staged_sources_.erase(staged_sources_.begin(), it);
  if (durable_ticket_ == next_ticket_ - 1) staged_.reset();  // current_ is the newest again
  return current()->version;
}

status live_graph::commit(std::uint64_t ticket) {
  std::unique_lock lock(write_mu_);
  auto failed = [&] {
    for (const auto& [after, through] : failed_)
      if (ticket > after && ticket <= through) return true;
    return false;
  };
  while (true) {
    if (failed()) return sync_error_;
    if (durable_ticket_ >= ticket) return status::ok();
    sync_or_wait(lock);
  }
}

void live_graph::sync_or_wait(std::unique_lock<std::mutex>& lock) {
  if (syncing_) {
    synced_.wait(lock);
    return;
  }
  const std::uint64_t published = lead_sync(lock);
  synced_.notify_all();
  if (published > 0) {
    lock.unlock();
    waiters_.reached(published);  // the calls waiting for it go on (outside the lock)
    lock.lock();
  }
}

status live_graph::replay(const graph_update& u, std::uint64_t version) {
  std::lock_guard lock(write_mu_);
  auto from = staged_ ? staged_ : current();
  if (version != from->version + 1)
    return make_error(errc::corrupt_data, "graph log: record for version {} follows version {}",
                      version, from->version);
  update_result ignored;
  SPINDLE_ASSIGN_OR_RETURN(auto next, build(*from, u, ignored));
  std::atomic_store_explicit(&current_, std::shared_ptr<const graph_delta>(std::move(next)),
                             std::memory_order_release);
  note_source(u);
  return status::ok();
}

csr_view live_graph::base_of(const graph_delta& d) const {
  return d.base ? d.base->graph() : base_;
}

void live_graph::when_version(std::uint64_t version, version_waiters::clock::time_point deadline,
                              version_waiters::ready_fn ready) {
  waiters_.wait(version, deadline, [this] { return this->version(); }, std::move(ready));
}

void live_graph::note_source(const graph_update& u) {
  if (!u.source_stream.empty()) last_source_[u.source_stream] = u.source_id;
}

std::map<std::string, std::string> live_graph::sources() const {
  std::lock_guard lock(write_mu_);
  return last_source_;
}

std::string live_graph::last_source(const std::string& stream) const {
  std::lock_guard lock(write_mu_);
  auto it = last_source_.find(stream);
  return it == last_source_.end() ? std::string() : it->second;
}

std::int64_t live_graph::degree_at(const graph_delta& d, std::int64_t v) const {
  if (v < 0 || v >= d.num_nodes) return 0;
  const csr_view base = base_of(d);
  if (d.removed.empty()) {
    if (const auto* r = d.rows.find(v)) return std::int64_t((*r)->neighbours.size());
    return v < base.num_nodes ? base.degree(v) : 0;
  }
  thread_local std::vector<std::int64_t> scratch;
  thread_local std::vector<float> scratch_w;
  return std::int64_t(read_row(base, d, v, scratch, scratch_w).neighbours.size());
}

row_read read_row(const csr_view& base, const graph_delta& d, std::int64_t v,
                  std::vector<std::int64_t>& scratch, std::vector<float>& scratch_w,
                  std::vector<std::int16_t>* scratch_t) {
  const node_row* r = nullptr;
  if (const auto* p = d.rows.find(v)) r = p->get();
  if (r && d.removed.empty()) return {r->neighbours, r->weights, r->types};
  scratch.clear();
  scratch_w.clear();
  if (scratch_t) scratch_t->clear();
  auto keep = [&](std::int64_t n, const float* w, const std::int16_t* t) {
    if (d.is_removed_since_base(n)) return;
    scratch.push_back(n);
    if (w) scratch_w.push_back(*w);
    if (t && scratch_t) scratch_t->push_back(*t);
  };
  if (r) {
    for (std::size_t i = 0; i < r->neighbours.size(); ++i)
      keep(r->neighbours[i], r->weights.empty() ? nullptr : &r->weights[i],
           r->types.empty() ? nullptr : &r->types[i]);
  } else if (v < base.num_nodes) {
    for (std::int64_t e = base.indptr[v]; e < base.indptr[v + 1]; ++e)
      keep(base.neighbour(e), base.weighted() ? &base.edge_weight[std::size_t(e)] : nullptr,
           base.typed() ? &base.edge_types[std::size_t(e)] : nullptr);
  }
  if (!scratch_t) return {scratch, scratch_w, {}};
  return {scratch, scratch_w, *scratch_t};
}

float neighbour_count(const csr_view& base, const graph_delta& d, std::int64_t v,
                      float base_count) {
  if (d.removed.empty() && !d.rows.find(v)) return v < base.num_nodes ? base_count : 0.0f;
  thread_local std::vector<std::int64_t> scratch;
  thread_local std::vector<float> scratch_w;
  const auto r = read_row(base, d, v, scratch, scratch_w);
  float c = 0;
  for (auto n : r.neighbours) c += n != v;
  return c;
}

}  // namespace spindle::graph
