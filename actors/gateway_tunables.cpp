// Live tunables of the gateway's models: list them, change them (batching,
// routing, GNNSched, placement and parameter-server thresholds).
#include <fmt/ranges.h>

#include <charconv>
#include <cmath>
#include <nlohmann/json.hpp>

#include "actors/gateway.hpp"
#include "actors/gateway_state.hpp"
#include "actors/placement_actor.hpp"
#include "actors/router_actor.hpp"
#include "config/sampling.hpp"
#include "config/tunables.hpp"
#include "nn/model.hpp"
#include "core/call_origin.hpp"
#include "core/log.hpp"

namespace spindle::actors {

using transport::rpc::rpc_status;

placement_stats detail::placement_stats_of(caf::actor_system& sys,
                                           const placement_actor& placement) {
  placement_stats st;
  caf::scoped_actor self{sys};
  self->request(placement, std::chrono::seconds(2), caf::get_atom::value)
      .receive([&](const placement_stats& s) { st = s; }, [](const caf::error&) {});
  return st;
}

namespace {

// Digits only: no sign, no spaces (stoull took " 16", "+5" and "-0").
expected<std::uint64_t> parse_count(const std::string& name, const std::string& value,
                                    std::uint64_t lo, std::uint64_t hi) {
  std::uint64_t v = 0;
  const char* end = value.data() + value.size();
  const auto [stop, ec] = std::from_chars(value.data(), end, v);
  if (!value.empty() && ec == std::errc() && stop == end && v >= lo && v <= hi) return v;
  return make_error(errc::invalid_argument, "{} = '{}': expected an integer in [{}, {}]", name,
                    shown(value), lo, hi);
}

// A number, the whole value (no spaces, no '+', nothing after it); NaN
// otherwise, which every range check refuses.
double parse_real(const std::string& value) {
  double v = 0;
  const char* end = value.data() + value.size();
  const auto [stop, ec] = std::from_chars(value.data(), end, v);
  return !value.empty() && ec == std::errc() && stop == end ? v : std::nan("");
}

// precision: fp32 | bf16 | int8 for the model's dense layers, switched while it serves
// (a call in flight keeps the arithmetic it started with). A cluster's ranks
// keep the precision they started with, as their fanouts.
status set_precision_tunable(const nn::model* m, const std::string& served,
                             const std::string& value, bool cluster) {
  if (!m)
    return make_error(errc::invalid_argument,
                      "precision: this model runs elsewhere; set it where it is computed");
  if (cluster)
    return make_error(errc::invalid_argument,
                      "precision: every rank of a cluster computes with the precision it started "
                      "with; set precision in model.toml and restart");
  if (value != "fp32" && value != "bf16" && value != "int8")
    return make_error(errc::invalid_argument, "precision = '{}': expected fp32, bf16 or int8",
                      shown(value));
  SPINDLE_TRY(m->set_precision(value));
  if (auto note = m->slow_precision_note(served); !note.empty()) log::warn("{}", note);
  return status::ok();
}

// The cluster placement's tunables: the drift threshold, and `replan` (now).
status set_placement_tunable(caf::actor_system& sys, const placement_actor& placement,
                             const std::string& name, const std::string& value) {
  if (name == "placement_drift_threshold") {
    const double t = parse_real(value);
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
        {"routing_policy", std::string(serving::to_string(e.b.router->policy()))},
        {"batch_deadline_us", std::to_string(e.b.policy.deadline.count())},
        {"max_batch", std::to_string(e.b.policy.max_batch)},
        {"split_min", std::to_string(e.b.policy.split_min)},
        {"work_conserving", e.b.policy.work_conserving ? "true" : "false"},
        {"max_queue", std::to_string(e.admission.options().max_queue)},
        {"slo_ms", std::to_string(e.admission.options().slo.count() / 1000)},
        {"fanouts", fmt::format("{}", fmt::join(e.fanouts, ","))}};
    if (e.b.model) t.push_back({"precision", e.b.model->precision()});
    if (e.b.express)
      t.push_back({"express_max_requests", std::to_string(e.b.express->max_requests())});
    if (e.b.device)
      t.push_back({"gnnsched_policy", std::string(colocation::to_string(e.b.device->policy()))});
    const double o = e.b.router->threshold_override();
    t.push_back(
        {"psgs_threshold", std::isnan(o) ? std::string("calibrated") : fmt::format("{}", o)});
    if (e.b.placement) {
      const auto st = detail::placement_stats_of(s_->sys, e.b.placement);
      t.push_back({"placement_drift_threshold", fmt::format("{}", st.threshold)});
      t.push_back({"placement_epoch", std::to_string(st.epoch)});
    }
    return t;
  }
  if (auto entry = s_->rec_of(model)) {
    auto& e = *entry;
    std::vector<transport::rpc::tunable> t{
        {"max_queue", std::to_string(e.admission.options().max_queue)},
        {"slo_ms", std::to_string(e.admission.options().slo.count() / 1000)}};
    if (e.b.model) t.push_back({"precision", e.b.model->precision()});
    if (e.b.pool) {
      t.push_back({"workers", std::to_string(e.b.pool->workers())});
      t.push_back({"max_batch_samples", std::to_string(e.max_batch_samples.load())});
      t.push_back({"intra_call", e.intra_call.load() ? "true" : "false"});
      t.push_back({"queue_deadline_us", std::to_string(e.queue_deadline_us.load())});
      std::lock_guard lock(e.manager_mu);
      t.push_back({"manager_period_ms", std::to_string(s_->manager_period_ms.load())});
      t.push_back({"manager_sla_ms", fmt::format("{}", e.manager.sla_ms)});
      t.push_back({"slack_low", fmt::format("{}", e.manager.band.low)});
      t.push_back({"slack_high", fmt::format("{}", e.manager.band.high)});
      t.push_back({"max_workers", std::to_string(e.manager.max_workers)});
    }
    for (std::size_t i = 0; e.b.session && i < e.b.session->table_count(); ++i) {
      t.push_back({"hit_rate_threshold." + e.b.session->table(i).name,
                   fmt::format("{}", e.b.session->hit_rate_threshold(i))});
    }
    return t;
  }
  return make_error(errc::not_found, "unknown model '{}' (loaded: {})", shown(model), s_->loaded());
}

namespace {

// max_queue and slo_ms, shared by every model kind; nullopt: not one of them.
std::optional<status> set_admission_tunable(serving::admission_control& a, const std::string& name,
                                            const std::string& value) {
  if (name == "max_queue") {
    auto v = parse_count(name, value, 1, 1u << 20);
    if (!v) return status(v.error());
    a.set_max_queue(*v);
    return status::ok();
  }
  if (name == "slo_ms") {
    auto v = parse_count(name, value, 0, 3'600'000);
    if (!v) return status(v.error());
    a.set_slo(std::chrono::milliseconds(*v));
    return status::ok();
  }
  return std::nullopt;
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
    SPINDLE_ASSIGN_OR_RETURN(auto p, colocation::parse_grouping_policy(value));
    e.b.device->set_policy(p);  // the device's: every model on it
    return status::ok();
  }
  if (name == "routing_policy") {
    SPINDLE_ASSIGN_OR_RETURN(auto p, serving::parse_routing_policy(value));
    if (e.b.routing) {
      caf::anon_send(e.b.routing, policy_atom::value, p);
    } else {
      caf::anon_send(e.b.batcher, policy_atom::value, p);  // the batcher sets the shared router
    }
    e.b.router->set_policy(p);  // visible to the next getTunables at once
    return status::ok();
  }
  if (name == "psgs_threshold") {
    if (!e.b.routing)
      return make_error(errc::invalid_argument, "psgs_threshold: {}",
                        e.b.cluster ? "a member's door runs its batches on the small executor "
                                      "(members take no calibration); set it on rank 0's door, "
                                      "which routes the batches it hands out"
                                    : "this model has no router actor");
    const bool calibrated = value == "calibrated";
    const double t = calibrated ? -1 : parse_real(value);  // < 0 restores the calibration
    if (!calibrated && !(t >= 0 && std::isfinite(t)))
      return make_error(errc::invalid_argument,
                        "psgs_threshold = '{}': expected a finite summed PSGS >= 0 or 'calibrated'",
                        shown(value));
    e.b.router->set_threshold_override(t);
    caf::anon_send(e.b.routing, threshold_atom::value, t);
    return status::ok();
  }
  if (auto handled = set_admission_tunable(e.admission, name, value)) return *handled;
  if (name == "precision")
    return set_precision_tunable(e.b.model, e.b.name, value, e.b.placement || e.b.cluster);
  if (name == "express_max_requests") {
    if (!e.b.express)
      return make_error(errc::invalid_argument,
                        "express_max_requests: this model has no express lane (a cluster's "
                        "GNN, or passes grouped by GNNSched): its calls go through the batcher");
    SPINDLE_ASSIGN_OR_RETURN(auto n, parse_count(name, value, 0, 64));
    e.b.express->set_max_requests(std::size_t(n));
    return status::ok();
  }
  if (name == "fanouts") {
    if (e.b.placement || e.b.cluster)
      return make_error(errc::invalid_argument,
                        "fanouts: members of a cluster sample with the fanouts they started "
                        "with; set fanouts in model.toml (or --fanouts) and restart");
    SPINDLE_ASSIGN_OR_RETURN(auto f, config::parse_fanouts(value));
    SPINDLE_TRY(config::validate_fanouts(f, e.b.model->desc().layers, "fanouts"));
    if (f.empty())
      return make_error(errc::invalid_argument, "fanouts = '{}': one value per layer ({})",
                        shown(value), e.b.model->desc().layers);
    std::lock_guard lock(e.mu);
    e.fanouts = f;
    if (e.b.express) SPINDLE_TRY(e.b.express->set_fanouts(f));
    caf::anon_send(e.b.batcher, fanouts_atom::value, std::move(f));
    return status::ok();
  }
  std::lock_guard lock(e.mu);
  if (name == "batch_deadline_us") {
    SPINDLE_ASSIGN_OR_RETURN(auto v, parse_count(name, value, 0, 10'000'000));
    e.b.policy.deadline = std::chrono::microseconds(v);
  } else if (name == "max_batch") {
    SPINDLE_ASSIGN_OR_RETURN(auto v, parse_count(name, value, 1, 65536));
    e.b.policy.max_batch = v;
    e.admission.set_floor(v);
  } else if (name == "split_min") {
    SPINDLE_ASSIGN_OR_RETURN(auto v, parse_count(name, value, 0, 65536));
    e.b.policy.split_min = v;
  } else if (name == "work_conserving") {
    if (value != "true" && value != "false")
      return make_error(errc::invalid_argument, "work_conserving = '{}': expected true or false",
                        shown(value));
    e.b.policy.work_conserving = value == "true";
    // Deadline-bound batching: a lone call waits for its batch as every call does.
    if (e.b.express) e.b.express->set_work_conserving(e.b.policy.work_conserving);
  } else {
    return make_error(errc::invalid_argument,
                      "unknown tunable '{}' (GNN models: {}; on a cluster's coordinator also {})",
                      shown(name), config::tunable_names(config::tunable_scope::gnn),
                      config::tunable_names(config::tunable_scope::cluster));
  }
  caf::anon_send(e.b.batcher, policy_atom::value, e.b.policy);
  return status::ok();
}

status set_rec_tunable(rec_entry& e, const std::string& name, const std::string& value) {
  if (auto handled = set_admission_tunable(e.admission, name, value)) return *handled;
  if (name == "precision" && e.b.model)
    return set_precision_tunable(e.b.model, e.b.name, value, false);
  if (name == "refresh" && e.b.cache) {
    caf::anon_send(e.b.cache, refresh_atom::value);
    return status::ok();
  }
  if (e.b.pool && (name == "manager_sla_ms" || name == "slack_low" || name == "slack_high" ||
                   name == "max_workers")) {
    const double v = parse_real(value);
    std::lock_guard lock(e.manager_mu);
    auto& m = e.manager;
    const bool ok = name == "manager_sla_ms" ? v > 0 && v <= 600000
                    : name == "max_workers"  ? v >= 1 && v <= 1024 && v == std::floor(v)
                    : name == "slack_low"    ? v > 0 && v <= m.band.high
                                             : v >= m.band.low && v <= 100;
    if (!ok)
      return make_error(errc::invalid_argument, "{} = '{}': out of range (slack_low <= slack_high)",
                        name, shown(value));
    if (name == "manager_sla_ms") m.sla_ms = v;
    if (name == "max_workers") m.max_workers = int(v);
    if (name == "slack_low") m.band.low = v;
    if (name == "slack_high") m.band.high = v;
    return status::ok();
  }
  if (name == "queue_deadline_us" && e.b.pool) {  // deadline of calls that bring none
    std::uint32_t n = 0;
    auto [p, ec] = std::from_chars(value.data(), value.data() + value.size(), n);
    if (ec != std::errc() || p != value.data() + value.size() || n > 600'000'000)
      return make_error(errc::invalid_argument,
                        "queue_deadline_us = '{}': expected 0..600000000 (0: none)", shown(value));
    e.queue_deadline_us = n;
    return status::ok();
  }
  if (name == "intra_call" && e.b.pool) {  // idle workers share a large batch
    if (value != "true" && value != "false")
      return make_error(errc::invalid_argument, "intra_call = '{}': expected true or false",
                        shown(value));
    e.intra_call = value == "true";
    return status::ok();
  }
  if (name == "max_batch_samples" && e.b.pool) {  // the dynamic batch's sample budget
    std::int64_t n = 0;
    auto [p, ec] = std::from_chars(value.data(), value.data() + value.size(), n);
    if (ec != std::errc() || p != value.data() + value.size() || n < 1 || n > 1 << 20)
      return make_error(errc::invalid_argument, "max_batch_samples = '{}': expected 1..1048576",
                        shown(value));
    e.max_batch_samples = n;
    return status::ok();
  }
  if (name == "workers" && e.b.pool) {  // Hera's pool, resized live (nothing queued is lost)
    int n = 0;
    auto [p, ec] = std::from_chars(value.data(), value.data() + value.size(), n);
    if (ec != std::errc() || p != value.data() + value.size() || n < 1 || n > 1024)
      return make_error(errc::invalid_argument, "workers = '{}': expected 1..1024", shown(value));
    e.b.pool->resize(std::size_t(n));
    return status::ok();
  }
  const std::string prefix = "hit_rate_threshold";
  if (name.starts_with(prefix) && e.b.session) {
    const double t = parse_real(value);
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
      "unknown tunable '{}' (recommendation models: {}; through the parameter server also {})",
      shown(name), config::tunable_names(config::tunable_scope::rec),
      config::tunable_names(config::tunable_scope::parameter_server));
}

}  // namespace

status gateway::set_tunable(const std::string& model, const std::string& name,
                            const std::string& value) {
  auto st = apply_tunable(model, name, value);
  if (st)
    log::info("admin via {}: {} {} = {}", call_origin(), shown(model), shown(name), shown(value));
  else
    log::info("admin via {}: {} {} = {} refused: {}", call_origin(), shown(model), shown(name),
              shown(value), st.message());
  return st;
}

status gateway::apply_tunable(const std::string& model, const std::string& name,
                              const std::string& value) {
  if (auto e = s_->gnn_of(model)) return set_gnn_tunable(s_->sys, *e, name, value);
  if (auto e = s_->rec_of(model)) {
    if (name == "manager_period_ms" && e->b.pool) {  // T_monitor, for every managed model
      int ms = 0;
      auto [p, ec] = std::from_chars(value.data(), value.data() + value.size(), ms);
      if (ec != std::errc() || p != value.data() + value.size() || ms < 10 || ms > 600000)
        return make_error(errc::invalid_argument, "manager_period_ms = '{}': expected 10..600000",
                          shown(value));
      s_->manager_period_ms = ms;
      return status::ok();
    }
    return set_rec_tunable(*e, name, value);
  }
  return make_error(errc::not_found, "unknown model '{}' (loaded: {})", shown(model), s_->loaded());
}

}  // namespace spindle::actors
