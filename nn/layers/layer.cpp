#include "nn/layers/layer.hpp"

#include <fmt/format.h>

#include <cstring>

#include "nn/bf16_gemm.hpp"

namespace spindle::nn {

void weight_list::add(std::string_view rest, std::vector<std::int64_t> shape, std::string_view what,
                      bool optional, bool load) {
  out_.push_back({op_.prefix + "." + std::string(rest), std::move(shape), optional,
                  fmt::format("op {} {}: {}", index_, config::to_string(op_.kind), what), load});
}

std::span<const float> layer_input::weight(std::string_view rest) const {
  auto it = params.find(op.prefix + "." + std::string(rest));
  if (it == params.end()) return {};
  return {it->second.data(), std::size_t(it->second.numel())};
}

expected<tensor> layer_input::linear(const tensor& in, std::string_view w, std::string_view b,
                                     std::int64_t out) const {
  const auto bias = b.empty() ? std::span<const float>{} : weight(b);
  if (bf16) {
    auto half = bf16->find(op.prefix + "." + std::string(w));
    if (half != bf16->end()) return linear_reduced(a, in, half->second, bias, out, pool);
  }
  return nn::linear(a, in, weight(w), bias, out, pool);
}

status layer_input::linear_accumulate(tensor& y, const tensor& in, std::string_view w) const {
  if (bf16) {
    auto half = bf16->find(op.prefix + "." + std::string(w));
    if (half != bf16->end()) {
      SPINDLE_ASSIGN_OR_RETURN(auto z, linear_reduced(a, in, half->second, {}, y.cols(), pool));
      if (z.rows() != y.rows())
        return make_error(errc::invalid_argument, "linear_accumulate: {} rows into {}", z.rows(),
                          y.rows());
      for (std::int64_t i = 0; i < y.numel(); ++i) y.data()[i] += z.data()[i];
      return status::ok();
    }
  }
  return nn::linear_accumulate(y, in, weight(w), pool);
}

expected<tensor> layer_input::own_first() const {
  if (owned[0]) return std::move(*in[0]);
  return copy_head(a, *in[0], in[0]->rows());
}

expected<tensor> copy_head(allocator& a, const tensor& t, std::int64_t rows) {
  SPINDLE_ASSIGN_OR_RETURN(auto y, tensor::empty(a, {rows, t.cols()}));
  std::memcpy(y.data(), t.data(), std::size_t(rows * t.cols()) * sizeof(float));
  return y;
}

void add_bias_rows(tensor& y, std::span<const float> bias) { add_bias(y, bias, 0, y.rows()); }

}  // namespace spindle::nn
