// `spindle compact DATASET --out DIR`: folds the updates in a dataset's graph
// log into a new dataset directory (offline: the log is locked while it runs,
// so not while a server holds it) and recomputes its PSGS and FAP.
#include <fmt/format.h>

#include <filesystem>

#include "apps/commands/command.hpp"
#include "graph/compact.hpp"
#include "graph/compaction_files.hpp"
#include "graph/graph_log.hpp"
#include "graph/prepare.hpp"
#include "runtime/graph_updates.hpp"

namespace spindle::apps {
namespace {

struct compact_args {
  std::string dataset, out, log;
};

status run_compact(const compact_args& a, thread_pool& pool) {
  std::error_code ec;
  if (std::filesystem::exists(a.out, ec) && !std::filesystem::is_empty(a.out, ec))
    return make_error(errc::invalid_argument,
                      "--out {}: not empty (a dataset there would be overwritten); give a new "
                      "directory",
                      a.out);
  SPINDLE_ASSIGN_OR_RETURN(auto ds, graph::dataset::open(a.dataset));
  const std::string path = a.log.empty() ? a.dataset + "/graph.log" : a.log;
  // Offline and read-only on its input: a missing log is not created.
  if (!std::filesystem::exists(path, ec) && !std::filesystem::exists(path + ".current", ec))
    return make_error(errc::invalid_argument,
                      "{}: no graph log (a server with --graph-updates writes DATASET/graph.log, "
                      "or the file its --graph-log names: give that with --graph-log)",
                      path);
  // A graph compacted while served goes on from its compacted base and its log.
  SPINDLE_ASSIGN_OR_RETURN(const auto files, graph::current_graph_files(path));
  auto options = runtime::live_options_of(ds);
  SPINDLE_ASSIGN_OR_RETURN(const graph::csr_view base, runtime::start_from(files, options, ds));
  SPINDLE_ASSIGN_OR_RETURN(auto log, graph::graph_log::open(files.log, base, graph::log_sync::os));
  graph::live_graph live(ds.graph(), std::move(options));
  SPINDLE_ASSIGN_OR_RETURN(auto replayed, log->replay(live));
  const auto d = live.current();
  SPINDLE_TRY(graph::compact_dataset(ds, *d, live.sources(), a.out));
  // The metrics the dataset had (fanouts, seeds, a typed graph's seed node types);
  // a seed file's ids renumbered with a typed graph's nodes are read from the output.
  auto m = graph::recorded_metrics_request(ds.metadata());
  if (m.fanouts.empty()) m.fanouts = graph::metrics_request{}.fanouts;
  const std::string renumbered = a.out + "/" + graph::kRenumberedSeeds;
  if (std::filesystem::exists(renumbered, ec))
    m.seeds = config::parse_seed_distribution(std::filesystem::absolute(renumbered).string());
  SPINDLE_TRY(graph::recompute_metrics(a.out, m, pool));
  fmt::print("compacted {} at graph version {} ({} batches from {}) into {}: {} nodes\n",
             a.dataset, d->version, replayed.records, files.log, a.out, d->num_nodes);
  return status::ok();
}

}  // namespace

void register_compact(CLI::App& app, global_options& g) {
  auto [cmd, a] = add_command<compact_args>(
      app, "compact",
      "Fold a dataset's graph updates (its graph log) into a new dataset directory, with "
      "PSGS and FAP recomputed; serve that directory to start from the updated graph");
  cmd->add_option("dataset", a->dataset, "Dataset directory served with --graph-updates")
      ->required();
  cmd->add_option("--out", a->out, "Output directory (new or empty)")->required();
  cmd->add_option("--graph-log", a->log, "The log, if not DATASET/graph.log");
  on_run(cmd, [a, &g] { return run_compact(*a, g.pool()); });
}

}  // namespace spindle::apps
