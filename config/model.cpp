#include "config/model.hpp"
#include "config/model_fields.hpp"

#include "config/detail/toml_string.hpp"
#include "config/model_digest.hpp"

#include "core/path_guard.hpp"

#include <fmt/ranges.h>
#include <toml++/toml.h>

#include <algorithm>
#include <array>
#include <charconv>
#include <fstream>
#include <limits>
#include <map>
#include <set>
#include <sstream>

#include "config/detail/model_ops_toml.hpp"
#include "core/text_file.hpp"

namespace spindle::config {
namespace {

constexpr std::array<std::string_view, 9> kArchNames = {"graphsage", "gcn", "gat", "gin",  "dlrm",
                                                        "ncf",       "wnd", "din", "stack"};

template <class T>
status read_int(const toml::table& t, std::string_view key, T& out, std::string_view origin) {
  if (const toml::node* n = t.get(key)) {
    auto v = n->value<std::int64_t>();
    if (!v)
      return make_error(errc::invalid_argument, "{}: model.{} must be an integer", origin, key);
    if (*v < std::int64_t(std::numeric_limits<T>::min()) ||
        *v > std::int64_t(std::numeric_limits<T>::max()))
      return make_error(errc::invalid_argument, "{}: model.{} = {} is out of range", origin, key,
                        *v);
    out = T(*v);
  }
  return status::ok();
}

template <class T>
status read_list(const toml::table& t, std::string_view key, std::vector<T>& out,
                 std::string_view origin) {
  const toml::node* n = t.get(key);
  if (!n) return status::ok();
  const toml::array* arr = n->as_array();
  if (!arr) return make_error(errc::invalid_argument, "{}: model.{} must be a list", origin, key);
  out.clear();
  for (const auto& e : *arr) {
    auto v = e.value<std::int64_t>();
    if (!v)
      return make_error(errc::invalid_argument, "{}: model.{} must hold integers", origin, key);
    if (*v < std::int64_t(std::numeric_limits<T>::min()) ||
        *v > std::int64_t(std::numeric_limits<T>::max()))
      return make_error(errc::invalid_argument, "{}: model.{} holds {}, out of range", origin, key,
                        *v);
    out.push_back(T(*v));
  }
  return status::ok();
}

expected<model_desc> from_table(const toml::table& root, std::string_view origin) {
  const toml::table* t = root["model"].as_table();
  if (!t) return make_error(errc::invalid_argument, "{}: missing [model] table", origin);
  static constexpr std::array<std::string_view, 29> known = {"weights_crc32",
                                                             "name",
                                                             "arch",
                                                             "weights",
                                                             "in",
                                                             "hidden",
                                                             "out",
                                                             "layers",
                                                             "heads",
                                                             "log_softmax",
                                                             "dense_in",
                                                             "bottom",
                                                             "top",
                                                             "table_rows",
                                                             "embedding_dim",
                                                             "description",
                                                             "fanouts",
                                                             "max_batch",
                                                             "batch_deadline_us",
                                                             "slo_ms",
                                                             "version_policy",
                                                             "attention",
                                                             "ignore_tensors",
                                                             "sampling",
                                                             "task",
                                                             "decoder",
                                                             "pair_types",
                                                             "precision",
                                                             "table_precision"};
  for (auto&& [k, _] : *t)
    if (std::find(known.begin(), known.end(), std::string_view(k.str())) == known.end())
      return make_error(errc::invalid_argument, "{}: unknown field model.{}", origin, k.str());
  model_desc d;
  d.name = t->get("name") ? t->get("name")->value_or(std::string("model")) : "model";
  std::string arch = t->get("arch") ? t->get("arch")->value_or(std::string()) : "";
  SPINDLE_ASSIGN_OR_RETURN(d.arch, parse_model_arch(arch));
  if (t->get("weights")) d.weights = t->get("weights")->value_or(d.weights);
  if (t->get("weights_crc32")) {
    d.weights_crc32 = t->get("weights_crc32")->value_or(std::string());
    if (d.weights_crc32.size() != 8 ||
        d.weights_crc32.find_first_not_of("0123456789abcdef") != std::string::npos)
      return make_error(errc::invalid_argument,
                        "{}: model.weights_crc32 = '{}': expected 8 lowercase hex digits", origin,
                        d.weights_crc32.substr(0, 16));
  }
  if (t->get("log_softmax")) d.log_softmax = t->get("log_softmax")->value_or(false);
  SPINDLE_TRY(read_int(*t, "in", d.in, origin));
  SPINDLE_TRY(read_int(*t, "hidden", d.hidden, origin));
  SPINDLE_TRY(read_int(*t, "out", d.out, origin));
  SPINDLE_TRY(read_int(*t, "layers", d.layers, origin));
  SPINDLE_TRY(read_int(*t, "heads", d.heads, origin));
  SPINDLE_TRY(read_int(*t, "dense_in", d.dense_in, origin));
  SPINDLE_TRY(read_int(*t, "embedding_dim", d.embedding_dim, origin));
  SPINDLE_TRY(read_list(*t, "bottom", d.bottom, origin));
  SPINDLE_TRY(read_list(*t, "top", d.top, origin));
  SPINDLE_TRY(read_list(*t, "attention", d.attention, origin));
  SPINDLE_TRY(read_list(*t, "table_rows", d.table_rows, origin));
  SPINDLE_TRY(read_list(*t, "fanouts", d.fanouts, origin));
  SPINDLE_TRY(read_int(*t, "max_batch", d.max_batch, origin));
  SPINDLE_TRY(read_int(*t, "batch_deadline_us", d.batch_deadline_us, origin));
  SPINDLE_TRY(read_int(*t, "slo_ms", d.slo_ms, origin));
  if (const toml::node* n = t->get("ignore_tensors")) {
    const toml::array* arr = n->as_array();
    if (!arr)
      return make_error(errc::invalid_argument, "{}: model.ignore_tensors must be a list", origin);
    for (const auto& e : *arr) {
      auto v = e.value<std::string>();
      if (!v || v->empty())
        return make_error(errc::invalid_argument,
                          "{}: model.ignore_tensors must hold non-empty tensor names or prefixes",
                          origin);
      d.ignore_tensors.push_back(*v);
    }
  }
  if (t->get("sampling")) d.sampling = t->get("sampling")->value_or(std::string("?"));
  SPINDLE_TRY(validate_sampling(d.sampling, fmt::format("{}: model.sampling", origin)));
  if (t->get("task")) d.task = t->get("task")->value_or(std::string("?"));
  if (t->get("decoder")) d.decoder = t->get("decoder")->value_or(std::string("?"));
  SPINDLE_TRY(validate_task(d, origin));
  if (const auto* p = t->get("precision"); p && !p->is_string())
    return make_error(errc::invalid_argument,
                      "{}: model.precision must be a string, \"fp32\" or \"bf16\"", origin);
  if (t->get("precision")) d.precision = t->get("precision")->value_or(std::string("?"));
  SPINDLE_TRY(validate_precision(d, origin));
  if (const auto* p = t->get("table_precision"); p && !p->is_string())
    return make_error(errc::invalid_argument,
                      "{}: model.table_precision must be a string, \"fp32\", \"int8\" or \"int4\"",
                      origin);
  if (t->get("table_precision"))
    d.table_precision = t->get("table_precision")->value_or(std::string("?"));
  SPINDLE_TRY(validate_table_precision(d, origin));
  if (t->get("version_policy"))
    d.version_policy = t->get("version_policy")->value_or(std::string());
  if (d.max_batch < 0 || d.max_batch > 65536)
    return make_error(errc::invalid_argument, "{}: model.max_batch = {}: expected 1..65536", origin,
                      d.max_batch);
  if (d.batch_deadline_us < 0 || d.batch_deadline_us > 10'000'000)
    return make_error(errc::invalid_argument,
                      "{}: model.batch_deadline_us = {}: expected 0..10000000", origin,
                      d.batch_deadline_us);
  if (d.slo_ms < 0 || d.slo_ms > 600'000)
    return make_error(errc::invalid_argument, "{}: model.slo_ms = {}: expected 0..600000", origin,
                      d.slo_ms);
  if (auto v = pick_versions(d.version_policy, {1}); !v && v.error().code() != errc::not_found)
    return make_error(errc::invalid_argument, "{}: model.{}", origin, v.error().message());
  if (const toml::node* n = root.get("op")) {
    const toml::array* arr = n->as_array();
    if (!arr || !arr->is_array_of_tables())
      return make_error(errc::invalid_argument, "{}: [[op]] must be an array of tables", origin);
    if (d.arch != model_arch::stack)
      return make_error(errc::invalid_argument,
                        "{}: [[op]] tables describe a stack model; set model.arch = \"stack\"",
                        origin);
    SPINDLE_ASSIGN_OR_RETURN(d.ops, detail::parse_ops(*arr, origin));
  }
  if (const toml::node* n = root.get("decoder_op")) {
    const toml::array* arr = n->as_array();
    if (!arr || !arr->is_array_of_tables())
      return make_error(errc::invalid_argument, "{}: [[decoder_op]] must be an array of tables",
                        origin);
    SPINDLE_ASSIGN_OR_RETURN(d.decoder_ops, detail::parse_ops(*arr, origin));
  }
  SPINDLE_ASSIGN_OR_RETURN(d.types, detail::parse_types(root, origin));
  SPINDLE_TRY(detail::parse_pair_types(*t, d.types, origin));
  SPINDLE_TRY(validate_typed_task(d, origin));
  if (const toml::node* n = root.get("verified")) {
    const toml::table* v = n->as_table();
    if (!v) return make_error(errc::invalid_argument, "{}: [verified] must be a table", origin);
    for (auto&& [k, value] : *v) {
      std::ostringstream text;
      value.visit([&](const auto& x) { text << x; });
      d.verified.emplace_back(std::string(k.str()), text.str());
    }
  }
  static const std::set<std::string_view> kTables{"model",     "op",        "verified", "decoder_op",
                                                  "node_type", "edge_type", "output"};
  for (auto&& [k, _] : root)
    if (!kTables.count(k.str()))
      return make_error(errc::invalid_argument, "{}: unknown table [{}]", origin, k.str());
  if (d.arch == model_arch::stack) {
    if (t->get("layers") || t->get("hidden") || t->get("heads"))
      return make_error(errc::invalid_argument,
                        "{}: a stack model's layers, widths and heads are its [[op]]s; remove "
                        "model.layers / model.hidden / model.heads",
                        origin);
    auto hops = d.typed() ? validate_typed_ops(d.ops, d.types, d.out) : validate_ops(d.ops, d.in, d.out);
    if (!hops) return std::move(hops).error().with_context(fmt::format("{}: ", origin));
    d.layers = *hops;
    if (!d.decoder_ops.empty())
      if (auto st = validate_decoder_ops(d.decoder_ops, d.out); !st)
        return std::move(st).with_context(fmt::format("{}: ", origin));
    d.hidden = 0;
    for (const auto& op : d.ops) d.hidden = std::max(d.hidden, op.width);
  }
  if ((d.decoder == "ops") != !d.decoder_ops.empty() || (d.task != "link" && d.decoder != "dot") ||
      (!d.decoder_ops.empty() && d.arch != model_arch::stack))
    return make_error(errc::invalid_argument,
                      "{}: model.decoder = \"ops\" goes with [[decoder_op]] tables, on a stack model "
                      "with task = \"link\" ({} decoder_op tables here)",
                      origin, d.decoder_ops.size());
  if (auto st = validate(d); !st) return std::move(st).with_context(fmt::format("{}: ", origin));
  return d;
}

}  // namespace

std::string_view to_string(model_arch a) { return kArchNames[std::size_t(a)]; }

expected<model_arch> parse_model_arch(std::string_view text) {
  for (std::size_t i = 0; i < kArchNames.size(); ++i)
    if (kArchNames[i] == text) return model_arch(i);
  return make_error(
      errc::invalid_argument,
      "model.arch = '{}': expected graphsage, gcn, gat, gin, stack, dlrm, ncf, wnd or "
      "din",
      text);
}

// model.weights names a file inside the model directory: a path that leaves it
// is refused before the file system is touched (no probing of other files).
status validate_weights_path(const std::string& w) {
  for (const char ch : w)  // a file name, not text that could read as more keys
    if (static_cast<unsigned char>(ch) < 0x20 || ch == '"' || ch == '\\' || ch == 0x7f)
      return make_error(errc::invalid_argument,
                        "model.weights: holds a quote, backslash or control character; name "
                        "the weights file plainly");
  bool escapes = w.empty() || w.front() == '/';
  for (std::size_t at = 0; !escapes && at <= w.size();) {
    const auto end = std::min(w.find('/', at), w.size());
    escapes = w.compare(at, end - at, "..") == 0;
    at = end + 1;
  }
  if (!escapes) return status::ok();
  return make_error(errc::invalid_argument,
                    "model.weights = '{}': must name a file inside the model directory (a "
                    "relative path without '..')",
                    w.substr(0, 256));
}

namespace {

// DIN's four tables: user profile, candidate item, behaviour sequence (each key
// one behaviour, pooled by attention against the candidate) and context.
status validate_din(const model_desc& d) {
  if (d.table_rows.size() != 4)
    return make_error(errc::invalid_argument,
                      "model.table_rows: DIN has 4 tables (user, candidate, behaviours, context), "
                      "got {}",
                      d.table_rows.size());
  if (d.dense_in != 0)
    return make_error(errc::invalid_argument, "model.dense_in = {}: DIN has no dense input",
                      d.dense_in);
  if (d.attention.empty() || d.attention.back() != 1)
    return make_error(errc::invalid_argument, "model.attention = [{}]: must end with 1",
                      fmt::join(d.attention, ", "));
  if (d.top.empty() || d.top.back() != 2)
    return make_error(errc::invalid_argument,
                      "model.top = [{}]: DIN's predict MLP must end with 2 (softmax over "
                      "no-click, click)",
                      fmt::join(d.top, ", "));
  for (int w : d.attention)
    if (w <= 0)
      return make_error(errc::invalid_argument, "model.attention[*] = {}: must be > 0", w);
  return status::ok();
}

}  // namespace

status validate_sampling(std::string_view mode, std::string_view field) {
  if (mode == "shared" || mode == "per_request") return status::ok();
  return make_error(errc::invalid_argument, "{} = '{}': expected shared or per_request", field,
                    mode);
}

status validate_fanouts(const std::vector<int>& fanouts, int layers, std::string_view field) {
  if (fanouts.empty()) return status::ok();
  if (int(fanouts.size()) != layers)
    return make_error(errc::invalid_argument,
                      "{} = [{}]: {} values for a model of {} layers (one per sampled hop)", field,
                      fmt::join(fanouts, ", "), fanouts.size(), layers);
  for (std::size_t i = 0; i < fanouts.size(); ++i)
    if (fanouts[i] != -1 && (fanouts[i] <= 0 || fanouts[i] > 100000))
      return make_error(errc::invalid_argument,
                        "{}[{}] = {}: expected 1..100000, or -1 (every neighbour)", field, i,
                        fanouts[i]);
  return status::ok();
}

status validate(const model_desc& d) {
  SPINDLE_TRY(validate_weights_path(d.weights));
  SPINDLE_TRY(validate_arch_fields(d));
  auto positive = [](std::string_view f, std::int64_t v) {
    return v > 0 ? status::ok()
                 : make_error(errc::invalid_argument, "model.{} = {}: must be > 0", f, v);
  };
  if (d.arch == model_arch::stack) {
    auto ops = d.ops;
    SPINDLE_ASSIGN_OR_RETURN(int hops, d.typed() ? validate_typed_ops(ops, d.types, d.out)
                                                 : validate_ops(ops, d.in, d.out));
    SPINDLE_TRY(validate_type_fanouts(d.types, hops));
    if (hops != d.layers)
      return make_error(errc::invalid_argument,
                        "model.layers = {}, but the stack has {} message-passing ops", d.layers,
                        hops);
  }
  if (d.is_gnn()) {
    SPINDLE_TRY(positive("in", d.in));
    SPINDLE_TRY(positive("hidden", d.hidden));
    SPINDLE_TRY(positive("out", d.out));
    SPINDLE_TRY(positive("layers", d.layers));
    if (d.arch == model_arch::gat) SPINDLE_TRY(positive("heads", d.heads));
    return validate_fanouts(d.fanouts, d.layers, "model.fanouts");
  }
  SPINDLE_TRY(positive("embedding_dim", d.embedding_dim));
  for (std::size_t i = 0; i < d.table_rows.size(); ++i)
    if (d.table_rows[i] <= 0)
      return make_error(errc::invalid_argument, "model.table_rows[{}] = {}: must be > 0", i,
                        d.table_rows[i]);
  for (int w : d.top) SPINDLE_TRY(positive("top[*]", w));
  if (d.arch == model_arch::ncf) {  // GMF user, GMF item, MLP user, MLP item
    if (d.table_rows.size() != 4)
      return make_error(errc::invalid_argument,
                        "model.table_rows: NCF has 4 tables (GMF user, GMF item, MLP user, MLP "
                        "item), got {}",
                        d.table_rows.size());
    if (d.top.empty())
      return make_error(errc::invalid_argument, "model.top: NCF's MLP tower needs a layer");
    if (d.dense_in != 0)
      return make_error(errc::invalid_argument, "model.dense_in = {}: NCF has no dense input",
                        d.dense_in);
    return status::ok();
  }
  if (d.arch == model_arch::din) return validate_din(d);
  SPINDLE_TRY(positive("dense_in", d.dense_in));
  if (d.arch == model_arch::wnd) {
    if (d.table_rows.empty())
      return make_error(errc::invalid_argument, "model.table_rows: at least one table");
    if (d.top.empty() || d.top.back() != 1)
      return make_error(errc::invalid_argument, "model.top = [{}]: must end with 1",
                        fmt::join(d.top, ", "));
    return status::ok();
  }
  if (d.bottom.empty() || d.bottom.back() != d.embedding_dim)
    return make_error(errc::invalid_argument,
                      "model.bottom = [{}]: must end with embedding_dim = {}",
                      fmt::join(d.bottom, ", "), d.embedding_dim);
  if (d.top.empty() || d.top.back() != 1)
    return make_error(errc::invalid_argument, "model.top = [{}]: must end with 1",
                      fmt::join(d.top, ", "));
  if (d.table_rows.empty())
    return make_error(errc::invalid_argument, "model.table_rows: at least one table");
  for (std::size_t i = 0; i < d.table_rows.size(); ++i)
    if (d.table_rows[i] <= 0)
      return make_error(errc::invalid_argument, "model.table_rows[{}] = {}: must be > 0", i,
                        d.table_rows[i]);
  for (int w : d.bottom) SPINDLE_TRY(positive("bottom[*]", w));
  for (int w : d.top) SPINDLE_TRY(positive("top[*]", w));
  return status::ok();
}

expected<model_desc> parse_model_desc(std::string_view toml_text, std::string_view origin) {
  try {
    auto d = from_table(toml::parse(toml_text, origin), origin);
    if (d) SPINDLE_TRY(check_verified_digest(*d, origin));
    // Every refusal names the file, whichever check made it.
    if (!d && d.error().message().find(origin) == std::string::npos)
      return std::move(d).error().with_context(std::string(origin) + ": ");
    return d;
  } catch (const toml::parse_error& e) {
    return make_error(errc::invalid_argument, "{}:{}:{}: {}", origin, e.source().begin.line,
                      e.source().begin.column, e.description());
  }
}

expected<model_desc> load_model_desc(const std::string& dir) {
  std::string path = dir + "/model.toml";
  if (auto inside = require_file_inside(dir, path); !inside && inside.code() != errc::not_found)
    return inside;
  SPINDLE_ASSIGN_OR_RETURN(auto text, read_text_file(path, "model description"));
  return parse_model_desc(text, path);
}

std::string summary(const model_desc& d) {
  if (d.arch != model_arch::stack) {
    if (d.is_gnn())
      return fmt::format("{} {}-{}-{}, {} layers{}", to_string(d.arch), d.in, d.hidden, d.out,
                         d.layers, d.log_softmax ? ", log_softmax" : "");
    return std::string(to_string(d.arch));
  }
  std::string s;
  std::map<std::string, int> width{{"x", d.in}};
  for (const auto& op : d.ops) {
    if (!s.empty()) s += " > ";
    s += to_string(op.kind);
    const auto in = op.inputs.empty() ? width.end() : width.find(op.inputs[0]);
    if (is_message_passing(op.kind) || op.kind == op_kind::linear)
      s += fmt::format("({}->{})", in == width.end() ? op.in : in->second, op.width);
    width[op.name] = op.width;
    if (op.kind == op_kind::sage && op.aggr != "mean") s += "[" + op.aggr + "]";
    if (op.inputs.size() > 1) s += fmt::format("[{}]", fmt::join(op.inputs, ","));
  }
  if (d.scores_links())
    s += d.decoder == "dot" ? "; scores pairs by z_u . z_v"
                            : fmt::format("; scores pairs by {} decoder ops", d.decoder_ops.size());
  return s;
}

std::string to_toml(const model_desc& d) {
  using detail::toml_string;
  std::string s = fmt::format("[model]\nname = {}\narch = \"{}\"\nweights = {}\n",
                              toml_string(d.name), to_string(d.arch), toml_string(d.weights));
  if (!d.weights_crc32.empty()) s += fmt::format("weights_crc32 = {}\n", toml_string(d.weights_crc32));
  if (d.arch == model_arch::stack) {
    s += fmt::format("in = {}\nout = {}\n", d.in, d.out);
    if (!d.fanouts.empty()) s += fmt::format("fanouts = [{}]\n", fmt::join(d.fanouts, ", "));
    if (d.log_softmax) s += "log_softmax = true\n";
  } else if (d.is_gnn()) {
    s += fmt::format("in = {}\nhidden = {}\nout = {}\nlayers = {}\n", d.in, d.hidden, d.out,
                     d.layers);
    if (!d.fanouts.empty()) s += fmt::format("fanouts = [{}]\n", fmt::join(d.fanouts, ", "));
    if (d.arch == model_arch::gat) s += fmt::format("heads = {}\n", d.heads);
    s += fmt::format("log_softmax = {}\n", d.log_softmax);
  } else {
    s += fmt::format(
        "dense_in = {}\nbottom = [{}]\ntop = [{}]\nembedding_dim = {}\ntable_rows = [{}]\n",
        d.dense_in, fmt::join(d.bottom, ", "), fmt::join(d.top, ", "), d.embedding_dim,
        fmt::join(d.table_rows, ", "));
    if (d.arch == model_arch::din)
      s += fmt::format("attention = [{}]\n", fmt::join(d.attention, ", "));
  }
  if (d.max_batch) s += fmt::format("max_batch = {}\n", d.max_batch);
  if (d.batch_deadline_us) s += fmt::format("batch_deadline_us = {}\n", d.batch_deadline_us);
  if (d.slo_ms) s += fmt::format("slo_ms = {}\n", d.slo_ms);
  if (!d.version_policy.empty()) s += fmt::format("version_policy = {}\n", toml_string(d.version_policy));
  if (d.sampling != "shared") s += fmt::format("sampling = {}\n", toml_string(d.sampling));
  if (d.task != "node") s += fmt::format("task = {}\ndecoder = {}\n", toml_string(d.task), toml_string(d.decoder));
  if (d.precision != "fp32") s += fmt::format("precision = {}\n", toml_string(d.precision));
  if (d.table_precision != "fp32")
    s += fmt::format("table_precision = {}\n", toml_string(d.table_precision));
  if (!d.types.pair_types.empty())
    s += fmt::format("pair_types = {}\n", detail::toml_strings(d.types.pair_types));
  if (!d.ignore_tensors.empty()) {
    s += fmt::format("ignore_tensors = {}\n", detail::toml_strings(d.ignore_tensors));
  }
  if (d.arch == model_arch::stack) s += ops_to_toml(d.ops);
  s += types_to_toml(d.types);
  if (!d.decoder_ops.empty()) s += ops_to_toml(d.decoder_ops, "decoder_op");
  return s;
}

}  // namespace spindle::config
