// A model description (model.toml in a model directory): architecture, sizes
// and weight file. Parsed from TOML into a validated plain value; the weights
// themselves are loaded by nn/. Thread-safe (plain values).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "config/model_ops.hpp"
#include "config/model_types.hpp"
#include "core/status.hpp"

namespace spindle::config {

/// GNNs (graphsage, gcn, gat, gin: fixed shapes; stack: any stack of `[[op]]`s,
/// config/model_ops.hpp) and recommendation models (dlrm; ncf: NeuMF, He et al.
/// 2017; wnd: Wide & Deep, Cheng et al. 2016; din: Deep Interest Network, Zhou
/// et al. 2018 — Hera Table I).
enum class model_arch { graphsage, gcn, gat, gin, dlrm, ncf, wnd, din, stack };
std::string_view to_string(model_arch a);
expected<model_arch> parse_model_arch(std::string_view text);

struct model_desc {
  std::string name = "model";
  model_arch arch = model_arch::graphsage;
  std::string weights = "weights.safetensors";  // relative to the model directory
  /// CRC-32 of the weights file (8 hex digits, zlib's) as its writer recorded it
  /// (`model init`, export_pyg); loading refuses a file that no longer matches.
  /// Empty: not recorded, not checked.
  std::string weights_crc32;
  // GNNs: feature width in, hidden width, classes out, one layer per sampled hop.
  // A stack model states in and out; layers is its message-passing ops and hidden
  // its widest op (both derived).
  int in = 0, hidden = 0, out = 0, layers = 2;
  std::vector<gnn_op> ops;  // arch = "stack": the `[[op]]` tables, in order
  /// A typed stack (config/model_types.hpp): its node and edge types and the value
  /// answering each node type; empty for a model of one node type.
  model_types types;
  int heads = 4;  // GAT: heads of every layer but the last (which has 1)
  /// GNNs: neighbours sampled per hop when serving, one per layer (model.toml
  /// `fanouts = [25, 10]`); empty: the dataset's, when it has one per layer.
  std::vector<int> fanouts;
  /// What a call's answer depends on (model.toml `sampling`): "shared" (the
  /// default; calls without a sampler seed share their batch's sampled graph, so an
  /// answer can depend on the batch it rode in) or "per_request" (each call is
  /// sampled on its own with a seed derived from its seeds: the same call gets the
  /// same answer whatever its batch, at the cost of one sample per call).
  std::string sampling = "shared";
  bool log_softmax = false;  // apply log_softmax to the output (PyG examples do)
  /// GNNs: what a call asks (model.toml `task`): "node" (the default: a row per
  /// seed) or "link" (the output is a node embedding; a call may also give pairs
  /// of nodes, answered with one score each by `decoder`).
  std::string task = "node";
  /// task = "link": how a pair's embeddings become its score; "dot" (z_u . z_v)
  /// or "ops": `decoder_ops` (model.toml `[[decoder_op]]`) on the pair's z_src
  /// and z_dst, ending in one column (an MLP on their concatenation, say).
  std::string decoder = "dot";
  std::vector<gnn_op> decoder_ops;
  /// The dense layers' arithmetic (model.toml `precision`): "fp32" (the default)
  /// or "bf16" (recommendation models' MLPs and GNN stacks' projections: inputs
  /// and weights rounded to bfloat16, products summed in float32; nn/bf16_gemm.hpp).
  std::string precision = "fp32";
  /// The embedding tables' storage (model.toml `table_precision`): "fp32" (the
  /// default), "int8" or "int4" (recommendation models' emb_l tables held
  /// row-wise quantised in memory, dequantised in the bag's sum; nn/quantized_rows.hpp).
  std::string table_precision = "fp32";
  /// Tensors of the weights file the model may leave unused, by name or prefix
  /// (model.toml `ignore_tensors = ["aux_head."]`); any other unused one is refused.
  std::vector<std::string> ignore_tensors;
  /// model.toml's [verified] table as the exporter wrote it (how the model was
  /// checked against the module it came from: graphs, difference, releases),
  /// each value as its TOML text; empty when the file has none.
  std::vector<std::pair<std::string, std::string>> verified;
  // DLRM: dense features -> bottom MLP -> embedding_dim; tables of table_rows rows.
  int dense_in = 0;
  std::vector<int> bottom;  // bottom MLP widths; the last equals embedding_dim
  std::vector<int> top;     // top MLP widths; the last is 1 (sigmoid)
  std::vector<std::int64_t> table_rows;
  int embedding_dim = 0;
  /// DIN: the local activation unit's widths (the last is 1), run on every
  /// behaviour against the candidate (model.toml `attention = [80, 40, 1]`).
  std::vector<int> attention;

  // Serving settings (a model repository's model.toml; 0 / empty: the server's
  // flags). Flags given on the command line override them.
  int max_batch = 0;           // requests per batch
  int batch_deadline_us = 0;   // batch deadline
  int slo_ms = 0;              // end-to-end objective admission is sized from
  std::string version_policy;  // "latest" (default) or "specific:V"

  bool is_gnn() const {
    return arch != model_arch::dlrm && arch != model_arch::ncf && arch != model_arch::wnd &&
           arch != model_arch::din;
  }
  bool is_rec() const { return !is_gnn(); }
  bool scores_links() const { return is_gnn() && task == "link"; }
  bool typed() const { return !types.empty(); }
};

/// Which versions of a model repository entry to serve, highest first (Triton's
/// version policies): `latest` (the default for an empty policy) or `latest:N`
/// (the N highest), `specific:V[,V...]` (each must exist), `all`. The first is
/// the version a call without a version gets. Errors name the policy.
expected<std::vector<int>> pick_versions(const std::string& policy,
                                         const std::vector<int>& versions);

expected<model_desc> parse_model_desc(std::string_view toml_text, std::string_view origin);
/// Reads DIR/model.toml.
expected<model_desc> load_model_desc(const std::string& dir);
/// "shared" or "per_request" (model_desc::sampling); errors name `field`.
status validate_sampling(std::string_view mode, std::string_view field);
/// model.task node|link (link: GNNs only) and model.decoder dot; errors name the file.
status validate_task(const model_desc& d, std::string_view origin);
/// A typed model's task: node, or link with model.pair_types naming two answered
/// node types; pair_types on any other model is refused. Errors name the file.
status validate_typed_task(const model_desc& d, std::string_view origin);
/// model.precision fp32|bf16 (bf16: recommendation models and GNN stacks); errors name the file.
status validate_precision(const model_desc& d, std::string_view origin);
/// model.table_precision fp32|int8|int4 (int8, int4: recommendation models only);
/// errors name the file.
status validate_table_precision(const model_desc& d, std::string_view origin);
/// One fanout per layer, each in 1..100000 or -1 for every neighbour (empty passes); errors name `field`.
status validate_fanouts(const std::vector<int>& fanouts, int layers, std::string_view field);
/// Checks sizes; errors name the field ("model.hidden = 0: must be > 0").
status validate(const model_desc& d);
/// One line naming what the model computes: "sage(1433->64) > batch_norm > relu >
/// sage(64->7) > log_softmax" for a stack, "graphsage 128-256-47, 2 layers" otherwise.
std::string summary(const model_desc& d);
/// The TOML text of `d` (what `spindle model init` writes).
std::string to_toml(const model_desc& d);

}  // namespace spindle::config
