// The attention ops of a stack model on the GPU (gatv2, transformer,
// res_gated): their projections as GEMMs, then gpu/kernels/attention_row.hpp's
// logits, softmax aggregation or gated sum, as nn/layers computes them on the
// host. Internal to serving/cuda_stack_layers.cpp.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string_view>

#include "config/model_ops.hpp"
#include "core/status.hpp"

namespace spindle::serving::detail {

/// A sampled block as the device holds it.
struct device_hop {
  const std::int64_t* indptr = nullptr;
  const std::int32_t* indices = nullptr;
  std::int64_t num_src = 0, num_dst = 0, num_edges = 0;
};

/// A row-major value in the pass's arena.
struct device_value {
  float* p = nullptr;
  std::int64_t rows = 0, cols = 0;
};

using device_take = std::function<expected<device_value>(std::int64_t rows, std::int64_t cols)>;
using device_weight = std::function<const float*(std::string_view rest)>;

bool is_attention_op(config::op_kind k);
/// The arena bytes such an op takes beyond its block's CSR (an upper bound).
std::size_t attention_op_bytes(const config::gnn_op& op, const device_hop& hop);
/// The op over `in` (its block's num_src rows), on `stream`.
expected<device_value> attention_op(const config::gnn_op& op, const device_hop& hop,
                                    const device_value& in, void* blas, void* stream,
                                    const device_take& take, const device_weight& w);

}  // namespace spindle::serving::detail
