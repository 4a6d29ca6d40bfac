#include "colocation/pmc.hpp"

#include <algorithm>
#include <cmath>
#include <map>

#include <fmt/format.h>

#include "nn/layers/layer.hpp"
#include "nn/quantized_row_bytes.hpp"
#include "nn/quantized_rows.hpp"

namespace spindle::colocation {
namespace {

using config::model_arch;
using u64 = std::uint64_t;

// nn/ pads every allocation to 512 bytes (GNNSched §3.5), so sizes are rounded per tensor.
u64 bytes(std::int64_t rows, std::int64_t cols) {
  u64 b = u64(std::max<std::int64_t>(rows * cols, 1)) * sizeof(float);
  return (b + 511) / 512 * 512;
}

class graph_builder {
 public:
  int add(std::string name, u64 w, u64 out, u64 temp, std::vector<int> inputs) {
    g.ops.push_back({std::move(name), w, out, temp, std::move(inputs)});
    return int(g.ops.size()) - 1;
  }
  pmc_graph g;
};

std::string conv(int l, const char* what) { return "convs." + std::to_string(l) + "." + what; }

// One layer; returns the op producing its output. `x` is the layer input's
// producer (-1 for the task input); the layer's closing op consumes it, since
// nn/ keeps a layer's input alive until the layer returns.
int gnn_layer(graph_builder& gb, const config::model_desc& d, int l, const block_dims& b, int x) {
  const bool gat = d.arch == model_arch::gat;
  const std::int64_t in = l == 0 ? d.in : (gat ? std::int64_t(d.heads) * d.hidden : d.hidden);
  const std::int64_t out = l == d.layers - 1 ? d.out : d.hidden;
  const std::int64_t heads = gat && l < d.layers - 1 ? d.heads : 1;
  const std::int64_t nd = b.num_dst, ns = b.num_src, ne = b.num_edges;
  int y = -1;
  switch (d.arch) {
    case model_arch::graphsage: {
      // Aggregation is a sparse-dense product (no [E x F] messages); lin_r
      // accumulates into lin_l's output (sgemm with beta = 1).
      int p = gb.add(conv(l, "propagate"), 0, bytes(nd, in), 0, {x});
      int ll = gb.add(conv(l, "lin_l"), bytes(out, in) + bytes(out, 1), bytes(nd, out), 0, {p});
      gb.add(conv(l, "lin_r"), bytes(out, in), 0, 0, {x});
      y = ll;
      break;
    }
    case model_arch::gcn: {
      int m = gb.add(conv(l, "matmul"), bytes(out, in) + bytes(out, 1), bytes(ns, out), 0, {x});
      y = gb.add(conv(l, "propagate"), 0, bytes(nd, out), 0, {m});
      break;
    }
    case model_arch::gat: {
      int lin = gb.add(conv(l, "linear"),
                       bytes(heads * out, in) + 2 * bytes(heads, out) + bytes(heads * out, 1),
                       bytes(ns, heads * out), 0, {x});
      // Attention scores and weighted messages over E edges plus one self-loop per dst.
      y = gb.add(conv(l, "propagate_attention"), 0, bytes(nd, heads * out),
                 bytes(ne + nd, heads) + bytes(ne + nd, heads * out), {lin});
      break;
    }
    case model_arch::gin: {
      int p = gb.add(conv(l, "propagate"), 0, bytes(nd, in), 0, {x});
      int l0 = gb.add(conv(l, "nn.0"), bytes(out, in) + bytes(out, 1) + bytes(1, 1), bytes(nd, out),
                      0, {p});
      y = gb.add(conv(l, "nn.2"), bytes(out, out) + bytes(out, 1), bytes(nd, out), 0, {l0});
      break;
    }
    default:  // not a fixed GNN: no such layer
      break;
  }
  // Activation (in place, zero memory) closes the layer and releases its input.
  gb.add(conv(l, "activation"), 0, 0, 0, {x, y});
  return y;
}

// A stack model: one op per [[op]], sized by the rows of the block its value
// belongs to. Each op's inputs are released after their last use (nn/'s
// forward_stack); in-place node-wise ops allocate nothing new (a copy when the
// input is still needed later is counted as their output).
pmc_graph stack_graph(const config::model_desc& d, std::span<const block_dims> blocks) {
  graph_builder gb;
  gb.g.input_bytes = blocks.empty() ? 0 : bytes(blocks[0].num_src, d.in);
  std::map<std::string, std::pair<int, std::int64_t>> values{{"x", {-1, blocks.empty() ? 0 : blocks[0].num_src}}};
  std::map<std::string, std::int64_t> widths{{"x", d.in}};
  std::size_t hop = 0;
  for (std::size_t i = 0; i < d.ops.size(); ++i) {
    const auto& op = d.ops[i];
    std::vector<int> in;
    std::int64_t rows = values.at(op.inputs[0]).second;
    for (const auto& name : op.inputs) {
      in.push_back(values.at(name).first);
      rows = std::min(rows, values.at(name).second);
    }
    const std::int64_t w_in = widths.at(op.inputs[0]);
    nn::hop_dims dims;
    const nn::hop_dims* consumed = nullptr;
    if (config::is_message_passing(op.kind) && hop < blocks.size()) {
      const auto& b = blocks[hop++];
      rows = b.num_dst;
      dims = {b.num_src, b.num_dst, b.num_edges};
      consumed = &dims;
    }
    // The kind's own account (nn/layers), each tensor rounded as nn/ allocates it.
    const auto m = nn::layer_of(op.kind).memory(op, w_in, consumed);
    u64 temp = 0, weights = 0;
    for (const auto& [r, c] : m.weights) weights += bytes(r, c);
    for (const auto& [r, c] : m.temp) temp += bytes(r, c);
    const int id = gb.add(fmt::format("op{}.{}", i, config::to_string(op.kind)), weights,
                          bytes(rows, op.width), temp, in);
    values[op.name] = {id, rows};
    widths[op.name] = op.width;
  }
  gb.add("output", 0, 0, 0, {});
  return gb.g;
}

}  // namespace

pmc_graph gnn_graph(const config::model_desc& d, std::span<const block_dims> blocks) {
  if (d.arch == model_arch::stack) return stack_graph(d, blocks);
  graph_builder gb;
  gb.g.input_bytes = blocks.empty() ? 0 : bytes(blocks[0].num_src, d.in);
  int x = -1;
  for (int l = 0; l < int(blocks.size()); ++l) x = gnn_layer(gb, d, l, blocks[l], x);
  gb.add("output", 0, 0, 0, {});  // the result stays live to the end (no consumer frees it)
  return gb.g;
}

pmc_graph dlrm_graph(const config::model_desc& d, std::int64_t batch) {
  graph_builder gb;
  gb.g.input_bytes = 0;  // the dense input is the caller's; nn copies it (first op)
  int x = gb.add("dense_copy", 0, bytes(batch, d.dense_in), 0, {});
  std::int64_t in = d.dense_in;
  for (std::size_t i = 0; i < d.bottom.size(); ++i) {
    x = gb.add("bot_l." + std::to_string(2 * i), bytes(d.bottom[i], in) + bytes(d.bottom[i], 1),
               bytes(batch, d.bottom[i]), 0, {x});
    in = d.bottom[i];
  }
  std::vector<int> parts = {x};
  // Tables as held: float32, or row-wise int8/int4 (table_precision).
  const u64 row =
      nn::quantized_row_bytes(d.embedding_dim, nn::table_precision_bits(d.table_precision));
  for (std::size_t t = 0; t < d.table_rows.size(); ++t)
    parts.push_back(gb.add("emb_l." + std::to_string(t), u64(d.table_rows[t]) * row,
                           bytes(batch, d.embedding_dim), 0, {}));
  const std::int64_t k = std::int64_t(d.table_rows.size()) + 1;
  in = d.embedding_dim + k * (k - 1) / 2;
  x = gb.add("interaction", 0, bytes(batch, in), 0, parts);
  for (std::size_t i = 0; i < d.top.size(); ++i) {
    x = gb.add("top_l." + std::to_string(2 * i), bytes(d.top[i], in) + bytes(d.top[i], 1),
               bytes(batch, d.top[i]), 0, {x});
    in = d.top[i];
  }
  gb.add("output", 0, 0, 0, {});
  return gb.g;
}

pmc_estimate estimate_pmc(const pmc_graph& g, double safety_factor) {
  const int n = int(g.ops.size());
  std::vector<int> last_use(n, -1);
  for (int i = 0; i < n; ++i)
    for (int in : g.ops[i].inputs)
      if (in >= 0) last_use[in] = std::max(last_use[in], i);
  pmc_estimate e;
  for (const auto& op : g.ops) e.weight_bytes += op.weight_bytes;
  u64 live = e.weight_bytes + g.input_bytes, peak = live;
  for (int i = 0; i < n; ++i) {
    const pmc_op& op = g.ops[i];
    live += op.temp_bytes + op.output_bytes;
    peak = std::max(peak, live);
    live -= op.temp_bytes;
    for (int in : op.inputs)
      if (in >= 0 && last_use[in] == i) live -= g.ops[in].output_bytes;
  }
  e.peak_bytes = peak;
  e.pmc_bytes = (u64(std::ceil(double(peak) * safety_factor)) + 511) / 512 * 512;
  return e;
}

}  // namespace spindle::colocation
