#include "transport/kserve/graph_json.hpp"

#include <limits>
#include <set>
#include <string>
#include <vector>
#include <nlohmann/json.hpp>

#include "core/json_depth.hpp"

namespace spindle::transport::kserve {
namespace {

using nlohmann::json;
constexpr std::size_t kMaxDepth = 8;

template <class T>
status list_of(const json& j, std::string_view field, std::vector<T>& out) {
  if (!j.is_array()) return make_error(errc::invalid_argument, "{}: expected a list", field);
  out.reserve(out.size() + j.size());
  for (std::size_t i = 0; i < j.size(); ++i) {
    const bool ok = std::is_integral_v<T> ? j[i].is_number_integer() : j[i].is_number();
    if (ok && std::is_integral_v<T> && j[i].is_number_unsigned() &&
        j[i].get<std::uint64_t>() > std::uint64_t(std::numeric_limits<std::int64_t>::max()))
      return make_error(errc::invalid_argument, "{}[{}]: {} is out of range", field, i,
                        j[i].get<std::uint64_t>());
    if (!ok)
      return make_error(errc::invalid_argument, "{}[{}]: expected {}", field, i,
                        std::is_integral_v<T> ? "an integer" : "a number");
    out.push_back(j[i].get<T>());
  }
  return status::ok();
}

status edges_of(const json& j, std::string_view field, std::vector<std::int64_t>& src,
                std::vector<std::int64_t>& dst) {
  if (!j.is_array() || j.size() != 2)
    return make_error(errc::invalid_argument, "{}: expected [[src, ...], [dst, ...]]", field);
  SPINDLE_TRY(list_of(j[0], std::string(field) + "[0]", src));
  return list_of(j[1], std::string(field) + "[1]", dst);
}

// Rows of one width, flattened; `count` gets how many.
status rows_of(const json& j, std::string_view field, std::vector<float>& out,
               std::int64_t* count = nullptr) {
  if (!j.is_array()) return make_error(errc::invalid_argument, "{}: expected a list of rows", field);
  std::size_t width = 0;
  for (std::size_t i = 0; i < j.size(); ++i) {
    const std::size_t before = out.size();
    SPINDLE_TRY(list_of(j[i], fmt::format("{}[{}]", field, i), out));
    const std::size_t got = out.size() - before;
    if (i > 0 && got != width)  // rows of one width: a ragged list is not re-split
      return make_error(errc::invalid_argument, "{}[{}]: {} values, but row 0 has {}", field, i,
                        got, width);
    width = got;
  }
  if (count) *count = std::int64_t(j.size());
  return status::ok();
}

// A typed graph's nodes of `type` (one group per type named).
graph::typed_nodes& group_of(rpc::graph_edit& e, const std::string& type) {
  for (auto& n : e.nodes)
    if (n.type == type) return n;
  e.nodes.push_back({});
  e.nodes.back().type = type;
  return e.nodes.back();
}

// {"src,rel,dst": [[src, ...], [dst, ...]] (with [w, ...] third when adding), ...}
status typed_edges_of(const json& j, std::string_view field, std::vector<graph::typed_edges>& out) {
  for (const auto& [type, value] : j.items()) {
    const std::string what = fmt::format("{}['{}']", field, type.substr(0, 64));
    graph::typed_edges g;
    g.type = type;
    if (!value.is_array() || value.size() < 2 || value.size() > 3)
      return make_error(errc::invalid_argument, "{}: expected [[src, ...], [dst, ...]]", what);
    SPINDLE_TRY(list_of(value[0], what + "[0]", g.src));
    SPINDLE_TRY(list_of(value[1], what + "[1]", g.dst));
    if (value.size() == 3) SPINDLE_TRY(list_of(value[2], what + "[2]", g.weight));
    out.push_back(std::move(g));
  }
  return status::ok();
}

// A typed graph's node changes: add_nodes {"type": [[row], ...] or a count},
// set_features {"type": {"ids", "rows"}}, remove_nodes {"type": [ids]}.
status typed_nodes_of(const json& j, const std::string& field, rpc::graph_edit& e) {
  for (const auto& [type, value] : j.items()) {
    const std::string what = fmt::format("{}['{}']", field, type.substr(0, 64));
    auto& g = group_of(e, type);
    if (field == "add_nodes" && value.is_number_integer()) {
      g.add += value.get<std::int64_t>();
    } else if (field == "add_nodes") {
      std::int64_t n = 0;
      SPINDLE_TRY(rows_of(value, what, g.add_rows, &n));
      g.add += n;
    } else if (field == "set_features") {
      if (!value.is_object() || !value.contains("ids") || !value.contains("rows"))
        return make_error(errc::invalid_argument,
                          "{}: expected {{\"ids\", \"rows\"}} (a typed graph's set_features is "
                          "keyed by node type; an untyped graph's is {{\"ids\": [...], \"rows\": "
                          "[...]}})",
                          what);
      SPINDLE_TRY(list_of(value["ids"], what + ".ids", g.set_ids));
      SPINDLE_TRY(rows_of(value["rows"], what + ".rows", g.set_rows));
    } else {
      SPINDLE_TRY(list_of(value, what, g.remove));
    }
  }
  return status::ok();
}

// set_features keyed by node type, not the untyped {"ids": [...], "rows": [...]}:
// a node type may itself be named "ids" (its value is then an object).
bool keyed_by_type(const json& value) {
  return value.is_object() && (!value.contains("ids") || value["ids"].is_object());
}

}  // namespace

expected<rpc::graph_edit> graph_edit_of_json(std::string_view body) {
  if (json_depth(body, kMaxDepth) > kMaxDepth)
    return make_error(errc::invalid_argument, "request body nests deeper than {} levels",
                      kMaxDepth);
  // A key given twice in one object would keep only its last value: part of an
  // acknowledged batch lost. Refused, naming it.
  std::vector<std::set<std::string>> keys;
  std::string repeated;
  const json j = json::parse(
      body,
      [&](int, json::parse_event_t event, json& parsed) {
        if (event == json::parse_event_t::object_start) keys.emplace_back();
        if (event == json::parse_event_t::object_end && !keys.empty()) keys.pop_back();
        if (event == json::parse_event_t::key && !keys.empty() &&
            !keys.back().insert(parsed.get<std::string>()).second && repeated.empty())
          repeated = parsed.get<std::string>();
        return true;
      },
      false);
  if (!repeated.empty())
    return make_error(errc::invalid_argument,
                      "request body: key '{}' appears twice in one object (give each field and "
                      "type once)",
                      repeated.substr(0, 64));
  if (j.is_discarded() || !j.is_object())
    return make_error(errc::invalid_argument, "request body is not a JSON object");
  rpc::graph_edit e;
  for (const auto& [key, value] : j.items()) {
    const bool typed = value.is_object() && key != "set_features";
    if (typed && (key == "add_edges" || key == "remove_edges")) {  // keyed by edge type
      SPINDLE_TRY(typed_edges_of(value, key, key == "add_edges" ? e.add_typed : e.remove_typed));
    } else if ((typed && (key == "add_nodes" || key == "remove_nodes")) ||
               (key == "set_features" && keyed_by_type(value))) {
      SPINDLE_TRY(typed_nodes_of(value, key, e));  // keyed by node type
    } else if (key == "add_edges") {
      SPINDLE_TRY(edges_of(value, key, e.add_src, e.add_dst));
    } else if (key == "add_weights") {
      SPINDLE_TRY(list_of(value, key, e.add_weight));
    } else if (key == "remove_edges") {
      SPINDLE_TRY(edges_of(value, key, e.remove_src, e.remove_dst));
    } else if (key == "add_nodes") {
      SPINDLE_TRY(rows_of(value, key, e.add_node_features, &e.add_nodes));
    } else if (key == "set_features") {
      if (!value.is_object() || !value.contains("ids") || !value.contains("rows"))
        return make_error(errc::invalid_argument, "set_features: expected {{\"ids\", \"rows\"}}");
      SPINDLE_TRY(list_of(value["ids"], "set_features.ids", e.set_ids));
      SPINDLE_TRY(rows_of(value["rows"], "set_features.rows", e.set_rows));
    } else if (key == "remove_nodes") {
      SPINDLE_TRY(list_of(value, key, e.remove_nodes));
    } else {
      return make_error(errc::invalid_argument,
                        "unknown field '{}' (add_edges, add_weights, remove_edges, add_nodes, "
                        "set_features, remove_nodes)",
                        key.substr(0, 64));
    }
  }
  return e;
}

std::string graph_answer_json(const rpc::graph_edit_answer& a,
                              const std::vector<std::pair<std::string, std::int64_t>>& added,
                              bool typed) {
  json out{{"version", a.version}, {"nodes", a.nodes}, {"new_ids", a.new_ids}};
  if (!typed && added.empty()) return out.dump();
  json by_type = json::object();
  std::size_t next = 0;
  for (const auto& [type, count] : added) {
    if (count <= 0) continue;  // a type only changed or removed gained no ids
    auto& ids = by_type[type];
    if (ids.is_null()) ids = json::array();
    for (std::int64_t k = 0; k < count && next < a.new_ids.size(); ++k)
      ids.push_back(a.new_ids[next++]);
  }
  out["new_ids_by_type"] = std::move(by_type);
  return out.dump();
}

}  // namespace spindle::transport::kserve
