#include "runtime/serve_rpc.hpp"

#include <signal.h>
#include <sys/stat.h>

#include <algorithm>
#include <fstream>
#include <future>
#include <optional>
#include <random>
#include <thread>

#include <fmt/ranges.h>

#include "actors/colocation_actor.hpp"
#include "actors/dlrm_inference_actor.hpp"
#include "actors/embedding_cache_actor.hpp"
#include "colocation/hera/profile.hpp"
#include "core/log.hpp"
#include "core/signals.hpp"
#include "core/text_file.hpp"
#include "config/model.hpp"
#include "hps/vdb/redis_connection.hpp"
#include "runtime/rec_models.hpp"
#include "runtime/token_file.hpp"
#include "transport/http/metrics_server.hpp"
#include "transport/kserve/grpc_server.hpp"
#include "transport/kserve/http_server.hpp"
#include "transport/net/door_gate.hpp"
#include "transport/rpc/endpoint.hpp"
#include "transport/rpc/rpc_server.hpp"

namespace spindle::runtime {

void block_stop_signals() {
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGINT);
  sigaddset(&set, SIGTERM);
  wait_for_signals_here(set);
}

expected<std::string> admin_token(const std::string& path) {
  if (path.empty()) return std::string();
  return token_file(path, "admin token file", true);
}

struct dlrm_holder {
  nn::heap_allocator weights;
  std::optional<nn::model> model;
  hps_stack stack;
  caf::actor_system* sys = nullptr;
  // The actors that use the stack, ended before it goes (the cache refreshes
  // from it every --refresh-ms; the updater writes to it).
  actors::embedding_cache_actor cache;
  actors::updater_actor updater;  // with --updates
  ~dlrm_holder() {
    if (!sys) return;
    stop_and_wait(*sys, updater);
    stop_and_wait(*sys, cache);
  }
};

expected<std::shared_ptr<dlrm_holder>> add_dlrm(caf::actor_system& sys, actors::gateway& g,
                                                const front_door_args& a) {
  if (a.dlrm.model.empty()) return std::shared_ptr<dlrm_holder>();
  if (a.dlrm.pdb.empty()) return make_error(errc::invalid_argument, "--dlrm-model needs --pdb DIR");
  auto h = std::make_shared<dlrm_holder>();
  SPINDLE_ASSIGN_OR_RETURN(auto m, nn::model::load(a.dlrm.model, h->weights, true));
  if (m.desc().arch != config::model_arch::dlrm) {
    return make_error(errc::invalid_argument, "{}: --dlrm-model is not a DLRM model", a.dlrm.model);
  }
  h->model.emplace(std::move(m));
  SPINDLE_ASSIGN_OR_RETURN(auto hc, hps_settings(a.dlrm));
  SPINDLE_ASSIGN_OR_RETURN(h->stack, open_stack(a.dlrm, h->model->desc(), hc));
  h->sys = &sys;
  SPINDLE_ASSIGN_OR_RETURN(h->updater, follow_updates(sys, a.dlrm, h->model->desc(), h->stack));
  actors::rec_model_binding b;
  b.name = a.dlrm_name.empty() ? h->model->desc().name : a.dlrm_name;
  b.cache = actors::spawn_embedding_cache(sys, h->stack.session, hc.refresh_interval_ms);
  h->cache = b.cache;
  // Hera's worker pool: --dlrm-instances workers, each running whole batches
  // (live tunable `workers`; the node manager resizes it).
  SPINDLE_ASSIGN_OR_RETURN(auto runner,
                           hps::dlrm_hps_runner::create(*h->model, *h->stack.session));
  b.runner = std::make_shared<const hps::dlrm_hps_runner>(std::move(runner));
  b.pool = std::make_shared<serving::worker_pool>(std::size_t(std::max(1, a.dlrm_instances)),
                                                "rec-" + b.name);
  b.model = &*h->model;
  b.session = h->stack.session;
  b.admission = a.admission();
  g.add_model(std::move(b));
  return h;
}

std::function<expected<actors::rec_model_binding>(const std::string&, const std::string&)>
rec_loader(const front_door_args& a) {
  rec_model_options o{a.rec_workers, a.admission(), a.slo_from_flag, a.rec_precision,
                      a.rec_table_precision};
  return
      [o](const std::string& name, const std::string& dir) { return load_rec_model(name, dir, o); };
}

status add_rec_models(actors::gateway& g, const front_door_args& a) {
  SPINDLE_ASSIGN_OR_RETURN(auto pairs, parse_rec_model_flags(a.rec_models));
  const auto load = rec_loader(a);
  for (const auto& [name, dir] : pairs) {
    SPINDLE_ASSIGN_OR_RETURN(auto b, load(name, dir));
    log::info("serving recommendation model '{}' ({}) from {} with {} workers", b.name,
              config::to_string(b.model->desc().arch), dir, b.pool->workers());
    g.add_model(std::move(b));
  }
  return status::ok();
}

expected<std::shared_ptr<dlrm_holder>> add_rec_serving(caf::actor_system& sys, actors::gateway& g,
                                                       const front_door_args& a,
                                                       actors::model_loader loader) {
  if (!loader.load_rec) loader.load_rec = rec_loader(a);  // a cluster door brings its own
  g.set_model_loader(std::move(loader));
  SPINDLE_TRY(add_rec_models(g, a));
  return add_dlrm(sys, g, a);
}

status add_tensor_models(actors::gateway& g, const front_door_args& a) {
  if (a.tensor_models.empty()) return status::ok();
  std::vector<actors::tensor_model> models;
  for (const auto& name : a.tensor_models) {
    if (name == "sum") {
      models.push_back(actors::sum_model(name));
      continue;
    }
    // A served recommendation model: its requests may also come over SplitRPC.
    auto b = g.rec_binding(name);
    if (!b || !b->runner)
      return make_error(errc::invalid_argument,
                        "--tensor-models '{}': expected sum or the name of a --rec-model", name);
    models.push_back(actors::rec_tensor_model(name, b->runner, b->model, b->owner));
  }
  SPINDLE_ASSIGN_OR_RETURN(auto split, actors::split_path::create(std::move(models)));
  g.set_split_path(std::move(split));
  return status::ok();
}

namespace {
bool is_loopback_host(std::string_view host) {
  if (host.size() >= 2 && host.front() == '[' && host.back() == ']')
    host = host.substr(1, host.size() - 2);
  return host == "localhost" || host == "::1" || host.starts_with("127.");
}

status check_bind(std::string_view flag, const std::string& endpoint, bool has_token) {
  if (endpoint.empty()) return status::ok();
  const auto where = transport::parse_host_port(endpoint, flag);
  if (!where) return where.error();
  if (is_loopback_host(where->host)) return status::ok();
  if (!has_token)
    return make_error(errc::invalid_argument,
                      "{} {}: not a loopback address; refusing to serve beyond this machine "
                      "without --admin-token-file",
                      flag, endpoint);
  log::warn("{} {} serves beyond this machine (not a loopback address)", flag, endpoint);
  return status::ok();
}
}  // namespace

status check_door_flags(const front_door_args& a) {
  if (!a.dlrm.updates.empty() && a.dlrm.model.empty())
    return make_error(errc::invalid_argument,
                      "--updates {}: online embedding updates go to a parameter server's tables: "
                      "give --dlrm-model DIR --pdb DIR (--rec-model tables are held in memory)",
                      a.dlrm.updates);
  if (!a.dlrm.updates.empty()) {
    auto ep = hps::parse_endpoint(a.dlrm.updates);
    if (!ep) return std::move(ep).error().with_context("--updates: ");
    // A Redis that does not answer is named now (a cluster rank would find it
    // only after it started, and `launch` would take it as a rank that died).
    // PING too: a Redis that takes the connection but denies commands (its
    // protected mode, to a peer off loopback) is named now as well.
    auto redis = hps::redis_connection::connect(ep->first, ep->second);
    if (redis)
      SPINDLE_TRY(redis->command({"PING"}).error_or_ok().with_context("--updates " +
                                                                       a.dlrm.updates + ": "));
    SPINDLE_TRY(redis.error_or_ok().with_context("--updates " + a.dlrm.updates + ": "));
  }
  // Tensor models: the built-in sum, a --rec-model's name, or the DLRM's
  // (--dlrm-name, else its model.toml name): named now, not after the start.
  std::vector<std::string> known{"sum"};
  SPINDLE_ASSIGN_OR_RETURN(auto recs, parse_rec_model_flags(a.rec_models));
  for (const auto& [name, dir] : recs) known.push_back(name);
  if (!a.dlrm_name.empty()) known.push_back(a.dlrm_name);
  else if (!a.dlrm.model.empty())
    if (auto d = config::load_model_desc(a.dlrm.model)) known.push_back(d->name);
  for (const auto& name : a.tensor_models)
    if (std::find(known.begin(), known.end(), name) == known.end())
      return make_error(errc::invalid_argument,
                        "--tensor-models '{}': expected sum or a recommendation model served here "
                        "({})",
                        name, fmt::join(known, ", "));
  return status::ok();
}

status check_exposure(const front_door_args& a) {
  const bool has_token = !a.admin_token_file.empty();
  SPINDLE_TRY(check_bind("--listen", a.listen, has_token));
  SPINDLE_TRY(check_bind("--http", a.http, has_token));
  SPINDLE_TRY(check_bind("--grpc", a.grpc, has_token));
  return check_bind("--metrics", a.metrics, has_token);
}

namespace {

// One request shaped for `m`: seed 0 of a GNN (of its first node type when typed); one sample of zeros and key 0
// per table of a recommendation model.
status warm_one(actors::gateway& g, const transport::rpc::model_info& m) {
  using transport::rpc::rpc_status;
  std::promise<std::pair<rpc_status, std::string>> answer;
  auto got = answer.get_future();
  if (m.kind == "gnn") {
    transport::rpc::gnn_call call{m.name, {0}, 1, 0};
    if (!m.node_types.empty()) call.node_type = m.node_types.front();  // a typed model
    g.infer_gnn(std::move(call), [&answer](transport::rpc::gnn_answer a) {
      answer.set_value({a.status, a.message});
    });
  } else {
    transport::rpc::rec_call call{m.name, 1, std::vector<float>(m.input_width, 0.0f), {}, 0};
    for (std::uint32_t t = 0; t < m.tables; ++t) call.sparse.push_back({{0}, {0, 1}});
    g.infer_rec(std::move(call), [&answer](transport::rpc::rec_answer a) {
      answer.set_value({a.status, a.message});
    });
  }
  auto [st, message] = got.get();
  if (st == rpc_status::bad_request) {  // this call's content (a graph that changed), not the model
    log::info("warming model '{}': the warm-up call was refused ({}); serving", m.name, message);
    return status::ok();
  }
  if (st != rpc_status::ok)
    return make_error(errc::unavailable, "warming model '{}': {}: {}", m.name,
                      transport::rpc::to_string(st), message);
  return status::ok();
}

// A KServe door (HTTP or gRPC) on `listen`, or none when it is empty; `bytes` is
// the options' size limit (the HTTP body's, the gRPC message's).
template <class Server, class Options>
expected<std::unique_ptr<Server>> start_kserve_door(const std::string& listen,
                                                    std::size_t Options::*bytes,
                                                    const front_door_args& a,
                                                    const std::string& token,
                                                    transport::kserve::door& door) {
  if (listen.empty()) return std::unique_ptr<Server>();
  Options o;
  o.listen = listen;
  o.admin_token = token;
  o.*bytes = a.http_max_body_mb << 20;
  o.max_connections = a.max_connections;
  if constexpr (requires { o.poll_after_us; }) o.poll_after_us = a.door_poll_us;  // gRPC's
  return Server::start(o, door);
}

}  // namespace

status warm_up(actors::gateway& g) {
  for (const auto& m : g.models()) SPINDLE_TRY(warm_one(g, m));
  return status::ok();
}

// How long a stopping server waits for the calls it admitted (Kubernetes gives
// a pod 30 s between SIGTERM and SIGKILL by default).
constexpr std::chrono::milliseconds kStopDrain{10000};

status serve_until_signal(actors::gateway& g, const front_door_args& a, const std::string& token,
                          const std::vector<int>& also, const std::function<bool(int)>& on_also,
                          int* stopped_by) {
  SPINDLE_TRY(check_exposure(a));
  SPINDLE_TRY(add_tensor_models(g, a));
  if (!a.access_log.empty()) {
    SPINDLE_ASSIGN_OR_RETURN(auto log, access_log::open(a.access_log));
    g.set_access_log(std::move(log));
    log::info("access log: {} (one line per call)", a.access_log);
  }
  transport::net::set_max_per_peer(a.max_connections_per_peer);
  transport::rpc::server_options o;
  o.listen = a.listen;
  o.admin_token = token;
  if (a.max_connections > 0) o.max_connections = a.max_connections;
  o.poll_after_us = a.door_poll_us;
  SPINDLE_ASSIGN_OR_RETURN(auto server, transport::rpc::rpc_server::start(o, g));
  std::unique_ptr<transport::http::metrics_server> metrics;
  if (!a.metrics.empty()) {
    SPINDLE_ASSIGN_OR_RETURN(
        metrics, transport::http::metrics_server::start(
                     a.metrics, [&g] { return g.prometheus_text(); }, a.max_connections));
    fmt::print("metrics http://{}:{}/metrics\n", a.metrics.substr(0, a.metrics.rfind(':')),
               metrics->port());
  }
  transport::kserve::door door(g);
  SPINDLE_ASSIGN_OR_RETURN(
      auto http, start_kserve_door<transport::kserve::http_server>(
                     a.http, &transport::kserve::http_options::max_body_bytes, a, token, door));
  SPINDLE_ASSIGN_OR_RETURN(
      auto grpc, start_kserve_door<transport::kserve::grpc_server>(
                     a.grpc, &transport::kserve::grpc_options::max_message_bytes, a, token, door));
  actors::colocation_manager_actor manager;
  if (!a.node_manager.empty()) {
    SPINDLE_ASSIGN_OR_RETURN(auto policy, colocation::hera::parse_manager_policy(a.node_manager));
    colocation::hera::profile_table profiles;
    if (policy == colocation::hera::manager_policy::hera) {
      if (a.profiles.empty())
        return make_error(errc::invalid_argument,
                          "--node-manager hera needs --profiles FILE (spindle profile)");
      SPINDLE_ASSIGN_OR_RETURN(profiles, colocation::hera::load_profile_table(a.profiles));
    }
    const int cores = int(std::max(1u, std::thread::hardware_concurrency()));
    SPINDLE_TRY(g.set_node_manager(policy, profiles,
                                   a.manager_max_workers > 0 ? a.manager_max_workers : cores));
    manager = actors::spawn_colocation_manager(g.system(), g);
  }
  SPINDLE_TRY(warm_up(g));
  g.set_ready(true);
  const std::string host = a.listen.substr(0, a.listen.rfind(':'));
  if (http) fmt::print("http http://{}:{}/v2\n", a.http.substr(0, a.http.rfind(':')), http->port());
  if (grpc) fmt::print("grpc {}:{}\n", a.grpc.substr(0, a.grpc.rfind(':')), grpc->port());
  fmt::print("listening {}:{}\n", host, server->port());
  if (token.empty()) fmt::print("admin disabled (no --admin-token-file)\n");
  std::fflush(stdout);
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGINT);
  sigaddset(&set, SIGTERM);
  for (int s : also) sigaddset(&set, s);
  int sig = 0;
  for (;;) {
    sigwait(&set, &sig);
    if (sig == SIGINT || sig == SIGTERM || !on_also || on_also(sig)) break;
  }
  if (stopped_by) *stopped_by = sig;
  log::info("serve: stopping on signal {}", sig);
  g.set_ready(false);
  if (manager) {
    caf::scoped_actor self{g.system()};
    self->send_exit(manager, caf::exit_reason::user_shutdown);
    self->wait_for(manager);
  }
  // Every call admitted is answered before the doors close (new ones are refused
  // by name meanwhile): a client never loses a call it sent before the signal.
  if (const auto left = g.drain_calls(kStopDrain); left > 0)
    log::warn("serve: {} calls still in flight after {} s; closing the doors", left,
              kStopDrain.count() / 1000);
  grpc.reset();
  http.reset();
  server.reset();
  metrics.reset();
  g.quiesce();
  return status::ok();
}

}  // namespace spindle::runtime
