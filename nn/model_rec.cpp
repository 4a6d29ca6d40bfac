// The recommendation models' forward passes (DLRM, NCF, Wide & Deep; DIN's
// attention is in model_din.cpp): per-table sum-pooled bags, the MLPs, DLRM's dot
// interaction, and the click probability per row.
#include <cmath>
#include <cstring>

#include "nn/bf16_gemm.hpp"
#include "nn/f32_matmul.hpp"
#include "nn/int8_gemm.hpp"
#include "nn/model.hpp"
#include "nn/precision_speed.hpp"

namespace spindle::nn {

using config::model_arch;

expected<tensor> model::mlp(allocator& a, const bf16_weights::map* bf16, const std::string& prefix,
                            const std::vector<int>& widths, tensor x, bool sigmoid_last,
                            bool linear_last) const {
  for (std::size_t i = 0; i < widths.size(); ++i) {
    const auto weight = fmt::format("{}.{}.weight", prefix, 2 * i);
    const auto bias = p(fmt::format("{}.{}.bias", prefix, 2 * i));
    const auto half = bf16 ? bf16->find(weight) : bf16_weights::map::const_iterator{};
    const auto packed = packed_.find(weight);
    const bool last = i + 1 == widths.size();
    // The last layer stays linear when its logit is added to a wide part, and
    // ends in a sigmoid when asked; every other layer's ReLU rides the bias pass.
    const bool relu = !(last && (linear_last || sigmoid_last));
    const bool reduced = bf16 && half != bf16->end();
    const epilogue e = relu && !reduced ? epilogue::relu : epilogue::none;
    SPINDLE_ASSIGN_OR_RETURN(
        auto y, reduced ? linear_reduced(a, x, half->second, bias, widths[i])
                        : (packed != packed_.end()
                               ? linear_packed(a, x, *packed->second, p(weight), bias, widths[i],
                                               nullptr, e)
                               : linear(a, x, p(weight), bias, widths[i], nullptr, e)));
    if (relu && reduced) {
      relu_(y);
    } else if (last && sigmoid_last && !linear_last) {
      for (std::int64_t k = 0; k < y.numel(); ++k)
        y.data()[k] = 1.0f / (1.0f + std::exp(-y.data()[k]));
    }
    x = std::move(y);
  }
  return x;
}

// A recommendation model's MLP weights, packed once for oneDNN's AVX-512 matmul
// (nn/packed_weight): a layer's FP32 product then skips repacking its weight every
// call (the DLRM's MLPs at 128 rows on one thread, 2026-11-29: 2.32 ms packed,
// 2.79 ms through oneDNN's plain layout, 2.90 ms OpenBLAS's SkylakeX sgemm). A
// weight oneDNN will not pack takes the plain route; the copies cost the MLPs'
// bytes again (the DLRM's: 8.5 MB; packed_bytes). Only for a model loaded in
// float32: one loaded in bf16 or int8 and switched to fp32 live runs the plain route.
void model::pack_mlp_weights() {
  if (desc_.arch == model_arch::stack || desc_.precision != "fp32" || !f32_packed_allowed())
    return;
  for (const auto& [name, t] : params_) {
    if (!dense_weight(name, t) || t.shape().size() != 2) continue;
    if (auto w = packed_weight::pack({t.data(), std::size_t(t.numel())}, t.shape()[0],
                                         t.shape()[1]))
      packed_.emplace(name, std::move(w));
  }
}

// The weights bf16 rounds: a recommendation model's MLPs (bot_l, top_l, mlp_l:
// every layer mlp() runs); a GNN stack's layers' projections, the 2-D weights its
// ops multiply with (layer_input::linear) and not a featureless type's table.
bool model::dense_weight(const std::string& name, const tensor& t) const {
  if (!name.ends_with(".weight")) return false;
  if (desc_.arch == model_arch::stack) {
    for (const auto& n : desc_.types.node_types)
      if (n.embedding == name) return false;
    return t.shape().size() == 2;
  }
  return name.starts_with("bot_l.") || name.starts_with("top_l.") || name.starts_with("mlp_l.");
}

// The dense weights (dense_weight) in bfloat16 or int8, swapped in whole: calls
// in flight keep the set they took. A refusal leaves the arithmetic as it was.
status model::set_precision(const std::string& precision) const {
  config::model_desc d = desc_;
  d.precision = precision;
  SPINDLE_TRY(config::validate_precision(d, "precision"));
  if (precision == "fp32") {
    bf16_.set(nullptr);
    return status::ok();
  }
  const auto why = precision == "int8" ? int8_unsupported_reason() : bf16_unsupported_reason();
  if (!why.empty())
    return make_error(errc::unsupported, "model '{}': precision {}: {}", desc_.name, precision, why);
  if (bf16_.kind() == precision) return status::ok();
  auto weights = std::make_shared<bf16_weights::map>();
  for (const auto& [name, t] : params_) {
    if (!dense_weight(name, t)) continue;
    const std::span<const float> values(t.data(), std::size_t(t.numel()));
    reduced_weight w;
    if (precision == "bf16") {
      w.bf16 = to_bf16(values);
      if (t.shape().size() == 2)  // reordered once for oneDNN (nn/packed_weight); null: plain
        w.packed = packed_weight::pack(std::span<const std::uint16_t>(w.bf16), t.shape()[0],
                                       t.shape()[1]);
    } else
      SPINDLE_TRY(quantize_rows_s8(values, t.shape()[0], t.numel() / std::max<std::int64_t>(1, t.shape()[0]),
                                   w.s8, w.scales, fmt::format("model '{}': {}", desc_.name, name)));
    weights->emplace(name, std::move(w));
  }
  bf16_.set(std::move(weights));
  return status::ok();
}

// The largest dense product, capped at kSpeedCheckWidth a side so the check's
// time and memory stay bounded whatever the model (a bigger product runs the
// same kernels, in more blocks), timed at 64 rows (nn/precision_speed).
std::string model::slow_precision_note(const std::string& served_name) const {
  const auto kind = precision();
  if (kind == "fp32") return {};
  std::int64_t out = 0, in = 0;
  for (const auto& [name, t] : params_)
    if (dense_weight(name, t) && t.shape().size() == 2 && t.numel() > out * in)
      out = t.shape()[0], in = t.shape()[1];
  if (out < 1 || in < 1) return {};
  auto speed = precision_speed_here(kind, 64, std::min(in, kSpeedCheckWidth),
                                    std::min(out, kSpeedCheckWidth));
  if (!speed) return fmt::format("model '{}': {}", served_name, speed.error().message());
  return nn::slow_precision_note(served_name, *speed);
}

expected<tensor> model::forward_dlrm(allocator& a, const tensor& dense,
                                     const std::vector<sparse_input>& sparse) const {
  if (desc_.arch != model_arch::dlrm)
    return make_error(errc::invalid_argument, "{}: not a DLRM model", desc_.name);
  if (sparse.size() != desc_.table_rows.size())
    return make_error(errc::invalid_argument, "{}: {} sparse inputs for {} tables", desc_.name,
                      sparse.size(), desc_.table_rows.size());
  std::vector<tensor> embs;
  std::vector<const tensor*> refs;
  for (std::size_t t = 0; t < sparse.size(); ++t) {
    const auto name = fmt::format("emb_l.{}.weight", t);
    if (p(name).empty() && !qtable(name))
      return make_error(errc::invalid_argument,
                        "{}: table {} is served by the parameter server; use forward_dlrm_pooled",
                        desc_.name, t);
    if (std::int64_t(sparse[t].offsets.size()) != dense.rows() + 1)
      return make_error(errc::invalid_argument, "{}: table {} has {} offsets for {} rows",
                        desc_.name, t, sparse[t].offsets.size(), dense.rows());
    SPINDLE_ASSIGN_OR_RETURN(auto e, table_bag(a, name, desc_.embedding_dim, sparse[t], t));
    embs.push_back(std::move(e));
  }
  for (const auto& e : embs) refs.push_back(&e);
  return forward_dlrm_pooled(a, dense, refs);
}

namespace {

float sigmoid(float x) { return 1.0f / (1.0f + std::exp(-x)); }

}  // namespace

expected<tensor> model::forward_rec(allocator& a, const tensor& dense,
                                    const std::vector<sparse_input>& sparse) const {
  if (desc_.arch == model_arch::dlrm) return forward_dlrm(a, dense, sparse);
  if (!desc_.is_rec())
    return make_error(errc::invalid_argument, "{}: not a recommendation model", desc_.name);
  if (sparse.size() != desc_.table_rows.size())
    return make_error(errc::invalid_argument, "{}: {} sparse inputs for {} tables", desc_.name,
                      sparse.size(), desc_.table_rows.size());
  const std::int64_t batch = std::int64_t(sparse[0].offsets.size()) - 1;
  if (desc_.arch == model_arch::wnd && (dense.rows() != batch || dense.cols() != desc_.dense_in))
    return make_error(errc::invalid_argument, "{}: dense is [{} x {}], expected [{} x {}]",
                      desc_.name, dense.rows(), dense.cols(), batch, desc_.dense_in);
  // Sum-pooled bags of every table (and, for Wide & Deep, of the wide weights).
  auto bag = [&](const std::string& name, std::int64_t dim, std::size_t t) -> expected<tensor> {
    if (std::int64_t(sparse[t].offsets.size()) != batch + 1)
      return make_error(errc::invalid_argument, "{}: table {} has {} offsets for {} rows",
                        desc_.name, t, sparse[t].offsets.size(), batch);
    return table_bag(a, name, dim, sparse[t], t);
  };
  const std::int64_t d = desc_.embedding_dim;
  std::vector<tensor> embs;
  for (std::size_t t = 0; t < sparse.size(); ++t) {
    if (desc_.arch == model_arch::din && t == 2) {  // behaviours: pooled by attention
      embs.emplace_back();
      continue;
    }
    SPINDLE_ASSIGN_OR_RETURN(auto e, bag(fmt::format("emb_l.{}.weight", t), d, t));
    embs.push_back(std::move(e));
  }
  if (desc_.arch == model_arch::din) return forward_din(a, embs, sparse[2]);
  SPINDLE_ASSIGN_OR_RETURN(auto out, tensor::empty(a, {batch, 1}));
  if (desc_.arch == model_arch::ncf) {
    for (std::int64_t r = 0; r < batch; ++r)  // GMF: user x item, elementwise (into table 0)
      for (std::int64_t c = 0; c < d; ++c) embs[0].row(r)[c] *= embs[1].row(r)[c];
    SPINDLE_ASSIGN_OR_RETURN(auto x, concat_cols(a, {&embs[2], &embs[3]}));
    SPINDLE_ASSIGN_OR_RETURN(
        auto h, mlp(a, bf16_.snapshot().get(), "mlp_l", desc_.top, std::move(x), false));
    SPINDLE_ASSIGN_OR_RETURN(auto z, concat_cols(a, {&embs[0], &h}));
    SPINDLE_ASSIGN_OR_RETURN(auto y, linear(a, z, p("predict.weight"), p("predict.bias"), 1));
    for (std::int64_t r = 0; r < batch; ++r) out.row(r)[0] = sigmoid(y.row(r)[0]);
    return out;
  }
  // Wide & Deep: sigmoid(wide(dense) + Σ wide key weights + deep(dense ++ embeddings)).
  SPINDLE_ASSIGN_OR_RETURN(auto wide, linear(a, dense, p("wide.weight"), p("wide.bias"), 1));
  for (std::size_t t = 0; t < sparse.size(); ++t) {
    SPINDLE_ASSIGN_OR_RETURN(auto w, bag(fmt::format("wide_emb.{}.weight", t), 1, t));
    for (std::int64_t r = 0; r < batch; ++r) wide.row(r)[0] += w.row(r)[0];
  }
  std::vector<const tensor*> parts{&dense};
  for (const auto& e : embs) parts.push_back(&e);
  SPINDLE_ASSIGN_OR_RETURN(auto x, concat_cols(a, parts));
  SPINDLE_ASSIGN_OR_RETURN(
      auto deep, mlp(a, bf16_.snapshot().get(), "top_l", desc_.top, std::move(x), false, true));
  for (std::int64_t r = 0; r < batch; ++r) out.row(r)[0] = sigmoid(wide.row(r)[0] + deep.row(r)[0]);
  return out;
}

expected<tensor> model::forward_dlrm_pooled(allocator& a, const tensor& dense,
                                            const std::vector<const tensor*>& pooled) const {
  if (desc_.arch != model_arch::dlrm)
    return make_error(errc::invalid_argument, "{}: not a DLRM model", desc_.name);
  if (dense.cols() != desc_.dense_in)
    return make_error(errc::invalid_argument, "{}: dense features have {} columns, expected {}",
                      desc_.name, dense.cols(), desc_.dense_in);
  if (pooled.size() != desc_.table_rows.size())
    return make_error(errc::invalid_argument, "{}: {} pooled inputs for {} tables", desc_.name,
                      pooled.size(), desc_.table_rows.size());
  for (std::size_t t = 0; t < pooled.size(); ++t) {
    if (pooled[t]->rows() != dense.rows() || pooled[t]->cols() != desc_.embedding_dim)
      return make_error(errc::invalid_argument,
                        "{}: pooled table {} is [{} x {}], expected [{} x {}]", desc_.name, t,
                        pooled[t]->rows(), pooled[t]->cols(), dense.rows(), desc_.embedding_dim);
  }
  SPINDLE_ASSIGN_OR_RETURN(auto x, tensor::empty(a, dense.shape()));
  std::memcpy(x.data(), dense.data(), std::size_t(dense.numel()) * sizeof(float));
  const auto bf16 = bf16_.snapshot();  // one arithmetic for both MLPs of the call
  SPINDLE_ASSIGN_OR_RETURN(auto bottom,
                           mlp(a, bf16.get(), "bot_l", desc_.bottom, std::move(x), false));
  SPINDLE_ASSIGN_OR_RETURN(auto z, dot_interaction(a, bottom, pooled));
  bottom = tensor();
  return mlp(a, bf16.get(), "top_l", desc_.top, std::move(z), true);
}

}  // namespace spindle::nn
