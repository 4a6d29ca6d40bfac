// DIN (Deep Interest Network, Zhou et al. 2018; Hera Table I: 4 tables of 32,
// attention + FC, predict-FC 200-80-2). Spindle's request carries one bag per
// table, so DIN's four tables are: 0 user profile, 1 candidate item, 2 the
// user's behaviour sequence (one key per behaviour), 3 context.
//
// Choices where the paper leaves room, each checked by the PyTorch golden test:
// - The local activation unit scores behaviour e against candidate q from
//   [e, q, e - q, e * q] through attention = [80, 40, 1] with sigmoid between
//   layers (the authors' code), and the weights are NOT softmax-normalised
//   (§4.3: "normalization with softmax on the output ... is abandoned").
// - Candidate and behaviours are separate tables (the paper shares the goods
//   table); the unit learns the map between them.
// - The predict MLP uses ReLU (the paper's PReLU/Dice are training aids) and its
//   2 outputs go through softmax; the answer is P(click) = softmax(z)[1].
#include <cmath>
#include <cstring>

#include "nn/model.hpp"

namespace spindle::nn {
// [e, q, e - q, e * q] for every behaviour, its sample's candidate as q.
expected<tensor> model::din_unit_input(allocator& a, const sparse_input& behaviours,
                                       const tensor& candidate) const {
  const std::int64_t d = desc_.embedding_dim, rows = desc_.table_rows[2];
  const std::int64_t n = std::int64_t(behaviours.indices.size());
  SPINDLE_ASSIGN_OR_RETURN(auto x, tensor::empty(a, {n, 4 * d}));
  const auto table = p("emb_l.2.weight");
  const quantized_table* qt = qtable("emb_l.2.weight");  // table_precision int8 / int4
  for (std::int64_t b = 0; b + 1 < std::int64_t(behaviours.offsets.size()); ++b) {
    const float* q = candidate.row(b);
    for (std::int64_t i = behaviours.offsets[b]; i < behaviours.offsets[b + 1]; ++i) {
      const std::int64_t key = behaviours.indices[std::size_t(i)];
      if (key < 0 || key >= rows)
        return make_error(errc::invalid_argument,
                          "table 2: embedding_bag: index {} at position {} outside [0, {})", key, i,
                          rows);
      float* r = x.row(i);
      if (qt) qt->read_row(key, r);  // e: the dequantised row, in place
      const float* e = qt ? r : table.data() + key * d;
      for (std::int64_t c = 0; c < d; ++c) {
        r[c] = e[c], r[d + c] = q[c], r[2 * d + c] = e[c] - q[c], r[3 * d + c] = e[c] * q[c];
      }
    }
  }
  return x;
}

expected<tensor> model::forward_din(allocator& a, const std::vector<tensor>& bags,
                                    const sparse_input& behaviours) const {
  const std::int64_t d = desc_.embedding_dim, batch = bags[0].rows();
  const auto& offs = behaviours.offsets;
  if (std::int64_t(offs.size()) != batch + 1 || offs.front() != 0 ||
      offs.back() != std::int64_t(behaviours.indices.size()))
    return make_error(errc::invalid_argument, "{}: table 2 has {} offsets for {} rows", desc_.name,
                      offs.size(), batch);
  for (std::size_t b = 1; b < offs.size(); ++b)
    if (offs[b] < offs[b - 1])
      return make_error(errc::invalid_argument, "{}: table 2: offsets[{}] = {} < offsets[{}]",
                        desc_.name, b, offs[b], b - 1);
  SPINDLE_ASSIGN_OR_RETURN(auto x, din_unit_input(a, behaviours, bags[1]));
  for (std::size_t i = 0; i < desc_.attention.size(); ++i) {  // the local activation unit
    SPINDLE_ASSIGN_OR_RETURN(auto y,
                             linear(a, x, p(fmt::format("att_l.{}.weight", 2 * i)),
                                    p(fmt::format("att_l.{}.bias", 2 * i)), desc_.attention[i]));
    if (i + 1 < desc_.attention.size()) sigmoid_(y);
    x = std::move(y);
  }
  // Interest: Σ_i w_i e_i over each sample's behaviours (zero when it has none).
  SPINDLE_ASSIGN_OR_RETURN(auto interest, tensor::empty(a, {batch, d}));
  std::memset(interest.data(), 0, std::size_t(interest.numel()) * sizeof(float));
  const auto table = p("emb_l.2.weight");
  const quantized_table* q = qtable("emb_l.2.weight");
  for (std::int64_t b = 0; b < batch; ++b)
    for (std::int64_t i = offs[b]; i < offs[b + 1]; ++i) {
      const float w = x.row(i)[0];
      if (q) {
        q->add_row(behaviours.indices[std::size_t(i)], w, interest.row(b));
        continue;
      }
      const float* e = table.data() + behaviours.indices[std::size_t(i)] * d;
      for (std::int64_t c = 0; c < d; ++c) interest.row(b)[c] += w * e[c];
    }
  SPINDLE_ASSIGN_OR_RETURN(auto z, concat_cols(a, {&bags[0], &interest, &bags[1], &bags[3]}));
  SPINDLE_ASSIGN_OR_RETURN(
      auto logits, mlp(a, bf16_.snapshot().get(), "top_l", desc_.top, std::move(z), false, true));
  SPINDLE_ASSIGN_OR_RETURN(auto out, tensor::empty(a, {batch, 1}));
  for (std::int64_t b = 0; b < batch; ++b)  // softmax over 2, the click column
    out.row(b)[0] = 1.0f / (1.0f + std::exp(logits.row(b)[0] - logits.row(b)[1]));
  return out;
}

}  // namespace spindle::nn
