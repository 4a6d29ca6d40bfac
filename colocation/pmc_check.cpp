#include "colocation/pmc_check.hpp"

#include <random>

namespace spindle::colocation {

std::vector<block_dims> block_sizes(const graph::sampled_subgraph& sub) {
  std::vector<block_dims> out;
  for (int l = 0; l < sub.num_hops(); ++l) {
    auto b = sub.layer_block(l);
    out.push_back({b.num_dst, b.num_src, b.indptr[b.num_dst] - b.indptr[0]});
  }
  return out;
}

expected<pmc_check> check_pmc(const std::string& model_dir, const graph::sampled_subgraph& sub,
                              double safety_factor) {
  nn::heap_allocator alloc;
  SPINDLE_ASSIGN_OR_RETURN(auto m, nn::model::load(model_dir, alloc));
  const auto& d = m.desc();
  const std::int64_t n = sub.hop_end.back();
  SPINDLE_ASSIGN_OR_RETURN(auto x, nn::tensor::empty(alloc, {n, d.in}));
  std::mt19937 rng(1);
  std::normal_distribution<float> normal;
  for (std::int64_t i = 0; i < x.numel(); ++i) x.data()[i] = normal(rng);
  std::vector<nn::block> blocks;
  for (int l = 0; l < sub.num_hops(); ++l) {
    auto b = sub.layer_block(l);
    blocks.push_back({b.num_dst, b.num_src, b.indptr, b.indices});
  }
  auto degree = nn::gcn_degrees(sub.indptr, sub.indices, n);
  SPINDLE_ASSIGN_OR_RETURN(auto y, m.forward(alloc, blocks, degree, x));
  pmc_check c;
  auto sizes = block_sizes(sub);
  c.estimate = estimate_pmc(gnn_graph(d, sizes), safety_factor);
  c.measured_peak = alloc.peak();
  c.nodes = n;
  c.edges = sub.num_edges();
  return c;
}

}  // namespace spindle::colocation
