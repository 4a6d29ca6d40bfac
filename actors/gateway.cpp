#include "actors/gateway.hpp"

#include <unistd.h>

#include <atomic>
#include <cctype>
#include <cmath>
#include <mutex>
#include <nlohmann/json.hpp>
#include <shared_mutex>
#include <thread>

#include "actors/gateway_metrics.hpp"
#include "actors/placement_actor.hpp"
#include "actors/router_actor.hpp"
#include "core/log.hpp"

namespace spindle::actors {

using transport::rpc::gnn_answer;
using transport::rpc::rec_answer;
using transport::rpc::rpc_status;
using clock_type = std::chrono::steady_clock;

namespace {

// A client-supplied name or value as errors and logs show it: at most 64
// characters, then how much was cut (a 10 MB name must not come back whole).
std::string shown(std::string_view text) {
  constexpr std::size_t kShown = 64;
  if (text.size() <= kShown) return std::string(text);
  return fmt::format("{}...(+{} bytes)", text.substr(0, kShown), text.size() - kShown);
}

/// A call handed to the forwarder actor; `done` runs on a CAF thread.
struct gnn_dispatch {
  caf::actor batcher;
  sched::gnn_request request;
  std::chrono::microseconds timeout;
  std::function<void(const gnn_reply*, const caf::error*)> done;
};

struct rec_dispatch {
  caf::actor instance;
  dlrm_request request;
  std::chrono::microseconds timeout;
  std::function<void(const dlrm_reply*, const caf::error*)> done;
};

}  // namespace
}  // namespace spindle::actors

CAF_ALLOW_UNSAFE_MESSAGE_TYPE(spindle::actors::gnn_dispatch)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(spindle::actors::rec_dispatch)

namespace spindle::actors {
namespace {

// Forwards calls to the serving actors and hands replies to their callbacks.
// Event-based: it never blocks, so it lives on CAF's scheduler.
caf::behavior forwarder(caf::event_based_actor* self) {
  return {
      [=](gnn_dispatch& d) {
        self->request(d.batcher, d.timeout, infer_atom::value, std::move(d.request))
            .then([done = d.done](gnn_reply& r) { done(&r, nullptr); },
                  [done = d.done](caf::error& e) { done(nullptr, &e); });
      },
      [=](rec_dispatch& d) {
        self->request(d.instance, d.timeout, dlrm_atom::value, std::move(d.request))
            .then([done = d.done](dlrm_reply& r) { done(&r, nullptr); },
                  [done = d.done](caf::error& e) { done(nullptr, &e); });
      },
  };
}

using detail::model_counters;

struct gnn_entry {
  gnn_model_binding b;
  std::atomic<std::size_t> max_queue;
  std::mutex mu;  // guards b.policy
  model_counters c;
  explicit gnn_entry(gnn_model_binding binding) : b(std::move(binding)), max_queue(b.max_queue) {}
};

struct rec_entry {
  rec_model_binding b;
  std::atomic<std::size_t> max_queue;
  std::atomic<std::size_t> next_instance{0};
  model_counters c;
  explicit rec_entry(rec_model_binding binding) : b(std::move(binding)), max_queue(b.max_queue) {}
};

// Maps a serving error ("invalid_argument: ...") to a reply status.
rpc_status status_of_error(const std::string& error) {
  if (error.starts_with("invalid_argument") || error.starts_with("not_found"))
    return rpc_status::bad_request;
  if (error.starts_with("unavailable")) return rpc_status::unavailable;
  return rpc_status::internal;
}

std::chrono::microseconds timeout_of(std::uint32_t deadline_us) {
  return deadline_us > 0 ? std::chrono::microseconds(deadline_us)
                         : std::chrono::microseconds(std::int64_t(120e6));
}

double ms_since(clock_type::time_point t0) {
  return std::chrono::duration<double, std::milli>(clock_type::now() - t0).count();
}

template <class Answer>
bool fail_caf(Answer& a, const caf::error* e, std::uint32_t deadline_us) {
  if (e == nullptr) return false;
  if (*e == caf::sec::request_timeout && deadline_us > 0) {
    a.status = rpc_status::deadline_exceeded;
    a.message = fmt::format("no answer within the deadline of {} us", deadline_us);
  } else {
    a.status = rpc_status::unavailable;
    a.message = "serving actor failed: " + caf::to_string(*e);
  }
  return true;
}

// The common part of answering a forwarded call: a failed actor request, a
// serving error, or a missed deadline. True when the reply's result is to be used.
template <class Answer, class Reply>
bool settle(Answer& a, const Reply* r, const caf::error* err, std::uint32_t deadline) {
  if (fail_caf(a, err, deadline)) return false;
  if (!r->error.empty()) {
    a.status = status_of_error(r->error);
    a.message = r->error;
    return false;
  }
  if (deadline > 0 && a.server_us > deadline) {
    a.status = rpc_status::deadline_exceeded;
    a.message = fmt::format("answered after {} us, deadline {} us", a.server_us, deadline);
    return false;
  }
  return true;
}

}  // namespace

struct gateway::state {
  caf::actor_system& sys;
  caf::actor forward;
  std::map<std::string, std::shared_ptr<gnn_entry>> gnn;
  std::map<std::string, std::shared_ptr<rec_entry>> rec;
  clock_type::time_point started = clock_type::now();
  std::unique_ptr<split_path> split;
  std::function<std::string()> members;  // the cluster's member list (JSON array), if any
  model_loader loader;
  // Guards the model maps: they change on the admin thread (load, unload) and
  // are read on the RPC thread, the admin thread and the metrics thread. Every
  // read goes through the accessors below (shared lock); entries are shared_ptrs,
  // so a call keeps its model alive after an unload removed it from the map.
  mutable std::shared_mutex models_mu;
  std::mutex loading;  // one load or unload at a time (gnn_models is single-caller)
  explicit state(caf::actor_system& s) : sys(s), forward(s.spawn(forwarder)) {}

  std::shared_ptr<gnn_entry> gnn_of(const std::string& name) const {
    std::shared_lock lock(models_mu);
    auto it = gnn.find(name);
    return it == gnn.end() ? nullptr : it->second;
  }
  std::shared_ptr<rec_entry> rec_of(const std::string& name) const {
    std::shared_lock lock(models_mu);
    auto it = rec.find(name);
    return it == rec.end() ? nullptr : it->second;
  }
  std::vector<std::pair<std::string, std::shared_ptr<gnn_entry>>> gnn_all() const {
    std::shared_lock lock(models_mu);
    return {gnn.begin(), gnn.end()};
  }
  std::vector<std::pair<std::string, std::shared_ptr<rec_entry>>> rec_all() const {
    std::shared_lock lock(models_mu);
    return {rec.begin(), rec.end()};
  }
  std::string loaded() const {
    std::shared_lock lock(models_mu);
    return loaded_locked();
  }
  std::string loaded_locked() const {  // models_mu held
    std::string names;
    for (const auto& [n, _] : gnn) names += (names.empty() ? "" : ", ") + n;
    for (const auto& [n, _] : rec) names += (names.empty() ? "" : ", ") + n;
    return names.empty() ? "none" : names;
  }
};

gateway::gateway(caf::actor_system& sys) : s_(std::make_unique<state>(sys)) {}
gateway::~gateway() { caf::anon_send_exit(s_->forward, caf::exit_reason::user_shutdown); }

void gateway::add_model(gnn_model_binding m) {
  const std::string name = m.name;
  std::unique_lock lock(s_->models_mu);
  s_->gnn[name] = std::make_shared<gnn_entry>(std::move(m));
}

void gateway::add_model(rec_model_binding m) {
  const std::string name = m.name;
  std::unique_lock lock(s_->models_mu);
  s_->rec[name] = std::make_shared<rec_entry>(std::move(m));
}

void gateway::set_model_loader(model_loader loader) { s_->loader = std::move(loader); }

namespace {

status check_model_name(const std::string& name) {
  if (name.empty() || name.size() > 64)
    return make_error(errc::invalid_argument, "name '{}': 1 to 64 characters", shown(name));
  for (char c : name)
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '_' && c != '-' && c != '.')
      return make_error(errc::invalid_argument, "name '{}': letters, digits, '_', '-' and '.' only",
                        shown(name));
  return status::ok();
}

}  // namespace

status gateway::load_model(const std::string& name, const std::string& path) {
  if (!s_->loader.load) return rpc_service::load_model(name, path);
  SPINDLE_TRY(check_model_name(name));
  std::lock_guard one_at_a_time(s_->loading);
  if (s_->gnn_of(name) || s_->rec_of(name))
    return make_error(errc::invalid_argument, "name '{}' is already loaded (unload it first)",
                      name);
  SPINDLE_ASSIGN_OR_RETURN(auto binding, s_->loader.load(name, path));
  binding.name = name;
  add_model(std::move(binding));
  log::info("admin: loaded model '{}' from {}", name, path);
  return status::ok();
}

status gateway::unload_model(const std::string& name) {
  if (!s_->loader.unload) return rpc_service::unload_model(name);
  std::lock_guard one_at_a_time(s_->loading);
  std::shared_ptr<gnn_entry> e;
  {
    std::unique_lock lock(s_->models_mu);
    auto it = s_->gnn.find(name);
    if (it == s_->gnn.end())
      return make_error(errc::not_found, "unknown GNN model '{}' (loaded: {})", shown(name),
                        s_->loaded_locked());
    e = it->second;
    s_->gnn.erase(it);  // new calls get "unknown model" from here on
  }
  // Calls in flight finish before the actors stop (nothing is lost).
  const auto until = clock_type::now() + std::chrono::seconds(10);
  while (e->c.in_flight.load() > 0 && clock_type::now() < until)
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  if (e->c.in_flight.load() > 0)
    log::warn("admin: unloading '{}' with {} calls still in flight after 10 s", name,
              e->c.in_flight.load());
  s_->loader.unload(name);
  log::info("admin: unloaded model '{}'", name);
  return status::ok();
}

namespace {

status check_gnn_call(const transport::rpc::gnn_call& call, const graph::dataset& ds) {
  if (call.seeds.empty()) return make_error(errc::invalid_argument, "seeds: empty");
  if (call.seeds.size() > 4096)
    return make_error(errc::invalid_argument, "seeds: {} (at most 4096 per request)",
                      call.seeds.size());
  for (std::size_t i = 0; i < call.seeds.size(); ++i) {
    if (call.seeds[i] < 0 || call.seeds[i] >= ds.num_nodes()) {
      return make_error(errc::invalid_argument, "seeds[{}]={} out of range (nodes {})", i,
                        call.seeds[i], ds.num_nodes());
    }
  }
  return status::ok();
}

// Admission control: false (and the call counted overloaded) when the model is full.
bool admit(model_counters& c, std::size_t max_queue) {
  ++c.requests;
  if (c.in_flight.fetch_add(1) >= max_queue) {
    --c.in_flight;
    return false;
  }
  return true;
}

// Validation and admission shared by every model kind: answers the call and
// returns false when it must not go on.
template <class Answer>
bool admit_call(model_counters& c, std::size_t max_queue, const status& valid,
                const std::string& model, const std::function<void(Answer)>& done) {
  if (!valid) {
    ++c.requests;
    c.record(rpc_status::bad_request, 0);
    done({rpc_status::bad_request, valid.message()});
    return false;
  }
  if (!admit(c, max_queue)) {
    c.record(rpc_status::overloaded, 0);
    done({rpc_status::overloaded,
          fmt::format("model '{}' is at max_queue {} calls in flight", shown(model), max_queue)});
    return false;
  }
  return true;
}

}  // namespace

void gateway::infer_gnn(transport::rpc::gnn_call call, std::function<void(gnn_answer)> done) {
  auto e = s_->gnn_of(call.model);
  if (!e) {
    const bool is_rec = s_->rec_of(call.model) != nullptr;
    return done(
        {rpc_status::bad_request,
         is_rec
             ? fmt::format("model '{}' is a recommendation model: use inferRec", shown(call.model))
             : fmt::format("unknown model '{}' (loaded: {})", shown(call.model), s_->loaded())});
  }
  if (!admit_call(e->c, e->max_queue.load(), check_gnn_call(call, *e->b.dataset), call.model, done))
    return;
  const auto t0 = clock_type::now();
  const std::uint32_t deadline = call.deadline_us;
  const auto width = std::uint32_t(e->b.model->desc().out);
  caf::anon_send(s_->forward, gnn_dispatch{e->b.batcher,
                                           {std::move(call.seeds), call.sampler_seed},
                                           timeout_of(deadline),
                                           [e, done, t0, deadline, width](const gnn_reply* r,
                                                                          const caf::error* err) {
                                             --e->c.in_flight;
                                             gnn_answer a;
                                             const double ms = ms_since(t0);
                                             a.server_us = std::uint64_t(ms * 1e3);
                                             if (settle(a, r, err, deadline)) {
                                               a.width = width;
                                               a.outputs = r->output;
                                               e->c.batching.observe(r->queued_s);
                                               e->c.sampling.observe(r->times.sample_s);
                                               e->c.gathering.observe(r->times.gather_s);
                                               e->c.compute.observe(r->times.compute_s);
                                             }
                                             e->c.record(a.status, ms);
                                             done(std::move(a));
                                           }});
}

namespace {

status check_rec_call(const transport::rpc::rec_call& call, const nn::model& m) {
  const auto& d = m.desc();
  if (call.batch == 0) return make_error(errc::invalid_argument, "batch: 0");
  if (call.dense.size() != std::size_t(call.batch) * d.dense_in) {
    return make_error(errc::invalid_argument, "dense: {} values for batch {} x dense_in {}",
                      call.dense.size(), call.batch, d.dense_in);
  }
  for (std::size_t i = 0; i < call.dense.size(); ++i)  // NaN in, NaN scores out: refuse
    if (!std::isfinite(call.dense[i]))
      return make_error(errc::invalid_argument, "dense[{}] = {}: not a finite number (sample {})",
                        i, call.dense[i], i / std::max(1, d.dense_in));
  if (call.sparse.size() != d.table_rows.size()) {
    return make_error(errc::invalid_argument, "sparse: {} bags lists for {} tables",
                      call.sparse.size(), d.table_rows.size());
  }
  return status::ok();
}

}  // namespace

void gateway::infer_rec(transport::rpc::rec_call call, std::function<void(rec_answer)> done) {
  auto e = s_->rec_of(call.model);
  if (!e) {
    return done(
        {rpc_status::bad_request, fmt::format("unknown recommendation model '{}' (loaded: {})",
                                              shown(call.model), s_->loaded())});
  }
  if (!admit_call(e->c, e->max_queue.load(), check_rec_call(call, *e->b.model), call.model, done))
    return;
  dlrm_request req;
  req.batch = call.batch;
  req.dense = std::move(call.dense);
  for (auto& bag : call.sparse)
    req.sparse.push_back({std::move(bag.indices), std::move(bag.offsets)});
  const auto& inst = e->b.instances[e->next_instance++ % e->b.instances.size()];
  const auto t0 = clock_type::now();
  const std::uint32_t deadline = call.deadline_us;
  caf::anon_send(s_->forward,
                 rec_dispatch{inst, std::move(req), timeout_of(deadline),
                              [e, done, t0, deadline](const dlrm_reply* r, const caf::error* err) {
                                --e->c.in_flight;
                                rec_answer a;
                                const double ms = ms_since(t0);
                                a.server_us = std::uint64_t(ms * 1e3);
                                if (settle(a, r, err, deadline)) a.scores = r->scores;
                                e->c.record(a.status, ms);
                                done(std::move(a));
                              }});
}

std::vector<transport::rpc::model_info> gateway::models() {
  std::vector<transport::rpc::model_info> out;
  for (const auto& [name, e] : s_->gnn_all()) {
    const auto& d = e->b.model->desc();
    out.push_back({name, "gnn", std::string(config::to_string(d.arch)), std::uint32_t(d.in),
                   std::uint32_t(d.out)});
  }
  for (const auto& [name, e] : s_->rec_all()) {
    const auto& d = e->b.model->desc();
    out.push_back({name, "dlrm", "dlrm", std::uint32_t(d.dense_in), 1});
  }
  return out;
}

namespace {

placement_stats placement_stats_of(caf::actor_system& sys, const caf::actor& placement) {
  placement_stats st;
  caf::scoped_actor self{sys};
  self->request(placement, std::chrono::seconds(2), caf::get_atom::value)
      .receive([&](const placement_stats& s) { st = s; }, [](const caf::error&) {});
  return st;
}

// The cluster placement's tunables: the drift threshold, and `replan` (now).
status set_placement_tunable(caf::actor_system& sys, const caf::actor& placement,
                             const std::string& name, const std::string& value) {
  if (name == "placement_drift_threshold") {
    double t = -1;
    try {
      std::size_t used = 0;
      t = std::stod(value, &used);
      if (used != value.size()) t = -1;
    } catch (const std::exception&) {
    }
    if (!(t >= 0 && t <= 1))
      return make_error(errc::invalid_argument, "{} = '{}': expected a number in [0, 1]",
                        shown(name), shown(value));
    caf::anon_send(placement, threshold_atom::value, t);
    return status::ok();
  }
  // replan: the placement publishes the observed FAP and the nodes migrate.
  status result;
  caf::scoped_actor self{sys};
  self->request(placement, std::chrono::seconds(10), replan_atom::value)
      .receive([](int) {},
               [&](const caf::error& e) {
                 result = make_error(errc::unavailable, "replan: {}", to_string(e));
               });
  return result;
}

}  // namespace

expected<std::vector<transport::rpc::tunable>> gateway::tunables(const std::string& model) {
  if (auto entry = s_->gnn_of(model)) {
    auto& e = *entry;
    std::lock_guard lock(e.mu);
    std::vector<transport::rpc::tunable> t{
        {"routing_policy", std::string(sched::to_string(e.b.router->policy()))},
        {"batch_deadline_us", std::to_string(e.b.policy.deadline.count())},
        {"max_batch", std::to_string(e.b.policy.max_batch)},
        {"work_conserving", e.b.policy.work_conserving ? "true" : "false"},
        {"max_queue", std::to_string(e.max_queue.load())}};
    if (e.b.device)
      t.push_back({"gnnsched_policy", std::string(sched::to_string(e.b.device->policy()))});
    const double o = e.b.router->threshold_override();
    t.push_back(
        {"psgs_threshold", std::isnan(o) ? std::string("calibrated") : fmt::format("{}", o)});
    if (e.b.placement) {
      const auto st = placement_stats_of(s_->sys, e.b.placement);
      t.push_back({"placement_drift_threshold", fmt::format("{}", st.threshold)});
      t.push_back({"placement_epoch", std::to_string(st.epoch)});
    }
    return t;
  }
  if (auto entry = s_->rec_of(model)) {
    auto& e = *entry;
    std::vector<transport::rpc::tunable> t{{"max_queue", std::to_string(e.max_queue.load())}};
    for (std::size_t i = 0; i < e.b.session->table_count(); ++i) {
      t.push_back({"hit_rate_threshold." + e.b.session->table(i).name,
                   fmt::format("{}", e.b.session->hit_rate_threshold(i))});
    }
    return t;
  }
  return make_error(errc::not_found, "unknown model '{}' (loaded: {})", shown(model), s_->loaded());
}

namespace {

expected<std::uint64_t> parse_count(const std::string& name, const std::string& value,
                                    std::uint64_t lo, std::uint64_t hi) {
  try {
    std::size_t used = 0;
    const auto v = std::stoull(value, &used);
    if (used == value.size() && v >= lo && v <= hi) return std::uint64_t(v);
  } catch (const std::exception&) {
  }
  return make_error(errc::invalid_argument, "{} = '{}': expected an integer in [{}, {}]", name,
                    shown(value), lo, hi);
}

status set_gnn_tunable(caf::actor_system& sys, gnn_entry& e, const std::string& name,
                       const std::string& value) {
  if (e.b.placement && (name == "placement_drift_threshold" || name == "replan"))
    return set_placement_tunable(sys, e.b.placement, name, value);
  if (name == "gnnsched_policy") {
    if (!e.b.device)
      return make_error(errc::invalid_argument,
                        "gnnsched_policy: this server runs no GNNSched device scheduler (start "
                        "it with --gnnsched)");
    SPINDLE_ASSIGN_OR_RETURN(auto p, sched::parse_grouping_policy(value));
    e.b.device->set_policy(p);  // the device's: every model on it
    return status::ok();
  }
  if (name == "routing_policy") {
    SPINDLE_ASSIGN_OR_RETURN(auto p, sched::parse_routing_policy(value));
    if (e.b.router_actor) {
      caf::anon_send(e.b.router_actor, policy_atom::value, p);
    } else {
      caf::anon_send(e.b.batcher, policy_atom::value, p);  // the batcher sets the shared router
    }
    e.b.router->set_policy(p);  // visible to the next getTunables at once
    return status::ok();
  }
  if (name == "psgs_threshold") {
    if (!e.b.router_actor)
      return make_error(errc::invalid_argument, "psgs_threshold: this model has no router actor");
    double t = -1;
    if (value != "calibrated") {
      try {
        std::size_t used = 0;
        t = std::stod(value, &used);
        if (used != value.size() || !(t >= 0) || !std::isfinite(t)) t = -2;
      } catch (const std::exception&) {
        t = -2;
      }
    }
    if (t == -2)
      return make_error(errc::invalid_argument,
                        "psgs_threshold = '{}': expected a finite summed PSGS >= 0 or 'calibrated'",
                        shown(value));
    e.b.router->set_threshold_override(t);
    caf::anon_send(e.b.router_actor, threshold_atom::value, t);
    return status::ok();
  }
  if (name == "max_queue") {
    SPINDLE_ASSIGN_OR_RETURN(auto v, parse_count(name, value, 1, 1u << 20));
    e.max_queue = v;
    return status::ok();
  }
  std::lock_guard lock(e.mu);
  if (name == "batch_deadline_us") {
    SPINDLE_ASSIGN_OR_RETURN(auto v, parse_count(name, value, 0, 10'000'000));
    e.b.policy.deadline = std::chrono::microseconds(v);
  } else if (name == "max_batch") {
    SPINDLE_ASSIGN_OR_RETURN(auto v, parse_count(name, value, 1, 65536));
    e.b.policy.max_batch = v;
  } else if (name == "work_conserving") {
    if (value != "true" && value != "false")
      return make_error(errc::invalid_argument, "work_conserving = '{}': expected true or false",
                        shown(value));
    e.b.policy.work_conserving = value == "true";
  } else {
    return make_error(
        errc::invalid_argument,
        "unknown tunable '{}' (GNN models: routing_policy, psgs_threshold, "
        "batch_deadline_us, max_batch, work_conserving, max_queue, gnnsched_policy; on a cluster "
        "also placement_drift_threshold, replan)",
        shown(name));
  }
  caf::anon_send(e.b.batcher, policy_atom::value, e.b.policy);
  return status::ok();
}

status set_rec_tunable(rec_entry& e, const std::string& name, const std::string& value) {
  if (name == "max_queue") {
    SPINDLE_ASSIGN_OR_RETURN(auto v, parse_count(name, value, 1, 1u << 20));
    e.max_queue = v;
    return status::ok();
  }
  if (name == "refresh") {
    caf::anon_send(e.b.cache, refresh_atom::value);
    return status::ok();
  }
  const std::string prefix = "hit_rate_threshold";
  if (name.starts_with(prefix)) {
    double t = -1;
    try {
      t = std::stod(value);
    } catch (const std::exception&) {
    }
    if (!(t >= 0 && t <= 1))
      return make_error(errc::invalid_argument, "{} = '{}': expected a number in [0, 1]",
                        shown(name), shown(value));
    for (std::size_t i = 0; i < e.b.session->table_count(); ++i) {
      const auto& table = e.b.session->table(i).name;
      if (name == prefix || name == prefix + "." + table) e.b.session->set_hit_rate_threshold(i, t);
    }
    if (name == prefix || e.b.session->table_index(name.substr(prefix.size() + 1)))
      return status::ok();
    return make_error(errc::invalid_argument, "{}: no such table", shown(name));
  }
  return make_error(
      errc::invalid_argument,
      "unknown tunable '{}' (DLRM models: max_queue, refresh, hit_rate_threshold[.TABLE])",
      shown(name));
}

}  // namespace

status gateway::set_tunable(const std::string& model, const std::string& name,
                            const std::string& value) {
  if (auto e = s_->gnn_of(model)) return set_gnn_tunable(s_->sys, *e, name, value);
  if (auto e = s_->rec_of(model)) return set_rec_tunable(*e, name, value);
  return make_error(errc::not_found, "unknown model '{}' (loaded: {})", shown(model), s_->loaded());
}

std::string gateway::stats_json() {
  nlohmann::json j;
  caf::scoped_actor self{s_->sys};
  for (const auto& [name, e] : s_->gnn_all()) {
    auto m = e->c.json();
    self->request(e->b.batcher, std::chrono::seconds(2), stats_atom::value)
        .receive(
            [&](const batcher_stats& st) {
              m["batches"] = st.batches;
              m["small_executor_batches"] = st.small;
              m["large_executor_batches"] = st.large;
            },
            [](const caf::error&) {});
    if (e->b.device) {
      const auto c = e->b.device->stats();
      m["gnnsched"] = {{"policy", std::string(sched::to_string(e->b.device->policy()))},
                       {"tasks", c.tasks},
                       {"groups", c.groups},
                       {"largest_group", c.largest_group},
                       {"grouped_tasks", c.grouped_tasks},
                       {"overruns", c.overruns},
                       {"pool_bytes", e->b.device->capacity()}};
    }
    if (e->b.router_actor) {
      self->request(e->b.router_actor, std::chrono::seconds(2), caf::get_atom::value)
          .receive([&](const std::string& r) { m["routing"] = nlohmann::json::parse(r); },
                   [](const caf::error&) {});
    }
    if (e->b.placement) {
      const auto p = placement_stats_of(s_->sys, e->b.placement);
      m["placement"] = {{"epoch", p.epoch},
                        {"drift", p.drift},
                        {"window_requests", p.window_requests},
                        {"replans", p.replans},
                        {"drift_threshold", p.threshold},
                        {"last_error", p.last_error}};
    }
    const auto tun = tunables(name);  // keep the expected alive: `*tunables(...)` would dangle
    for (const auto& t : *tun) m["tunables"][t.name] = t.value;
    j["models"][name] = m;
  }
  for (const auto& [name, e] : s_->rec_all()) {
    auto m = e->c.json();
    for (std::size_t i = 0; i < e->b.session->table_count(); ++i) {
      const auto st = e->b.session->stats(i);
      m["tables"][e->b.session->table(i).name] = {
          {"lookups", st.lookups},
          {"unique_keys", st.unique_keys},
          {"l1_misses", st.l1_misses},
          {"hit_rate", st.unique_keys ? 1.0 - double(st.l1_misses) / double(st.unique_keys) : 0.0},
          {"sync", st.sync_lookups},
          {"async", st.async_lookups},
          {"defaulted", st.defaulted}};
    }
    const auto tun = tunables(name);  // keep the expected alive: `*tunables(...)` would dangle
    for (const auto& t : *tun) m["tunables"][t.name] = t.value;
    j["models"][name] = m;
  }
  j["uptime_s"] = std::chrono::duration<double>(clock_type::now() - s_->started).count();
  return j.dump();
}

std::string gateway::prometheus_text() {
  static const std::vector<std::array<const char*, 3>> help = {
      {"spindle_requests_total", "counter", "Calls received per model."},
      {"spindle_responses_total", "counter", "Answers per model and status."},
      {"spindle_queue_depth", "gauge", "Calls in flight per model (admission queue)."},
      {"spindle_request_latency_seconds", "histogram", "End-to-end server time of ok answers."},
      {"spindle_stage_latency_seconds", "histogram", "Per-request time by stage (GNN models)."},
      {"spindle_cache_hit_rate", "gauge", "L1 embedding-cache hit rate per table (unique keys)."},
      {"spindle_cache_lookups_total", "counter", "Embedding lookups per table by insertion mode."}};
  std::map<std::string, std::string> families;
  std::shared_lock lock(s_->models_mu);
  for (const auto& [name, e] : s_->gnn) e->c.render(families, name);
  for (const auto& [name, e] : s_->rec) {
    e->c.render(families, name);
    for (std::size_t i = 0; i < e->b.session->table_count(); ++i) {
      const auto st = e->b.session->stats(i);
      const auto& table = e->b.session->table(i).name;
      const double hit = st.unique_keys ? 1.0 - double(st.l1_misses) / double(st.unique_keys) : 0.0;
      families["spindle_cache_hit_rate"] +=
          fmt::format("spindle_cache_hit_rate{{model=\"{}\",table=\"{}\"}} {}\n", name, table, hit);
      for (auto [mode, n] : {std::pair{"sync", st.sync_lookups}, {"async", st.async_lookups}}) {
        families["spindle_cache_lookups_total"] +=
            fmt::format("spindle_cache_lookups_total{{model=\"{}\",table=\"{}\",mode=\"{}\"}} {}\n",
                        name, table, mode, n);
      }
    }
  }
  std::string out;
  for (const auto& [family, type, text] : help) {
    const auto it = families.find(family);
    if (it == families.end()) continue;
    out += fmt::format("# HELP {} {}\n# TYPE {} {}\n", family, text, family, type) + it->second;
  }
  return out;
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

void gateway::set_members(std::function<std::string()> members) {
  s_->members = std::move(members);
}

std::string gateway::members_json() {
  nlohmann::json j;
  if (s_->members) {
    auto list = nlohmann::json::parse(s_->members(), nullptr, /*allow_exceptions=*/false);
    j["members"] = list.is_array() ? list : nlohmann::json::array();
    return j.dump();
  }
  j["members"] = nlohmann::json::array(
      {{{"rank", 0}, {"name", "serve"}, {"pid", ::getpid()}, {"alive", true}}});
  return j.dump();
}

}  // namespace spindle::actors
