#include "transport/kserve/triton_extensions.hpp"

#include <nlohmann/json.hpp>

namespace spindle::transport::kserve {
namespace {

using json = nlohmann::json;

constexpr std::pair<std::string_view, int> kTypes[] = {
    {"BOOL", 1},  {"UINT8", 2}, {"UINT16", 3}, {"UINT32", 4}, {"UINT64", 5},
    {"INT8", 6},  {"INT16", 7}, {"INT32", 8},  {"INT64", 9},  {"FP16", 10},
    {"FP32", 11}, {"FP64", 12}, {"BYTES", 13}, {"BF16", 14}};

duration_stat duration_of(const json& model, const char* key) {
  const auto& d = model["durations_ns"][key];
  return {d[0].get<std::uint64_t>(), d[1].get<std::uint64_t>()};
}

json duration_json(const duration_stat& d) { return {{"count", d.count}, {"ns", d.ns}}; }

}  // namespace

int triton_type_code(std::string_view datatype) {
  for (auto [name, code] : kTypes)
    if (name == datatype) return code;
  return 0;  // TYPE_INVALID
}

std::string triton_type(std::string_view datatype) {
  if (datatype == "BYTES") return "TYPE_STRING";
  return triton_type_code(datatype) ? "TYPE_" + std::string(datatype) : "TYPE_INVALID";
}

std::vector<model_statistics> statistics_of(rpc::rpc_service& service, const std::string& name) {
  std::vector<model_statistics> out;
  const auto stats = json::parse(service.stats_json(), nullptr, false);
  if (stats.is_discarded() || !stats.contains("models")) return out;
  for (const auto& m : service.models()) {
    if (!name.empty() && m.name != name) continue;
    if (!stats["models"].contains(m.name)) continue;
    const auto& j = stats["models"][m.name];
    if (!j.contains("durations_ns")) continue;
    model_statistics s;
    s.name = m.name;
    s.version = m.version;
    s.last_inference_ms = j.value("last_inference_ms", std::uint64_t{0});
    s.inference_count = j.value("inferences", std::uint64_t{0});
    s.execution_count = j.value("executions", std::uint64_t{0});
    s.success = duration_of(j, "success");
    s.fail = duration_of(j, "fail");
    s.queue = duration_of(j, "queue");
    s.compute_infer = duration_of(j, "compute");
    out.push_back(std::move(s));
  }
  return out;
}

std::string config_json(const model_metadata& m) {
  auto tensors = [](const std::vector<tensor_metadata>& ts, bool inputs) {
    json out = json::array();
    for (const auto& t : ts) {
      json x = {{"name", t.name}, {"data_type", triton_type(t.datatype)}, {"dims", t.shape}};
      if (inputs) x["optional"] = t.optional;
      out.push_back(std::move(x));
    }
    return out;
  };
  // max_batch_size 0: the batch is in the tensors' own first dimension (-1),
  // and Spindle batches calls itself.
  json j{{"name", m.name},
         {"platform", m.platform},
         {"backend", "spindle"},
         {"max_batch_size", 0},
         {"input", tensors(m.inputs, true)},
         {"output", tensors(m.outputs, false)}};
  for (const auto& [k, v] : m.parameters) j["parameters"][k] = {{"string_value", v}};
  return j.dump();
}

std::string statistics_json(const std::vector<model_statistics>& stats) {
  json list = json::array();
  for (const auto& s : stats)
    list.push_back({{"name", s.name},
                    {"version", s.version},
                    {"last_inference", s.last_inference_ms},
                    {"inference_count", s.inference_count},
                    {"execution_count", s.execution_count},
                    {"inference_stats",
                     {{"success", duration_json(s.success)},
                      {"fail", duration_json(s.fail)},
                      {"queue", duration_json(s.queue)},
                      {"compute_input", duration_json({})},
                      {"compute_infer", duration_json(s.compute_infer)},
                      {"compute_output", duration_json({})}}},
                    {"batch_stats", json::array()}});
  return json{{"model_stats", list}}.dump();
}

}  // namespace spindle::transport::kserve
