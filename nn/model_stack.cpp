// Stack models (config/model_ops.hpp): the tensors each op reads, with PyG's
// names under the op's prefix, and the forward pass that runs the ops in order
// over the batch's sampled blocks. Message-passing ops consume one block each;
// a value keeps the rows of the block that produced it (the dst nodes of a block
// are the first src nodes, so a join of values of different depths takes the
// first rows of each, as PyG's full-graph answer restricted to those nodes).
#include <fmt/ranges.h>

#include <algorithm>
#include <map>
#include <optional>
#include <set>

#include "nn/layers/layer.hpp"
#include "nn/model.hpp"
#include "nn/relation_blocks.hpp"

namespace spindle::nn {
namespace {

// The width of each op's (first) input, from the widths validate_ops filled in;
// `w` holds the values the ops start from.
std::vector<std::int64_t> input_widths(const std::vector<config::gnn_op>& ops,
                                       std::map<std::string, std::int64_t> w) {
  std::vector<std::int64_t> in;
  for (const auto& op : ops) {
    in.push_back(w.at(op.inputs.at(0)));
    w[op.name] = op.width;
  }
  return in;
}

// The op a named output is: "output" is the last op (the model's output, always;
// config refuses any other op called so), else the op called `name` exactly. (Not matched by module
// path: a module may end in an op without one, a GINConv's nn in an activation,
// and its output would be another op's.)
std::optional<std::size_t> find_value(const std::vector<config::gnn_op>& ops,
                                      const std::string& name) {
  if (name == "output" && !ops.empty()) return ops.size() - 1;  // the model's own output
  for (std::size_t i = 0; i < ops.size(); ++i)
    if (ops[i].name == name) return i;
  return std::nullopt;
}

}  // namespace

std::vector<param_spec> stack_parameter_specs(const config::model_desc& d) {
  std::vector<param_spec> s;
  std::map<std::string, std::int64_t> starts{{"x", d.in}};
  for (const auto& n : d.types.node_types) starts[config::type_input(n.name)] = n.in;
  const auto in = input_widths(d.ops, starts);
  for (std::size_t i = 0; i < d.ops.size(); ++i) {
    weight_list w(d.ops[i], i, s);
    layer_of(d.ops[i].kind).weights(d.ops[i], in[i], w);
  }
  for (const auto& n : d.types.node_types)  // featureless types' learnt tables
    if (!n.embedding.empty())
      s.push_back({n.embedding, {n.embedding_rows, n.in}, false,
                   fmt::format("node type '{}': one row per node (nn.Embedding)", n.name)});
  // A link model's decoder ops read the pair's embeddings (model.out wide each).
  const auto dec = input_widths(d.decoder_ops, {{"z_src", d.out}, {"z_dst", d.out}});
  for (std::size_t i = 0; i < d.decoder_ops.size(); ++i) {
    weight_list w(d.decoder_ops[i], d.ops.size() + i, s);
    layer_of(d.decoder_ops[i].kind).weights(d.decoder_ops[i], dec[i], w);
  }
  return s;
}

// `op` on its inputs, by its kind's unit (nn/layers); `owned[k]` says whether
// in[k] may be overwritten (its last use).
expected<tensor> model::stack_op(allocator& a, const bf16_weights::map* bf16,
                                 const config::gnn_op& op, const block* b,
                                 std::span<const float> degree, std::vector<tensor*>& in,
                                 std::vector<bool>& owned, thread_pool* pool) const {
  const layer_input x{a, op, b, degree, in, owned, pool, params_, bf16};
  return layer_of(op.kind).forward(x);
}

// Runs `ops` in order over `values` (the inputs they start from, never
// overwritten); message-passing ops take the next block, or in a typed model
// their layer's block restricted to their edge type. Returns the last op's
// value, or each of `results`' (a typed model runs only the ops they need).
expected<std::vector<tensor>> model::run_ops(allocator& a, const std::vector<config::gnn_op>& ops,
                                             std::map<std::string, tensor> values,
                                             std::span<const block> blocks,
                                             std::span<const float> degree, thread_pool* pool,
                                             const op_observer* observe,
                                             std::span<const std::string> results,
                                             typed_layout* typed) const {
  std::vector<std::string> want(results.begin(), results.end());
  if (want.empty()) want.push_back(ops.back().name);
  std::vector<bool> needed(ops.size(), results.empty());
  for (const auto& w : results) {
    const auto n = ops_needed(ops, w);
    for (std::size_t i = 0; i < ops.size(); ++i) needed[i] = needed[i] || n[i];
  }
  std::map<std::string, std::size_t> last_use;
  for (std::size_t i = 0; i < ops.size(); ++i)
    if (needed[i])
      for (const auto& name : ops[i].inputs) last_use[name] = i;
  for (const auto& w : want) last_use[w] = ops.size();  // kept to the end, never overwritten
  std::set<std::string> given;
  for (const auto& [name, _] : values) given.insert(name);
  std::size_t hop = 0;
  const auto bf16 = bf16_.snapshot();  // one arithmetic for the whole pass
  for (std::size_t i = 0; i < ops.size(); ++i) {
    if (!needed[i]) continue;
    const auto& op = ops[i];
    std::vector<tensor*> in;
    std::vector<bool> owned;
    for (const auto& name : op.inputs) {
      in.push_back(&values.at(name));
      owned.push_back(!given.count(name) && last_use.at(name) == i && op.inputs.size() == 1);
    }
    const block* b = nullptr;
    if (config::is_message_passing(op.kind)) {
      if (op.relation >= 0) {
        if (!typed) return make_error(errc::internal, "{}: op {} reads an edge type", desc_.name, i);
        SPINDLE_ASSIGN_OR_RETURN(b, typed->get(op.layer, op.relation));
      } else {
        if (hop >= blocks.size())
          return make_error(errc::internal, "{}: op {} has no sampled block", desc_.name, i);
        b = &blocks[hop++];
      }
      if (in[0]->rows() < b->num_src || in.back()->rows() < b->num_dst)
        return make_error(errc::internal, "{}: op {} reads {} rows, its block has {} sources",
                          desc_.name, i, in[0]->rows(), b->num_src);
    }
    auto y = stack_op(a, bf16.get(), op, b, degree, in, owned, pool);
    if (!y) return std::move(y).error().with_context(fmt::format("{}: op {} ({}): ", desc_.name, i,
                                                                 config::to_string(op.kind)));
    if (observe) (*observe)(i, *y);
    for (const auto& name : op.inputs)
      if (!given.count(name) && last_use.at(name) == i) values.erase(name);
    values.insert_or_assign(op.name, std::move(*y));
  }
  std::vector<tensor> out;
  for (const auto& w : want) {  // one value asked twice (a pair of one node type) is copied
    const auto it = values.find(w);
    if (it == values.end()) return make_error(errc::internal, "{}: no value '{}'", desc_.name, w);
    if (std::count(want.begin(), want.end(), w) > 1 || given.count(w)) {
      SPINDLE_ASSIGN_OR_RETURN(auto c, copy_head(a, it->second, it->second.rows()));
      out.push_back(std::move(c));
    } else {
      out.push_back(std::move(it->second));
    }
  }
  return out;
}

expected<std::vector<std::size_t>> model::value_ops(std::span<const std::string> names) const {
  if (desc_.arch != config::model_arch::stack)
    return make_error(errc::invalid_argument,
                      "named outputs are values of a stack model (export_pyg); '{}' is {}",
                      desc_.name, config::to_string(desc_.arch));
  const auto& ops = desc_.ops;
  std::vector<std::size_t> out;
  for (const auto& name : names) {
    // A typed model's "output" is a node type's output (every one `out` wide).
    const auto found = desc_.typed() && name == "output"
                           ? find_value(ops, desc_.types.outputs.front().value)
                           : find_value(ops, name);
    if (!found) {
      std::vector<std::string> known;
      for (const auto& op : ops) known.push_back(op.name);
      known.push_back("output (the model's output)");
      return make_error(errc::invalid_argument, "unknown output '{}' (the model's values: {})",
                        name.substr(0, 64), fmt::join(known, ", "));
    }
    out.push_back(*found);
  }
  return out;
}

expected<tensor> model::forward_stack(allocator& a, std::span<const block> blocks,
                                      std::span<const float> degree, const tensor& x,
                                      thread_pool* pool, const op_observer* observe) const {
  std::map<std::string, tensor> values;
  values.emplace("x", x.head(x.rows()));  // borrowed: never overwritten
  SPINDLE_ASSIGN_OR_RETURN(auto outs, run_ops(a, desc_.ops, std::move(values), blocks, degree,
                                              pool, observe));
  auto out = std::move(outs.front());
  const std::int64_t seeds = blocks.back().num_dst;
  if (out.rows() > seeds) return copy_head(a, out, seeds);
  return out;
}

expected<std::vector<tensor>> model::forward_typed_values(
    allocator& a, std::span<const block> blocks, const tensor& x,
    std::span<const std::string> results, std::span<const int> relation_of_type,
    std::span<const std::int16_t> row_types, std::span<const std::int64_t> row_ids,
    thread_pool* pool, const op_observer* observe) const {
  const auto& t = desc_.types;
  if (!desc_.typed()) return make_error(errc::invalid_argument, "{}: not a typed model", desc_.name);
  if (relation_of_type.empty())
    return make_error(errc::invalid_argument, "{}: a typed model reads a typed graph", desc_.name);
  int read = 0;  // the widest features read from x (embedding tables are read from the model)
  for (const auto& n : t.node_types)
    if (n.embedding.empty()) read = std::max(read, n.in);
  if (int(blocks.size()) != desc_.layers || x.rows() < blocks[0].num_src || x.cols() < read ||
      std::int64_t(row_types.size()) < x.rows())
    return make_error(errc::invalid_argument,
                      "{}: {} blocks, features [{} x {}] and {} row types for {} layers and {} "
                      "columns",
                      desc_.name, blocks.size(), x.rows(), x.cols(), row_types.size(),
                      desc_.layers, read);
  std::vector<std::pair<int, int>> ends;
  for (const auto& e : t.edge_types) {
    auto index = [&](const std::string& name) {
      for (std::size_t k = 0; k < t.node_types.size(); ++k)
        if (t.node_types[k].name == name) return int(k);
      return -1;
    };
    ends.emplace_back(index(e.src), index(e.dst));
  }
  typed_layout layout(blocks, relation_of_type, row_types.first(std::size_t(x.rows())),
                      std::move(ends));
  std::map<std::string, tensor> values;
  for (std::size_t k = 0; k < t.node_types.size(); ++k) {
    SPINDLE_ASSIGN_OR_RETURN(auto v, type_input_rows(a, int(k), layout.rows_of(int(k)), x, row_ids));
    values.emplace(config::type_input(t.node_types[k].name), std::move(v));
  }
  return run_ops(a, desc_.ops, std::move(values), blocks, {}, pool, observe, results, &layout);
}

expected<tensor> model::forward_typed(allocator& a, std::span<const block> blocks, const tensor& x,
                                      std::size_t output, std::span<const int> relation_of_type,
                                      std::span<const std::int16_t> row_types,
                                      std::span<const std::int64_t> row_ids, thread_pool* pool,
                                      const op_observer* observe) const {
  if (!desc_.typed() || output >= desc_.types.outputs.size())
    return make_error(errc::invalid_argument, "{}: no typed output {}", desc_.name, output);
  const std::string values[] = {desc_.types.outputs[output].value};
  SPINDLE_ASSIGN_OR_RETURN(auto outs, forward_typed_values(a, blocks, x, values, relation_of_type,
                                                           row_types, row_ids, pool, observe));
  auto out = std::move(outs.front());
  const std::int64_t seeds = blocks.back().num_dst;
  if (out.rows() < seeds)
    return make_error(errc::invalid_argument, "{}: {} seeds, {} of node type '{}' among them",
                      desc_.name, seeds, out.rows(), desc_.types.outputs[output].node_type);
  if (out.rows() > seeds) return copy_head(a, out, seeds);
  return out;
}

bool model::has_type_embeddings() const {
  for (const auto& n : desc_.types.node_types)
    if (!n.embedding.empty()) return true;
  return false;
}

// Node type k's value: the first `in` columns of its rows, or for a type read
// from an embedding table, the table's rows of its nodes (row_ids: each sampled
// row's id within its type).
expected<tensor> model::type_input_rows(allocator& a, int k, std::span<const std::int64_t> rows,
                                        const tensor& x,
                                        std::span<const std::int64_t> row_ids) const {
  const auto& n = desc_.types.node_types[std::size_t(k)];
  SPINDLE_ASSIGN_OR_RETURN(auto v, tensor::empty(a, {std::int64_t(rows.size()), n.in}));
  if (n.embedding.empty()) {
    for (std::size_t r = 0; r < rows.size(); ++r)
      std::copy(x.row(rows[r]), x.row(rows[r]) + n.in, v.row(std::int64_t(r)));
    return v;
  }
  std::vector<std::int64_t> ids(rows.size());
  for (std::size_t r = 0; r < rows.size(); ++r) {
    const auto row = std::size_t(rows[r]);
    ids[r] = row < row_ids.size() ? row_ids[row] : -1;
    if (ids[r] < 0 || ids[r] >= n.embedding_rows)
      return make_error(errc::invalid_argument,
                        "{}: node type '{}' row {}: id {} is outside its embedding table {} ({} "
                        "rows; a node added to the graph while served has no learnt row)",
                        desc_.name, n.name, row, ids[r], n.embedding, n.embedding_rows);
  }
  if (const auto reader = type_rows_.find(n.name); reader != type_rows_.end()) {
    if (auto st = reader->second(ids, {v.data(), std::size_t(v.numel())}); !st)
      return std::move(st).with_context(fmt::format("{}: node type '{}': ", desc_.name, n.name));
    return v;
  }
  const auto it = params_.find(n.embedding);
  if (it == params_.end())
    return make_error(errc::internal, "{}: embedding table {} not loaded", desc_.name, n.embedding);
  const float* table = it->second.data();
  for (std::size_t r = 0; r < rows.size(); ++r)
    std::copy(table + ids[r] * n.in, table + (ids[r] + 1) * n.in, v.row(std::int64_t(r)));
  return v;
}

expected<std::vector<std::string>> model::external_tables(const config::model_desc& d,
                                                          const safetensors_file& w,
                                                          const type_row_readers& readers) {
  std::vector<std::string> tensors;
  for (const auto& [type, _] : readers) {
    const auto& types = d.types.node_types;
    const auto n =
        std::find_if(types.begin(), types.end(), [&](const auto& t) { return t.name == type; });
    if (n == types.end() || n->embedding.empty())
      return make_error(errc::invalid_argument,
                        "{}: model '{}' has no node type '{}' read from an embedding table",
                        w.path(), d.name, type);
    const auto it = w.tensors().find(n->embedding);
    const std::vector<std::int64_t> shape{n->embedding_rows, n->in};
    if (it == w.tensors().end() || it->second.shape != shape)
      return make_error(errc::invalid_argument,
                        "{}: node type '{}': tensor {} is {}, model.toml says {} "
                        "(embedding_rows x in)",
                        w.path(), type, n->embedding,
                        it == w.tensors().end() ? "missing" : format_shape(it->second.shape),
                        format_shape(shape));
    tensors.push_back(n->embedding);
  }
  return tensors;
}

expected<tensor> model::decode(allocator& a, const tensor& z_src, const tensor& z_dst) const {
  if (desc_.decoder_ops.empty())
    return make_error(errc::invalid_argument, "{}: decoder '{}' has no ops to run", desc_.name,
                      desc_.decoder);
  std::map<std::string, tensor> values;
  values.emplace("z_src", z_src.head(z_src.rows()));  // borrowed: never overwritten
  values.emplace("z_dst", z_dst.head(z_dst.rows()));
  SPINDLE_ASSIGN_OR_RETURN(auto outs,
                           run_ops(a, desc_.decoder_ops, std::move(values), {}, {}, nullptr, nullptr));
  return std::move(outs.front());
}

}  // namespace spindle::nn
