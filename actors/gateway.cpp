#include "actors/gateway.hpp"
#include "serving/typed_calls.hpp"

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cctype>
#include <cmath>
#include <future>
#include <map>
#include <mutex>
#include <nlohmann/json.hpp>
#include <shared_mutex>
#include <thread>

#include "actors/dlrm_inference_actor.hpp"
#include "actors/gateway_metrics.hpp"
#include "actors/gateway_replies.hpp"
#include "actors/gateway_state.hpp"
#include "actors/placement_actor.hpp"
#include "actors/router_actor.hpp"
#include "core/call_origin.hpp"
#include "core/log.hpp"
#include "serving/rec_batch.hpp"
#include "transport/rpc/request_checks.hpp"

namespace spindle::actors {

using transport::rpc::gnn_answer;
using transport::rpc::rec_answer;
using transport::rpc::rpc_status;
using clock_type = std::chrono::steady_clock;

namespace {

using detail::model_counters;
using detail::ms_since;
using detail::settle;
using detail::timeout_of;

}  // namespace

gateway::gateway(caf::actor_system& sys) : s_(std::make_unique<state>(sys)) {}
gateway::~gateway() {
  if (s_->live) s_->live->cancel_waits();  // parked calls answer before the gateway goes
  caf::anon_send_exit(s_->forward, caf::exit_reason::user_shutdown);
  quiesce();
}

std::chrono::milliseconds gateway::manage_step() {
  const auto period = std::chrono::milliseconds(s_->manager_period_ms.load());
  if (!s_->manager) return period;
  for (const auto& [name, e] : s_->rec_all()) {
    if (!e->b.pool || !e->managed) continue;
    std::lock_guard lock(e->manager_mu);
    const auto now = clock_type::now();
    const double seconds = std::chrono::duration<double>(now - e->last_tick).count();
    const std::uint64_t requests = e->c.requests.load();
    const double q = e->profile ? e->profile->percentile : 0.99;
    const auto [tail, answers] = e->c.tail_since(e->last_tick, q);
    colocation::hera::model_window w{tail,
                                seconds > 0 ? double(requests - e->last_requests) / seconds : 0,
                                int(e->b.pool->workers()), answers};
    const int next = colocation::hera::decide_workers(*s_->manager, e->profile ? &*e->profile : nullptr,
                                                 e->manager, w);
    if (next != w.workers) {
      e->b.pool->resize(std::size_t(next));
      log::info(
          "node manager ({}): '{}' {} -> {} workers (p{:g} {:.2f} ms vs SLA {:g} ms, {:.0f} "
          "req/s)",
          colocation::hera::to_string(*s_->manager), name, w.workers, next, q * 100, tail,
          e->manager.sla_ms, w.traffic_qps);
    }
    e->last_decision = {{"policy", std::string(colocation::hera::to_string(*s_->manager))},
                        {"tail_ms", tail},
                        {"sla_ms", e->manager.sla_ms},
                        {"slack", e->manager.sla_ms > 0 ? tail / e->manager.sla_ms : 0},
                        {"traffic_qps", w.traffic_qps},
                        {"workers_before", w.workers},
                        {"workers", next}};
    e->last_requests = requests;
    e->last_tick = now;
  }
  return period;
}

std::size_t gateway::drain_calls(std::chrono::milliseconds limit) {
  s_->stopping = true;
  auto in_flight = [this] {
    std::size_t n = 0;
    for (const auto& [name, e] : s_->gnn_all()) n += e->admission.in_flight();
    for (const auto& [name, e] : s_->rec_all()) n += e->admission.in_flight();
    return n;
  };
  const auto until = clock_type::now() + limit;
  // Zero twice, 10 ms apart: a call that passed the stopping check just before
  // it was set is admitted by then.
  for (int zeros = 0; zeros < 2 && clock_type::now() < until;) {
    zeros = in_flight() == 0 ? zeros + 1 : 0;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return in_flight();
}

void gateway::quiesce() {
  // A pooled call holds its entry: let every call finish, so no entry (and no
  // pool) is freed on one of its own workers, and nothing a worker reads is
  // freed under it.
  for (const auto& [name, e] : s_->rec_all())
    if (e->b.pool) e->b.pool->wait_idle();
}

// Entries are built before the map's lock is taken: a GNN entry reads the
// dataset's id files, which must not hold up calls on the RPC thread.
void gateway::add_model(gnn_model_binding m) {
  const std::string name = m.name, key = m.key;
  auto e = std::make_shared<gnn_entry>(std::move(m), s_->forward);
  spindle::lock_guard lock(s_->models_mu);
  if (key.find('@') == std::string::npos) {
    s_->gnn[name] = std::move(e);
    return;
  }
  s_->gnn[key] = e;
  auto current = s_->gnn.find(name);
  if (current == s_->gnn.end() ||
      std::atoi(e->b.version.c_str()) > std::atoi(current->second->b.version.c_str()))
    s_->gnn[name] = std::move(e);
}

void gateway::add_model(rec_model_binding m) {
  const std::string name = m.name;
  auto e = std::make_shared<rec_entry>(std::move(m), s_->forward);
  spindle::lock_guard lock(s_->models_mu);
  s_->rec[name] = std::move(e);
}

void gateway::set_model_loader(model_loader loader) { s_->loader = std::move(loader); }
void gateway::set_ready(bool ready) { s_->ready = ready; }
caf::actor_system& gateway::system() { return s_->sys; }
bool gateway::ready() { return s_->ready; }

// One request through `b`'s own batcher (not yet reachable by clients): a new
// version serves only once it has answered.
status gateway::warm(const gnn_model_binding& b) {
  auto answer = std::make_shared<std::promise<std::string>>();
  auto got = answer->get_future();
  serving::gnn_request request;  // node 0 (of the first type a typed model answers), on its own
  request.seeds.push_back(0);
  request.sampler_seed = 1;
  if (b.model->desc().typed()) {
    request.node_type = b.model->desc().types.outputs.front().node_type;
    if (auto st = serving::to_graph_ids(*b.dataset, b.model->desc(), request.node_type,
                                        request.seeds);
        !st)
      return make_error(errc::unavailable, "warming '{}' version {}: {}", b.name, b.version,
                        st.message());
  }
  // The express lane's own pipeline warms on a first call too (its scratch and arena).
  if (b.express) b.express->try_run({request}, 0, false);
  detail::dispatch_gnn(s_->forward, b.batcher, nullptr, std::move(request),
                       caf::duration(std::chrono::seconds(30)),
                       [answer](const gnn_reply* r, const caf::error* err) {
                         answer->set_value(r     ? (r->error ? std::string() : r->error.to_string())
                                           : err ? caf::to_string(*err)
                                                 : "no answer");
                       });
  const std::string error = got.get();
  if (!error.empty())
    return make_error(errc::unavailable, "warming '{}' version {}: {}", b.name, b.version, error);
  return status::ok();
}

namespace {

// A call naming its nodes by input id (seedIds) gets them resolved to rows.
status resolve_seed_ids(transport::rpc::gnn_call& call, const gnn_entry& e) {
  if (call.seed_ids.empty()) return status::ok();
  if (!call.seeds.empty())
    return make_error(errc::invalid_argument, "give seeds or seedIds, not both");
  if (call.seed_ids.size() > transport::rpc::kMaxSeedsPerRequest)
    return make_error(errc::invalid_argument, "seedIds: {} (at most {} per request)",
                      call.seed_ids.size(), transport::rpc::kMaxSeedsPerRequest);
  if (!e.ids)
    return make_error(errc::unavailable, "seedIds: the dataset's ids are not readable: {}",
                      e.ids_error);
  call.seeds.reserve(call.seed_ids.size());
  for (std::size_t i = 0; i < call.seed_ids.size(); ++i) {
    auto row = e.ids->resolve(call.seed_ids[i]);
    if (!row)
      return make_error(errc::invalid_argument, "seedIds[{}]: {}", i, row.error().message());
    call.seeds.push_back(*row);
  }
  return status::ok();
}

// Validation and admission shared by every model kind: answers the call and
// returns false when it must not go on.
template <class Answer>
bool admit_call(model_counters& c, serving::admission_control& admission, const status& valid,
                const std::string& model, const std::function<void(Answer)>& done,
                const std::atomic<bool>& stopping) {
  ++c.requests;
  if (!valid) {
    c.record(rpc_status::bad_request, 0);
    done({rpc_status::bad_request, valid.message()});
    return false;
  }
  if (stopping.load()) {
    c.record(rpc_status::unavailable, 0);
    done({rpc_status::unavailable,
          "the server is stopping (it answers the calls it admitted, then closes): call "
          "another server"});
    return false;
  }
  if (!admission.try_admit()) {
    c.record(rpc_status::overloaded, 0);
    done({rpc_status::overloaded,
          fmt::format("model '{}' is at its admission limit ({} calls in flight)", shown(model),
                      admission.limit())});
    return false;
  }
  return true;
}

}  // namespace

void gateway::set_access_log(std::shared_ptr<access_log> log) { s_->access = std::move(log); }

namespace {

// `done`, writing the call's access-log line first (door, model, items, status, latency).
template <class Answer>
std::function<void(Answer)> logged(std::shared_ptr<access_log> log, std::string model,
                                   const char* kind, std::size_t items,
                                   std::function<void(Answer)> done) {
  return [log = std::move(log), door = call_origin(), model = std::move(model), kind, items,
          t0 = clock_type::now(), done = std::move(done)](Answer a) {
    log->write(door, model, kind, items, transport::rpc::to_string(a.status), ms_since(t0));
    done(std::move(a));
  };
}

}  // namespace

void gateway::begin_turn() { detail::hold_gnn_sends(); }

void gateway::end_turn() { detail::release_gnn_sends(); }

void gateway::infer_gnn(transport::rpc::gnn_call call, std::function<void(gnn_answer)> done) {
  if (call.min_version > 0 && s_->live && s_->live->version() < call.min_version)
    return wait_for_version(std::move(call), std::move(done));
  infer_gnn_now(std::move(call), std::move(done));
}

void gateway::infer_gnn_now(transport::rpc::gnn_call call,
                            std::function<void(gnn_answer)> done) {
  if (s_->access)
    done = logged<gnn_answer>(s_->access, call.model, "gnn", call.seeds.size(), std::move(done));
  auto e = s_->gnn_for_call(call.model);
  if (!e) {
    const bool is_rec = s_->rec_of(call.model) != nullptr;
    return done(
        {rpc_status::bad_request,
         is_rec
             ? fmt::format("model '{}' is a recommendation model: use inferRec", shown(call.model))
         : call.model.empty()
             ? fmt::format("no model named, and {} GNN models are loaded (loaded: {})",
                           s_->gnn_all().size(), s_->loaded())
             : fmt::format("unknown model '{}' (loaded: {})", shown(call.model), s_->loaded())});
  }
  if (call.model.empty()) call.model = e->b.name;  // the only GNN loaded
  if (call.min_version > 0) {
    if (auto why = detail::version_unmet(s_->live, call.min_version, call.version_wait_us);
        !why.message.empty()) {
      ++e->c.requests;  // counted like every refused call
      e->c.record(why.status, 0);
      return done(std::move(why));
    }
  }
  status valid = status::ok();
  if (!call.seed_ids.empty() && (!call.node_type.empty() || e->b.model->desc().typed()))
    valid = make_error(errc::invalid_argument,
                       "seed ids on a typed graph are not served: give the seeds' numbers within "
                       "their node type");
  if (valid) valid = resolve_seed_ids(call, *e);
  if (valid)
    valid = serving::to_graph_ids(*e->b.dataset, e->b.model->desc(), call.node_type, call.seeds,
                                  call.pairs);
  if (valid) valid = check_gnn_call(call, e->b.dataset->live_num_nodes());
  if (valid) valid = serving::check_pairs(call.pairs, call.seeds.size(), e->b.model->desc());
  if (valid) valid = serving::named_output_widths(call.outputs, call.pairs, call.seeds.size(), *e->b.model)
                        .error_or_ok();
  if (!admit_call(e->c, e->admission, valid, call.model, done, s_->stopping)) return;
  if (call.min_version > 0) done = at_version(e, call, std::move(done), 0);
  auto& scheduler = *e->scheduler;
  scheduler.submit(std::move(e), std::move(call), std::move(done));
}

// On a cluster, a batch may run on another rank's pipeline, whose graph may be
// a moment behind this door's: an answer computed before the call's
// min_version is never given. The call runs again (the batcher may pick
// another pipeline, or the same one caught up), up to kVersionTries times, and
// is then refused by name.
std::function<void(gnn_answer)> gateway::at_version(std::shared_ptr<detail::gnn_entry> e,
                                                    transport::rpc::gnn_call call,
                                                    std::function<void(gnn_answer)> done,
                                                    int tries) {
  static constexpr int kVersionTries = 32;  // each a batch's round trip (no sleep on an actor thread)
  return [this, e = std::move(e), call = std::move(call), done = std::move(done),
          tries](gnn_answer a) mutable {
    if (a.status != rpc_status::ok || a.graph_version >= call.min_version) return done(std::move(a));
    if (tries + 1 >= kVersionTries)
      return done({rpc_status::unavailable,
                   fmt::format("graph version {}: {} tries were answered on a rank still at "
                               "version {} (a cluster rank behind the stream)",
                               call.min_version, kVersionTries, a.graph_version)});
    // Each run completes its admission once: the next one is admitted again.
    if (!e->admission.try_admit())
      return done({rpc_status::overloaded,
                   fmt::format("graph version {}: answered on a rank at version {}, and the "
                               "model is at its admission limit for another try",
                               call.min_version, a.graph_version)});
    auto& scheduler = *e->scheduler;
    auto next = at_version(e, call, std::move(done), tries + 1);
    scheduler.submit(std::move(e), std::move(call), std::move(next));
  };
}

void gateway::infer_rec(transport::rpc::rec_call call, std::function<void(rec_answer)> done) {
  if (s_->access)
    done =
        logged<rec_answer>(s_->access, call.model, "rec", std::size_t(call.batch), std::move(done));
  auto e = s_->rec_for_call(call.model);
  if (!e) {
    return done(
        {rpc_status::bad_request, fmt::format("unknown recommendation model '{}' (loaded: {})",
                                              shown(call.model), s_->loaded())});
  }
  if (call.model.empty()) call.model = e->b.name;  // the only recommendation model loaded
  if (!admit_call(e->c, e->admission,
                  check_rec_call(call, rec_desc(*e).dense_in, rec_desc(*e).table_rows.size()),
                  call.model, done, s_->stopping))
    return;
  auto& scheduler = *e->scheduler;
  scheduler.submit(std::move(e), std::move(call), std::move(done));
}

void gateway::set_split_path(std::unique_ptr<split_path> p) { s_->split = std::move(p); }
split_path* gateway::split() const { return s_->split.get(); }

void gateway::infer_tensor(const std::string& model, std::span<const std::byte> payload,
                           std::uint32_t deadline_us,
                           std::function<void(transport::rpc::tensor_answer)> done) {
  if (!s_->split) return rpc_service::infer_tensor(model, payload, deadline_us, std::move(done));
  s_->split->infer_tensor(model, payload, deadline_us, std::move(done));
}

expected<transport::rpc::split_session> gateway::open_split() {
  if (!s_->split) return rpc_service::open_split();
  return s_->split->open();
}

void gateway::infer_split(const std::string& model, std::uint64_t call_id, std::uint64_t bytes,
                          std::uint32_t deadline_us,
                          std::function<void(transport::rpc::tensor_answer)> done) {
  if (!s_->split)
    return rpc_service::infer_split(model, call_id, bytes, deadline_us, std::move(done));
  s_->split->infer_split(model, call_id, bytes, deadline_us, std::move(done));
}

}  // namespace spindle::actors
