// metadata.json <-> dataset_metadata. nlohmann::json exceptions stop here and
// become status values naming the field.
#include <cstdio>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <type_traits>

#include "core/checksum.hpp"
#include "core/text_file.hpp"
#include "graph/dataset.hpp"
#include "graph/detail/json_field.hpp"

namespace spindle::graph {
namespace {

using nlohmann::json;

json to_json(const array_record& r) {
  return json{{"file", r.file},
              {"dtype", std::string(to_string(r.type))},
              {"shape", r.shape},
              {"bytes", r.bytes},
              {"xxh3_64", checksum_hex(r.checksum)}};
}

// A field of an arrays entry: "missing field 'X'" or "field 'X' is not T"
// instead of the JSON library's message.
template <class T>
expected<T> field(const json& j, const std::string& name, const char* key, const char* kind) {
  if (!j.is_object() || !j.contains(key))
    return make_error(errc::corrupt_data, "metadata.json: arrays.{}: missing field '{}'", name,
                      key);
  if constexpr (std::is_unsigned_v<T>)
    if (!j.at(key).is_number_unsigned())  // the JSON library would wrap -1 around
      return make_error(errc::corrupt_data, "metadata.json: arrays.{}.{} is not {}", name, key,
                        kind);
  try {
    return j.at(key).get<T>();
  } catch (const std::exception&) {
    return make_error(errc::corrupt_data, "metadata.json: arrays.{}.{} is not {}", name, key, kind);
  }
}

expected<array_record> record_from_json(const std::string& name, const json& j) {
  array_record r;
  SPINDLE_ASSIGN_OR_RETURN(r.file, field<std::string>(j, name, "file", "a string"));
  SPINDLE_ASSIGN_OR_RETURN(auto dtype, field<std::string>(j, name, "dtype", "a string"));
  auto type = parse_dtype_name(dtype);
  if (!type)
    return make_error(errc::corrupt_data, "metadata.json: arrays.{}.dtype: {}", name,
                      type.error().message());
  r.type = *type;
  SPINDLE_ASSIGN_OR_RETURN(r.shape, field<std::vector<std::int64_t>>(j, name, "shape",
                                                                     "a list of integers"));
  SPINDLE_ASSIGN_OR_RETURN(r.bytes, field<std::uint64_t>(j, name, "bytes", "an unsigned integer"));
  SPINDLE_ASSIGN_OR_RETURN(auto hex, field<std::string>(j, name, "xxh3_64", "a string"));
  const bool is_hex = !hex.empty() && hex.size() <= 16 &&
                      hex.find_first_not_of("0123456789abcdefABCDEF") == std::string::npos;
  if (!is_hex)
    return make_error(errc::corrupt_data,
                      "metadata.json: arrays.{}.xxh3_64 '{}' is not a 64-bit hexadecimal checksum",
                      name, hex.substr(0, 32));
  r.checksum = std::stoull(hex, nullptr, 16);
  if (r.file.find('/') != std::string::npos || r.file.empty())
    return make_error(errc::corrupt_data,
                      "metadata.json: arrays.{}.file '{}' must be a plain file name", name, r.file);
  return r;
}

// One key of node_types[i] / edge_types[i].
template <class T>
expected<T> type_field(const json& j, const char* list, std::size_t i, const char* key,
                       const char* kind) {
  return detail::json_field<T>(j, fmt::format("metadata.json: {}[{}]", list, i), key, kind,
                               errc::corrupt_data);
}

status parse_types(const json& j, dataset_metadata& m) {
  for (const char* list : {"node_types", "edge_types"})
    if (j.contains(list) && !j.at(list).is_array())
      return make_error(errc::corrupt_data, "metadata.json: {} is not a list", list);
  const json none = json::array();
  const json& nodes = j.contains("node_types") ? j.at("node_types") : none;
  const json& edges = j.contains("edge_types") ? j.at("edge_types") : none;
  for (std::size_t i = 0; i < nodes.size(); ++i) {
    node_type_info t;
    const char* l = "node_types";
    SPINDLE_ASSIGN_OR_RETURN(t.name, type_field<std::string>(nodes[i], l, i, "name", "a string"));
    SPINDLE_ASSIGN_OR_RETURN(t.offset, type_field<std::int64_t>(nodes[i], l, i, "offset", "an integer"));
    SPINDLE_ASSIGN_OR_RETURN(t.count, type_field<std::int64_t>(nodes[i], l, i, "count", "an integer"));
    SPINDLE_ASSIGN_OR_RETURN(t.feature_dim,
                             type_field<std::int64_t>(nodes[i], l, i, "feature_dim", "an integer"));
    m.node_types.push_back(std::move(t));
  }
  for (std::size_t i = 0; i < edges.size(); ++i) {
    edge_type_info t;
    const char* l = "edge_types";
    SPINDLE_ASSIGN_OR_RETURN(t.src, type_field<std::string>(edges[i], l, i, "src", "a string"));
    SPINDLE_ASSIGN_OR_RETURN(t.rel, type_field<std::string>(edges[i], l, i, "rel", "a string"));
    SPINDLE_ASSIGN_OR_RETURN(t.dst, type_field<std::string>(edges[i], l, i, "dst", "a string"));
    SPINDLE_ASSIGN_OR_RETURN(t.count, type_field<std::int64_t>(edges[i], l, i, "count", "an integer"));
    m.edge_types.push_back(std::move(t));
  }
  return status::ok();
}

// A typed dataset's types_xxh3_64 against its parsed typing.
status check_typing_checksum(const json& j, const dataset_metadata& m) {
  if (!m.typed()) return status::ok();
  const std::string want = checksum_hex(typing_checksum(m));
  if (!j.contains("types_xxh3_64") || !j.at("types_xxh3_64").is_string())
    return make_error(errc::corrupt_data,
                      "metadata.json: a typed dataset needs types_xxh3_64 (its node and edge "
                      "types' checksum); prepare it again");
  const auto got = j.at("types_xxh3_64").get<std::string>();
  if (got != want)
    return make_error(errc::corrupt_data,
                      "metadata.json: node_types/edge_types do not match types_xxh3_64 ({} "
                      "stored, {} computed): the typing was edited or damaged; prepare the "
                      "dataset again",
                      got.substr(0, 32), want);
  return status::ok();
}

status parse_metadata(const json& j, dataset_metadata& m) {
  if (j.value("format", "") != "spindle-dataset")
    return make_error(errc::corrupt_data, "metadata.json: 'format' is not \"spindle-dataset\"");
  m.format_version = j.at("format_version").get<int>();
  if (m.format_version != kDatasetFormatVersion)
    return make_error(errc::unsupported, "metadata.json: format_version {} (this build reads {})",
                      m.format_version, kDatasetFormatVersion);
  m.name = j.value("name", "");
  m.source = j.value("source", "");
  m.num_nodes = j.at("num_nodes").get<std::int64_t>();
  m.num_edges = j.at("num_edges").get<std::int64_t>();
  m.feature_dim = j.value("feature_dim", std::int64_t{0});
  m.num_classes = j.value("num_classes", std::int64_t{0});
  m.undirected = j.value("undirected", false);
  m.edge_direction = j.value("edge_direction", std::string());
  if (!m.edge_direction.empty() && m.edge_direction != "in" && m.edge_direction != "out" &&
      m.edge_direction != "both")
    return make_error(errc::corrupt_data, "edge_direction = '{}': expected in, out or both",
                      m.edge_direction.substr(0, 64));
  if (j.contains("metrics")) {
    const json& mj = j.at("metrics");
    m.fanouts = mj.at("fanouts").get<std::vector<int>>();
    m.seed_distribution = mj.at("seed_distribution").get<std::string>();
    m.seed_node_types = mj.value("seed_node_types", std::vector<std::string>{});
    m.hop_mass = mj.value("hop_mass", std::vector<double>{});
  }
  m.build = j.value("build", std::map<std::string, std::string>{});
  for (const auto& [name, rj] : j.at("arrays").items()) {
    SPINDLE_ASSIGN_OR_RETURN(auto r, record_from_json(name, rj));
    m.arrays[name] = std::move(r);
  }
  if (m.num_nodes < 0 || m.num_edges < 0 || m.feature_dim < 0 || m.num_classes < 0)
    return make_error(errc::corrupt_data,
                      "metadata.json: negative count (num_nodes={}, num_edges={})", m.num_nodes,
                      m.num_edges);
  SPINDLE_TRY(parse_types(j, m));
  SPINDLE_TRY(validate_types(m));
  return check_typing_checksum(j, m);
}

}  // namespace

std::string metadata_to_json(const dataset_metadata& m) {
  json j{{"format", "spindle-dataset"},
         {"format_version", m.format_version},
         {"name", m.name},
         {"source", m.source},
         {"num_nodes", m.num_nodes},
         {"num_edges", m.num_edges},
         {"feature_dim", m.feature_dim},
         {"num_classes", m.num_classes},
         {"undirected", m.undirected},
         {"edge_direction", m.edge_direction},
         {"build", m.build}};
  if (!m.fanouts.empty())
    j["metrics"] = {
        {"fanouts", m.fanouts},
        {"seed_distribution", m.seed_distribution},
        {"hop_mass", m.hop_mass},
        {"seed_node_types", m.seed_node_types},
        {"definition", "expected visit counts per request (docs/datasets.md); psgs includes the seed"}};
  if (m.typed() || !m.edge_types.empty()) {
    json nodes = json::array(), edges = json::array();
    for (const auto& t : m.node_types)
      nodes.push_back(
          {{"name", t.name}, {"offset", t.offset}, {"count", t.count}, {"feature_dim", t.feature_dim}});
    for (const auto& t : m.edge_types)
      edges.push_back({{"src", t.src}, {"rel", t.rel}, {"dst", t.dst}, {"count", t.count}});
    j["node_types"] = nodes;
    j["edge_types"] = edges;
    j["types_xxh3_64"] = checksum_hex(typing_checksum(m));
  }
  json arrays = json::object();
  for (const auto& [name, r] : m.arrays) arrays[name] = to_json(r);
  j["arrays"] = arrays;
  return j.dump(2) + "\n";
}

expected<dataset_metadata> read_metadata(const std::string& dir) {
  std::string path = dir + "/metadata.json";
  auto text = read_text_file(path, "dataset metadata");
  if (!text && text.error().code() == errc::not_found)
    return make_error(errc::not_found, "{}: cannot open (is '{}' a dataset directory?)", path, dir);
  if (!text) return std::move(text).error();
  dataset_metadata m;
  try {
    json j = json::parse(*text);
    if (auto st = parse_metadata(j, m); !st)  // every error names the file
      return st.message().find("metadata.json") != std::string::npos
                 ? st
                 : std::move(st).with_context(fmt::format("{}: ", path));
  } catch (const std::exception& e) {
    return make_error(errc::corrupt_data, "{}: {}", path, e.what());
  }
  return m;
}

}  // namespace spindle::graph
