// Inference models over nn/ operators: GraphSAGE, GCN, GAT and GIN over the
// sampled blocks of one batch (one layer per hop, PyG NeighborLoader semantics),
// and DLRM. Weights come from safetensors with the parameter names PyTorch
// Geometric and a plain PyTorch DLRM produce. A loaded model is immutable: many
// threads may run forward() at once, each with its own allocator.
#pragma once

#include <functional>
#include <map>
#include <string>
#include <vector>

#include "config/model.hpp"
#include "core/safetensors.hpp"
#include "core/status.hpp"
#include "nn/bf16_gemm.hpp"
#include "nn/ops.hpp"
#include "nn/param_spec.hpp"
#include "nn/quantized_rows.hpp"
#include "nn/tensor.hpp"
#include "nn/type_rows.hpp"

namespace spindle::nn {

/// Every parameter `d` needs, in a stable order, with PyG / PyTorch names.
std::vector<param_spec> parameter_specs(const config::model_desc& d);
/// The parameters of a stack model's ops (model_stack.cpp).
std::vector<param_spec> stack_parameter_specs(const config::model_desc& d);

/// Sees each op's output of a stack model's forward pass as it is made (op index,
/// value; rows are the producing block's dst nodes): `spindle model verify`
/// compares them with the user's module op by op.
using op_observer = std::function<void(std::size_t op, const tensor& value)>;

/// One table's lookups for a batch: bag b holds indices[offsets[b], offsets[b+1]).
struct sparse_input {
  std::vector<std::int64_t> indices;
  std::vector<std::int64_t> offsets;
};

/// Field list for CAF's inspectors; a template, so this header needs no CAF.
template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, sparse_input& x) {
  return f(x.indices, x.offsets);
}

class model {
 public:
  /// Loads DIR/model.toml and its weights; weight tensors come from `weights_alloc`
  /// (a task's allocator, so the GNNSched measurement counts them). Errors name the
  /// tensor and the expected vs found shape.
  /// With `external_embeddings`, a DLRM's tables (emb_l.<t>.weight) are not loaded:
  /// they are served by the parameter server and reach forward_dlrm_pooled.
  /// A non-empty `table_precision` (a --rec-table-precision flag) overrides
  /// model.toml's table_precision.
  /// `type_rows` (a typed model's featureless types, by name): those types' tables
  /// are read through their reader instead of loaded (nn/type_rows.hpp).
  static expected<model> load(const std::string& dir, allocator& weights_alloc,
                              bool external_embeddings = false,
                              const std::string& table_precision = {},
                              type_row_readers type_rows = {});
  /// Refuses, naming them, tensors in `weights` that `d` does not consume (a model
  /// served without its BatchNorm or second projection gives wrong answers), unless
  /// model.toml's `ignore_tensors` lists them (by name or prefix; logged).
  static expected<model> from(const config::model_desc& d, const safetensors_file& weights,
                              allocator& weights_alloc, bool external_embeddings = false,
                              type_row_readers type_rows = {});

  const config::model_desc& desc() const { return desc_; }
  /// Serve with these fanouts instead of model.toml's (a --fanouts flag; a typed
  /// model's edge types all take them); fails,
  /// naming the values, unless there is one per layer, each in 1..100000 or -1 (every neighbour).
  status set_fanouts(std::vector<int> fanouts);
  /// Serve with this sampling mode instead of model.toml's (a --sampling flag).
  status set_sampling(const std::string& mode);
  std::int64_t parameter_count() const;
  /// Whether forward() needs per-node degrees (GCN layers) and whether they are the
  /// graph's (a stack's GCNConv with norm = "graph") rather than the sampled block's.
  bool needs_degrees() const;
  bool graph_degrees() const;
  /// Whether forward() reads the blocks' edge attributes (a gine op), and how
  /// wide they must be (config::edge_attr_width).
  bool needs_edge_attr() const;
  std::size_t weight_bytes() const;
  /// Weights packed for oneDNN (nn/packed_weight): a recommendation model's FP32
  /// MLP weights at load, and the bfloat16 copies of the current precision's: how
  /// many, and the bytes of the copies (held beside weight_bytes()).
  std::size_t packed_weights() const;
  std::size_t packed_bytes() const;
  const tensor& param(const std::string& name) const { return params_.at(name); }
  bool has_param(const std::string& name) const { return params_.count(name) > 0; }
  /// The dense layers' arithmetic: "fp32", "bf16" or "int8" (recommendation
  /// models' MLPs, GNN stacks' projections; config::model_desc::precision).
  /// Refuses bf16 / int8 on a CPU without them. Safe while calls run (the live `precision` tunable):
  /// a call in flight finishes with the arithmetic it started with, so const.
  status set_precision(const std::string& precision) const;
  /// "fp32", "bf16" or "int8": what a call starting now computes with.
  std::string precision() const { return bf16_.kind(); }
  /// The warning, naming the model as `served_name`, when precision() multiplies
  /// the model's largest dense product (capped at kSpeedCheckWidth a side) under
  /// 0.9x float32's speed on this CPU (nn/precision_speed, timed once per shape
  /// in a process); "" when it does not, or in fp32. Callers log it once the
  /// precision is final (a load's overrides applied, a live switch done).
  std::string slow_precision_note(const std::string& served_name) const;
  static constexpr std::int64_t kSpeedCheckWidth = 1024;
  /// Bytes of the embedding tables (emb_l) as held: float32, or row-wise
  /// quantised with table_precision int8 / int4 (codes, scales and biases).
  std::size_t table_bytes() const;

  /// The ops a call's named outputs are (stack models): each name is an op's
  /// `name` (model.toml [[op]]; export_pyg names a layer's op after its module
  /// path, "conv1"); "output" is the model's output. Refuses an unknown name, listing the names there are, and a
  /// model that is not a stack.
  expected<std::vector<std::size_t>> value_ops(std::span<const std::string> names) const;

  /// A link model's decoder ops (model.toml decoder = "ops") on the pairs'
  /// embeddings, row i of z_src and z_dst one pair: returns [pairs x 1], the scores.
  expected<tensor> decode(allocator& a, const tensor& z_src, const tensor& z_dst) const;

  /// GNN forward: blocks[0] is the input layer; `x` holds features of blocks[0]'s
  /// src nodes; `degree` (GCN only) is 1 + sampled in-degree per src node, or for
  /// a stack model each src node's in-neighbour count without self edges, of the
  /// graph when graph_degrees() and of the sampled subgraph otherwise.
  /// Returns [blocks.back().num_dst x out].
  /// With `pool`, each layer's GEMMs and aggregation split their rows over it.
  /// With `observe` (stack models), every op's output is shown to it.
  expected<tensor> forward(allocator& a, std::span<const block> blocks,
                           std::span<const float> degree, const tensor& x,
                           thread_pool* pool = nullptr, const op_observer* observe = nullptr) const;
  /// A typed model's forward (config/model_types.hpp): as forward(), the blocks
  /// a typed graph's (with edge types), whose edge type t is the model's edge
  /// type relation_of_type[t] (-1: one it does not read; config::bind_edge_types);
  /// row_types[r] is sampled row r's node type, as the model numbers them (-1: one
  /// it does not read); `x` at least as wide as every node type's features;
  /// row_ids[r] is row r's id within its node type (read for types with an
  /// embedding table, has_type_embeddings()). Answers seeds (all of the node type of the model's output `output`,
  /// config::find_output; the first rows) with that output's rows.
  expected<tensor> forward_typed(allocator& a, std::span<const block> blocks, const tensor& x,
                                 std::size_t output, std::span<const int> relation_of_type,
                                 std::span<const std::int16_t> row_types,
                                 std::span<const std::int64_t> row_ids = {},
                                 thread_pool* pool = nullptr,
                                 const op_observer* observe = nullptr) const;
  /// As forward_typed, for several values (a typed link model's two outputs, a
  /// call's named outputs): each of `values` (op names), all its node type's
  /// sampled rows (a seed row's place in it is its rank among the sampled rows
  /// of its type; typed_row_ranks()).
  expected<std::vector<tensor>> forward_typed_values(
      allocator& a, std::span<const block> blocks, const tensor& x,
      std::span<const std::string> values, std::span<const int> relation_of_type,
      std::span<const std::int16_t> row_types, std::span<const std::int64_t> row_ids = {},
      thread_pool* pool = nullptr, const op_observer* observe = nullptr) const;
  /// Whether a node type reads an embedding table (forward_typed then needs row_ids).
  bool has_type_embeddings() const;
  /// Whether node type `name`'s table is read through a reader (not held).
  bool type_rows_external(const std::string& name) const { return type_rows_.count(name) > 0; }
  /// DLRM forward: dense [B x dense_in], one sparse_input per table; returns [B x 1]
  /// click probabilities.
  expected<tensor> forward_dlrm(allocator& a, const tensor& dense,
                                const std::vector<sparse_input>& sparse) const;
  /// Any recommendation model (dlrm, ncf, wnd, din) with its tables in memory: dense
  /// [B x dense_in] (NCF: ignored), one sparse_input per table; returns [B x 1]
  /// click probabilities. NCF (NeuMF): sigmoid(predict(GMF(t0 * t1) ++
  /// MLP(t2 ++ t3))). Wide & Deep: sigmoid(wide(dense) + Σ_t wide_emb_t[keys] +
  /// deep(dense ++ t0 ++ ... ++ tT-1)), deep's last layer linear. DIN: see
  /// model_din.cpp (tables: user, candidate, behaviours, context).
  expected<tensor> forward_rec(allocator& a, const tensor& dense,
                               const std::vector<sparse_input>& sparse) const;
  /// DLRM forward from already pooled bags: pooled[t] is [B x embedding_dim]
  /// (the sum of each bag's vectors, as forward_dlrm's embedding bags compute).
  expected<tensor> forward_dlrm_pooled(allocator& a, const tensor& dense,
                                       const std::vector<const tensor*>& pooled) const;

 private:
  // One GNN layer's parameters, resolved once at load (no lookup per pass).
  struct layer_weights {
    std::span<const float> lin_l, lin_l_bias, lin_r, lin, bias, lin_src, att_src, att_dst, nn0,
        nn0_bias, nn2, nn2_bias, eps;
  };
  void cache_layer_weights();
  expected<tensor> gnn_layer(allocator& a, int l, const block& b, std::span<const float> degree,
                             const tensor& x, thread_pool* pool) const;
  // DIN (model_din.cpp): bags holds every table's sum-pooled bag (table 2's unused).
  expected<tensor> forward_din(allocator& a, const std::vector<tensor>& bags,
                               const sparse_input& behaviours) const;
  expected<tensor> din_unit_input(allocator& a, const sparse_input& behaviours,
                                  const tensor& candidate) const;
  // `bf16`: the call's snapshot of bf16_ (null: fp32), taken once per call.
  expected<tensor> mlp(allocator& a, const bf16_weights::map* bf16, const std::string& prefix,
                       const std::vector<int>& widths, tensor x, bool sigmoid_last,
                       bool linear_last = false) const;
  std::span<const float> p(const std::string& name) const;
  // table_precision int8 / int4 (model_tables.cpp): a table held quantised, or null.
  const quantized_table* qtable(const std::string& name) const;
  // Keeps `values` of emb_l table `name` quantised when table_precision asks (true).
  expected<bool> keep_quantized(const std::string& name, const std::vector<std::int64_t>& shape,
                                std::span<const float> values);
  // Sum-pooled bags of table `name` (float32 or quantised), errors naming table t.
  expected<tensor> table_bag(allocator& a, const std::string& name, std::int64_t dim,
                             const sparse_input& in, std::size_t t) const;
  // Stack models (model_stack.cpp): the ops in order, values freed after last use.
  expected<tensor> forward_stack(allocator& a, std::span<const block> blocks,
                                 std::span<const float> degree, const tensor& x,
                                 thread_pool* pool, const op_observer* observe) const;
  // The tensors of the types `readers` reads (not loaded), each checked to be a
  // featureless type's [embedding_rows x in] tensor of `w` (model_stack.cpp).
  static expected<std::vector<std::string>> external_tables(const config::model_desc& d,
                                                            const safetensors_file& w,
                                                            const type_row_readers& readers);
  expected<tensor> type_input_rows(allocator& a, int k, std::span<const std::int64_t> rows,
                                   const tensor& x, std::span<const std::int64_t> row_ids) const;
  expected<tensor> stack_op(allocator& a, const bf16_weights::map* bf16, const config::gnn_op& op,
                            const block* b, std::span<const float> degree, std::vector<tensor*>& in,
                            std::vector<bool>& owned, thread_pool* pool) const;
  expected<std::vector<tensor>> run_ops(allocator& a, const std::vector<config::gnn_op>& ops,
                                        std::map<std::string, tensor> values,
                                        std::span<const block> blocks,
                                        std::span<const float> degree, thread_pool* pool,
                                        const op_observer* observe,
                                        std::span<const std::string> results = {},
                                        class typed_layout* typed = nullptr) const;

  config::model_desc desc_;
  std::map<std::string, tensor> params_;  // node-based: spans into it survive moves
  bool dense_weight(const std::string& name, const tensor& t) const;
  // precision "bf16" / "int8": the dense weights so held, by parameter name.
  mutable bf16_weights bf16_;
  // A recommendation model's MLP weights packed for oneDNN (nn/packed_weight), by
  // parameter name: its FP32 products read them (empty where packing is off).
  std::map<std::string, std::shared_ptr<const packed_weight>> packed_;
  void pack_mlp_weights();
  // table_precision int8 / int4: the emb_l tables, by parameter name (not in params_).
  std::map<std::string, quantized_table> quantized_;
  std::vector<layer_weights> layers_;
  type_row_readers type_rows_;  // featureless types whose tables are read, not held
};

/// GCN degrees for a sampled subgraph in CSR form (rows = expanded nodes): 1 +
/// sampled neighbours other than the node itself (PyG add_remaining_self_loops).
std::vector<float> gcn_degrees(std::span<const std::int64_t> indptr,
                               std::span<const std::int32_t> indices, std::int64_t num_nodes);

/// Random weights for `d` (PyTorch's default uniform(-1/sqrt(fan_in), +) init),
/// deterministic per seed; writes DIR/model.toml and DIR/<weights>.
status init_model(const config::model_desc& d, std::uint64_t seed, const std::string& dir);

}  // namespace spindle::nn
