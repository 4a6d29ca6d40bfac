#include "transport/kserve/grpc_server.hpp"

#include <grpcpp/resource_quota.h>

#include <grpcpp/grpcpp.h>
#include <grpcpp/server_posix.h>
#include <unistd.h>

#include <chrono>
#include <utility>

#include "core/call_origin.hpp"
#include "grpc_service.grpc.pb.h"
#include "transport/kserve/grpc_infer_loop.hpp"
#include "transport/kserve/lone_call_gate.hpp"
#include "transport/kserve/triton_extensions.hpp"
#include "transport/net/handoff_listener.hpp"
#include "transport/net/listen_socket.hpp"
#include "transport/rpc/endpoint.hpp"

namespace spindle::transport::kserve {
namespace {

namespace pb = ::inference;
using grpc::CallbackServerContext;
using grpc::ServerUnaryReactor;
using grpc::Status;
using grpc::StatusCode;

ServerUnaryReactor* finish(CallbackServerContext* ctx, Status st = Status::OK) {
  auto* r = ctx->DefaultReactor();
  r->Finish(std::move(st));
  return r;
}

grpc::StatusCode code_of(const infer_outcome& o) {
  // The HTTP door's status -> gRPC's; any other is INTERNAL.
  constexpr std::pair<int, StatusCode> kCodes[] = {
      {200, StatusCode::OK},
      {400, StatusCode::INVALID_ARGUMENT},
      {404, StatusCode::NOT_FOUND},
      {429, StatusCode::RESOURCE_EXHAUSTED},
      {503, StatusCode::UNAVAILABLE},
      {504, StatusCode::DEADLINE_EXCEEDED},
      {401, StatusCode::UNAUTHENTICATED},
  };
  const int http = http_status_of(o);
  for (const auto& [from, code] : kCodes)
    if (from == http) return code;
  return StatusCode::INTERNAL;
}

expected<std::uint64_t> unsigned_of(const pb::InferParameter& p, const char* name) {
  switch (p.parameter_choice_case()) {
    case pb::InferParameter::kUint64Param:
      return p.uint64_param();
    case pb::InferParameter::kInt64Param:
      if (p.int64_param() >= 0) return std::uint64_t(p.int64_param());
      break;
    default:
      break;
  }
  return make_error(errc::invalid_argument, "parameters.{}: not an integer >= 0", name);
}

// One input from typed contents (when no raw bytes came for it).
void from_contents(const pb::InferTensorContents& c, tensor& t) {
  if (t.is_bytes()) {
    t.strings.assign(c.bytes_contents().begin(), c.bytes_contents().end());
  } else if (t.is_float()) {
    t.floats.assign(c.fp32_contents().begin(), c.fp32_contents().end());
    for (double x : c.fp64_contents()) t.floats.push_back(float(x));
  } else {
    for (bool b : c.bool_contents()) t.ints.push_back(b);
    for (auto x : c.int_contents()) t.ints.push_back(x);
    for (auto x : c.int64_contents()) t.ints.push_back(x);
    for (auto x : c.uint_contents()) t.ints.push_back(std::int64_t(x));
    for (auto x : c.uint64_contents()) t.ints.push_back(std::int64_t(x));
  }
}

expected<infer_request> request_of(const pb::ModelInferRequest& in) {
  infer_request r;
  r.model = in.model_name();
  r.version = in.model_version();
  r.id = in.id();
  if (auto it = in.parameters().find("timeout"); it != in.parameters().end()) {
    SPINDLE_ASSIGN_OR_RETURN(r.timeout_us, unsigned_of(it->second, "timeout"));
  }
  if (auto it = in.parameters().find("sampler_seed"); it != in.parameters().end()) {
    SPINDLE_ASSIGN_OR_RETURN(r.sampler_seed, unsigned_of(it->second, "sampler_seed"));
  }
  if (auto it = in.parameters().find("min_version"); it != in.parameters().end()) {
    SPINDLE_ASSIGN_OR_RETURN(r.min_version, unsigned_of(it->second, "min_version"));
  }
  if (auto it = in.parameters().find("node_type"); it != in.parameters().end()) {
    if (!it->second.has_string_param())
      return make_error(errc::invalid_argument, "parameters.node_type must be a string");
    r.node_type = it->second.string_param();
  }
  const bool raw = in.raw_input_contents_size() > 0;
  if (raw && in.raw_input_contents_size() != in.inputs_size())
    return make_error(errc::invalid_argument, "{} raw_input_contents for {} inputs",
                      in.raw_input_contents_size(), in.inputs_size());
  for (int i = 0; i < in.inputs_size(); ++i) {
    const auto& x = in.inputs(i);
    tensor t;
    t.name = x.name();
    t.datatype = x.datatype();
    t.shape.assign(x.shape().begin(), x.shape().end());
    if (!known_datatype(t.datatype))
      return make_error(errc::invalid_argument, "input '{}': unknown datatype '{}'", t.name,
                        t.datatype.substr(0, 32));
    if (raw) {
      SPINDLE_TRY(decode_raw(t, in.raw_input_contents(i)));
    } else {
      from_contents(x.contents(), t);
    }
    SPINDLE_TRY(check_shape(t));
    r.inputs.push_back(std::move(t));
  }
  for (const auto& o : in.outputs()) r.outputs.push_back({o.name(), true});
  return r;
}

void fill(const infer_response& r, pb::ModelInferResponse& out) {
  out.set_model_name(r.model);
  out.set_model_version(r.version);
  out.set_id(r.id);
  if (r.graph_version)
    (*out.mutable_parameters())["graph_version"].set_uint64_param(*r.graph_version);
  for (const auto& o : r.outputs) {
    auto* t = out.add_outputs();
    t->set_name(o.name);
    t->set_datatype(o.datatype);
    for (auto d : o.shape) t->add_shape(d);
    out.add_raw_output_contents(reinterpret_cast<const char*>(o.data.data()),
                                o.data.size() * sizeof(float));
  }
}

bool authorized(CallbackServerContext* ctx, const std::string& token) {
  const auto& md = ctx->client_metadata();
  auto it = md.find("authorization");
  if (token.empty() || it == md.end()) return false;
  const std::string_view v(it->second.data(), it->second.size());
  return v.starts_with("Bearer ") && rpc::token_matches(v.substr(7), token);
}

// How long the gRPC door must have been without a call for the next one to be
// lone (lone_call_gate.hpp): longer than gRPC takes to hand a queued call to a
// free handler after an answer (a few us), shorter than a client's round trip
// (idle_latency.sh: every one of 2,200 closed-loop calls still found 60 us).
constexpr std::chrono::microseconds kLoneQuiet{20};

Status unknown_model(const std::string& name) {
  return Status(StatusCode::NOT_FOUND, "unknown model '" + name.substr(0, 64) + "'");
}

class service final : public grpc_door_service {
 public:
  service(door& d, std::string token) : d_(d), token_(std::move(token)) {}

  ServerUnaryReactor* ServerLive(CallbackServerContext* ctx, const pb::ServerLiveRequest*,
                                 pb::ServerLiveResponse* out) override {
    out->set_live(d_.live());
    return finish(ctx);
  }
  ServerUnaryReactor* ServerReady(CallbackServerContext* ctx, const pb::ServerReadyRequest*,
                                  pb::ServerReadyResponse* out) override {
    out->set_ready(d_.ready());
    return finish(ctx);
  }
  ServerUnaryReactor* ModelReady(CallbackServerContext* ctx, const pb::ModelReadyRequest* in,
                                 pb::ModelReadyResponse* out) override {
    if (!d_.known(in->name(), in->version())) return finish(ctx, unknown_model(in->name()));
    out->set_ready(d_.ready() && d_.model_ready(in->name(), in->version()));
    return finish(ctx);
  }
  ServerUnaryReactor* ServerMetadata(CallbackServerContext* ctx, const pb::ServerMetadataRequest*,
                                     pb::ServerMetadataResponse* out) override {
    out->set_name("spindle");
    out->set_version("0.1.0");
    out->add_extensions("model_repository");
    out->add_extensions("model_configuration");
    out->add_extensions("statistics");
    out->add_extensions("spindle_graph_updates");
    return finish(ctx);
  }
  ServerUnaryReactor* ModelConfig(CallbackServerContext* ctx, const pb::ModelConfigRequest* in,
                                  pb::ModelConfigResponse* out) override {
    auto m = d_.find(in->name(), in->version());
    if (!m) return finish(ctx, unknown_model(in->name()));
    const auto md = metadata_of(*m);
    auto* c = out->mutable_config();
    c->set_name(md.name);
    c->set_platform(md.platform);
    c->set_backend("spindle");
    c->set_max_batch_size(0);  // the batch is the tensors' first dimension; Spindle batches calls
    for (const auto& [k, v] : md.parameters) (*c->mutable_parameters())[k].set_string_value(v);
    auto describe = [](const tensor_metadata& t, auto* x) {
      x->set_name(t.name);
      x->set_data_type(pb::DataType(triton_type_code(t.datatype)));
      for (auto d : t.shape) x->add_dims(d);
    };
    for (const auto& t : md.inputs) {
      auto* x = c->add_input();
      describe(t, x);
      x->set_optional(t.optional);
    }
    for (const auto& t : md.outputs) describe(t, c->add_output());
    return finish(ctx);
  }
  ServerUnaryReactor* ModelStatistics(CallbackServerContext* ctx,
                                      const pb::ModelStatisticsRequest* in,
                                      pb::ModelStatisticsResponse* out) override {
    std::string name;
    if (!in->name().empty()) {
      auto m = d_.find(in->name(), in->version());
      if (!m) return finish(ctx, unknown_model(in->name()));
      name = m->name;
    }
    auto set = [](const duration_stat& d, pb::StatisticDuration* x) {
      x->set_count(d.count);
      x->set_ns(d.ns);
    };
    for (const auto& s : statistics_of(d_.service(), name)) {
      auto* x = out->add_model_stats();
      x->set_name(s.name);
      x->set_version(s.version);
      x->set_last_inference(s.last_inference_ms);
      x->set_inference_count(s.inference_count);
      x->set_execution_count(s.execution_count);
      auto* st = x->mutable_inference_stats();
      set(s.success, st->mutable_success());
      set(s.fail, st->mutable_fail());
      set(s.queue, st->mutable_queue());
      set(s.compute_infer, st->mutable_compute_infer());
      st->mutable_compute_input();
      st->mutable_compute_output();
    }
    return finish(ctx);
  }
  ServerUnaryReactor* ModelMetadata(CallbackServerContext* ctx, const pb::ModelMetadataRequest* in,
                                    pb::ModelMetadataResponse* out) override {
    auto m = d_.find(in->name(), in->version());
    if (!m) return finish(ctx, unknown_model(in->name()));
    const auto md = metadata_of(*m);
    out->set_name(md.name);
    out->set_platform(md.platform);
    for (const auto& v : md.versions) out->add_versions(v);
    auto add = [](const tensor_metadata& t, pb::ModelMetadataResponse::TensorMetadata* x) {
      x->set_name(t.name);
      x->set_datatype(t.datatype);
      for (auto d : t.shape) x->add_shape(d);
    };
    for (const auto& t : md.inputs) add(t, out->add_inputs());
    for (const auto& t : md.outputs) add(t, out->add_outputs());
    return finish(ctx);
  }
  // ModelInfer, on the door's own thread (grpc_infer_loop.hpp). A lone call is
  // read in a turn of its own: when its model is idle, the turn's end runs it
  // here through the express lane (lone_call_gate.hpp).
  void infer(const pb::ModelInferRequest& in, const std::string& peer, pb::ModelInferResponse* out,
             std::function<void(Status)> done) {
    scoped_call_origin origin("grpc " + peer);
    auto r = request_of(in);
    if (!r) return done(Status(StatusCode::INVALID_ARGUMENT, r.error().message()));
    const bool lone = lone_->enter(lone_call_gate::clock::now());
    struct turn {  // closed however infer returns: an open turn would hold this thread's calls
      rpc::rpc_service* s;
      ~turn() {
        if (s) s->end_turn();
      }
    } t{lone ? &d_.service() : nullptr};
    if (lone) d_.service().begin_turn();
    // The answer may come after the door has gone (a stop whose drain timed out):
    // it touches the gate it shares and the call's answer, which the loop keeps.
    d_.infer(std::move(*r), [gate = lone_, out, done = std::move(done)](infer_outcome o) {
      gate->leave(lone_call_gate::clock::now());
      if (o.status != rpc::rpc_status::ok || o.not_found) return done(Status(code_of(o), o.message));
      fill(o.response, *out);
      done(Status::OK);
    });
  }
  const lone_call_gate& gate() const { return *lone_; }

  ServerUnaryReactor* RepositoryIndex(CallbackServerContext* ctx, const pb::RepositoryIndexRequest*,
                                      pb::RepositoryIndexResponse* out) override {
    for (const auto& m : d_.service().models()) {
      auto* x = out->add_models();
      x->set_name(m.name);
      x->set_version(m.version);
      x->set_state(d_.service().model_ready(m.name) ? "READY" : "UNAVAILABLE");
    }
    return finish(ctx);
  }
  ServerUnaryReactor* RepositoryModelLoad(CallbackServerContext* ctx,
                                          const pb::RepositoryModelLoadRequest* in,
                                          pb::RepositoryModelLoadResponse*) override {
    scoped_call_origin origin("grpc " + ctx->peer());
    std::string path;
    if (auto it = in->parameters().find("path"); it != in->parameters().end())
      path = it->second.string_param();
    return repository(ctx, [&] { return d_.service().load_model(in->model_name(), path); });
  }
  ServerUnaryReactor* RepositoryModelUnload(CallbackServerContext* ctx,
                                            const pb::RepositoryModelUnloadRequest* in,
                                            pb::RepositoryModelUnloadResponse*) override {
    scoped_call_origin origin("grpc " + ctx->peer());
    return repository(ctx, [&] { return d_.service().unload_model(in->model_name()); });
  }

 private:
  template <class F>
  ServerUnaryReactor* repository(CallbackServerContext* ctx, F call) {
    if (!authorized(ctx, token_))
      return finish(
          ctx,
          Status(StatusCode::UNAUTHENTICATED,
                 token_.empty() ? "model repository calls are disabled (no admin token)"
                                : "wrong or missing admin token (authorization: Bearer TOKEN)"));
    const status st = call();
    if (st) return finish(ctx);
    const auto code = st.code() == errc::not_found     ? StatusCode::NOT_FOUND
                      : st.code() == errc::unsupported ? StatusCode::UNIMPLEMENTED
                                                       : StatusCode::INVALID_ARGUMENT;
    return finish(ctx, Status(code, st.message()));
  }

  door& d_;
  std::string token_;
  std::shared_ptr<lone_call_gate> lone_ = std::make_shared<lone_call_gate>(kLoneQuiet);
};

// The graph-update extension: Admin calls, answered on gRPC's callback thread
// once the batch is logged.
class graph_service final : public pb::SpindleGraphService::CallbackService {
 public:
  graph_service(door& d, std::string token) : d_(d), token_(std::move(token)) {}

  ServerUnaryReactor* GraphUpdate(CallbackServerContext* ctx, const pb::GraphUpdateRequest* in,
                                  pb::GraphUpdateResponse* out) override {
    scoped_call_origin origin("grpc " + ctx->peer());
    if (auto refused = unauthorized(ctx)) return refused;
    rpc::graph_edit e;
    e.add_src.assign(in->add_src().begin(), in->add_src().end());
    e.add_dst.assign(in->add_dst().begin(), in->add_dst().end());
    e.add_weight.assign(in->add_weight().begin(), in->add_weight().end());
    e.remove_src.assign(in->remove_src().begin(), in->remove_src().end());
    e.remove_dst.assign(in->remove_dst().begin(), in->remove_dst().end());
    e.add_nodes = in->add_nodes();
    e.add_node_features.assign(in->add_node_features().begin(), in->add_node_features().end());
    e.set_ids.assign(in->set_ids().begin(), in->set_ids().end());
    e.set_rows.assign(in->set_rows().begin(), in->set_rows().end());
    e.remove_nodes.assign(in->remove_nodes().begin(), in->remove_nodes().end());
    if (e.add_src.size() != e.add_dst.size() || e.remove_src.size() != e.remove_dst.size())
      return finish(ctx, Status(StatusCode::INVALID_ARGUMENT,
                                "add_src/add_dst and remove_src/remove_dst must pair up"));
    return answer(ctx, d_.service().update_graph(std::move(e)), out);
  }
  ServerUnaryReactor* GraphVersion(CallbackServerContext* ctx, const pb::GraphVersionRequest*,
                                   pb::GraphUpdateResponse* out) override {
    if (auto refused = unauthorized(ctx)) return refused;
    return answer(ctx, d_.service().graph_version(), out);
  }

 private:
  ServerUnaryReactor* unauthorized(CallbackServerContext* ctx) {
    if (authorized(ctx, token_)) return nullptr;
    return finish(ctx, Status(StatusCode::UNAUTHENTICATED,
                              token_.empty() ? "graph calls are disabled (no admin token)"
                                             : "wrong or missing admin token (authorization: "
                                               "Bearer TOKEN)"));
  }
  static ServerUnaryReactor* answer(CallbackServerContext* ctx, const rpc::graph_edit_answer& a,
                                    pb::GraphUpdateResponse* out) {
    if (a.status != rpc::rpc_status::ok)
      return finish(ctx, Status(a.status == rpc::rpc_status::bad_request
                                    ? StatusCode::INVALID_ARGUMENT
                                    : StatusCode::UNAVAILABLE,
                                a.message));
    out->set_version(a.version);
    out->set_nodes(a.nodes);
    for (auto id : a.new_ids) out->add_new_ids(id);
    return finish(ctx);
  }

  door& d_;
  std::string token_;
};

}  // namespace

struct grpc_server::impl {
  std::unique_ptr<service> svc;
  std::unique_ptr<graph_service> graph;
  std::unique_ptr<grpc::Server> server;
  std::unique_ptr<grpc_infer_loop> infer;  // stopped after the server's shutdown
  std::unique_ptr<net::handoff_listener> listener;  // stopped before the server
};

expected<std::unique_ptr<grpc_server>> grpc_server::start(const grpc_options& o, door& d) {
  SPINDLE_ASSIGN_OR_RETURN(auto where, parse_host_port(o.listen, "--grpc"));
  std::string host = where.host;
  if (host.size() > 2 && host.front() == '[' && host.back() == ']') host = host.substr(1, host.size() - 2);
  SPINDLE_ASSIGN_OR_RETURN(const int listen_fd, net::listen_socket(host, int(where.port), "--grpc"));
  const int bound = net::local_port(listen_fd);
  auto i = std::make_unique<impl>();
  i->svc = std::make_unique<service>(d, o.admin_token);
  i->graph = std::make_unique<graph_service>(d, o.admin_token);
  // No listening port of gRPC's own: 1.51's accept loop has no connection cap
  // and stops for good once the process runs out of descriptors. Spindle's
  // listener (net/handoff_listener.hpp) accepts, admits through the door's
  // gate and hands each connection to the server.
  grpc::ServerBuilder b;
  b.RegisterService(i->svc.get());
  b.RegisterService(i->graph.get());
  b.SetMaxReceiveMessageSize(int(std::min<std::size_t>(o.max_message_bytes, INT32_MAX)));
  b.SetMaxSendMessageSize(int(std::min<std::size_t>(o.max_message_bytes, INT32_MAX)));
  // More bounds for hostile clients: a connection without a call for 5 minutes
  // is sent GOAWAY, a connection carries at most 256 calls at once, and the
  // door's buffers are held to 1 GiB.
  b.AddChannelArgument(GRPC_ARG_MAX_CONNECTION_IDLE_MS, 300000);
  b.AddChannelArgument(GRPC_ARG_MAX_CONCURRENT_STREAMS, 256);
  grpc::ResourceQuota quota("spindle-grpc-door");
  quota.Resize(std::size_t(1) << 30);
  b.SetResourceQuota(quota);
  auto cq = b.AddCompletionQueue();
  i->server = b.BuildAndStart();
  if (!i->server) {
    ::close(listen_fd);
    return make_error(errc::unavailable, "--grpc {}: the gRPC server did not start", o.listen);
  }
  service* svc = i->svc.get();
  i->infer = std::make_unique<grpc_infer_loop>(
      *svc, std::move(cq),
      [svc](const pb::ModelInferRequest& in, const std::string& peer, pb::ModelInferResponse* out,
            std::function<void(Status)> done) { svc->infer(in, peer, out, std::move(done)); },
      svc->gate(), o.poll_after_us);
  net::handoff_options ho;
  ho.name = "grpc";
  ho.max_connections = o.max_connections;
  grpc::Server* server = i->server.get();
  SPINDLE_ASSIGN_OR_RETURN(i->listener,
                           net::handoff_listener::start(listen_fd, ho, [server](int fd) {
                             grpc::AddInsecureChannelFromFd(server, fd);
                           }));
  return std::unique_ptr<grpc_server>(new grpc_server(std::move(i), bound));
}

grpc_server::grpc_server(std::unique_ptr<impl> i, int port) : impl_(std::move(i)), port_(port) {}

grpc_server::~grpc_server() {
  impl_->listener.reset();
  impl_->server->Shutdown(std::chrono::system_clock::now() + std::chrono::seconds(2));
  impl_->infer->stop();
  impl_->server->Wait();
}

}  // namespace spindle::transport::kserve
