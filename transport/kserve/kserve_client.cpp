#include "transport/kserve/kserve_client.hpp"

#include "transport/kserve/infer_json.hpp"

#include <grpcpp/grpcpp.h>
#include <httplib.h>

#include <chrono>
#include <cstring>
#include <nlohmann/json.hpp>

#include "core/raw_bytes.hpp"
#include "grpc_service.grpc.pb.h"
#include "transport/rpc/endpoint.hpp"

namespace spindle::transport::kserve {
namespace {

using json = nlohmann::json;
using rpc::rpc_status;
namespace pb = inference;

// One call, whatever the protocol: raw little-endian inputs, the output wanted.
struct raw_input {
  std::string name, datatype;
  std::vector<std::int64_t> shape;
  std::string bytes;
};
struct raw_request {
  std::string model, output;
  std::vector<raw_input> inputs;
  std::uint64_t sampler_seed = 0, timeout_us = 0;  // 0: not sent
};
// What came back: the output's floats and shape, or a refusal.
struct raw_answer {
  rpc_status status = rpc_status::ok;
  std::string message;
  std::vector<float> data;
  std::vector<std::int64_t> shape;
};

raw_request request_of(const rpc::gnn_call& c) {
  raw_request r{c.model, "output", {}, c.sampler_seed, c.deadline_us};
  r.inputs.push_back({"seeds", "INT64", {std::int64_t(c.seeds.size())}, raw_bytes_of(c.seeds)});
  return r;
}

raw_request request_of(const rpc::rec_call& c) {
  raw_request r{c.model, "scores", {}, 0, c.deadline_us};
  const std::int64_t batch = c.batch, width = batch ? std::int64_t(c.dense.size()) / batch : 0;
  r.inputs.push_back({"dense", "FP32", {batch, width}, raw_bytes_of(c.dense)});
  for (std::size_t t = 0; t < c.sparse.size(); ++t) {
    const auto& bag = c.sparse[t];
    r.inputs.push_back({"indices_" + std::to_string(t), "INT64",
                        {std::int64_t(bag.indices.size())}, raw_bytes_of(bag.indices)});
    r.inputs.push_back({"offsets_" + std::to_string(t), "INT64",
                        {std::int64_t(bag.offsets.size())}, raw_bytes_of(bag.offsets)});
  }
  return r;
}

rpc::gnn_answer gnn_answer_of(raw_answer a) {
  const std::uint32_t width = a.shape.size() == 2 ? std::uint32_t(a.shape[1]) : 0;
  return {a.status, std::move(a.message), width, std::move(a.data)};
}

rpc::rec_answer rec_answer_of(raw_answer a) {
  return {a.status, std::move(a.message), std::move(a.data)};
}

// A model's description from its configuration's inputs and parameters.
struct config_input {
  std::string name;
  std::vector<std::int64_t> dims;
};
expected<rpc::model_info> info_of(const std::string& model, const std::string& platform,
                                  const std::vector<config_input>& inputs,
                                  const std::string& table_rows) {
  rpc::model_info m;
  m.name = model;
  m.arch = platform.starts_with("spindle_") ? platform.substr(8) : platform;
  m.kind = "rec";
  for (const auto& in : inputs) {
    if (in.name == "seeds") m.kind = "gnn";
    if (in.name == "dense" && in.dims.size() == 2) m.input_width = std::uint32_t(in.dims[1]);
    if (in.name.starts_with("indices_")) ++m.tables;
  }
  if (m.kind == "gnn") return m;
  std::size_t at = 0;
  while (at < table_rows.size()) {
    const auto comma = std::min(table_rows.find(',', at), table_rows.size());
    m.table_rows.push_back(std::stoull(table_rows.substr(at, comma - at)));
    at = comma + 1;
  }
  if (m.table_rows.size() != m.tables)
    return make_error(errc::unsupported,
                      "model '{}': its configuration gives {} table sizes for {} tables (a "
                      "server before table_rows?)",
                      model, m.table_rows.size(), m.tables);
  return m;
}

// ---- HTTP -----------------------------------------------------------------



// The output `name` of a binary-extension answer (JSON header, then bytes).
raw_answer parse_http_answer(const httplib::Result& res, const std::string& name) {
  raw_answer a;
  std::size_t head = res->body.size();
  if (res->has_header(kHeaderLength)) head = std::stoul(res->get_header_value(kHeaderLength));
  auto j = json::parse(std::string_view(res->body).substr(0, std::min(head, res->body.size())),
                       nullptr, false);
  if (j.is_discarded() || !j.contains("outputs")) {
    a.status = rpc_status::internal;
    a.message = "the door's answer is not KServe JSON";
    return a;
  }
  std::size_t at = head;
  for (const auto& o : j["outputs"]) {
    std::size_t n = 0;
    if (o.contains("parameters") && o["parameters"].contains("binary_data_size"))
      n = o["parameters"]["binary_data_size"].get<std::size_t>();
    if (o.value("name", "") == name) {
      a.shape = o.value("shape", std::vector<std::int64_t>{});
      if (n > 0 && at + n <= res->body.size()) {
        a.data.resize(n / sizeof(float));
        std::memcpy(a.data.data(), res->body.data() + at, a.data.size() * sizeof(float));
      } else if (o.contains("data")) {
        a.data = o["data"].get<std::vector<float>>();
      }
      return a;
    }
    at += n;
  }
  a.status = rpc_status::internal;
  a.message = "the door's answer has no output '" + name + "'";
  return a;
}

// What the two protocols share: a call goes as one raw request and its raw
// answer becomes the call's answer. A protocol sends the request (`infer`).
class raw_door : public door_client {
 public:
  explicit raw_door(std::string endpoint) : endpoint_(std::move(endpoint)) {}
  rpc::gnn_answer infer_gnn(const rpc::gnn_call& call) final {
    return gnn_answer_of(infer(request_of(call)));
  }
  rpc::rec_answer infer_rec(const rpc::rec_call& call) final {
    return rec_answer_of(infer(request_of(call)));
  }
  const std::string& endpoint() const final { return endpoint_; }

 protected:
  virtual raw_answer infer(const raw_request& r) = 0;

  const std::string endpoint_;
};

class http_door final : public raw_door {
 public:
  http_door(std::string endpoint, const std::string& host, int port, int timeout_ms)
      : raw_door(std::move(endpoint)), c_(host, port) {
    c_.set_keep_alive(true);
    c_.set_tcp_nodelay(true);
    const auto t = std::chrono::milliseconds(timeout_ms);
    c_.set_connection_timeout(t);
    c_.set_read_timeout(t);
    c_.set_write_timeout(t);
  }
  bool live() { return bool(c_.Get("/v2/health/live")); }
  expected<rpc::model_info> describe(const std::string& model) override {
    auto res = c_.Get("/v2/models/" + model + "/config");
    if (!res) return make_error(errc::unavailable, "{}: {}", endpoint_, httplib::to_string(res.error()));
    if (res->status != 200)
      return make_error(errc::not_found, "{}: model '{}': HTTP {}", endpoint_, model, res->status);
    auto j = json::parse(res->body, nullptr, false);
    if (j.is_discarded() || !j.contains("input"))
      return make_error(errc::corrupt_data, "{}: model '{}': config is not Triton JSON", endpoint_, model);
    std::vector<config_input> inputs;
    for (const auto& in : j["input"])
      inputs.push_back({in.value("name", ""), in.value("dims", std::vector<std::int64_t>{})});
    std::string rows;
    if (j.contains("parameters") && j["parameters"].contains("table_rows"))
      rows = j["parameters"]["table_rows"].value("string_value", "");
    return info_of(model, j.value("platform", ""), inputs, rows);
  }

 private:
  raw_answer infer(const raw_request& r) override {
    json j;
    j["inputs"] = json::array();
    std::string binary;
    for (const auto& in : r.inputs) {
      j["inputs"].push_back({{"name", in.name},
                             {"datatype", in.datatype},
                             {"shape", in.shape},
                             {"parameters", {{"binary_data_size", in.bytes.size()}}}});
      binary += in.bytes;
    }
    j["outputs"] = {{{"name", r.output}, {"parameters", {{"binary_data", true}}}}};
    if (r.sampler_seed) j["parameters"]["sampler_seed"] = r.sampler_seed;
    if (r.timeout_us) j["parameters"]["timeout"] = r.timeout_us;
    std::string body = j.dump();
    httplib::Headers h{{kHeaderLength, std::to_string(body.size())}};
    body += binary;
    auto res = c_.Post("/v2/models/" + r.model + "/infer", h, body, "application/octet-stream");
    if (!res) return {rpc_status::unavailable, endpoint_ + ": " + httplib::to_string(res.error())};
    if (res->status != 200) {
      auto e = json::parse(res->body, nullptr, false);
      return {status_of_http(res->status),
              e.is_object() && e.contains("error") && e["error"].is_string()
                  ? e["error"].get<std::string>()
                  : "HTTP " + std::to_string(res->status)};
    }
    return parse_http_answer(res, r.output);
  }

  httplib::Client c_;
};

// ---- gRPC -----------------------------------------------------------------

rpc_status status_of_grpc(grpc::StatusCode code) {
  switch (code) {
    case grpc::StatusCode::OK:
      return rpc_status::ok;
    case grpc::StatusCode::INVALID_ARGUMENT:
    case grpc::StatusCode::NOT_FOUND:
      return rpc_status::bad_request;
    case grpc::StatusCode::RESOURCE_EXHAUSTED:
      return rpc_status::overloaded;
    case grpc::StatusCode::DEADLINE_EXCEEDED:
      return rpc_status::deadline_exceeded;
    case grpc::StatusCode::UNAUTHENTICATED:
      return rpc_status::unauthorized;
    case grpc::StatusCode::UNAVAILABLE:
    case grpc::StatusCode::CANCELLED:  // this client cancels nothing: the server went away
      return rpc_status::unavailable;
    default:
      return rpc_status::internal;
  }
}

class grpc_door final : public raw_door {
 public:
  grpc_door(std::string endpoint, int timeout_ms)
      : raw_door(std::move(endpoint)), timeout_ms_(timeout_ms) {
    grpc::ChannelArguments args;
    args.SetInt("grpc.use_local_subchannel_pool", 1);  // a connection of its own
    stub_ = pb::GRPCInferenceService::NewStub(
        grpc::CreateCustomChannel(endpoint_, grpc::InsecureChannelCredentials(), args));
  }
  bool live() {
    grpc::ClientContext ctx;
    ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::milliseconds(timeout_ms_));
    pb::ServerLiveRequest req;
    pb::ServerLiveResponse resp;
    return stub_->ServerLive(&ctx, req, &resp).ok();
  }
  expected<rpc::model_info> describe(const std::string& model) override {
    grpc::ClientContext ctx;
    ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::milliseconds(timeout_ms_));
    pb::ModelConfigRequest req;
    req.set_name(model);
    pb::ModelConfigResponse resp;
    const grpc::Status st = stub_->ModelConfig(&ctx, req, &resp);
    if (!st.ok())
      return make_error(errc::not_found, "{}: model '{}': {}", endpoint_, model, st.error_message());
    std::vector<config_input> inputs;
    for (const auto& in : resp.config().input())
      inputs.push_back({in.name(), {in.dims().begin(), in.dims().end()}});
    const auto& params = resp.config().parameters();
    auto it = params.find("table_rows");
    return info_of(model, resp.config().platform(), inputs,
                   it == params.end() ? std::string() : it->second.string_value());
  }

 private:
  raw_answer infer(const raw_request& r) override {
    pb::ModelInferRequest req;
    req.set_model_name(r.model);
    for (const auto& in : r.inputs) {
      auto* x = req.add_inputs();
      x->set_name(in.name);
      x->set_datatype(in.datatype);
      for (auto d : in.shape) x->add_shape(d);
      req.add_raw_input_contents(in.bytes);
    }
    req.add_outputs()->set_name(r.output);
    if (r.sampler_seed) (*req.mutable_parameters())["sampler_seed"].set_uint64_param(r.sampler_seed);
    if (r.timeout_us) (*req.mutable_parameters())["timeout"].set_uint64_param(r.timeout_us);
    grpc::ClientContext ctx;
    ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::milliseconds(timeout_ms_));
    pb::ModelInferResponse resp;
    const grpc::Status st = stub_->ModelInfer(&ctx, req, &resp);
    if (!st.ok()) return {status_of_grpc(st.error_code()), st.error_message()};
    for (int i = 0; i < resp.outputs_size(); ++i) {
      if (resp.outputs(i).name() != r.output || i >= resp.raw_output_contents_size()) continue;
      raw_answer a;
      const auto& bytes = resp.raw_output_contents(i);
      a.data.resize(bytes.size() / sizeof(float));
      std::memcpy(a.data.data(), bytes.data(), a.data.size() * sizeof(float));
      a.shape.assign(resp.outputs(i).shape().begin(), resp.outputs(i).shape().end());
      return a;
    }
    return {rpc_status::internal, "the door's answer has no output '" + r.output + "'"};
  }

  int timeout_ms_;
  std::unique_ptr<pb::GRPCInferenceService::Stub> stub_;
};

}  // namespace

rpc::rpc_status status_of_http(int http_status) {
  switch (http_status) {
    case 200:
      return rpc_status::ok;
    case 400:
    case 404:
    case 411:
    case 413:
      return rpc_status::bad_request;
    case 429:
      return rpc_status::overloaded;
    case 503:
      return rpc_status::unavailable;
    case 408:
    case 504:
      return rpc_status::deadline_exceeded;
    case 401:
      return rpc_status::unauthorized;
    default:
      return rpc_status::internal;
  }
}

expected<std::unique_ptr<door_client>> connect_http(const std::string& endpoint, int timeout_ms) {
  SPINDLE_ASSIGN_OR_RETURN(auto hp, parse_host_port(endpoint, "--connect"));
  auto c = std::make_unique<http_door>(endpoint, hp.host, int(hp.port), timeout_ms);
  if (!c->live())
    return make_error(errc::unavailable, "{}: no KServe HTTP door answers /v2/health/live",
                      endpoint);
  return std::unique_ptr<door_client>(std::move(c));
}

expected<std::unique_ptr<door_client>> connect_grpc(const std::string& endpoint, int timeout_ms) {
  SPINDLE_TRY(parse_host_port(endpoint, "--connect").error_or_ok());
  auto c = std::make_unique<grpc_door>(endpoint, timeout_ms);
  if (!c->live())
    return make_error(errc::unavailable, "{}: no KServe gRPC door answers ServerLive", endpoint);
  return std::unique_ptr<door_client>(std::move(c));
}

}  // namespace spindle::transport::kserve
