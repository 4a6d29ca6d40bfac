// Joins of several values (residual add, JumpingKnowledge max and cat, a link
// decoder's elementwise product, the mean over a typed model's edge types): each
// input's first rows, as many as the shortest has (the dst nodes of a block are
// the first src nodes, so a join of values of different depths keeps the rows
// they share).
#include "nn/layers/units.hpp"

namespace spindle::nn::layers {
namespace {

std::int64_t shared_rows(const layer_input& x) {
  std::int64_t rows = x.in[0]->rows();
  for (auto* t : x.in) rows = std::min(rows, t->rows());
  return rows;
}

expected<tensor> fold(const layer_input& x, void (*combine)(tensor&, const tensor&)) {
  const std::int64_t rows = shared_rows(x);
  SPINDLE_ASSIGN_OR_RETURN(auto y, copy_head(x.a, *x.in[0], rows));
  for (std::size_t k = 1; k < x.in.size(); ++k) combine(y, x.in[k]->head(rows));
  return y;
}

expected<tensor> cat_forward(const layer_input& x) {
  const std::int64_t rows = shared_rows(x);
  std::vector<tensor> heads;
  std::vector<const tensor*> parts;
  for (auto* t : x.in) heads.push_back(t->head(rows));
  for (const auto& h : heads) parts.push_back(&h);
  return concat_cols(x.a, parts);
}

}  // namespace

const layer_kind add{&no_weights, [](const layer_input& x) { return fold(x, &add_); }, &no_memory};
const layer_kind max{&no_weights, [](const layer_input& x) { return fold(x, &max_); }, &no_memory};
const layer_kind mul{&no_weights, [](const layer_input& x) { return fold(x, &mul_); }, &no_memory};
const layer_kind cat{&no_weights, &cat_forward, &no_memory};
// HeteroConv's aggr="mean" over edge types: their sum over their count.
const layer_kind mean{&no_weights, [](const layer_input& x) -> expected<tensor> {
                        SPINDLE_ASSIGN_OR_RETURN(auto y, fold(x, &add_));
                        scale_(y, 1.0f / float(x.in.size()));
                        return y;
                      }, &no_memory};

}  // namespace spindle::nn::layers
