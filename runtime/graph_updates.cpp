#include "runtime/graph_updates.hpp"

#include <filesystem>
#include <memory>

#include "core/log.hpp"
#include "graph/compact.hpp"

namespace spindle::runtime {

graph::row_direction row_direction_of(const graph::dataset_metadata& m) {
  if (m.undirected || m.edge_direction == "both") return graph::row_direction::both;
  // Datasets written before edge_direction existed stored "out".
  if (m.edge_direction.empty() || m.edge_direction == "out") return graph::row_direction::out;
  return graph::row_direction::in;
}

graph::live_graph_options live_options_of(const graph::dataset& ds) {
  graph::live_graph_options o;
  o.direction = row_direction_of(ds.metadata());
  o.feature_dim = ds.feature_dim();
  o.base_version = graph::base_version(ds.metadata());
  o.base_sources = graph::base_sources(ds.metadata());
  if (ds.has_metrics()) o.psgs_fanouts = ds.metadata().fanouts;  // what the base's PSGS used
  return o;
}

status check_graph_log_use(const graph::dataset& ds, bool updates, const std::string& log_path,
                           bool no_token) {
  if (updates)
    return no_token ? make_error(errc::invalid_argument,
                                 "--graph-updates: updates are Admin calls; give "
                                 "--admin-token-file")
                    : status::ok();
  if (!log_path.empty())
    return make_error(errc::invalid_argument, "--graph-log {} without --graph-updates", log_path);
  const std::string log = ds.dir() + "/graph.log";
  std::error_code ec;
  const auto size = std::filesystem::file_size(log, ec);
  if (!ec && size > graph::kGraphLogHeaderBytes)
    return make_error(errc::invalid_argument,
                      "{}: holds graph updates ({} bytes); serve with --graph-updates to apply "
                      "them, or move the log away to serve the dataset as prepared",
                      log, size);
  return status::ok();
}

status refuse_unapplied_updates(const graph::dataset& ds, std::string_view who) {
  if (auto st = check_graph_log_use(ds, false, "", false); !st)
    return make_error(st.code(),
                      "{} ({} do not apply graph updates: fold them in with `spindle compact` "
                      "and serve its output)",
                      st.message(), who);
  return status::ok();
}

expected<graph::log_replay> enable_graph_updates(graph::dataset& ds,
                                                 const graph_update_options& o) {
  const std::string path = o.log_path.empty() ? ds.dir() + "/graph.log" : o.log_path;
  SPINDLE_ASSIGN_OR_RETURN(std::shared_ptr<graph::graph_log> log,
                           graph::graph_log::open(path, ds.graph(), o.sync));
  graph::live_graph_options lo = live_options_of(ds);
  lo.log = [log](const graph::graph_update& u, std::uint64_t v) { return log->write(u, v); };
  lo.sync = [log] { return log->sync(); };  // one fdatasync for every batch waiting (group commit)
  lo.rollback = [log] { log->rollback(); };
  auto live = std::make_shared<graph::live_graph>(ds.graph(), std::move(lo));
  SPINDLE_ASSIGN_OR_RETURN(auto replayed, log->replay(*live));
  if (replayed.torn_bytes > 0)
    log::warn("graph log {}: dropped a damaged last record ({} bytes): a write cut short by a "
              "crash, whose batch was never acknowledged (any other damage there loses that batch)",
              path, replayed.torn_bytes);
  log::info("graph updates on: log {} ({}, {} batches replayed, graph version {})", path,
            graph::to_string(o.sync), replayed.records, live->version());
  ds.set_live(std::move(live));
  return replayed;
}

expected<std::unique_ptr<graph_stream_follower>> start_graph_updates(graph::dataset& ds,
                                                                     const graph_update_args& a,
                                                                     bool no_token) {
  if (!a.on && !a.stream.empty())
    return make_error(errc::invalid_argument, "--graph-stream {} without --graph-updates", a.stream);
  SPINDLE_TRY(check_graph_log_use(ds, a.on, a.log, no_token && a.stream.empty()));
  if (!a.on) return std::unique_ptr<graph_stream_follower>();
  SPINDLE_ASSIGN_OR_RETURN(const auto sync, graph::parse_log_sync(a.sync));
  SPINDLE_TRY(enable_graph_updates(ds, {a.log, sync}).error_or_ok());
  if (a.stream.empty()) return std::unique_ptr<graph_stream_follower>();
  graph_stream_options o;
  o.endpoint = a.stream;
  o.stream = a.stream_key;
  o.group = a.stream_group.empty()
                ? graph_stream_group_of(a.log.empty() ? ds.dir() + "/graph.log" : a.log)
                : a.stream_group;
  return graph_stream_follower::start(*ds.live(), ds.feature_dim(), std::move(o));
}

}  // namespace spindle::runtime
