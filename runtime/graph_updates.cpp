#include "runtime/graph_updates.hpp"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <memory>

#include "core/log.hpp"
#include "graph/compact.hpp"
#include "graph/compaction_files.hpp"

namespace spindle::runtime {

namespace {

// A log kept outside the dataset is listed in it, so a start without
// --graph-updates finds it (and refuses) instead of serving the stale base.
void remember_log(const graph::dataset& ds, const std::string& path) {
  std::error_code ec;
  const std::string where = std::filesystem::absolute(path, ec).lexically_normal().string();
  const auto known = graph_logs_of(ds);
  if (std::find(known.begin(), known.end(), where) != known.end()) return;
  std::ofstream list(ds.dir() + "/" + kGraphLogList, std::ios::app);
  list << where << "\n";
  list.flush();
  if (!list)
    log::warn("{}/{}: cannot record the graph log {} there: a later start of this dataset "
              "without --graph-updates will not see its updates",
              ds.dir(), kGraphLogList, where);
}

// Another log of this dataset holding batches: another server's (each applies
// its own), or this server's from an earlier start under another --graph-log,
// whose batches this start does not apply. Said once, at start.
void warn_of_other_logs(const graph::dataset& ds, const std::string& path) {
  std::error_code ec;
  const auto mine = std::filesystem::absolute(path, ec).lexically_normal();
  for (const auto& other : graph_logs_of(ds)) {
    if (std::filesystem::absolute(other, ec).lexically_normal() == mine) continue;
    const auto size = std::filesystem::file_size(other, ec);
    if (!ec && size > graph::kGraphLogHeaderBytes)
      log::warn("graph log {} also holds updates of this dataset ({} bytes) and this server "
                "does not apply them (it applies {}): if they were meant for it, restart with "
                "--graph-log {}",
                other, size, path, other);
  }
}

}  // namespace

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
  o.removed_nodes = ds.removed_nodes();
  o.node_types.assign(ds.node_types().begin(), ds.node_types().end());
  o.edge_types.assign(ds.edge_types_info().begin(), ds.edge_types_info().end());
  return o;
}

expected<graph::csr_view> start_from(const graph::graph_files& files, graph::live_graph_options& o,
                                     const graph::dataset& ds) {
  if (files.base_dir.empty()) return ds.graph();
  // Verified like the dataset: a flipped byte in the base is refused by name.
  SPINDLE_ASSIGN_OR_RETURN(auto compacted, graph::dataset::open(files.base_dir, {true}));
  o.base_dataset = std::make_shared<const graph::dataset>(std::move(compacted));
  o.base_version = graph::base_version(o.base_dataset->metadata());
  o.base_sources = graph::base_sources(o.base_dataset->metadata());
  return o.base_dataset->graph();
}

std::vector<std::string> graph_logs_of(const graph::dataset& ds) {
  std::vector<std::string> logs{ds.dir() + "/graph.log"};
  std::ifstream listed(ds.dir() + "/" + kGraphLogList);
  for (std::string line; std::getline(listed, line);)
    if (!line.empty() && std::find(logs.begin(), logs.end(), line) == logs.end())
      logs.push_back(line);
  return logs;
}

status check_graph_log_use(const graph::dataset& ds, bool updates, const std::string& log_path,
                           bool no_token) {
  if (updates)
    return no_token ? make_error(errc::invalid_argument,
                                 "--graph-updates: updates are Admin calls; give "
                                 "--admin-token-file (or take them from --graph-stream only)")
                    : status::ok();
  if (!log_path.empty())
    return make_error(errc::invalid_argument, "--graph-log {} without --graph-updates", log_path);
  for (const auto& log : graph_logs_of(ds)) {
    std::error_code ec;
    if (std::filesystem::exists(log + ".current"))
      return make_error(errc::invalid_argument,
                        "{}: this dataset's graph took updates and was compacted while served "
                        "({}.current names the graph now); serve with --graph-updates{} to "
                        "serve it",
                        log, log, log == ds.dir() + "/graph.log" ? "" : " --graph-log " + log);
    const auto size = std::filesystem::file_size(log, ec);
    if (!ec && size > graph::kGraphLogHeaderBytes)
      return make_error(errc::invalid_argument,
                        "{}: holds graph updates ({} bytes) for this dataset; serve with "
                        "--graph-updates{} to apply them, or move the log away{} to serve the "
                        "dataset as prepared",
                        log, size,
                        log == ds.dir() + "/graph.log" ? "" : " --graph-log " + log,
                        log == ds.dir() + "/graph.log"
                            ? ""
                            : fmt::format(" (and its line in {}/{})", ds.dir(), kGraphLogList));
  }
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

expected<enabled_updates> enable_graph_updates(graph::dataset& ds, const graph_update_options& o) {
  if (ds.edge_attr_cols() > 0)  // an added edge would have none, and a compaction would drop them
    return make_error(errc::unsupported,
                      "{}: graph updates on a graph with edge attributes (edge_attr.npy) are not "
                      "served yet",
                      ds.dir());
  const std::string path = o.log_path.empty() ? ds.dir() + "/graph.log" : o.log_path;
  if (!o.log_path.empty()) remember_log(ds, path);
  if (o.warn_other_logs) warn_of_other_logs(ds, path);
  SPINDLE_ASSIGN_OR_RETURN(const auto files, graph::current_graph_files(path));
  graph::live_graph_options lo = live_options_of(ds);
  SPINDLE_ASSIGN_OR_RETURN(const graph::csr_view base, start_from(files, lo, ds));
  if (!files.base_dir.empty())
    log::info("graph base: {} (compacted at version {})", files.base_dir, lo.base_version);
  if (const auto freed = graph::remove_replaced_files(path, files); freed > 0)
    log::info("graph log {}: removed {} bytes a compaction left (cut short or replaced)", path,
              freed);
  if (!files.base_dir.empty()) {  // a compaction's log starts with a durable header
    std::error_code ec;
    const auto size = std::filesystem::file_size(files.log, ec);
    if (ec || size < graph::kGraphLogHeaderBytes)
      return make_error(errc::corrupt_data,
                        "{}: damaged ({} bytes, shorter than its header); the batches after "
                        "version {} it held are lost: restore it from a backup",
                        files.log, ec ? 0 : size, lo.base_version);
  }
  SPINDLE_ASSIGN_OR_RETURN(std::shared_ptr<graph::graph_log> log,
                           graph::graph_log::open(files.log, base, o.sync));
  lo.log = [log](const graph::graph_update& u, std::uint64_t v) { return log->write(u, v); };
  lo.sync = [log] { return log->sync(); };  // one fdatasync for every batch waiting (group commit)
  lo.rollback = [log] { log->rollback(); };
  auto live = std::make_shared<graph::live_graph>(ds.graph(), std::move(lo));
  enabled_updates out;
  SPINDLE_ASSIGN_OR_RETURN(out.replayed, log->replay(*live));
  if (out.replayed.torn_bytes > 0)
    log::warn("graph log {}: dropped a damaged last record ({} bytes): a write cut short by a "
              "crash, whose batch was never acknowledged (any other damage there loses that batch)",
              files.log, out.replayed.torn_bytes);
  log::info("graph updates on: log {} ({}, {} batches replayed, graph version {})", files.log,
            graph::to_string(o.sync), out.replayed.records, live->version());
  ds.set_live(std::move(live));
  std::uint64_t compact_at = o.compact_at;
  if (ds.typed() && compact_at > 0) {  // a typed compaction renumbers the nodes its readers hold
    log::info("graph updates on typed graph {}: no compaction while serving (the log is "
              "replayed at start; `spindle compact` folds it in offline)", ds.dir());
    compact_at = 0;
  }
  out.compactor = std::make_unique<graph::compactor>(
      ds, std::move(log), graph::compactor_options{path, compact_at});
  return out;
}

expected<graph_update_service> start_graph_updates(graph::dataset& ds, const graph_update_args& a,
                                                   bool no_token) {
  if (!a.on && !a.stream.empty())
    return make_error(errc::invalid_argument, "--graph-stream {} without --graph-updates", a.stream);
  if (a.on && !a.stream.empty() && ds.typed())
    return make_error(errc::unsupported,
                      "--graph-stream {}: dataset {} is typed, and stream entries carry no node or "
                      "edge types: send its updates through the Cap'n Proto door (the Python "
                      "client), POST /v2/graph/update or `spindle client graph update`",
                      a.stream, ds.dir());
  SPINDLE_TRY(check_graph_log_use(ds, a.on, a.log, no_token && a.stream.empty()));
  graph_update_service service;
  if (!a.on) return service;
  SPINDLE_ASSIGN_OR_RETURN(const auto sync, graph::parse_log_sync(a.sync));
  SPINDLE_ASSIGN_OR_RETURN(auto enabled, enable_graph_updates(ds, {a.log, sync, a.compact_at, !a.cluster_rank}));
  service.compactor = std::move(enabled.compactor);
  if (a.stream.empty()) return service;
  graph_stream_options o;
  o.endpoint = a.stream;
  o.stream = a.stream_key;
  o.group = a.stream_group.empty()
                ? graph_stream_group_of(a.log.empty() ? ds.dir() + "/graph.log" : a.log)
                : a.stream_group;
  SPINDLE_ASSIGN_OR_RETURN(service.stream,
                           graph_stream_follower::start(*ds.live(), ds.feature_dim(), std::move(o)));
  return service;
}

}  // namespace spindle::runtime
