#include "apps/commands/metrics_flags.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <optional>

#include "config/sampling.hpp"
#include "graph/dataset.hpp"
#include "graph/compact.hpp"
#include "graph/compaction_files.hpp"
#include "graph/graph_log.hpp"
#include "runtime/graph_updates.hpp"
#include "graph/summary.hpp"

namespace spindle::apps {

void add_metrics_flags(CLI::App& cmd, metrics_flags& f) {
  cmd.add_option("--fanouts", f.fanouts,
                 "Neighbours sampled per hop for PSGS/FAP, e.g. 25,10 (-1: all)")
      ->default_val("25,10");
  cmd.add_option("--seed-distribution", f.seed_distribution,
                 "p_0 of request seeds: uniform, degree (proportional to out-degree) or a file of "
                 "observed seed ids (text, one or more per line, or .npy int64)")
      ->default_val("uniform");
  cmd.add_option("--seed-node-type", f.seed_node_types,
                 "Typed graphs: the node type(s) request seeds are of (repeat or comma-separate; "
                 "default: every type); PSGS/FAP give other types no seeds")
      ->delimiter(',');
}

status resolve_metrics_flags(const metrics_flags& f, graph::metrics_request& out) {
  auto fanouts = config::parse_fanouts(f.fanouts);
  if (!fanouts) return std::move(fanouts).error().with_context("--");
  out.fanouts = *fanouts;
  out.seeds = config::parse_seed_distribution(f.seed_distribution);
  out.seed_node_types.clear();
  for (const auto& t : f.seed_node_types)  // each once, in the order given
    if (!t.empty() && std::find(out.seed_node_types.begin(), out.seed_node_types.end(), t) ==
                          out.seed_node_types.end())
      out.seed_node_types.push_back(t);
  return status::ok();
}

status print_summary(const std::string& dir, bool json, bool verify) {
  SPINDLE_ASSIGN_OR_RETURN(auto d, graph::dataset::open(dir, {.verify_checksums = verify}));
  auto s = graph::summarize(d);
  // Updates taken while serving (serve --graph-updates), in each log the dataset knows.
  // A log compacted while serving: the base and log its .current names.
  struct log_state {
    std::string path, base;  // base: the compacted base directory, if any
    graph::log_summary summary;
    std::uint64_t version = 0;
  };
  std::vector<log_state> logs;
  for (const auto& path : runtime::graph_logs_of(d)) {
    if (!std::filesystem::exists(path)) continue;
    SPINDLE_ASSIGN_OR_RETURN(const auto files, graph::current_graph_files(path));
    log_state l{files.log, files.base_dir};
    SPINDLE_ASSIGN_OR_RETURN(l.summary, graph::summarize_log(files.log));
    l.version = l.summary.last_version;
    if (!files.base_dir.empty()) {
      SPINDLE_ASSIGN_OR_RETURN(const auto meta, graph::read_metadata(files.base_dir));
      l.version = std::max(l.version, graph::base_version(meta));
    }
    logs.push_back(std::move(l));
  }
  if (json) {
    std::string text = graph::format_json(s, d.metadata());
    if (!logs.empty()) {
      auto j = nlohmann::json::parse(text);
      auto entry = [](const log_state& l) {
        nlohmann::json e = {{"path", l.path},
                            {"batches", l.summary.records},
                            {"version", l.version},
                            {"bytes", l.summary.bytes}};
        if (!l.base.empty()) e["compacted_base"] = l.base;
        return e;
      };
      j["graph_log"] = entry(logs.front());
      for (const auto& l : logs) j["graph_logs"].push_back(entry(l));
      text = j.dump();
    }
    fmt::print("{}\n", text);
  } else {
    fmt::print("dataset {} ({})\n{}{}", dir, d.metadata().source, graph::format_table(s),
               graph::format_types(d.metadata()));
    for (const auto& l : logs) {
      fmt::print("  {:<30} version {} ({} batches, {} bytes in {})\n", "graph updates",
                 l.version, l.summary.records, l.summary.bytes, l.path);
      if (!l.base.empty()) fmt::print("  {:<30} {}\n", "graph base (compacted)", l.base);
    }
    if (verify) fmt::print("  {:<30} {}\n", "checksums", "verified");
  }
  return status::ok();
}

}  // namespace spindle::apps
