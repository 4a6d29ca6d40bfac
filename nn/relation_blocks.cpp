#include "nn/relation_blocks.hpp"

#include <algorithm>
#include <map>
#include <set>

namespace spindle::nn {

typed_layout::typed_layout(std::span<const block> blocks, std::span<const int> relation_of_type,
                           std::span<const std::int16_t> row_types,
                           std::vector<std::pair<int, int>> ends)
    : blocks_(blocks),
      relation_of_type_(relation_of_type),
      row_types_(row_types),
      ends_(std::move(ends)),
      rank_(row_types.size(), -1) {
  int types = 0;
  for (auto t : row_types) types = std::max(types, int(t) + 1);
  for (const auto& [s, d] : ends_) types = std::max({types, s + 1, d + 1});
  rows_.resize(std::size_t(types));
  for (std::size_t r = 0; r < row_types.size(); ++r) {
    if (row_types[r] < 0) continue;
    auto& rows = rows_[std::size_t(row_types[r])];
    rank_[r] = std::int32_t(rows.size());
    rows.push_back(std::int64_t(r));
  }
}

std::span<const std::int64_t> typed_layout::rows_of(int type) const {
  if (type < 0 || type >= int(rows_.size())) return {};
  return rows_[std::size_t(type)];
}

std::int64_t typed_layout::count(int type, std::int64_t limit) const {
  const auto rows = rows_of(type);
  return std::lower_bound(rows.begin(), rows.end(), limit) - rows.begin();
}

expected<const block*> typed_layout::get(int layer, int relation) {
  if (layer < 0 || layer >= int(blocks_.size()) || relation < 0 || relation >= int(ends_.size()))
    return make_error(errc::internal, "layer {} / edge type {} out of range", layer, relation);
  const block& b = blocks_[std::size_t(layer)];
  if (b.edge_types.size() != b.indices.size() || std::int64_t(row_types_.size()) < b.num_src)
    return make_error(errc::invalid_argument,
                      "a typed model needs a typed graph's blocks (edge types: {}, edges: {}, "
                      "row types: {})",
                      b.edge_types.size(), b.indices.size(), row_types_.size());
  auto [it, inserted] = made_.try_emplace({layer, relation});
  stored& s = it->second;
  if (!inserted) return &s.b;
  const auto [src, dst] = ends_[std::size_t(relation)];
  const std::int64_t e0 = b.indptr[0];
  s.indptr.assign(1, 0);
  for (std::int64_t i : rows_of(dst)) {
    if (i >= b.num_dst) break;
    for (std::int64_t e = b.indptr[i]; e < b.indptr[i + 1]; ++e) {
      const auto t = b.edge_types[std::size_t(e - e0)];
      if (t < 0 || std::size_t(t) >= relation_of_type_.size() ||
          relation_of_type_[std::size_t(t)] != relation)
        continue;
      const auto j = b.indices[std::size_t(e - e0)];
      if (row_types_[std::size_t(j)] != src)
        return make_error(errc::invalid_argument,
                          "edge type {}: a sampled edge's source is of another node type",
                          relation);
      s.indices.push_back(rank_[std::size_t(j)]);
    }
    s.indptr.push_back(std::int64_t(s.indices.size()));
  }
  s.b = block{count(dst, b.num_dst), count(src, b.num_src), s.indptr, s.indices, {}};
  return &s.b;
}

std::vector<std::int32_t> typed_row_ranks(std::span<const std::int16_t> row_types,
                                          std::size_t rows) {
  std::vector<std::int32_t> rank(std::min(rows, row_types.size()), -1);
  std::map<int, std::int32_t> seen;
  for (std::size_t r = 0; r < rank.size(); ++r)
    if (row_types[r] >= 0) rank[r] = seen[row_types[r]]++;
  return rank;
}

std::vector<bool> ops_needed(const std::vector<config::gnn_op>& ops, const std::string& result) {
  std::vector<bool> needed(ops.size(), false);
  std::set<std::string> wanted{result};
  for (std::size_t i = ops.size(); i-- > 0;) {
    if (!wanted.count(ops[i].name)) continue;
    needed[i] = true;
    wanted.insert(ops[i].inputs.begin(), ops[i].inputs.end());
  }
  return needed;
}

}  // namespace spindle::nn
