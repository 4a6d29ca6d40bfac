#include "nn/relation_blocks.hpp"

#include <set>

namespace spindle::nn {

expected<const block*> relation_blocks::get(int layer, int relation) {
  if (layer < 0 || layer >= int(blocks_.size()))
    return make_error(errc::internal, "layer {} has no sampled block ({} blocks)", layer,
                      blocks_.size());
  const block& b = blocks_[std::size_t(layer)];
  if (b.edge_types.size() != b.indices.size())
    return make_error(errc::invalid_argument,
                      "a typed model needs a typed graph's blocks (edge types: {}, edges: {})",
                      b.edge_types.size(), b.indices.size());
  auto [it, inserted] = made_.try_emplace({layer, relation});
  stored& s = it->second;
  if (!inserted) return &s.b;
  const std::int64_t e0 = b.indptr[0];
  s.indptr.assign(1, 0);
  s.indptr.reserve(std::size_t(b.num_dst + 1));
  for (std::int64_t i = 0; i < b.num_dst; ++i) {
    for (std::int64_t e = b.indptr[i]; e < b.indptr[i + 1]; ++e) {
      const auto t = b.edge_types[std::size_t(e - e0)];
      if (t >= 0 && std::size_t(t) < relation_of_type_.size() &&
          relation_of_type_[std::size_t(t)] == relation)
        s.indices.push_back(b.indices[std::size_t(e - e0)]);
    }
    s.indptr.push_back(std::int64_t(s.indices.size()));
  }
  s.b = block{b.num_dst, b.num_src, s.indptr, s.indices, {}};
  return &s.b;
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
