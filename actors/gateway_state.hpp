// The gateway's shared state, for its implementation files only (gateway.cpp:
// the service and calls; gateway_tunables.cpp: live tunables; gateway_stats.cpp:
// stats JSON, Prometheus text and members). Not a public header.
#pragma once

#include <array>
#include <atomic>
#include <chrono>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <shared_mutex>
#include <string>
#include <vector>

#include "actors/gateway.hpp"
#include "actors/gateway_metrics.hpp"
#include "actors/model_scheduler.hpp"
#include "actors/placement_actor.hpp"
#include "colocation/hera/manager.hpp"
#include "core/thread_annotations.hpp"
#include "graph/node_index.hpp"
#include "serving/gnn_pipeline.hpp"

namespace spindle::actors::detail {

using clock_type = std::chrono::steady_clock;

// A client-supplied name or value as errors and logs show it: at most 64
// characters, then how much was cut (a 10 MB name must not come back whole).
inline std::string shown(std::string_view text) {
  constexpr std::size_t kShown = 64;
  if (text.size() <= kShown) return std::string(text);
  return fmt::format("{}...(+{} bytes)", text.substr(0, kShown), text.size() - kShown);
}

/// A cluster placement actor's state (threshold, epoch), asked with a timeout.
placement_stats placement_stats_of(caf::actor_system& sys, const placement_actor& placement);

// The admission limit's floor: a cold or idle model still takes a full batch
// before its capacity is measured (GNN: max_batch; recommendation: see rec_entry).
inline serving::admission_options with_floor(serving::admission_options o, std::size_t floor) {
  o.floor = floor;
  return o;
}

struct gnn_entry {
  gnn_model_binding b;
  std::unique_ptr<gnn_scheduler> scheduler;  // how its admitted calls run
  serving::admission_control admission;
  std::mutex mu;             // guards b.policy and fanouts
  std::vector<int> fanouts;  // what the pipelines sample with (tunable `fanouts`)
  model_counters c;
  // The dataset's input ids (requests may name nodes by them); built once here,
  // on the thread that adds the model, never on the RPC thread.
  std::optional<graph::node_index> ids;
  std::string ids_error;  // why there is no index, for a request that needs one
  gnn_entry(gnn_model_binding binding, const caf::actor& forwarder)
      : b(std::move(binding)),
        scheduler(make_gnn_scheduler(b, forwarder)),
        admission(with_floor(b.admission, b.policy.max_batch)) {
    if (!b.dataset) return;
    if (b.model)
      if (auto f = serving::served_fanouts(b.model->desc(), b.dataset->metadata())) fanouts = *f;
    if (auto x = graph::node_index::build(*b.dataset))
      ids.emplace(std::move(*x));
    else
      ids_error = x.error().message();
  }
};

/// A recommendation call waiting for a worker of its model's pool.
struct pending_rec {
  dlrm_request req;
  std::function<void(transport::rpc::rec_answer)> done;
  clock_type::time_point t0;
  std::uint32_t deadline = 0;        // the call's own (µs; 0: none)
  std::uint32_t queue_deadline = 0;  // how long it may wait for a worker (µs; 0: forever)
};

struct rec_entry {
  rec_model_binding b;
  std::unique_ptr<rec_scheduler> scheduler;  // how its admitted calls run
  serving::admission_control admission;
  model_counters c;
  // The node manager's view of this model (guarded by manager_mu).
  std::mutex manager_mu;
  colocation::hera::manager_settings manager;              // SLA, slack band, max workers
  std::optional<colocation::hera::model_profile> profile;  // from --profiles
  std::atomic<bool> managed{false};                   // enrolled with the node manager
  std::uint64_t last_requests = 0;
  clock_type::time_point last_tick = clock_type::now();
  nlohmann::json last_decision;
  // Calls waiting for a worker; a worker merges what is queued (dynamic batching).
  std::mutex pending_mu;
  std::deque<pending_rec> pending;
  std::atomic<std::int64_t> max_batch_samples{4096};  // tunable max_batch_samples
  std::atomic<bool> intra_call{true};  // tunable intra_call: idle workers share a large batch
  // A call without its own deadline may wait this long (µs) before it is
  // answered deadline_exceeded instead of computed late: the model's SLA
  // (model.toml slo_ms) unless set (tunable queue_deadline_us; 0: none).
  std::atomic<std::uint32_t> queue_deadline_us{0};
  rec_entry(rec_model_binding binding, const caf::actor& forwarder)
      : b(std::move(binding)),
        scheduler(make_rec_scheduler(b, forwarder)),
        admission(with_floor(b.admission, admission_floor(b))) {}
  // A pool's worker takes every queued call into one pass (up to 4,096 samples):
  // the floor is one such pass of 64-sample calls, so a burst is batched, not
  // refused, before capacity is measured. A model served elsewhere (forward)
  // is batched by its server, which admits for itself: the same 64. Actors take
  // one call each: two apiece.
  static std::size_t admission_floor(const rec_model_binding& b) {
    if (b.pool || b.forward) return 64;
    return 2 * std::max<std::size_t>(1, b.instances.size());
  }
};

/// Why a call asking for graph version `min` cannot be answered now (an answer
/// with an empty message: it can). Implemented in gateway_graph.cpp.
/// The doors graph updates are counted by: a call origin's first word.
inline constexpr std::array<const char*, 4> kGraphDoors{"capnp", "http", "grpc", "in-process"};
std::size_t graph_door_of(const std::string& origin);

transport::rpc::gnn_answer version_unmet(const graph::live_graph* live, std::uint64_t min,
                                         std::uint32_t waited_us);

// A call's inputs as the DLRM forward pass takes them.
inline dlrm_request to_dlrm_request(transport::rpc::rec_call&& call) {
  dlrm_request req;
  req.batch = call.batch;
  req.dense = std::move(call.dense);
  for (auto& bag : call.sparse)
    req.sparse.push_back({std::move(bag.indices), std::move(bag.offsets)});
  return req;
}

// What a recommendation model takes: its own description, or the remote one.
inline const config::model_desc& rec_desc(const rec_entry& e) {
  return e.b.remote_desc ? *e.b.remote_desc : e.b.model->desc();
}

}  // namespace spindle::actors::detail

namespace spindle::actors {

using clock_type = std::chrono::steady_clock;
using detail::gnn_entry;
using detail::rec_entry;
using detail::rec_desc;
using detail::shown;

struct gateway::state {
  caf::actor_system& sys;
  caf::actor forward;
  // Guards the model maps: they change on the admin thread (load, unload) and
  // are read on the RPC thread, the admin thread and the metrics thread. Reads
  // go through the accessors below (shared lock); entries are shared_ptrs, so a
  // call keeps its model alive after an unload removed it from the map.
  mutable spindle::shared_mutex models_mu;
  std::map<std::string, std::shared_ptr<gnn_entry>> gnn SPINDLE_GUARDED_BY(models_mu);
  std::map<std::string, std::shared_ptr<rec_entry>> rec SPINDLE_GUARDED_BY(models_mu);
  clock_type::time_point started = clock_type::now();
  std::atomic<bool> ready{false};  // set once the server's models are loaded and warmed
  std::atomic<bool> stopping{false};  // set by drain_calls(): new calls are refused by name
  // The node manager (Hera Algorithm 3 or the PARTIES-style baseline), if on.
  std::optional<colocation::hera::manager_policy> manager;
  colocation::hera::profile_table manager_profiles;  // what set_node_manager was given
  int manager_max_workers = 1;
  std::atomic<int> manager_period_ms{1000};  // T_monitor (tunable manager_period_ms)
  std::unique_ptr<split_path> split;
  std::function<std::string()> members;  // the cluster's member list (JSON array), if any
  std::shared_ptr<access_log> access;     // --access-log, or null (set before serving)
  model_loader loader;
  graph::live_graph* live = nullptr;  // takes graph updates (set before serving), or null
  bool doors_update = true;           // false: updates come from a stream only
  std::function<graph::stream_follow_stats()> graph_stream;  // its stream follower, if any
  std::atomic<std::uint64_t> graph_updates{0}, graph_refused{0};
  /// Graph update batches by door (kGraphDoors order): applied, refused.
  std::array<std::array<std::atomic<std::uint64_t>, 2>, 4> graph_by_door{};
  spindle::mutex loading;  // one load or unload at a time (gnn_models is single-caller)
  spindle::mutex fetching;  // one folder fetch before a load at a time
  explicit state(caf::actor_system& s) : sys(s), forward(s.spawn(detail::gateway_forwarder)) {}

  std::shared_ptr<gnn_entry> gnn_of(const std::string& name) const {
    spindle::shared_lock lock(models_mu);
    auto it = gnn.find(name);
    return it == gnn.end() ? nullptr : it->second;
  }
  std::shared_ptr<rec_entry> rec_of(const std::string& name) const {
    spindle::shared_lock lock(models_mu);
    auto it = rec.find(name);
    return it == rec.end() ? nullptr : it->second;
  }
  /// The model a call names; a call naming none (empty) gets the only GNN (or
  /// the only recommendation model) when exactly one is loaded.
  std::shared_ptr<gnn_entry> gnn_for_call(const std::string& name) const {
    if (!name.empty()) return gnn_of(name);
    auto all = gnn_all();
    return all.size() == 1 ? all.front().second : nullptr;
  }
  std::shared_ptr<rec_entry> rec_for_call(const std::string& name) const {
    if (!name.empty()) return rec_of(name);
    spindle::shared_lock lock(models_mu);
    return rec.size() == 1 ? rec.begin()->second : nullptr;
  }
  /// Each served entry once: by name, and by NAME@V for a repository version
  /// other than the one the name serves.
  std::vector<std::pair<std::string, std::shared_ptr<gnn_entry>>> gnn_all() const {
    spindle::shared_lock lock(models_mu);
    std::vector<std::pair<std::string, std::shared_ptr<gnn_entry>>> out;
    for (const auto& [key, e] : gnn) {
      const auto at = key.find('@');
      if (at != std::string::npos) {
        auto d = gnn.find(key.substr(0, at));
        if (d != gnn.end() && d->second == e) continue;
      }
      out.emplace_back(key, e);
    }
    return out;
  }
  std::vector<std::pair<std::string, std::shared_ptr<rec_entry>>> rec_all() const {
    spindle::shared_lock lock(models_mu);
    return {rec.begin(), rec.end()};
  }
  std::string loaded() const {
    spindle::shared_lock lock(models_mu);
    return loaded_locked();
  }
  std::string loaded_locked() const SPINDLE_REQUIRES_SHARED(models_mu) {
    std::string names;
    for (const auto& [n, _] : gnn)
      if (n.find('@') == std::string::npos) names += (names.empty() ? "" : ", ") + n;
    for (const auto& [n, _] : rec) names += (names.empty() ? "" : ", ") + n;
    return names.empty() ? "none" : names;
  }
};

}  // namespace spindle::actors
