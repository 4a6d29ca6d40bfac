// What has changed in a served graph since its mapped base, as one immutable,
// versioned value: rows (neighbour lists) replaced in full, nodes added after
// the base's last id, nodes removed, feature rows set. A reader takes one delta
// and reads the base through it for a whole call, so it sees one version from
// start to end; writers (live_graph) publish a new delta per update batch,
// sharing every bucket they did not touch (copy-on-write), and a delta is freed
// when its last reader lets go of it.
#pragma once

#include <algorithm>
#include <array>
#include <atomic>
#include <cstdint>
#include <memory>
#include <span>
#include <utility>
#include <vector>

#include "graph/csr.hpp"

namespace spindle::graph {

class dataset;

/// A map from node id to an immutable value, persistent: a copy shares every
/// node, and set() copies only the path to the entry it changes. It is a trie
/// over the id's hash, 16-way over four levels, with sorted leaves (65,536 of
/// them), so an update batch costs what it touches whatever the delta's size
/// (a flat table of buckets costs a bucket's size per change, and buckets grow
/// with the delta). Nodes a copy has already cloned are edited in place until
/// the next copy (each copy has its own tag), so a batch of many changes
/// copies each node once. A map is edited before it is shared (a delta is
/// built, then published), never after.
template <class V>
class node_map {
 public:
  static constexpr int kBits = 4, kFan = 1 << kBits, kLevels = 4;

  node_map() = default;
  node_map(const node_map& o) : root_(o.root_), size_(o.size_), tag_(next_tag()) {}
  node_map& operator=(const node_map& o) {
    root_ = o.root_;
    size_ = o.size_;
    tag_ = next_tag();
    return *this;
  }

  const V* find(std::int64_t v) const {
    const std::uint64_t h = hash(v);
    const inner* n = static_cast<const inner*>(root_.get());
    for (int level = 0; n && level < kLevels - 1; ++level)
      n = static_cast<const inner*>(n->child[slot(h, level)].get());
    if (!n) return nullptr;
    const leaf* l = static_cast<const leaf*>(n->child[slot(h, kLevels - 1)].get());
    if (!l) return nullptr;
    auto it = std::lower_bound(l->items.begin(), l->items.end(), v,
                               [](const auto& e, std::int64_t k) { return e.first < k; });
    return it != l->items.end() && it->first == v ? &it->second : nullptr;
  }
  void set(std::int64_t v, V value) {
    const std::uint64_t h = hash(v);
    inner* n = own<inner>(root_);
    for (int level = 0; level < kLevels - 1; ++level) n = own<inner>(n->child[slot(h, level)]);
    leaf* l = own<leaf>(n->child[slot(h, kLevels - 1)]);
    auto it = std::lower_bound(l->items.begin(), l->items.end(), v,
                               [](const auto& e, std::int64_t k) { return e.first < k; });
    if (it != l->items.end() && it->first == v)
      it->second = std::move(value);
    else
      l->items.insert(it, {v, std::move(value)}), ++size_;
  }
  std::size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }
  template <class F>
  void for_each(F&& f) const {
    visit(static_cast<const inner*>(root_.get()), 0, f);
  }

 private:
  struct leaf {
    std::uint64_t tag = 0;
    std::vector<std::pair<std::int64_t, V>> items;
  };
  struct inner {
    std::uint64_t tag = 0;
    std::array<std::shared_ptr<void>, kFan> child{};  // inners, or leaves at the last level
  };
  static std::uint64_t hash(std::int64_t v) { return std::uint64_t(v) * 0x9E3779B97F4A7C15ull; }
  static std::size_t slot(std::uint64_t h, int level) {
    return std::size_t(h >> (64 - kBits * (level + 1))) & (kFan - 1);
  }
  static std::uint64_t next_tag() {
    static std::atomic<std::uint64_t> tags{1};
    return tags.fetch_add(1, std::memory_order_relaxed);
  }
  // The node in `p`, cloned first unless this copy made it.
  template <class N>
  N* own(std::shared_ptr<void>& p) {
    N* cur = static_cast<N*>(p.get());
    if (cur && cur->tag == tag_) return cur;
    auto fresh = cur ? std::make_shared<N>(*cur) : std::make_shared<N>();
    fresh->tag = tag_;
    cur = fresh.get();
    p = std::move(fresh);
    return cur;
  }
  template <class F>
  static void visit(const inner* n, int level, F& f) {
    if (!n) return;
    if (level < kLevels - 1) {
      for (const auto& c : n->child) visit(static_cast<const inner*>(c.get()), level + 1, f);
      return;
    }
    for (const auto& c : n->child)
      if (const auto* l = static_cast<const leaf*>(c.get()))
        for (const auto& [k, v] : l->items) f(k, v);
  }

  std::shared_ptr<void> root_;
  std::size_t size_ = 0;
  std::uint64_t tag_ = next_tag();
};

/// A node's neighbour list as a delta holds it (weights only on weighted graphs;
/// edge types only on typed graphs, one per neighbour, the row sorted by (type,
/// neighbour) as the base's rows are).
struct node_row {
  std::vector<std::int64_t> neighbours;
  std::vector<float> weights;
  std::vector<std::int16_t> types;
};

/// A node added to a typed graph: its node type and its id within the type.
struct added_node {
  std::int32_t type = 0;
  std::int64_t local = 0;
};

struct graph_delta {
  std::uint64_t version = 0;
  /// The base this delta overlays when a compaction while serving replaced the
  /// dataset's own (graph/compactor.hpp): its arrays stay mapped while a reader
  /// holds the delta. Null: the dataset's mapped base.
  std::shared_ptr<const dataset> base;
  std::int64_t base_nodes = 0;  // the base's node count
  std::int64_t num_nodes = 0;   // base plus added (removed ids stay counted, never reused)
  node_map<std::shared_ptr<const node_row>> rows;         // replaced neighbour lists
  node_map<std::shared_ptr<const std::vector<float>>> features;  // set or added rows
  node_map<std::uint64_t> removed;  // removed nodes, by the version that removed them
  /// Nodes removed before the base was compacted: the base holds them without
  /// edges (in their rows or others'), so readers need not filter them, but
  /// they stay removed (calls and updates naming them are refused).
  node_map<std::uint64_t> retired;
  /// PSGS of the nodes whose rows changed or that were added, at this delta (the
  /// base's PSGS holds for the rest; see live_graph_options::psgs_fanouts).
  node_map<double> psgs;
  /// Typed graphs (graph/typing.hpp reads these): nodes added per node type
  /// since the base, each added node's type and local id (by global id), and
  /// each type's k-th added node's global id (key: type << 40 | k).
  std::vector<std::int64_t> added_per_type;
  node_map<added_node> added;
  node_map<std::int64_t> added_globals;
  static std::int64_t added_key(int type, std::int64_t k) {
    return (std::int64_t(type) << 40) | k;
  }
  std::uint64_t edges_added = 0, edges_removed = 0;  // since the base (stats)
  std::uint64_t psgs_stale = 0;  // changed rows whose PSGS was too costly to recompute

  bool empty() const {
    return rows.empty() && features.empty() && removed.empty() && retired.empty();
  }
  bool is_removed(std::int64_t v) const {
    return (!removed.empty() && removed.find(v) != nullptr) ||
           (!retired.empty() && retired.find(v) != nullptr);
  }
  /// Removed since the base (their edges are still in it: readers filter them).
  bool is_removed_since_base(std::int64_t v) const {
    return !removed.empty() && removed.find(v) != nullptr;
  }
};

/// One node's neighbours at a delta, read through it: the replaced row, or the
/// base's, without removed nodes. Copies into `scratch` only when it must
/// (a replaced row is read in place; a base row is copied only when some node
/// was removed). `w` gets the weights on weighted graphs; on a typed graph,
/// with `scratch_t`, `types` gets each neighbour's edge type (the row sorted by
/// (type, neighbour)).
struct row_read {
  std::span<const std::int64_t> neighbours;
  std::span<const float> weights;
  std::span<const std::int16_t> types;
};
row_read read_row(const csr_view& base, const graph_delta& d, std::int64_t v,
                  std::vector<std::int64_t>& scratch, std::vector<float>& scratch_w,
                  std::vector<std::int16_t>* scratch_t = nullptr);

/// Node v's neighbour count without self edges at delta `d` (a stack GCN with
/// norm = "graph" normalises by it); `base_count` is the base's.
float neighbour_count(const csr_view& base, const graph_delta& d, std::int64_t v,
                      float base_count);

}  // namespace spindle::graph
