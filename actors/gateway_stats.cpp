// The gateway's read-outs: stats JSON (Admin.stats, the shell), Prometheus
// text (/metrics) and the member list (Admin.members).
#include <cmath>
#include <nlohmann/json.hpp>

#include "actors/gateway.hpp"
#include "actors/gateway_state.hpp"
#include "actors/placement_actor.hpp"
#include "actors/router_actor.hpp"
#include "core/log.hpp"
#include "core/process_metrics.hpp"

namespace spindle::actors {

using transport::rpc::rpc_status;

namespace {
// One model's entry in the stats, with its live tunables.
void add_model_json(nlohmann::json& j, const std::string& name, nlohmann::json m,
                    const expected<std::vector<transport::rpc::tunable>>& tunables) {
  if (tunables)
    for (const auto& t : *tunables) m["tunables"][t.name] = t.value;
  j["models"][name] = std::move(m);
}
}  // namespace

std::string gateway::stats_json() {
  nlohmann::json j;
  caf::scoped_actor self{s_->sys};
  for (const auto& [name, e] : s_->gnn_all()) {
    auto m = e->c.json(e->admission);
    m["scheduler"] = std::string(e->scheduler->kind());
    // The express lane's batches ran on the door thread, routed alike.
    // Large first: a batch counted between the two reads leaves lane >= lane_large.
    const std::uint64_t lane_large = e->b.express ? e->b.express->large_batches() : 0;
    const std::uint64_t lane = e->b.express ? std::max(e->b.express->batches(), lane_large) : 0;
    self->request(e->b.batcher, std::chrono::seconds(2), stats_atom::value)
        .receive(
            [&](const batcher_stats& st) {
              m["batches"] = st.batches + lane;
              m["small_executor_batches"] = st.small + lane - lane_large;
              m["large_executor_batches"] = st.large + lane_large;
              // A cluster's shared queue: the batches each rank's pipelines answered
              // (a rank that joined counts from its join; one that left keeps its count).
              auto count = [&m](std::int32_t rank, std::uint64_t batches) {
                if (rank < 0) return;
                auto& n = m["batches_by_rank"][std::to_string(rank)];
                n = (n.is_null() ? 0 : n.get<std::uint64_t>()) + batches;
              };
              for (std::size_t i = 0; i < st.pipeline_rank.size(); ++i)
                count(st.pipeline_rank[i], st.per_pipeline[i]);
              for (std::size_t i = 0; i < st.departed_rank.size(); ++i)
                count(st.departed_rank[i], st.departed_batches[i]);
            },
            [](const caf::error&) {});
    if (e->b.express)  // calls run to completion on the thread that read them
      m["express"] = {{"batches", e->b.express->batches()},
                      {"requests", e->b.express->requests()},
                      {"max_requests", e->b.express->max_requests()}};
    if (e->b.device) {
      const auto c = e->b.device->stats();
      m["gnnsched"] = {{"policy", std::string(colocation::to_string(e->b.device->policy()))},
                       {"tasks", c.tasks},
                       {"groups", c.groups},
                       {"largest_group", c.largest_group},
                       {"grouped_tasks", c.grouped_tasks},
                       {"overruns", c.overruns},
                       {"pool_bytes", e->b.device->capacity()}};
    }
    if (e->b.routing) {
      self->request(e->b.routing, std::chrono::seconds(2), caf::get_atom::value)
          .receive([&](const std::string& r) { m["routing"] = nlohmann::json::parse(r); },
                   [](const caf::error&) {});
    }
    if (e->b.feature_rows) {
      const auto [local, remote] = e->b.feature_rows();
      m["feature_rows"] = {{"local", local}, {"remote", remote}};
    }
    if (e->b.type_tables) m["type_tables"] = detail::type_tables_json(e->b.type_tables());
    if (e->b.placement) {
      const auto p = detail::placement_stats_of(s_->sys, e->b.placement);
      m["placement"] = {{"epoch", p.epoch},
                        {"drift", p.drift},
                        {"window_requests", p.window_requests},
                        {"replans", p.replans},
                        {"drift_threshold", p.threshold},
                        {"last_error", p.last_error}};
    }
    add_model_json(j, name, std::move(m), tunables(name));
  }
  for (const auto& [name, e] : s_->rec_all()) {
    auto m = e->c.json(e->admission);
    m["scheduler"] = std::string(e->scheduler->kind());
    if (e->b.pool) {
      m["workers"] = e->b.pool->workers();
      std::lock_guard lock(e->manager_mu);
      if (!e->last_decision.is_null()) m["manager"] = e->last_decision;
    }
    for (std::size_t i = 0; e->b.session && i < e->b.session->table_count(); ++i) {
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
    add_model_json(j, name, std::move(m), tunables(name));
  }
  if (s_->live) {
    const auto d = s_->live->current();
    nlohmann::json by_door = nlohmann::json::object();
    for (std::size_t door = 0; door < detail::kGraphDoors.size(); ++door)
      by_door[detail::kGraphDoors[door]] = {{"applied", s_->graph_by_door[door][0].load()},
                                            {"refused", s_->graph_by_door[door][1].load()}};
    j["graph"] = {{"version", d->version},
                  {"nodes", d->num_nodes},
                  {"updates_applied", s_->graph_updates.load()},
                  {"updates_refused", s_->graph_refused.load()},
                  {"updates_by_door", by_door},
                  {"edges_added", d->edges_added},
                  {"edges_removed", d->edges_removed},
                  {"rows_changed", d->rows.size()},
                  {"feature_rows_set", d->features.size()},
                  {"nodes_removed", d->removed.size()},
                  {"psgs_recomputed", d->psgs.size()},
                  {"psgs_stale", d->psgs_stale}};
    const auto c = s_->live->compactions();
    j["graph"]["compaction"] = {{"done", c.done},
                                {"failed", c.failed},
                                {"running", c.running},
                                {"last_version", c.last_version},
                                {"last_seconds", c.last_seconds},
                                {"total_seconds", c.total_seconds},
                                {"bytes_freed", c.bytes_freed},
                                {"last_error", c.last_error}};
    if (s_->graph_stream) {
      const auto f = s_->graph_stream();
      j["graph"]["stream"] = {{"stream", f.stream},         {"group", f.group},
                              {"last_id", f.last_id},       {"applied", f.applied},
                              {"duplicates", f.duplicates}, {"rejected", f.rejected},
                              {"errors", f.errors},         {"connected", f.connected}};
      std::uint64_t counted = 0;
      for (auto n : f.staleness) counted += n;
      j["graph"]["stream"]["staleness_ms"] = {
          {"count", counted},
          {"mean", counted ? f.staleness_sum_ms / double(counted) : 0.0},
          {"p50_at_most", f.staleness_quantile_ms(0.5)},
          {"p99_at_most", f.staleness_quantile_ms(0.99)}};
    }
  }
  j["uptime_s"] = std::chrono::duration<double>(clock_type::now() - s_->started).count();
  return j.dump();
}

std::string gateway::prometheus_text() {
  static const std::vector<std::array<const char*, 3>> help = {
      {"spindle_requests_total", "counter", "Calls received per model."},
      {"spindle_responses_total", "counter", "Answers per model and status."},
      {"spindle_queue_depth", "gauge", "Calls in flight per model (admission queue)."},
      {"spindle_inferences_total", "counter",
       "Inferences answered ok: GNN seeds, recommendation samples."},
      {"spindle_executions_total", "counter",
       "Batches run per model (GNN batches; each recommendation call runs as one)."},
      {"spindle_batch_size", "histogram",
       "Requests per GNN batch, samples per recommendation call."},
      {"spindle_queue_duration_seconds_total", "counter",
       "Time requests waited in the model's batcher, summed (GNN models)."},
      {"spindle_model_ready", "gauge", "1 while the model is loaded and serving."},
      {"spindle_admission_limit", "gauge",
       "Calls in flight a model admits now (measured capacity x SLO share, capped at max_queue)."},
      {"spindle_request_latency_seconds", "histogram", "End-to-end server time of ok answers."},
      {"spindle_stage_latency_seconds", "histogram", "Per-request time by stage (GNN models)."},
      {"spindle_cache_hit_rate", "gauge", "L1 embedding-cache hit rate per table (unique keys)."},
      {"spindle_cache_lookups_total", "counter", "Embedding lookups per table by insertion mode."}};
  std::map<std::string, std::string> families;
  {
    spindle::shared_lock lock(s_->models_mu);
    for (const auto& [name, e] : s_->gnn) {
      e->c.render(families, name, e->admission, true);
      if (e->b.type_tables) detail::render_type_tables(families, name, e->b.type_tables());
    }
    for (const auto& [name, e] : s_->rec) {
      e->c.render(families, name, e->admission, false);
      for (std::size_t i = 0; e->b.session && i < e->b.session->table_count(); ++i) {
        const auto st = e->b.session->stats(i);
        const auto& table = e->b.session->table(i).name;
        const double hit =
            st.unique_keys ? 1.0 - double(st.l1_misses) / double(st.unique_keys) : 0.0;
        families["spindle_cache_hit_rate"] += fmt::format(
            "spindle_cache_hit_rate{{model=\"{}\",table=\"{}\"}} {}\n", name, table, hit);
        for (auto [mode, n] : {std::pair{"sync", st.sync_lookups}, {"async", st.async_lookups}}) {
          families["spindle_cache_lookups_total"] += fmt::format(
              "spindle_cache_lookups_total{{model=\"{}\",table=\"{}\",mode=\"{}\"}} {}\n", name,
              table, mode, n);
        }
      }
    }
  }  // the models' lock: the member list below may ask another process
  // A cluster's members as the coordinator sees them (any door that has the list).
  if (s_->members) {
    auto list = nlohmann::json::parse(s_->members(), nullptr, /*allow_exceptions=*/false);
    for (const auto& m : list.is_array() ? list : nlohmann::json::array()) {
      const auto labels = fmt::format("rank=\"{}\",name=\"{}\"", m.value("rank", -1),
                                      m.value("name", std::string()));
      families["spindle_cluster_member_alive"] += fmt::format(
          "spindle_cluster_member_alive{{{}}} {}\n", labels, m.value("alive", false) ? 1 : 0);
      families["spindle_cluster_member_ready"] += fmt::format(
          "spindle_cluster_member_ready{{{}}} {}\n", labels, m.value("ready", false) ? 1 : 0);
      families["spindle_cluster_member_epoch"] +=
          fmt::format("spindle_cluster_member_epoch{{{}}} {}\n", labels, m.value("epoch", 0));
    }
  }
  if (s_->live) {
    const auto d = s_->live->current();
    families["spindle_graph_version"] = fmt::format("spindle_graph_version {}\n", d->version);
    families["spindle_graph_nodes"] = fmt::format("spindle_graph_nodes {}\n", d->num_nodes);
    families["spindle_graph_delta_rows"] = fmt::format(
        "spindle_graph_delta_rows{{kind=\"neighbours\"}} {}\n"
        "spindle_graph_delta_rows{{kind=\"features\"}} {}\n",
        d->rows.size(), d->features.size());
    std::string updates;
    for (std::size_t door = 0; door < detail::kGraphDoors.size(); ++door)
      for (std::size_t r = 0; r < 2; ++r)
        updates += fmt::format("spindle_graph_updates_total{{source=\"{}\",result=\"{}\"}} {}\n",
                               detail::kGraphDoors[door], r == 0 ? "applied" : "refused",
                               s_->graph_by_door[door][r].load());
    if (s_->graph_stream) {
      const auto f = s_->graph_stream();
      updates += fmt::format(
          "spindle_graph_updates_total{{source=\"stream\",result=\"applied\"}} {}\n"
          "spindle_graph_updates_total{{source=\"stream\",result=\"refused\"}} {}\n"
          "spindle_graph_updates_total{{source=\"stream\",result=\"duplicate\"}} {}\n",
          f.applied, f.rejected, f.duplicates);
      std::string h;
      std::uint64_t cumulative = 0;
      for (std::size_t i = 0; i < f.staleness.size(); ++i) {
        cumulative += f.staleness[i];
        const std::string le = i < f.kStalenessBoundsMs.size()
                                   ? fmt::format("{}", f.kStalenessBoundsMs[i] / 1e3)
                                   : std::string("+Inf");
        h += fmt::format("spindle_graph_staleness_seconds_bucket{{le=\"{}\"}} {}\n", le,
                         cumulative);
      }
      h += fmt::format("spindle_graph_staleness_seconds_sum {}\n", f.staleness_sum_ms / 1e3);
      h += fmt::format("spindle_graph_staleness_seconds_count {}\n", cumulative);
      families["spindle_graph_staleness_seconds"] = std::move(h);
    }
    families["spindle_graph_updates_total"] = std::move(updates);
    const auto c = s_->live->compactions();
    families["spindle_graph_compactions_total"] = fmt::format(
        "spindle_graph_compactions_total{{result=\"done\"}} {}\n"
        "spindle_graph_compactions_total{{result=\"failed\"}} {}\n",
        c.done, c.failed);
    families["spindle_graph_compaction_seconds_total"] =
        fmt::format("spindle_graph_compaction_seconds_total {}\n", c.total_seconds);
    families["spindle_graph_compaction_running"] =
        fmt::format("spindle_graph_compaction_running {}\n", c.running ? 1 : 0);
  }
  static const std::vector<std::array<const char*, 3>> graph_help = {
      {"spindle_graph_version", "gauge", "The served graph's version (update batches applied)."},
      {"spindle_graph_nodes", "gauge", "Nodes in the served graph, removed ones included."},
      {"spindle_graph_delta_rows", "gauge",
       "Rows the in-memory delta holds over the base (neighbour lists, feature rows)."},
      {"spindle_graph_updates_total", "counter",
       "Update batches by source (capnp, http, grpc, in-process, stream) and result (applied, "
       "refused, duplicate)."},
      {"spindle_graph_compactions_total", "counter",
       "Compactions while serving (the delta folded into a new base on disk), by result."},
      {"spindle_graph_compaction_seconds_total", "counter",
       "Seconds spent in compactions that finished."},
      {"spindle_graph_compaction_running", "gauge", "1 while a compaction runs."},
      {"spindle_graph_staleness_seconds", "histogram",
       "Seconds from a stream entry's append (Redis's clock) to its batch being visible here."}};
  static const std::vector<std::array<const char*, 3>> cluster_help = {
      {"spindle_cluster_member_alive", "gauge", "1 while the cluster member is up."},
      {"spindle_cluster_member_ready", "gauge", "1 while the member's pipelines serve batches."},
      {"spindle_cluster_member_epoch", "gauge", "The placement epoch the member holds."}};
  std::string out;
  for (const auto* table : {&help, &detail::type_table_help(), &graph_help, &cluster_help})
    for (const auto& [family, type, text] : *table) {
      const auto it = families.find(family);
      if (it == families.end()) continue;
      out += fmt::format("# HELP {} {}\n# TYPE {} {}\n", family, text, family, type) + it->second;
    }
  return out + process_metrics_text();
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
