// Reading graph.json (spindle_client.export.save_graph's output) and checking
// every array it names before prepare builds anything from it.
#include "graph/graph_json.hpp"

#include <cmath>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "core/text_file.hpp"
#include "graph/detail/json_field.hpp"

namespace spindle::graph {
namespace {

using nlohmann::json;

// One field of graph.json: "FILE: edge_types[2].rel is missing" (or "is not T").
template <class T>
expected<T> get(const std::string& path, const json& j, const std::string& where,
                const char* key, const char* kind) {
  return detail::json_field<T>(j, path + ": " + where, key, kind, errc::invalid_argument);
}

status check_name(const std::string& path, const std::string& where, const std::string& name) {
  const bool ok = !name.empty() && name.size() <= 128 &&
                  name.find_first_not_of(
                      "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
                      "0123456789_.-") == std::string::npos;
  if (!ok)
    return make_error(errc::invalid_argument,
                      "{}: {} '{}' must be 1 to 128 of the characters A-Z a-z 0-9 _ . -", path,
                      where, name.substr(0, 64));
  return status::ok();
}

// The array a field names (null: none), with its dtype and shape checked;
// -1 in `shape` takes any size.
expected<std::optional<npy_array>> open_field(const std::string& path, const json& j,
                                              const std::string& where, const char* key, dtype type,
                                              std::vector<std::int64_t> shape) {
  if (!j.contains(key) || j.at(key).is_null()) return std::optional<npy_array>{};
  SPINDLE_ASSIGN_OR_RETURN(auto file, get<std::string>(path, j, where, key, "a file name"));
  if (file.empty() || file.find('/') != std::string::npos)
    return make_error(errc::invalid_argument, "{}: {}.{} '{}' must be a file name in its folder",
                      path, where, key, file);
  const auto full = (std::filesystem::path(path).parent_path() / file).string();
  auto a = npy_array::open(full);
  if (!a) return std::move(a).error().with_context(fmt::format("{}: {}.{}: ", path, where, key));
  bool fits = a->type() == type && a->shape().size() == shape.size();
  for (std::size_t i = 0; fits && i < shape.size(); ++i)
    fits = shape[i] < 0 || a->shape()[i] == shape[i];
  if (!fits) {
    std::vector<std::string> want;
    for (auto s : shape) want.push_back(s < 0 ? "*" : std::to_string(s));
    return make_error(errc::invalid_argument, "{}: {}.{} ({}): {} [{}], expected {} [{}]", path,
                      where, key, file, to_string(a->type()), fmt::join(a->shape(), ", "),
                      to_string(type), fmt::join(want, ", "));
  }
  return std::optional<npy_array>(std::move(*a));
}

expected<graph_json_node_type> read_node_type(const std::string& path, const json& j,
                                              std::size_t i) {
  const std::string where = fmt::format("node_types[{}]", i);
  graph_json_node_type t;
  SPINDLE_ASSIGN_OR_RETURN(t.name, get<std::string>(path, j, where, "name", "a string"));
  SPINDLE_TRY(check_name(path, where + ".name", t.name));
  SPINDLE_ASSIGN_OR_RETURN(t.num_nodes,
                           get<std::int64_t>(path, j, where, "num_nodes", "an integer"));
  if (t.num_nodes < 0)
    return make_error(errc::invalid_argument, "{}: {}.num_nodes {} is negative", path, where,
                      t.num_nodes);
  SPINDLE_ASSIGN_OR_RETURN(t.x, open_field(path, j, where, "x", dtype::f32, {t.num_nodes, -1}));
  SPINDLE_ASSIGN_OR_RETURN(t.y, open_field(path, j, where, "y", dtype::i64, {t.num_nodes}));
  // The spans are copied out first: a range-for over *expected would read a
  // destroyed temporary.
  const auto xs = t.x ? *t.x->as<float>() : std::span<const float>();
  for (float f : xs)
    if (!std::isfinite(f))
      return make_error(errc::invalid_argument, "{}: {}.x holds NaN or infinite values", path,
                        where);
  const auto ys = t.y ? *t.y->as<std::int64_t>() : std::span<const std::int64_t>();
  for (auto c : ys)
    if (c < -1)
      return make_error(errc::invalid_argument, "{}: {}.y holds {} (labels are >= -1)", path, where,
                        c);
  return t;
}

expected<int> node_type_index(const std::string& path, const graph_json& g,
                              const std::string& where, const std::string& name) {
  for (std::size_t i = 0; i < g.node_types.size(); ++i)
    if (g.node_types[i].name == name) return int(i);
  return make_error(errc::invalid_argument, "{}: {} '{}' is not a node type", path, where, name);
}

status check_ids(const std::string& path, const std::string& where, const graph_json& g,
                 const graph_json_edge_type& t) {
  auto ids = *t.edge_index.as<std::int64_t>();
  const std::int64_t e = t.num_edges();
  for (int side = 0; side < 2; ++side) {
    const auto& nt = g.node_types[std::size_t(side == 0 ? t.src_type : t.dst_type)];
    for (std::int64_t i = 0; i < e; ++i) {
      const std::int64_t v = ids[std::size_t(side * e + i)];
      if (v < 0 || v >= nt.num_nodes)
        return make_error(errc::invalid_argument,
                          "{}: {}.edge_index[{}][{}] = {} out of range for node type '{}' "
                          "({} nodes)",
                          path, where, side, i, v, nt.name, nt.num_nodes);
    }
  }
  return status::ok();
}

expected<graph_json_edge_type> read_edge_type(const std::string& path, const json& j, std::size_t i,
                                              const graph_json& g) {
  const std::string where = fmt::format("edge_types[{}]", i);
  graph_json_edge_type t;
  SPINDLE_ASSIGN_OR_RETURN(t.src, get<std::string>(path, j, where, "src", "a string"));
  SPINDLE_ASSIGN_OR_RETURN(t.rel, get<std::string>(path, j, where, "rel", "a string"));
  SPINDLE_ASSIGN_OR_RETURN(t.dst, get<std::string>(path, j, where, "dst", "a string"));
  SPINDLE_TRY(check_name(path, where + ".rel", t.rel));
  SPINDLE_ASSIGN_OR_RETURN(t.src_type, node_type_index(path, g, where + ".src", t.src));
  SPINDLE_ASSIGN_OR_RETURN(t.dst_type, node_type_index(path, g, where + ".dst", t.dst));
  SPINDLE_ASSIGN_OR_RETURN(auto ei, open_field(path, j, where, "edge_index", dtype::i64, {2, -1}));
  if (!ei) return make_error(errc::invalid_argument, "{}: {}.edge_index is missing", path, where);
  t.edge_index = std::move(*ei);
  SPINDLE_ASSIGN_OR_RETURN(
      t.edge_attr, open_field(path, j, where, "edge_attr", dtype::f32, {t.num_edges(), -1}));
  const auto attrs = t.edge_attr ? *t.edge_attr->as<float>() : std::span<const float>();
  for (float f : attrs)  // as x's: a NaN would reach answers that PyG gives as NaN
    if (!std::isfinite(f))
      return make_error(errc::invalid_argument, "{}: {}.edge_attr holds NaN or infinite values",
                        path, where);
  SPINDLE_TRY(check_ids(path, where, g, t));
  return t;
}

}  // namespace

std::optional<std::string> find_graph_json(const std::string& input) {
  namespace fs = std::filesystem;
  std::error_code ec;
  if (fs::path(input).filename() == "graph.json" && fs::is_regular_file(input, ec)) return input;
  const auto inside = (fs::path(input) / "graph.json").string();
  if (fs::is_directory(input, ec) && fs::is_regular_file(inside, ec)) return inside;
  return std::nullopt;
}

expected<graph_json> read_graph_json(const std::string& path) {
  SPINDLE_ASSIGN_OR_RETURN(auto text, read_text_file(path, "graph.json"));
  json j;
  try {
    j = json::parse(text);
  } catch (const std::exception& e) {
    return make_error(errc::invalid_argument, "{}: not JSON: {}", path, e.what());
  }
  if (!j.is_object() || j.value("format", "") != "spindle-graph")
    return make_error(errc::invalid_argument, "{}: format is not \"spindle-graph\"", path);
  if (j.value("version", 0) != 1)
    return make_error(errc::unsupported, "{}: version is not 1 (this build reads 1)", path);
  for (const char* list : {"node_types", "edge_types"})
    if (!j.contains(list) || !j.at(list).is_array() || j.at(list).empty())
      return make_error(errc::invalid_argument, "{}: {} must be a non-empty list", path, list);
  graph_json g;
  g.path = path;
  for (std::size_t i = 0; i < j.at("node_types").size(); ++i) {
    SPINDLE_ASSIGN_OR_RETURN(auto t, read_node_type(path, j.at("node_types")[i], i));
    for (const auto& other : g.node_types)
      if (other.name == t.name)
        return make_error(errc::invalid_argument, "{}: node_types[{}].name '{}' repeats", path, i,
                          t.name);
    g.node_types.push_back(std::move(t));
  }
  if (j.at("edge_types").size() > std::size_t(32767))
    return make_error(errc::invalid_argument, "{}: {} edge_types (at most 32767)", path,
                      j.at("edge_types").size());
  for (std::size_t i = 0; i < j.at("edge_types").size(); ++i) {
    SPINDLE_ASSIGN_OR_RETURN(auto t, read_edge_type(path, j.at("edge_types")[i], i, g));
    for (const auto& o : g.edge_types)
      if (o.src == t.src && o.rel == t.rel && o.dst == t.dst)
        return make_error(errc::invalid_argument, "{}: edge_types[{}] ({}, {}, {}) repeats", path,
                          i, t.src, t.rel, t.dst);
    g.edge_types.push_back(std::move(t));
  }
  return g;
}

}  // namespace spindle::graph
