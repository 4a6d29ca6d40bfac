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
#include <cstdint>
#include <memory>
#include <span>
#include <utility>
#include <vector>

#include "graph/csr.hpp"

namespace spindle::graph {

/// A map from node id to an immutable value, persistent: a copy shares every
/// bucket, and set() copies only the bucket it changes.
template <class V>
class node_map {
 public:
  static constexpr std::size_t kBuckets = 4096;

  const V* find(std::int64_t v) const {
    const auto& b = buckets_[bucket_of(v)];
    if (!b) return nullptr;
    auto it = std::lower_bound(b->begin(), b->end(), v,
                               [](const auto& e, std::int64_t k) { return e.first < k; });
    return it != b->end() && it->first == v ? &it->second : nullptr;
  }
  void set(std::int64_t v, V value) {
    auto& slot = buckets_[bucket_of(v)];
    auto b = slot ? std::make_shared<bucket>(*slot) : std::make_shared<bucket>();
    auto it = std::lower_bound(b->begin(), b->end(), v,
                               [](const auto& e, std::int64_t k) { return e.first < k; });
    if (it != b->end() && it->first == v)
      it->second = std::move(value);
    else
      b->insert(it, {v, std::move(value)}), ++size_;
    slot = std::move(b);
  }
  std::size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }
  template <class F>
  void for_each(F&& f) const {
    for (const auto& b : buckets_)
      if (b)
        for (const auto& [k, v] : *b) f(k, v);
  }

 private:
  using bucket = std::vector<std::pair<std::int64_t, V>>;
  static std::size_t bucket_of(std::int64_t v) {
    return std::size_t((std::uint64_t(v) * 0x9E3779B97F4A7C15ull) >> 52);  // 12 bits
  }
  std::array<std::shared_ptr<const bucket>, kBuckets> buckets_{};
  std::size_t size_ = 0;
};

/// A node's neighbour list as a delta holds it (weights only on weighted graphs).
struct node_row {
  std::vector<std::int64_t> neighbours;
  std::vector<float> weights;
};

struct graph_delta {
  std::uint64_t version = 0;
  std::int64_t base_nodes = 0;  // the mapped base's node count
  std::int64_t num_nodes = 0;   // base plus added (removed ids stay counted, never reused)
  node_map<std::shared_ptr<const node_row>> rows;         // replaced neighbour lists
  node_map<std::shared_ptr<const std::vector<float>>> features;  // set or added rows
  node_map<std::uint64_t> removed;  // removed nodes, by the version that removed them
  std::uint64_t edges_added = 0, edges_removed = 0;  // since the base (stats)

  bool empty() const { return rows.empty() && features.empty() && removed.empty(); }
  bool is_removed(std::int64_t v) const { return !removed.empty() && removed.find(v) != nullptr; }
};

/// One node's neighbours at a delta, read through it: the replaced row, or the
/// base's, without removed nodes. Copies into `scratch` only when it must
/// (a replaced row is read in place; a base row is copied only when some node
/// was removed). `w` gets the weights on weighted graphs.
struct row_read {
  std::span<const std::int64_t> neighbours;
  std::span<const float> weights;
};
row_read read_row(const csr_view& base, const graph_delta& d, std::int64_t v,
                  std::vector<std::int64_t>& scratch, std::vector<float>& scratch_w);

/// Node v's neighbour count without self edges at delta `d` (a stack GCN with
/// norm = "graph" normalises by it); `base_count` is the base's.
float neighbour_count(const csr_view& base, const graph_delta& d, std::int64_t v,
                      float base_count);

}  // namespace spindle::graph
