// The gateway's recommendation models as the admin sees them: the node
// manager's enrolment (Hera Algorithm 3 or PARTIES) and live load and unload.
#include <thread>

#include "actors/gateway_state.hpp"
#include "core/call_origin.hpp"
#include "core/log.hpp"

namespace spindle::actors {
namespace {

// Puts `e` under the node manager: Hera needs the model's profile; PARTIES
// works from SLA feedback alone. The SLA is the profile's, else admission's.
status enroll(const gateway::state& s, const std::string& name, rec_entry& e) {
  std::lock_guard lock(e.manager_mu);
  if (*s.manager == colocation::hera::manager_policy::hera) {
    auto it = s.manager_profiles.models.find(name);
    if (it == s.manager_profiles.models.end())
      return make_error(errc::invalid_argument,
                        "node manager hera: no profile for model '{}' (spindle profile --model "
                        "{}=DIR)",
                        name, name);
    e.profile = it->second;
  }
  e.manager.sla_ms = double(e.admission.options().slo.count()) / 1000.0;
  if (e.profile) e.manager.sla_ms = e.profile->sla_ms;
  e.manager.max_workers = s.manager_max_workers;
  e.last_requests = e.c.requests.load();
  e.last_tick = clock_type::now();
  e.managed = true;
  return status::ok();
}

}  // namespace

status gateway::set_node_manager(colocation::hera::manager_policy policy,
                                 const colocation::hera::profile_table& profiles, int max_workers) {
  s_->manager = policy;
  s_->manager_profiles = profiles;
  s_->manager_max_workers = std::max(1, max_workers);
  for (const auto& [name, e] : s_->rec_all()) {
    if (!e->b.pool) continue;
    if (auto st = enroll(*s_, name, *e); !st) {
      s_->manager.reset();
      return st;
    }
  }
  return status::ok();
}

std::optional<rec_model_binding> gateway::rec_binding(const std::string& name) const {
  auto e = s_->rec_of(name);
  if (!e) return std::nullopt;
  return e->b;
}

// Loaded (and run once) by the server's loader, then enrolled with the node
// manager when one runs, and only then reachable by calls.
status gateway::load_rec(const std::string& name, const std::string& path) {
  if (!s_->loader.load_rec)
    return make_error(errc::unsupported, "{}: this server does not load recommendation models",
                      path);
  spindle::lock_guard one_at_a_time(s_->loading);
  if (s_->gnn_of(name) || s_->rec_of(name))
    return make_error(errc::invalid_argument, "name '{}' is already loaded (unload it first)",
                      name);
  SPINDLE_ASSIGN_OR_RETURN(auto binding, s_->loader.load_rec(name, path));
  binding.name = name;
  auto e = std::make_shared<rec_entry>(std::move(binding), s_->forward);
  if (s_->manager && e->b.pool)
    if (auto st = enroll(*s_, name, *e); !st)  // served, at its workers, unmanaged
      log::warn("admin: '{}' is not managed: {}", name, st.message());
  {
    spindle::lock_guard lock(s_->models_mu);
    s_->rec[name] = std::move(e);
  }
  log::info("admin via {}: loaded recommendation model '{}' from {}", call_origin(), name, path);
  return status::ok();
}

// Out of the map first (new calls get "unknown model"), then every admitted
// call answered and the pool idle, so the entry, its pool and what its runner
// reads are freed here, on the admin thread, never on one of its own workers.
status gateway::unload_rec(const std::string& name) {
  spindle::lock_guard one_at_a_time(s_->loading);
  std::shared_ptr<rec_entry> e;
  {
    spindle::lock_guard lock(s_->models_mu);
    auto it = s_->rec.find(name);
    if (it == s_->rec.end())
      return make_error(errc::not_found, "unknown model '{}' (loaded: {})", shown(name),
                        s_->loaded_locked());
    e = it->second;
    s_->rec.erase(it);
  }
  const auto until = clock_type::now() + std::chrono::seconds(10);
  while (e->admission.in_flight() > 0 && clock_type::now() < until)
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  if (e->admission.in_flight() > 0)
    log::warn("admin: unloading '{}' with {} calls still in flight after 10 s", name,
              e->admission.in_flight());
  if (e->b.pool) e->b.pool->wait_idle();
  for (const auto& a : e->b.instances) caf::anon_send_exit(a, caf::exit_reason::user_shutdown);
  if (e->b.cache) caf::anon_send_exit(e->b.cache, caf::exit_reason::user_shutdown);
  log::info("admin via {}: unloaded recommendation model '{}' ({} calls answered)", call_origin(), name,
            e->c.requests.load());
  if (s_->loader.rec_unloaded) s_->loader.rec_unloaded(name);
  return status::ok();
}

}  // namespace spindle::actors
