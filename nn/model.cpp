#include "nn/model.hpp"

#include "core/path_guard.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>
#include <set>

#include "core/checksum.hpp"
#include "core/log.hpp"
#include "nn/layers/layer.hpp"

namespace spindle::nn {
namespace {

using config::model_arch;

struct layer_dims {
  std::int64_t in, out, heads;  // out is per head for GAT
};

layer_dims dims(const config::model_desc& d, int l) {
  const bool gat = d.arch == model_arch::gat;
  std::int64_t in = l == 0 ? d.in : (gat ? std::int64_t(d.heads) * d.hidden : d.hidden);
  std::int64_t out = l == d.layers - 1 ? d.out : d.hidden;
  std::int64_t heads = gat && l < d.layers - 1 ? d.heads : 1;
  return {in, out, heads};
}

std::string conv(int l, std::string_view rest) { return fmt::format("convs.{}.{}", l, rest); }
std::string use(int l, std::string_view kind, std::string_view what) {
  return fmt::format("layer {} {}: {}", l, kind, what);
}

void gnn_specs(const config::model_desc& d, std::vector<param_spec>& s) {
  for (int l = 0; l < d.layers; ++l) {
    auto [in, out, h] = dims(d, l);
    switch (d.arch) {
      case model_arch::graphsage:
        s.push_back({conv(l, "lin_l.weight"),
                     {out, in},
                     false,
                     use(l, "SAGEConv", "neighbour-mean projection")});
        s.push_back({conv(l, "lin_l.bias"), {out}, false, use(l, "SAGEConv", "bias")});
        s.push_back(
            {conv(l, "lin_r.weight"), {out, in}, false, use(l, "SAGEConv", "root projection")});
        break;
      case model_arch::gcn:
        s.push_back({conv(l, "lin.weight"), {out, in}, false, use(l, "GCNConv", "projection")});
        s.push_back({conv(l, "bias"), {out}, false, use(l, "GCNConv", "bias")});
        break;
      case model_arch::gat:
        s.push_back({conv(l, "lin_src.weight"),
                     {h * out, in},
                     false,
                     use(l, "GATConv", "shared projection")});
        s.push_back(
            {conv(l, "att_src"), {1, h, out}, false, use(l, "GATConv", "source attention")});
        s.push_back(
            {conv(l, "att_dst"), {1, h, out}, false, use(l, "GATConv", "target attention")});
        s.push_back({conv(l, "bias"), {h * out}, false, use(l, "GATConv", "bias")});
        break;
      case model_arch::gin:
        s.push_back({conv(l, "nn.0.weight"), {out, in}, false, use(l, "GINConv", "nn Linear 1")});
        s.push_back({conv(l, "nn.0.bias"), {out}, false, use(l, "GINConv", "nn Linear 1 bias")});
        s.push_back({conv(l, "nn.2.weight"), {out, out}, false, use(l, "GINConv", "nn Linear 2")});
        s.push_back({conv(l, "nn.2.bias"), {out}, false, use(l, "GINConv", "nn Linear 2 bias")});
        s.push_back({conv(l, "eps"), {1}, true, use(l, "GINConv", "trained eps (0 when absent)")});
        break;
      default:  // not a fixed GNN: no such layer
        break;
    }
  }
}

// nn.Sequential of Linear/ReLU pairs: Linear i sits at index 2i.
void mlp_specs(const std::string& prefix, std::int64_t in, const std::vector<int>& widths,
               std::vector<param_spec>& s) {
  for (std::size_t i = 0; i < widths.size(); ++i) {
    s.push_back({fmt::format("{}.{}.weight", prefix, 2 * i),
                 {widths[i], in},
                 false,
                 fmt::format("{} Linear {} weight", prefix, i)});
    s.push_back({fmt::format("{}.{}.bias", prefix, 2 * i),
                 {widths[i]},
                 false,
                 fmt::format("{} Linear {} bias", prefix, i)});
    in = widths[i];
  }
}

std::int64_t dlrm_top_in(const config::model_desc& d) {
  const std::int64_t k = std::int64_t(d.table_rows.size()) + 1;
  return d.embedding_dim + k * (k - 1) / 2;
}

}  // namespace

std::vector<param_spec> parameter_specs(const config::model_desc& d) {
  std::vector<param_spec> s;
  if (d.arch == model_arch::stack) return stack_parameter_specs(d);
  if (d.is_gnn()) {
    gnn_specs(d, s);
    return s;
  }
  auto tables = [&] {
    for (std::size_t t = 0; t < d.table_rows.size(); ++t)
      s.push_back({fmt::format("emb_l.{}.weight", t),
                   {d.table_rows[t], d.embedding_dim},
                   false,
                   fmt::format("embedding table {}", t)});
  };
  if (d.arch == model_arch::ncf) {  // NeuMF: GMF (tables 0, 1) beside an MLP (tables 2, 3)
    tables();
    mlp_specs("mlp_l", 2 * std::int64_t(d.embedding_dim), d.top, s);
    s.push_back(
        {"predict.weight", {1, d.embedding_dim + d.top.back()}, false, "NeuMF predict layer"});
    s.push_back({"predict.bias", {1}, false, "NeuMF predict bias"});
    return s;
  }
  if (d.arch == model_arch::din) {  // tables, the local activation unit, the predict MLP
    tables();
    mlp_specs("att_l", 4 * std::int64_t(d.embedding_dim), d.attention, s);
    mlp_specs("top_l", 4 * std::int64_t(d.embedding_dim), d.top, s);
    return s;
  }
  if (d.arch == model_arch::wnd) {  // wide: dense + one weight per key; deep: MLP
    s.push_back({"wide.weight", {1, d.dense_in}, false, "wide part, dense weights"});
    s.push_back({"wide.bias", {1}, false, "wide part, bias"});
    for (std::size_t t = 0; t < d.table_rows.size(); ++t)
      s.push_back({fmt::format("wide_emb.{}.weight", t),
                   {d.table_rows[t], 1},
                   false,
                   fmt::format("wide part, table {} key weights", t)});
    tables();
    mlp_specs("top_l", d.dense_in + std::int64_t(d.table_rows.size()) * d.embedding_dim, d.top, s);
    return s;
  }
  mlp_specs("bot_l", d.dense_in, d.bottom, s);
  tables();
  mlp_specs("top_l", dlrm_top_in(d), d.top, s);
  return s;
}

namespace {

// "a, b, c and 7 more" for error messages.
std::string name_list(const std::vector<std::string>& names, std::size_t show = 12) {
  std::string s;
  for (std::size_t i = 0; i < names.size() && i < show; ++i) s += (i ? ", " : "") + names[i];
  if (names.size() > show) s += fmt::format(" and {} more", names.size() - show);
  return s;
}

std::vector<std::string> names_of(const safetensors_file& w) {
  std::vector<std::string> names;
  for (const auto& [name, _] : w.tensors()) names.push_back(name);
  return names;
}

// A tensor the description needs and the file lacks: names what the file holds,
// and the likely cause when it looks like PyG's attribute naming.
status missing_tensor(const config::model_desc& d, const safetensors_file& w,
                      const std::string& name) {
  const auto held = names_of(w);
  std::string hint;
  for (const auto& h : held)
    if (h.starts_with("conv1.") || h.starts_with("conv2.") || h.starts_with("lin")) {
      hint =
          "; the file looks like a PyG module's state_dict with its own attribute names: "
          "export it with spindle_client.export.export_pyg, or name the convolutions convs.0, "
          "convs.1, ...";
      break;
    }
  return make_error(errc::invalid_argument,
                    "{}: model '{}' ({}) needs tensor '{}', which the file does not hold; it "
                    "holds {} tensors: {}{}",
                    w.path(), d.name, config::to_string(d.arch), name, held.size(), name_list(held),
                    hint);
}

bool ignored(const config::model_desc& d, const std::string& name) {
  for (const auto& prefix : d.ignore_tensors)
    if (name.starts_with(prefix)) return true;
  return false;
}

// PyG 2.3's GATConv stores its shared projection twice (lin_src and lin_dst):
// lin_dst is consumed when it equals lin_src; a different one (a bipartite
// GATConv with separate projections) is not something Spindle computes.
status check_gat_lin_dst(const safetensors_file& w, const std::string& src, const std::string& dst,
                         const std::vector<std::int64_t>& shape) {
  auto a = w.as_f32(src, shape);
  auto b = w.as_f32(dst, shape);
  if (a && b && *a == *b) return status::ok();
  return make_error(errc::invalid_argument,
                    "{}: '{}' differs from '{}': separate source and target projections "
                    "(GATConv with in_channels as a pair) are not supported",
                    w.path(), dst, src);
}

}  // namespace

expected<model> model::from(const config::model_desc& d, const safetensors_file& weights,
                            allocator& alloc, bool external_embeddings,
                            type_row_readers type_rows) {
  SPINDLE_TRY(config::validate(d));
  SPINDLE_TRY(config::validate_table_precision(d, weights.path()));
  // The parameter server's L1 holds int8 rows (hps/cache); int4 only in memory.
  if (external_embeddings && d.table_precision == "int4")
    return make_error(errc::unsupported,
                      "{}: model '{}': model.table_precision = '{}': the parameter server's "
                      "tables (--dlrm-model, spindle hps load) hold fp32 or int8 rows; serve it "
                      "with --rec-model",
                      weights.path(), d.name, d.table_precision);
  SPINDLE_ASSIGN_OR_RETURN(const auto external, external_tables(d, weights, type_rows));
  model m;
  m.desc_ = d;
  m.type_rows_ = std::move(type_rows);
  std::set<std::string> consumed, declared;
  const auto specs = parameter_specs(d);
  for (const auto& spec : specs) declared.insert(spec.name);
  for (const auto& spec : specs) {
    std::string stored = spec.name;
    // PyG >= 2.4 names GATConv's shared projection `lin`, 2.3 `lin_src`.
    if (!weights.tensors().count(stored) && stored.ends_with("lin_src.weight")) {
      std::string alt = stored.substr(0, stored.size() - 14) + "lin.weight";
      if (weights.tensors().count(alt)) stored = alt;
    }
    if (stored.ends_with("lin_src.weight")) {
      const std::string dst = stored.substr(0, stored.size() - 14) + "lin_dst.weight";
      if (weights.tensors().count(dst) && !declared.count(dst)) {  // not a bipartite op's own
        SPINDLE_TRY(check_gat_lin_dst(weights, stored, dst, spec.shape));
        consumed.insert(dst);
      }
    }
    if (spec.optional && !weights.tensors().count(stored)) continue;
    consumed.insert(stored);
    if (!spec.load) continue;
    if (external_embeddings && spec.name.starts_with("emb_l.")) continue;
    if (std::find(external.begin(), external.end(), spec.name) != external.end())
      continue;  // read through its type's reader
    if (!weights.tensors().count(stored)) return missing_tensor(d, weights, stored);
    auto values = weights.as_f32(stored, spec.shape);
    if (!values) return std::move(values).error();
    SPINDLE_ASSIGN_OR_RETURN(const bool quantized, m.keep_quantized(spec.name, spec.shape, *values));
    if (quantized) continue;
    SPINDLE_ASSIGN_OR_RETURN(auto t, tensor::empty(alloc, spec.shape));
    std::memcpy(t.data(), values->data(), values->size() * sizeof(float));
    m.params_.emplace(spec.name, std::move(t));
  }
  std::vector<std::string> extra, skipped;
  for (const auto& [name, _] : weights.tensors())
    if (!consumed.count(name)) (ignored(d, name) ? skipped : extra).push_back(name);
  if (!extra.empty())
    return make_error(errc::invalid_argument,
                      "{}: model '{}' ({}) does not use {} tensor(s) of the file: {}. Serving "
                      "without them would give wrong answers (a BatchNorm, a head or a second "
                      "projection left out); describe them in model.toml, or list them in "
                      "model.ignore_tensors if they are truly unused",
                      weights.path(), d.name, config::to_string(d.arch), extra.size(),
                      name_list(extra));
  if (!skipped.empty())
    log::warn("{}: ignoring {} tensor(s) by model.ignore_tensors: {}", weights.path(),
              skipped.size(), name_list(skipped));
  m.cache_layer_weights();
  m.pack_mlp_weights();
  if (auto st = m.set_precision(d.precision); !st)
    return std::move(st).with_context(fmt::format("{}: ", weights.path()));
  return m;
}

status model::set_fanouts(std::vector<int> fanouts) {
  SPINDLE_TRY(config::validate_fanouts(fanouts, desc_.layers, "--fanouts"));
  desc_.fanouts = std::move(fanouts);
  for (auto& e : desc_.types.edge_types) e.fanouts.clear();  // one list for every edge type
  return status::ok();
}

status model::set_sampling(const std::string& mode) {
  SPINDLE_TRY(config::validate_sampling(mode, "--sampling"));
  desc_.sampling = mode;
  return status::ok();
}

expected<model> model::load(const std::string& dir, allocator& alloc, bool external_embeddings,
                            const std::string& table_precision, type_row_readers type_rows) {
  SPINDLE_ASSIGN_OR_RETURN(auto d, config::load_model_desc(dir));
  if (!table_precision.empty()) d.table_precision = table_precision;
  SPINDLE_TRY(require_file_inside(dir, dir + "/" + d.weights));
  if (!d.weights_crc32.empty()) {  // a damaged or replaced file is refused, not served
    const std::string path = dir + "/" + d.weights;
    SPINDLE_ASSIGN_OR_RETURN(auto crc, file_crc32_hex(path));
    if (crc != d.weights_crc32)
      return make_error(errc::corrupt_data,
                        "{}: its CRC-32 does not match model.toml's weights_crc32 {}: the file "
                        "was changed or damaged since it was written",
                        path, d.weights_crc32);
  }
  SPINDLE_ASSIGN_OR_RETURN(auto w, safetensors_file::open(dir + "/" + d.weights));
  return from(d, w, alloc, external_embeddings, std::move(type_rows));
}

std::int64_t model::parameter_count() const {
  std::int64_t n = 0;
  for (const auto& [_, t] : params_) n += t.numel();
  for (const auto& [_, q] : quantized_) n += q.rows() * q.dim();
  return n;
}

std::size_t model::weight_bytes() const {
  std::size_t n = 0;
  for (const auto& [_, t] : params_) n += round_up(std::size_t(t.numel()) * sizeof(float));
  for (const auto& [_, q] : quantized_) n += q.bytes();
  return n;
}

std::size_t model::packed_weights() const {
  std::size_t n = packed_.size();
  if (const auto reduced = bf16_.snapshot())
    for (const auto& [_, w] : *reduced) n += w.packed ? 1 : 0;
  return n;
}

std::size_t model::packed_bytes() const {
  std::size_t n = 0;
  for (const auto& [_, w] : packed_) n += w->bytes();
  if (const auto reduced = bf16_.snapshot())
    for (const auto& [_, w] : *reduced) n += w.packed ? w.packed->bytes() : 0;
  return n;
}

bool model::needs_degrees() const {
  if (desc_.arch == model_arch::gcn) return true;
  for (const auto& op : desc_.ops)
    if (config::is_gcn_normalised(op.kind) && op.normalize) return true;
  return false;
}

bool model::needs_edge_attr() const { return config::reads_edge_attr(desc_.ops); }

bool model::graph_degrees() const {
  for (const auto& op : desc_.ops)
    if (config::is_gcn_normalised(op.kind) && op.normalize && op.norm == config::gcn_norm::graph)
      return true;
  return false;
}

std::span<const float> model::p(const std::string& name) const {
  auto it = params_.find(name);
  if (it == params_.end()) return {};
  return {it->second.data(), std::size_t(it->second.numel())};
}

void model::cache_layer_weights() {
  layers_.assign(std::size_t(desc_.is_gnn() ? desc_.layers : 0), {});
  for (int l = 0; l < int(layers_.size()); ++l) {
    auto& w = layers_[std::size_t(l)];
    for (auto [field, name] : {std::pair{&w.lin_l, "lin_l.weight"},
                               {&w.lin_l_bias, "lin_l.bias"},
                               {&w.lin_r, "lin_r.weight"},
                               {&w.lin, "lin.weight"},
                               {&w.bias, "bias"},
                               {&w.lin_src, "lin_src.weight"},
                               {&w.att_src, "att_src"},
                               {&w.att_dst, "att_dst"},
                               {&w.nn0, "nn.0.weight"},
                               {&w.nn0_bias, "nn.0.bias"},
                               {&w.nn2, "nn.2.weight"},
                               {&w.nn2_bias, "nn.2.bias"},
                               {&w.eps, "eps"}})
      *field = p(conv(l, name));
  }
}


expected<tensor> model::gnn_layer(allocator& a, int l, const block& b,
                                  std::span<const float> degree, const tensor& x,
                                  thread_pool* pool) const {
  auto [in, out, heads] = dims(desc_, l);
  const auto& w = layers_[std::size_t(l)];
  switch (desc_.arch) {
    case model_arch::graphsage: {  // PyG SAGEConv: lin_l(mean_j x_j) + lin_r(x_i)
      SPINDLE_ASSIGN_OR_RETURN(auto agg, propagate(a, b, x, reduce_op::mean, pool));
      SPINDLE_ASSIGN_OR_RETURN(auto y, linear(a, agg, w.lin_l, w.lin_l_bias, out, pool));
      SPINDLE_TRY(linear_accumulate(y, x.head(b.num_dst), w.lin_r, pool));
      return y;
    }
    case model_arch::gcn: {  // PyG GCNConv: propagate(norm, x W) + b
      SPINDLE_ASSIGN_OR_RETURN(auto h, linear(a, x, w.lin, {}, out, pool));
      SPINDLE_ASSIGN_OR_RETURN(auto y, propagate_gcn(a, b, h, degree, pool));
      add_bias_rows(y, w.bias);
      return y;
    }
    case model_arch::gat: {
      SPINDLE_ASSIGN_OR_RETURN(auto h, linear(a, x, w.lin_src, {}, heads * out, pool));
      SPINDLE_ASSIGN_OR_RETURN(auto y, propagate_gat(a, b, h, int(heads), w.att_src, w.att_dst));
      add_bias_rows(y, w.bias);
      return y;
    }
    case model_arch::gin: {  // PyG GINConv: nn((1 + eps) x_i + sum_j x_j)
      SPINDLE_ASSIGN_OR_RETURN(auto z, propagate(a, b, x, reduce_op::sum, pool));
      const float scale = 1.0f + (w.eps.empty() ? 0.0f : w.eps[0]);
      for (std::int64_t r = 0; r < b.num_dst; ++r)
        for (std::int64_t c = 0; c < in; ++c) z.row(r)[c] += scale * x.row(r)[c];
      SPINDLE_ASSIGN_OR_RETURN(auto y, linear(a, z, w.nn0, w.nn0_bias, out, pool));
      z = tensor();
      relu_(y);
      return linear(a, y, w.nn2, w.nn2_bias, out, pool);
    }
    default:  // not a fixed GNN: no such layer
      break;
  }
  return make_error(errc::internal, "gnn_layer on a {} model", config::to_string(desc_.arch));
}

expected<tensor> model::forward(allocator& a, std::span<const block> blocks,
                                std::span<const float> degree, const tensor& x,
                                thread_pool* pool, const op_observer* observe) const {
  if (!desc_.is_gnn()) return make_error(errc::invalid_argument, "{}: not a GNN model", desc_.name);
  if (desc_.typed())
    return make_error(errc::invalid_argument,
                      "{}: a typed model answers one node type's seeds (forward_typed)", desc_.name);
  if (int(blocks.size()) != desc_.layers)
    return make_error(errc::invalid_argument, "{}: {} layers but {} sampled blocks (one per hop)",
                      desc_.name, desc_.layers, blocks.size());
  if (x.cols() != desc_.in || x.rows() < blocks[0].num_src)
    return make_error(errc::invalid_argument, "{}: features are [{} x {}], expected [{} x {}]",
                      desc_.name, x.rows(), x.cols(), blocks[0].num_src, desc_.in);
  if (needs_degrees() && std::int64_t(degree.size()) < blocks[0].num_src)
    return make_error(errc::invalid_argument, "{}: GCN needs a degree per node", desc_.name);
  if (desc_.arch == model_arch::stack) return forward_stack(a, blocks, degree, x, pool, observe);
  tensor h;
  for (int l = 0; l < desc_.layers; ++l) {
    SPINDLE_ASSIGN_OR_RETURN(auto y, gnn_layer(a, l, blocks[l], degree, l == 0 ? x : h, pool));
    if (l < desc_.layers - 1) relu_(y);
    h = std::move(y);
  }
  if (desc_.log_softmax) log_softmax_rows_(h);
  return h;
}

std::vector<float> gcn_degrees(std::span<const std::int64_t> indptr,
                               std::span<const std::int32_t> indices, std::int64_t num_nodes) {
  std::vector<float> d(std::size_t(num_nodes), 1.0f);
  const std::int64_t rows = std::int64_t(indptr.size()) - 1;
  for (std::int64_t v = 0; v < rows && v < num_nodes; ++v)
    for (std::int64_t e = indptr[v]; e < indptr[v + 1]; ++e) d[v] += indices[e] != v;
  return d;
}

status init_model(const config::model_desc& d, std::uint64_t seed, const std::string& dir) {
  SPINDLE_TRY(config::validate(d));
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) return make_error(errc::io_error, "{}: cannot create: {}", dir, ec.message());
  std::mt19937_64 rng(seed);
  std::vector<safetensor_f32> tensors;
  for (const auto& spec : parameter_specs(d)) {
    safetensor_f32 t{spec.name, spec.shape, {}};
    std::int64_t n = 1;
    for (auto s : spec.shape) n *= s;
    // PyTorch's default: U(-1/sqrt(fan_in), 1/sqrt(fan_in)); embeddings N(0, 1) scaled down.
    const std::int64_t fan_in = spec.shape.empty() ? 1  // a scalar (num_batches_tracked)
                                : spec.shape.size() >= 2
                                    ? spec.shape.back()
                                    : std::max<std::int64_t>(1, spec.shape.back());
    const float bound = spec.name.ends_with(".eps") ? 0.0f : 1.0f / std::sqrt(float(fan_in));
    std::uniform_real_distribution<float> u(-bound, bound);
    t.values.resize(std::size_t(n));
    for (auto& v : t.values) v = bound == 0 ? 0.0f : u(rng);
    if (spec.name.ends_with("running_var"))  // a variance: positive
      for (auto& v : t.values) v = 1.0f + std::abs(v);
    tensors.push_back(std::move(t));
    if (d.arch == model_arch::gat && spec.name.ends_with("lin_src.weight")) {
      safetensor_f32 dst = tensors.back();  // PyG 2.3 stores the shared projection twice
      dst.name.replace(dst.name.size() - 14, 14, "lin_dst.weight");
      tensors.push_back(std::move(dst));
    }
  }
  SPINDLE_TRY(write_safetensors(dir + "/" + d.weights, tensors,
                                {{"format", "pt"}, {"producer", "spindle model init"}}));
  auto written = d;
  SPINDLE_ASSIGN_OR_RETURN(written.weights_crc32, file_crc32_hex(dir + "/" + d.weights));
  std::ofstream out(dir + "/model.toml");
  out << config::to_toml(written);
  if (!out) return make_error(errc::io_error, "{}/model.toml: write failed", dir);
  return status::ok();
}

}  // namespace spindle::nn
