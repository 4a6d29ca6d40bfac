// A GNN's forward pass on the GPU: the model's weights uploaded once, then per
// layer the aggregation kernel of its architecture (mean SpMM for GraphSAGE,
// the normalized aggregation for GCN, sum + (1 + eps) x for GIN, per-head node
// scores and the softmax-weighted sum for GAT), cuBLAS GEMMs in PyTorch's
// weight layout and a fused bias + activation; the same model files and answers
// as nn::model::forward (within 1e-4 relative, checked by `make gpu-check` on a
// GPU).
#pragma once

#include <map>
#include <memory>
#include <string>

#include "gpu/device_arena.hpp"
#include "nn/model.hpp"

namespace spindle::serving {

class device_model {
 public:
  /// Whether `m` has device layers: graphsage, gcn, gin, gat, and stack models
  /// whose every op runs on the device (not GATConv without self-loops, and
  /// softmax only as the last op; those run on the host), in fp32 (a bf16 model
  /// runs on the host's bfloat16 matmuls).
  static bool supports(const nn::model& m);
  /// Uploads every layer parameter of `m`.
  static expected<std::unique_ptr<device_model>> create(const nn::model& m);
  ~device_model();

  /// The forward pass over `blocks` (blocks[0] the input layer; `degree` for
  /// GCN), with every batch buffer taken from `arena` and all its work on the
  /// arena's stream (`blas`, from gpu::blas_create, is set to it: one handle per
  /// concurrent pass); the output comes back in `a`'s host memory. Const: passes
  /// on different arenas and handles may run at once.
  /// `x_device`, when given, is x already in device memory (the batch's gather
  /// on the device), so x is not uploaded again.
  expected<nn::tensor> forward(gpu::device_arena& arena, void* blas, nn::allocator& a,
                               std::span<const nn::block> blocks, std::span<const float> degree,
                               const nn::tensor& x, const float* x_device = nullptr) const;
  /// The arena bytes forward() takes for these blocks with x uploaded (every buffer
  /// it takes, 256-byte aligned: the arena frees nothing within a pass). A GNNSched
  /// device slot must be this large; the host PMC estimate leaves out the features
  /// and block CSR, which the device pass copies into its slot.
  static std::size_t arena_bytes(const config::model_desc& d, std::span<const nn::block> blocks,
                                 std::int64_t x_rows, std::size_t degree_bytes);

 private:
  device_model() = default;
  const float* param(int layer, const std::string& name) const;
  const float* tensor(const std::string& name) const;  // null when the model has none
  // A stack model's ops on the device (cuda_stack_layers.cpp).
  expected<nn::tensor> forward_stack(gpu::device_arena& arena, void* blas, nn::allocator& a,
                                     std::span<const nn::block> blocks,
                                     std::span<const float> degree, const nn::tensor& x,
                                     const float* x_device) const;
  static std::size_t stack_arena_bytes(const config::model_desc& d,
                                       std::span<const nn::block> blocks, std::int64_t x_rows,
                                       std::size_t degree_bytes);

  const nn::model* model_ = nullptr;
  std::map<std::string, void*> params_;  // "convs.L.NAME" -> device copy
};

}  // namespace spindle::serving
