#include "transport/kserve/infer_json.hpp"

#include <algorithm>
#include <limits>
#include <nlohmann/json.hpp>

#include "core/json_depth.hpp"

namespace spindle::transport::kserve {
namespace {

using json = nlohmann::json;

// Row-major flattening of `data` (nested lists) into the tensor's contents.
status flatten(const json& data, tensor& t) {
  if (data.is_array()) {
    for (const auto& x : data) SPINDLE_TRY(flatten(x, t));
    return status::ok();
  }
  if (t.is_bytes()) {
    if (!data.is_string())
      return make_error(errc::invalid_argument, "input '{}': BYTES data must be strings, got {}",
                        t.name, data.dump().substr(0, 40));
    t.strings.push_back(data.get<std::string>());
  } else if (t.is_float()) {
    if (!data.is_number())
      return make_error(errc::invalid_argument, "input '{}': {} data must be numbers, got {}",
                        t.name, t.datatype, data.dump().substr(0, 40));
    t.floats.push_back(data.get<float>());
  } else if (data.is_boolean() && t.datatype == "BOOL") {
    t.ints.push_back(data.get<bool>() ? 1 : 0);
  } else {
    if (!data.is_number_integer())
      return make_error(errc::invalid_argument, "input '{}': {} data must be integers, got {}",
                        t.name, t.datatype, data.dump().substr(0, 40));
    if (data.is_number_unsigned() &&
        data.get<std::uint64_t>() > std::uint64_t(std::numeric_limits<std::int64_t>::max()))
      return make_error(errc::invalid_argument, "input '{}': {} is past INT64", t.name,
                        data.dump());
    t.ints.push_back(data.get<std::int64_t>());
  }
  return status::ok();
}

expected<std::uint64_t> unsigned_parameter(const json& p, const char* name) {
  const auto& v = p[name];
  if (!v.is_number_integer() ||
      (v.is_number_integer() && !v.is_number_unsigned() && v.get<std::int64_t>() < 0))
    return make_error(errc::invalid_argument, "parameters.{}: {} is not an integer >= 0", name,
                      v.dump().substr(0, 40));
  return v.get<std::uint64_t>();
}

expected<tensor> parse_input(const json& in, std::size_t index, std::string_view binary,
                             std::size_t& binary_at) {
  if (!in.is_object())
    return make_error(errc::invalid_argument, "inputs[{}]: not an object", index);
  tensor t;
  try {
    t.name = in.at("name").get<std::string>();
    t.datatype = in.at("datatype").get<std::string>();
    for (const auto& d : in.at("shape")) t.shape.push_back(d.get<std::int64_t>());
  } catch (const json::exception&) {
    return make_error(errc::invalid_argument,
                      "inputs[{}]: needs \"name\" (string), \"datatype\" (string) and \"shape\" "
                      "(list of integers)",
                      index);
  }
  if (!known_datatype(t.datatype))
    return make_error(errc::invalid_argument, "input '{}': unknown datatype '{}'", t.name,
                      t.datatype.substr(0, 32));
  const json* size = nullptr;
  if (in.contains("parameters") && in["parameters"].is_object() &&
      in["parameters"].contains("binary_data_size"))
    size = &in["parameters"]["binary_data_size"];
  if (size) {
    if (!size->is_number_unsigned())
      return make_error(errc::invalid_argument, "input '{}': binary_data_size {} is not a size",
                        t.name, size->dump().substr(0, 40));
    const auto n = size->get<std::uint64_t>();
    if (n > binary.size() - binary_at)
      return make_error(errc::invalid_argument,
                        "input '{}': binary_data_size {} but only {} binary bytes remain", t.name,
                        n, binary.size() - binary_at);
    SPINDLE_TRY(decode_raw(t, binary.substr(binary_at, n)));
    binary_at += n;
  } else {
    if (!in.contains("data"))
      return make_error(errc::invalid_argument, "input '{}': no \"data\" and no binary_data_size",
                        t.name);
    SPINDLE_TRY(flatten(in["data"], t));
  }
  SPINDLE_TRY(check_shape(t));
  return t;
}

}  // namespace

expected<infer_request> parse_infer_request(std::string_view body,
                                            std::optional<std::size_t> header_length) {
  if (header_length && *header_length > body.size())
    return make_error(errc::invalid_argument,
                      "Inference-Header-Content-Length {} is past the body's {} bytes",
                      *header_length, body.size());
  const std::string_view head = body.substr(0, header_length.value_or(body.size()));
  const std::string_view binary = body.substr(head.size());
  if (json_depth(head, kMaxJsonDepth) > kMaxJsonDepth)
    return make_error(errc::invalid_argument, "request JSON is nested deeper than {} levels",
                      kMaxJsonDepth);
  json j = json::parse(head, nullptr, false);
  if (j.is_discarded() || !j.is_object())
    return make_error(errc::invalid_argument, "request body is not a JSON object{}",
                      header_length ? " (in its Inference-Header-Content-Length bytes)" : "");
  infer_request r;
  if (j.contains("id")) {
    if (!j["id"].is_string()) return make_error(errc::invalid_argument, "\"id\" must be a string");
    r.id = j["id"].get<std::string>();
  }
  if (j.contains("parameters") && j["parameters"].is_object()) {
    const auto& p = j["parameters"];
    if (p.contains("binary_data_output")) r.binary_outputs = p["binary_data_output"] == true;
    if (p.contains("timeout")) {
      SPINDLE_ASSIGN_OR_RETURN(r.timeout_us, unsigned_parameter(p, "timeout"));
    }
    if (p.contains("sampler_seed")) {
      SPINDLE_ASSIGN_OR_RETURN(r.sampler_seed, unsigned_parameter(p, "sampler_seed"));
    }
    if (p.contains("min_version")) {
      SPINDLE_ASSIGN_OR_RETURN(r.min_version, unsigned_parameter(p, "min_version"));
    }
    if (p.contains("node_type")) {
      if (!p["node_type"].is_string())
        return make_error(errc::invalid_argument, "parameters.node_type must be a string");
      r.node_type = p["node_type"].get<std::string>();
    }
  }
  if (!j.contains("inputs") || !j["inputs"].is_array() || j["inputs"].empty())
    return make_error(errc::invalid_argument, "\"inputs\" must be a non-empty list");
  std::size_t binary_at = 0;
  for (std::size_t i = 0; i < j["inputs"].size(); ++i) {
    SPINDLE_ASSIGN_OR_RETURN(auto t, parse_input(j["inputs"][i], i, binary, binary_at));
    r.inputs.push_back(std::move(t));
  }
  if (binary_at != binary.size())
    return make_error(errc::invalid_argument,
                      "{} binary bytes follow the JSON header but the inputs' binary_data_size "
                      "add up to {}",
                      binary.size(), binary_at);
  if (j.contains("outputs")) {
    if (!j["outputs"].is_array())
      return make_error(errc::invalid_argument, "\"outputs\" must be a list");
    for (const auto& o : j["outputs"]) {
      if (!o.is_object() || !o.contains("name") || !o["name"].is_string())
        return make_error(errc::invalid_argument, "outputs: each needs a \"name\"");
      requested_output out{o["name"].get<std::string>(), r.binary_outputs};
      if (o.contains("parameters") && o["parameters"].is_object() &&
          o["parameters"].contains("binary_data"))
        out.binary = o["parameters"]["binary_data"] == true;
      r.outputs.push_back(std::move(out));
    }
  }
  return r;
}

std::string render_infer_response(const infer_response& r,
                                  std::optional<std::size_t>& header_length) {
  json j = {{"model_name", r.model}, {"model_version", r.version}};
  if (!r.id.empty()) j["id"] = r.id;
  if (r.graph_version) j["parameters"] = {{"graph_version", *r.graph_version}};
  j["outputs"] = json::array();
  std::string binary;
  for (const auto& o : r.outputs) {
    json out = {{"name", o.name}, {"datatype", o.datatype}, {"shape", o.shape}};
    if (o.binary) {
      const std::size_t n = o.data.size() * sizeof(float);
      out["parameters"] = {{"binary_data_size", n}};
      binary.append(reinterpret_cast<const char*>(o.data.data()), n);
    } else {
      out["data"] = o.data;
    }
    j["outputs"].push_back(std::move(out));
  }
  std::string body = j.dump(-1, ' ', false, json::error_handler_t::replace);
  header_length.reset();
  if (!binary.empty() || std::any_of(r.outputs.begin(), r.outputs.end(),
                                     [](const output_tensor& o) { return o.binary; })) {
    header_length = body.size();
    body += binary;
  }
  return body;
}

std::string error_body(std::string_view message) {
  return json{{"error", message}}.dump(-1, ' ', false, json::error_handler_t::replace);
}

}  // namespace spindle::transport::kserve
