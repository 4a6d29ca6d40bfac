// `spindle model init|info`: write a model directory with random weights (for
// demos and benchmarks; no trained weights ship), and list a model's tensors.
#include "nn/model.hpp"

#include <fmt/ranges.h>

#include <map>

#include "apps/commands/command.hpp"
#include "config/model_digest.hpp"
#include "config/sampling.hpp"

namespace spindle::apps {
namespace {

struct init_args {
  std::string arch, out_dir, name,
      tables;  // default per architecture (below)
  int in = 0, hidden = 0, classes = 0, layers = 2, heads = 4;
  int deprecated_out = 0;  // --out, the old spelling of --classes
  std::string fanouts;     // written to model.toml
  std::uint64_t seed = 1;
  std::string variant = "A";  // DLRM: Hera Table I's (A)..(D)
};

// Hera Table I's DLRM variants: dense-FC (bottom), predict-FC (top), tables,
// embedding width, SLA. Rows per table are scaled down (--tables overrides);
// lookups per table are a property of the queries (profile --lookups: A 80,
// B 120, C 20, D 80).
struct dlrm_variant {
  std::vector<int> bottom, top;
  int tables, dim, dense_in, sla_ms;
};
const std::map<std::string, dlrm_variant>& dlrm_variants() {
  static const std::map<std::string, dlrm_variant> v = {
      {"A", {{64, 64}, {256, 64, 1}, 8, 64, 128, 100}},
      {"B", {{128, 64}, {128, 64, 1}, 40, 64, 256, 400}},
      {"C", {{1024, 256, 32}, {512, 256, 1}, 10, 32, 2560, 100}},
      {"D", {{256, 256}, {256, 64, 1}, 8, 256, 256, 100}}};
  return v;
}

expected<std::vector<std::int64_t>> parse_rows(const std::string& text) {
  std::vector<std::int64_t> rows;
  std::size_t pos = 0;
  while (pos <= text.size()) {
    std::size_t comma = text.find(',', pos);
    std::string item =
        text.substr(pos, comma == std::string::npos ? std::string::npos : comma - pos);
    try {
      rows.push_back(std::stoll(item));
    } catch (...) {
      return make_error(errc::invalid_argument, "--tables: '{}' is not a row count", item);
    }
    if (comma == std::string::npos) break;
    pos = comma + 1;
  }
  return rows;
}

// --tables when given, else `tables` tables of `rows` rows (the scaled Table I size).
expected<std::vector<std::int64_t>> table_rows_or(const std::string& given, int tables,
                                                  std::int64_t rows) {
  if (!given.empty()) return parse_rows(given);
  return std::vector<std::int64_t>(std::size_t(tables), rows);
}

// A flag the architecture would ignore is refused naming it: a model written
// without what its flags said is a model the user did not ask for.
status check_init_flags(const init_args& a, config::model_arch arch) {
  const bool gnn = config::model_desc{.arch = arch}.is_gnn();
  auto refuse = [&](std::string_view flag, std::string_view why) {
    return make_error(errc::invalid_argument, "{}: --arch {} {}", flag, a.arch, why);
  };
  if (gnn) {
    if (a.heads != 4 && arch != config::model_arch::gat)
      return refuse("--heads", "has no attention heads (--arch gat has)");
    if (!a.tables.empty()) return refuse("--tables", "has no embedding tables");
    if (a.variant != "A") return refuse("--variant", "is a GNN (--variant picks a DLRM)");
    return status::ok();
  }
  if (a.classes != 0 || a.deprecated_out != 0)
    return refuse("--classes", "answers one score a sample");
  if (!a.fanouts.empty()) return refuse("--fanouts", "samples no graph");
  if (a.layers != 2) return refuse("--layers", "takes its layers from Hera's Table I");
  if (a.heads != 4) return refuse("--heads", "has no attention heads");
  if (a.in != 0 && (arch == config::model_arch::ncf || arch == config::model_arch::din))
    return refuse("--in", "has no dense input");
  if (a.variant != "A" && arch != config::model_arch::dlrm)
    return refuse("--variant", "has one shape (--variant picks a DLRM)");
  return status::ok();
}

status run_init(const init_args& a) {
  SPINDLE_ASSIGN_OR_RETURN(auto arch, config::parse_model_arch(a.arch));
  SPINDLE_TRY(check_init_flags(a, arch));
  config::model_desc d;
  d.arch = arch;
  d.name = a.name.empty() ? a.arch : a.name;
  if (d.is_gnn()) {
    int classes = a.classes;
    if (a.deprecated_out > 0) {
      fmt::print(stderr, "spindle: warning: --out is deprecated for `model init`; use --classes\n");
      if (classes == 0) classes = a.deprecated_out;
    }
    if (classes <= 0)
      return make_error(errc::invalid_argument,
                        "--classes N (the output width) is required for a GNN");
    d.in = a.in, d.hidden = a.hidden, d.out = classes, d.layers = a.layers, d.heads = a.heads;
    if (!a.fanouts.empty()) {
      SPINDLE_ASSIGN_OR_RETURN(d.fanouts, config::parse_fanouts(a.fanouts));
      SPINDLE_TRY(config::validate_fanouts(d.fanouts, d.layers, "--fanouts"));
    }
  } else if (arch == config::model_arch::ncf) {
    // Hera Table I, NCF: predict-FC 256-256-128, 4 tables of 64 wide, 1 lookup, SLA 5 ms.
    d.embedding_dim = a.hidden ? a.hidden : 64;
    d.top = {256, 256, 128};
    d.slo_ms = 5;
    SPINDLE_ASSIGN_OR_RETURN(d.table_rows, table_rows_or(a.tables, 4, 100000));
  } else if (arch == config::model_arch::din) {
    // Hera Table I, DIN: predict-FC 200-80-2, 4 tables of 32 (user, candidate,
    // behaviours, context; about 3 lookups), attention + FC, SLA 100 ms. The local
    // activation unit is DIN's 80-40-1. Rows scaled to 100,000 per table.
    d.embedding_dim = a.hidden ? a.hidden : 32;
    d.attention = {80, 40, 1};
    d.top = {200, 80, 2};
    d.slo_ms = 100;
    SPINDLE_ASSIGN_OR_RETURN(d.table_rows, table_rows_or(a.tables, 4, 100000));
  } else if (arch == config::model_arch::wnd) {
    // Hera Table I, Wide&Deep: predict-FC 1024-512-256, 27 tables of 32 wide, SLA 25 ms
    // (rows scaled to 10,000 per table by default: --tables to change).
    d.dense_in = a.in ? a.in : 13;
    d.embedding_dim = a.hidden ? a.hidden : 32;
    d.top = {1024, 512, 256, 1};
    d.slo_ms = 25;
    SPINDLE_ASSIGN_OR_RETURN(d.table_rows, table_rows_or(a.tables, 27, 10000));
  } else {
    // Hera Table I's DLRM(A)..(D) (--variant); DLRM(A): dense-FC 128-64-64,
    // predict-FC 256-64-1, 8 tables 64 wide. --in/--hidden override the dense
    // input and the embedding width (the bottom MLP's last width follows it).
    auto it = dlrm_variants().find(a.variant);
    if (it == dlrm_variants().end())
      return make_error(errc::invalid_argument, "--variant '{}': expected A, B, C or D", a.variant);
    const auto& v = it->second;
    d.dense_in = a.in ? a.in : v.dense_in;
    d.embedding_dim = a.hidden ? a.hidden : v.dim;
    d.bottom = v.bottom;
    d.bottom.back() = d.embedding_dim;
    d.top = v.top;
    d.slo_ms = v.sla_ms;
    SPINDLE_ASSIGN_OR_RETURN(d.table_rows, table_rows_or(a.tables, v.tables, 100000));
  }
  SPINDLE_TRY(nn::init_model(d, a.seed, a.out_dir));
  fmt::print("wrote {}/model.toml and {}/{}\n", a.out_dir, a.out_dir, d.weights);
  return status::ok();
}

status run_info(const std::string& dir) {
  nn::heap_allocator alloc;
  SPINDLE_ASSIGN_OR_RETURN(auto m, nn::model::load(dir, alloc));
  const auto& d = m.desc();
  fmt::print("model '{}': {} ({})\n", d.name, config::to_string(d.arch), dir);
  if (d.scores_links())
    fmt::print("task: link (a call's seeds get their {}-wide embeddings; its pairs, one {} score "
               "each)\n",
               d.out, d.decoder);
  if (d.precision != "fp32")
    fmt::print("precision: {} (the {}' {})\n", d.precision,
               d.is_gnn() ? "layers' projections" : "MLPs",
               d.precision == "int8"
                   ? "weights as int8 codes with a scale per output, inputs quantised per row, sums in int32"
                   : "inputs and weights in bfloat16, sums in float32");
  if (d.is_rec())
    fmt::print("table_precision: {} ({} bytes of embedding tables{})\n", d.table_precision,
               m.table_bytes(),
               d.table_precision == "fp32" ? "" : ", row-wise: codes, then a scale and bias per row");
  if (!d.types.pair_types.empty())
    fmt::print("pairs: ({}, {}), each end numbered within its node type\n", d.types.pair_types[0],
               d.types.pair_types[1]);
  for (const auto& spec : nn::parameter_specs(d)) {
    if (!m.has_param(spec.name)) continue;  // an absent optional tensor
    fmt::print("  {:<40} {:<14} {}\n", spec.name, format_shape(m.param(spec.name).shape()),
               spec.purpose);
  }
  if (d.typed()) {  // what a typed graph must hold, and what a call's node_type may name
    std::vector<std::string> nodes, edges, outs;
    for (const auto& n : d.types.node_types) nodes.push_back(fmt::format("{} [{}]", n.name, n.in));
    for (const auto& e : d.types.edge_types)
      edges.push_back(fmt::format("({}, {}, {}){}", e.src, e.rel, e.dst,
                                  e.fanouts.empty() ? "" : fmt::format(" fanouts [{}]",
                                                                       fmt::join(e.fanouts, ", "))));
    for (const auto& o : d.types.outputs) outs.push_back(fmt::format("{} <- {}", o.node_type, o.value));
    fmt::print("node types: {}\nedge types: {}\nanswers (node_type <- value): {}\n",
               fmt::join(nodes, ", "), fmt::join(edges, ", "), fmt::join(outs, ", "));
  }
  if (d.arch == config::model_arch::stack && !d.typed()) {  // what named outputs may ask for
    std::vector<std::string> values;
    for (const auto& op : d.ops) values.push_back(fmt::format("{} [{}]", op.name, op.width));
    fmt::print("values (named outputs): {}\n", fmt::join(values, ", "));
  }
  if (!d.ignore_tensors.empty())
    fmt::print("ignored by model.ignore_tensors: {}\n", fmt::join(d.ignore_tensors, ", "));
  if (d.verified.empty() && d.arch == config::model_arch::stack)
    fmt::print("verified: no record (not written by a checking exporter)\n");
  for (const auto& [k, v] : d.verified) fmt::print("verified.{}: {}\n", k, v);
  fmt::print("{}: {}\n", config::kDescriptionDigestKey, config::description_digest(d));
  const auto recorded = [&](std::string_view key) {
    for (const auto& [k, v] : d.verified)
      if (k == key) return true;
    return false;
  };
  if (recorded("checked") && !recorded(config::kDescriptionDigestKey))
    fmt::print("verified: the record holds no {}, so a hand edit since the check would go "
               "unseen; export again to record it\n",
               config::kDescriptionDigestKey);
  fmt::print("parameters: {} ({:.2f} MiB as held{}{})\n", m.parameter_count(),
             double(m.weight_bytes()) / 1048576.0,
             d.table_precision == "fp32" ? "" : "; tables quantised, see table_precision",
             d.precision == "fp32"
                 ? std::string()
                 : fmt::format("; the dense weights also held in {} beside these float32 ones",
                               d.precision));
  if (m.packed_weights() > 0)
    fmt::print("packed weights: {} ({:.2f} MiB beside them, for oneDNN's {} products)\n",
               m.packed_weights(), double(m.packed_bytes()) / 1048576.0,
               d.precision == "bf16" ? "bfloat16" : "FP32");
  return status::ok();
}

}  // namespace

void register_model(CLI::App& app, global_options& g) {
  auto* cmd = app.add_subcommand("model",
                                 "Create and inspect model directories (model.toml + safetensors)");
  cmd->require_subcommand(1);
  auto [init, a] = add_command<init_args>(
      *cmd, "init", "Write a model description and randomly initialised safetensors weights");
  init->add_option("--arch", a->arch, "graphsage | gcn | gat | gin | dlrm | ncf | wnd | din")
      ->required();
  init->add_option("--in", a->in, "Input feature width (DLRM: dense features, default 128)");
  init->add_option("--hidden", a->hidden, "Hidden width (DLRM: embedding width, default 64)");
  init->add_option("--classes", a->classes, "Output classes, the last layer's width (GNNs)");
  init->add_option("--out", a->deprecated_out, "Deprecated spelling of --classes");
  init->add_option("--fanouts", a->fanouts,
                   "GNNs: neighbours sampled per hop when serving, one per layer (e.g. 25,10), "
                   "written to model.toml");
  init->add_option("--layers", a->layers, "GNN layers = sampled hops")->capture_default_str();
  init->add_option("--heads", a->heads, "GAT heads")->capture_default_str();
  init->add_option("--variant", a->variant,
                   "DLRM: Hera Table I's DLRM(A), (B), (C) or (D) (widths, tables, SLA)")
      ->check(CLI::IsMember({"A", "B", "C", "D"}))
      ->capture_default_str();
  init->add_option(
          "--tables", a->tables,
          "Recommendation models: rows per embedding table, comma-separated (default: "
          "100000 per table of the DLRM variant, 4 x 100000 for ncf and din, 27 x 10000 for wnd)")
      ->capture_default_str();
  init->add_option("--name", a->name, "Model name (default: the architecture)");
  init->add_option("--seed", a->seed, "Random seed")->capture_default_str();
  init->add_option("--out-dir", a->out_dir, "Model directory to write")->required();
  on_run(init, [a] { return run_init(*a); });
  auto* info = cmd->add_subcommand("info", "List a model's tensors, shapes and parameter count");
  auto dir = std::make_shared<std::string>();
  info->add_option("dir", *dir, "Model directory")->required();
  on_run(info, [dir] { return run_info(*dir); });
  register_model_verify(*cmd, g);
}

}  // namespace spindle::apps
