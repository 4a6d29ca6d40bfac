// `spindle model verify DIR --x X.npy --edge-index EI.npy --out OUT`: the
// model's answers on a user's small graph through the serving path (every node,
// every neighbour), written op by op as OUT/op-<i>.npy [nodes x width] in node
// order. `--graph G` reads a save_graph folder instead; a typed model's answers
// go to OUT/output-<type>.npy. For a recommendation model, `--rec-inputs IN` (IN/dense.npy [B x
// dense_in] float32, IN/indices-<t>.npy and IN/offsets-<t>.npy int64 per table,
// B + 1 offsets) gives OUT/output.npy [B x 1]. spindle_client's exporters run it
// and compare with the user's live module before they write a model; people run
// it to see where an answer parts from theirs.
#include <array>
#include <stdlib.h>

#include <cerrno>
#include <cstring>
#include <filesystem>

#include "apps/commands/command.hpp"
#include "core/npy.hpp"
#include "graph/dataset.hpp"
#include "graph/prepare.hpp"
#include "nn/link_decoder.hpp"
#include "nn/model.hpp"
#include "serving/full_graph_check.hpp"

namespace spindle::apps {
namespace {

struct verify_args {
  std::string dir, x, edge_index, rec_inputs, out, pairs, graph;
  bool drop_self_loops = false, drop_duplicates = false;
};

template <class T>
expected<std::vector<T>> read_npy(const std::string& path, std::vector<std::int64_t>* shape = nullptr) {
  SPINDLE_ASSIGN_OR_RETURN(auto arr, npy_array::open(path));
  SPINDLE_ASSIGN_OR_RETURN(auto v, arr.as<T>());
  if (shape) *shape = arr.shape();
  return std::vector<T>(v.begin(), v.end());
}

status run_verify_rec(const verify_args& a) {
  nn::heap_allocator alloc;
  SPINDLE_ASSIGN_OR_RETURN(auto m, nn::model::load(a.dir, alloc));
  const auto& d = m.desc();
  if (!d.is_rec())
    return make_error(errc::invalid_argument, "{}: --rec-inputs is for recommendation models",
                      a.dir);
  std::vector<std::int64_t> shape;
  SPINDLE_ASSIGN_OR_RETURN(auto dense_v, read_npy<float>(a.rec_inputs + "/dense.npy", &shape));
  if (shape.size() != 2)
    return make_error(errc::invalid_argument, "{}/dense.npy: expected [batch, dense_in]",
                      a.rec_inputs);
  auto dense = nn::tensor::borrow(dense_v.data(), {shape[0], shape[1]});
  std::vector<nn::sparse_input> sparse(d.table_rows.size());
  for (std::size_t t = 0; t < sparse.size(); ++t) {
    const std::string base = fmt::format("{}/{{}}-{}.npy", a.rec_inputs, t);
    SPINDLE_ASSIGN_OR_RETURN(sparse[t].indices,
                             read_npy<std::int64_t>(fmt::format(fmt::runtime(base), "indices")));
    SPINDLE_ASSIGN_OR_RETURN(sparse[t].offsets,
                             read_npy<std::int64_t>(fmt::format(fmt::runtime(base), "offsets")));
  }
  SPINDLE_ASSIGN_OR_RETURN(auto y, m.forward_rec(alloc, dense, sparse));
  if (auto w = write_npy(a.out + "/output.npy", dtype::f32, {y.rows(), y.cols()}, y.data()); !w)
    return std::move(w).error();
  fmt::print("model '{}': {} answers written to {}/output.npy\n", d.name, y.rows(), a.out);
  return status::ok();
}

// A link model's scores of --pairs [k, 2]: a pair's first end a row of `zu`,
// its second one of `zv` (the last op's rows, every node, or a typed link model's
// pair types' outputs): OUT/scores.npy [k], by the model's decoder as it serves them.
// `ends` names the two ends' node types in errors (untyped: "node").
status write_scores(const verify_args& a, const nn::model& m, const serving::op_value& zu,
                    const serving::op_value& zv,
                    std::array<std::string_view, 2> ends = {"", ""}) {
  std::vector<std::int64_t> shape;
  SPINDLE_ASSIGN_OR_RETURN(auto ids, read_npy<std::int64_t>(a.pairs, &shape));
  if (shape.size() != 2 || shape[1] != 2)
    return make_error(errc::invalid_argument, "--pairs {}: expected int64 [k, 2]", a.pairs);
  std::vector<std::int32_t> rows;
  for (std::size_t i = 0; i < ids.size(); ++i) {
    const auto n = i % 2 ? zv.rows : zu.rows;
    if (ids[i] < 0 || ids[i] >= n)
      return make_error(errc::invalid_argument,
                        "--pairs {}: pairs[{}][{}] = {} out of range ({} {}{}nodes)", a.pairs,
                        i / 2, i % 2, ids[i], n, ends[i % 2], ends[i % 2].empty() ? "" : " ");
    rows.push_back(std::int32_t(ids[i]));
  }
  auto u = zu.values, v = zv.values;
  auto ut = nn::tensor::borrow(u.data(), {zu.rows, zu.cols});
  auto vt = nn::tensor::borrow(v.data(), {zv.rows, zv.cols});
  std::vector<float> scores(rows.size() / 2);
  nn::heap_allocator scratch;
  SPINDLE_TRY(nn::score_pairs(m, scratch, ut, vt, rows, scores.data()));
  return write_npy(a.out + "/scores.npy", dtype::f32, {std::int64_t(scores.size())},
                   scores.data())
      .error_or_ok();
}

// A typed model's answer for every node of each node type it answers:
// OUT/output-<type>.npy [the type's nodes x out], in the order of its nodes.
status write_typed(const verify_args& a, const graph::dataset& ds, nn::model& m) {
  SPINDLE_ASSIGN_OR_RETURN(auto outs, serving::full_graph_outputs(ds, m));
  for (std::size_t i = 0; i < outs.size(); ++i) {
    const std::string path =
        fmt::format("{}/output-{}.npy", a.out, m.desc().types.outputs[i].node_type);
    if (auto w = write_npy(path, dtype::f32, {outs[i].rows, outs[i].cols}, outs[i].values.data());
        !w)
      return std::move(w).error();
  }
  if (!a.pairs.empty()) {
    const auto& pair = m.desc().types.pair_types;
    if (pair.size() != 2)
      return make_error(errc::invalid_argument, "--pairs: model '{}' does not score links",
                        m.desc().name);
    SPINDLE_ASSIGN_OR_RETURN(auto u, config::find_output(m.desc().types, pair[0]));
    SPINDLE_ASSIGN_OR_RETURN(auto v, config::find_output(m.desc().types, pair[1]));
    SPINDLE_TRY(write_scores(a, m, outs[u], outs[v], {pair[0], pair[1]}));
  }
  fmt::print("model '{}': {} node types' answers over {} nodes and {} edges written to "
             "{}/output-<type>.npy\n",
             m.desc().name, outs.size(), ds.num_nodes(), ds.graph().num_edges(), a.out);
  return status::ok();
}

status run_verify(const verify_args& a, global_options& g) {
  namespace fs = std::filesystem;
  std::error_code ec;
  fs::create_directories(a.out, ec);
  if (ec) return make_error(errc::io_error, "--out {}: {}", a.out, ec.message());
  if (!a.rec_inputs.empty()) return run_verify_rec(a);
  if ((a.x.empty() || a.edge_index.empty()) == a.graph.empty())
    return make_error(errc::invalid_argument,
                      "give --x and --edge-index or --graph (a GNN), or --rec-inputs (a "
                      "recommendation model)");
  graph::prepare_options o;
  o.input = a.graph.empty() ? a.edge_index : a.graph;
  if (a.graph.empty()) {
    o.format = graph::edge_format::npy;
    o.features = a.x;
  }
  o.keep_self_loops = !a.drop_self_loops;
  o.keep_duplicates = !a.drop_duplicates;
  o.metrics.fanouts = {-1};
  // The prepared graph goes to a folder of its own, removed after: nothing of
  // the user's in --out is replaced.
  std::string scratch = a.out + "/.verify-XXXXXX";
  if (!::mkdtemp(scratch.data()))
    return make_error(errc::io_error, "--out {}: cannot make a scratch folder: {}", a.out,
                      std::strerror(errno));
  struct remove_after {
    std::string dir;
    ~remove_after() {
      std::error_code ignored;
      std::filesystem::remove_all(dir, ignored);
    }
  } cleanup{scratch};
  const std::string ds_dir = scratch + "/dataset";
  SPINDLE_TRY(graph::prepare_dataset(o, ds_dir, g.pool()));
  SPINDLE_ASSIGN_OR_RETURN(auto ds, graph::dataset::open(ds_dir));
  nn::heap_allocator alloc;
  SPINDLE_ASSIGN_OR_RETURN(auto m, nn::model::load(a.dir, alloc));
  if (m.desc().typed() || ds.typed()) return write_typed(a, ds, m);
  SPINDLE_ASSIGN_OR_RETURN(auto ops, serving::full_graph_ops(ds, m));
  for (std::size_t i = 0; i < ops.size(); ++i) {
    const std::string path = fmt::format("{}/op-{}.npy", a.out, i);
    if (auto w = write_npy(path, dtype::f32, {ops[i].rows, ops[i].cols}, ops[i].values.data()); !w)
      return std::move(w).error();
  }
  if (!a.pairs.empty()) {
    if (!m.desc().scores_links())
      return make_error(errc::invalid_argument, "--pairs: model '{}' does not score links",
                        m.desc().name);
    SPINDLE_TRY(write_scores(a, m, ops.back(), ops.back()));
  }
  fmt::print("model '{}': {} ops over {} nodes and {} edges written to {}/op-<i>.npy\n",
             m.desc().name, ops.size(), ds.num_nodes(), ds.graph().num_edges(), a.out);
  return status::ok();
}

}  // namespace

void register_model_verify(CLI::App& model_cmd, global_options& g) {
  auto [cmd, a] = add_command<verify_args>(
      model_cmd, "verify",
      "Run a stack model over every node of a small graph (every neighbour) and write each "
      "op's output (OUT/op-<i>.npy), to compare with the module it was exported from");
  cmd->add_option("dir", a->dir, "Model directory")->required();
  cmd->add_option("--x", a->x, "Node features, .npy float32 [N, F]");
  cmd->add_option("--edge-index", a->edge_index, "edge_index .npy int64 [2, E] (PyG's)");
  cmd->add_option("--graph", a->graph,
                  "Instead of --x/--edge-index: a folder spindle_client.export.save_graph wrote "
                  "(typed graphs: OUT/output-<type>.npy per node type the model answers)");
  cmd->add_option("--rec-inputs", a->rec_inputs,
                  "Recommendation models: a folder with dense.npy [B, dense_in] float32 and "
                  "indices-<t>.npy, offsets-<t>.npy (B + 1 offsets) int64 per table");
  cmd->add_option("--pairs", a->pairs,
                  "Link models: node pairs .npy int64 [k, 2] (typed: each end numbered within "
                  "its pair type); their scores go to OUT/scores.npy");
  cmd->add_option("--out", a->out, "Folder for op-<i>.npy (and the prepared dataset)")
      ->required();
  cmd->add_flag("--drop-self-loops", a->drop_self_loops,
                "Check the graph without its u->u edges (as `prepare --drop-self-loops`)");
  cmd->add_flag("--drop-duplicates", a->drop_duplicates,
                "Check the graph with one of each repeated edge (`prepare --drop-duplicates`)");
  on_run(cmd, [a, &g] { return run_verify(*a, g); });
}

}  // namespace spindle::apps
