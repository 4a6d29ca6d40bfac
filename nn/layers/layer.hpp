// One kind of stack-model layer (config/model_ops.hpp's op kinds) in one place:
// the tensors it reads, with PyG's names under its prefix, its forward pass on
// the host and its memory account. The stack interpreter (nn/model_stack.cpp),
// the loader's tensor list (`spindle model info`, shape checks) and GNNSched's
// estimate find a kind through layer_of(); CONTRIBUTING.md lists what else a
// new kind needs.
#pragma once

#include <cstdint>
#include <map>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "config/model_ops.hpp"
#include "core/status.hpp"
#include "core/thread_pool.hpp"
#include "nn/bf16_gemm.hpp"
#include "nn/ops.hpp"
#include "nn/param_spec.hpp"
#include "nn/tensor.hpp"

namespace spindle::nn {

/// The tensors one op reads, appended to a model's list as `<prefix>.<rest>`.
class weight_list {
 public:
  weight_list(const config::gnn_op& op, std::size_t index, std::vector<param_spec>& out)
      : op_(op), index_(index), out_(out) {}
  void add(std::string_view rest, std::vector<std::int64_t> shape, std::string_view what,
           bool optional = false, bool load = true);

 private:
  const config::gnn_op& op_;
  std::size_t index_;
  std::vector<param_spec>& out_;
};

/// What one op's forward pass is given. `in[k]` may be overwritten when
/// `owned[k]` (this op is its last use); `b` is the hop's sampled block for
/// message-passing ops (else null); `degree` is GCN's per-node degrees.
struct layer_input {
  allocator& a;
  const config::gnn_op& op;
  const block* b;
  std::span<const float> degree;
  std::vector<tensor*>& in;
  std::vector<bool>& owned;
  thread_pool* pool;
  const std::map<std::string, tensor>& params;

  /// precision "bf16" / "int8": the model's dense weights in that precision, by
  /// name (null or missing a name: that weight runs in float32).
  const std::map<std::string, reduced_weight>* bf16 = nullptr;

  /// The op's tensor `<prefix>.<rest>` (empty when the model has none).
  std::span<const float> weight(std::string_view rest) const;
  /// in W^T + b with the op's tensors `<prefix>.<weight>` and `<prefix>.<bias>`
  /// ("" or absent: no bias), in bfloat16 or int8 where the model holds W so (bf16).
  expected<tensor> linear(const tensor& in, std::string_view weight, std::string_view bias,
                          std::int64_t out) const;
  /// y += in W^T, likewise.
  status linear_accumulate(tensor& y, const tensor& in, std::string_view weight) const;
  /// in[0] itself when this op is its last use, else a copy (for in-place ops).
  expected<tensor> own_first() const;
  /// The value a message-passing op's targets' own rows come from: in[1] for a
  /// typed model's bipartite op (its target node type's), else in[0].
  const tensor& dst_input() const { return config::is_bipartite(op) ? *in[1] : *in[0]; }
};

/// The sampled block a message-passing op consumes, by its sizes.
struct hop_dims {
  std::int64_t num_src = 0, num_dst = 0, num_edges = 0;
};

/// What one op holds besides its output, as tensor shapes (rows x cols), for
/// GNNSched's peak-memory estimate (colocation/pmc.cpp rounds each tensor up as
/// nn/ allocates it). Weights as the estimate counts them: a message-passing
/// op's two projections of (width + 1) x in, a Linear's out x (in + 1).
struct layer_memory {
  std::vector<std::pair<std::int64_t, std::int64_t>> weights, temp;
};

struct layer_kind {
  /// Appends the tensors `op` reads; its (first) input is `in` wide.
  void (*weights)(const config::gnn_op& op, std::int64_t in, weight_list& out);
  expected<tensor> (*forward)(const layer_input& x);
  /// `in` wide input; `hop`: the block a message-passing op consumes (null when
  /// the estimate has no block for it).
  layer_memory (*memory)(const config::gnn_op& op, std::int64_t in, const hop_dims* hop);
};

/// The unit of `kind`.
const layer_kind& layer_of(config::op_kind kind);

/// A copy of t's first `rows` rows (joins and in-place ops share it).
expected<tensor> copy_head(allocator& a, const tensor& t, std::int64_t rows);
/// y's rows plus `bias` (nothing when the model has none).
void add_bias_rows(tensor& y, std::span<const float> bias);

}  // namespace spindle::nn
