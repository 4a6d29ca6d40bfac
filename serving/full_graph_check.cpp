#include "serving/full_graph_check.hpp"

#include <cstring>
#include <numeric>

#include "serving/gnn_pipeline.hpp"

namespace spindle::serving {

expected<std::vector<op_value>> full_graph_ops(const graph::dataset& ds, nn::model& model,
                                               std::int64_t max_nodes) {
  const auto& d = model.desc();
  if (d.arch != config::model_arch::stack)
    return make_error(errc::invalid_argument,
                      "{}: only stack models (model.toml [[op]] lists) are checked op by op",
                      d.name);
  const std::int64_t n = ds.num_nodes();
  if (n <= 0 || n > max_nodes)
    return make_error(errc::invalid_argument,
                      "the check graph has {} nodes; 1..{} are checked (every node is one seed "
                      "of one batch): check on a subgraph, e.g. PyG's k_hop_subgraph around a "
                      "few thousand nodes",
                      n, max_nodes);
  SPINDLE_TRY(model.set_fanouts(std::vector<int>(std::size_t(d.layers), -1)));
  psgs_router router{psgs_calibration{}, routing_policy::fixed};
  thread_pool pool(1, "verify");
  gnn_pipeline p(ds, model, router, pool);
  gnn_request all;
  all.seeds.resize(std::size_t(n));
  std::iota(all.seeds.begin(), all.seeds.end(), std::int64_t{0});
  all.sampler_seed = 1;  // sampled on its own (every neighbour: the seed changes nothing)
  std::vector<gnn_request> batch{all};
  auto pb = p.prepare(batch);
  if (!pb->result.errors.empty() && !pb->result.errors[0].is_ok()) return pb->result.errors[0];
  if (pb->used != 1 || !pb->groups[0].ready)
    return make_error(errc::internal, "the check batch was not prepared as one graph");
  const auto& g = pb->groups[0];
  std::vector<op_value> out(d.ops.size());
  // Row r of every value is sampled node r (all nodes are seeds: every block is n x n).
  nn::op_observer see = [&](std::size_t i, const nn::tensor& t) {
    auto& v = out[i];
    v.rows = std::min<std::int64_t>(t.rows(), n);
    v.cols = t.cols();
    v.values.assign(std::size_t(n * v.cols), 0.0f);
    for (std::int64_t r = 0; r < v.rows; ++r)
      std::memcpy(v.values.data() + g.sub.nodes[std::size_t(r)] * v.cols, t.row(r),
                  std::size_t(v.cols) * sizeof(float));
  };
  nn::heap_allocator alloc;
  const std::int64_t f = ds.feature_dim();
  auto x = nn::tensor::borrow(const_cast<float*>(g.features.data()),
                              {std::int64_t(g.sub.nodes.size()), f});
  auto y = model.forward(alloc, g.blocks, g.degree, x, nullptr, &see);
  if (!y) return std::move(y).error();
  return out;
}

expected<std::vector<op_value>> full_graph_outputs(const graph::dataset& ds, nn::model& model,
                                                   std::int64_t max_nodes) {
  const auto& d = model.desc();
  if (!d.typed())
    return make_error(errc::invalid_argument, "{}: not a typed model", d.name);
  if (ds.num_nodes() <= 0 || ds.num_nodes() > max_nodes)
    return make_error(errc::invalid_argument,
                      "the check graph has {} nodes; 1..{} are checked (each type's nodes are one "
                      "batch)", ds.num_nodes(), max_nodes);
  SPINDLE_TRY(model.set_fanouts(std::vector<int>(std::size_t(d.layers), -1)));
  psgs_router router{psgs_calibration{}, routing_policy::fixed};
  thread_pool pool(1, "verify");
  gnn_pipeline p(ds, model, router, pool);
  std::vector<op_value> out;
  for (const auto& o : d.types.outputs) {
    SPINDLE_ASSIGN_OR_RETURN(int t, ds.find_node_type(o.node_type));
    const auto& info = ds.node_types()[std::size_t(t)];
    if (info.count == 0) {  // a type with no nodes yet: its answer has no rows
      out.push_back({0, d.out, {}});
      continue;
    }
    gnn_request all;
    all.node_type = o.node_type;
    all.seeds.resize(std::size_t(info.count));
    std::iota(all.seeds.begin(), all.seeds.end(), info.offset);
    all.sampler_seed = 1;
    auto res = p.run({all});
    if (!res.errors[0]) return res.errors[0];
    out.push_back({info.count, d.out, std::move(res.outputs[0])});
  }
  return out;
}

}  // namespace spindle::serving
