#include "apps/commands/metrics_flags.hpp"

#include <fmt/format.h>

#include <filesystem>
#include <nlohmann/json.hpp>
#include <optional>

#include "config/sampling.hpp"
#include "graph/dataset.hpp"
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
}

status resolve_metrics_flags(const metrics_flags& f, graph::metrics_request& out) {
  auto fanouts = config::parse_fanouts(f.fanouts);
  if (!fanouts) return std::move(fanouts).error().with_context("--");
  out.fanouts = *fanouts;
  out.seeds = config::parse_seed_distribution(f.seed_distribution);
  return status::ok();
}

status print_summary(const std::string& dir, bool json, bool verify) {
  SPINDLE_ASSIGN_OR_RETURN(auto d, graph::dataset::open(dir, {.verify_checksums = verify}));
  auto s = graph::summarize(d);
  // Updates taken while serving (serve --graph-updates), in each log the dataset knows.
  std::vector<std::pair<std::string, graph::log_summary>> logs;
  for (const auto& path : runtime::graph_logs_of(d)) {
    if (!std::filesystem::exists(path)) continue;
    SPINDLE_ASSIGN_OR_RETURN(auto summary, graph::summarize_log(path));
    logs.emplace_back(path, summary);
  }
  if (json) {
    std::string text = graph::format_json(s, d.metadata());
    if (!logs.empty()) {
      auto j = nlohmann::json::parse(text);
      const auto& first = logs.front().second;
      j["graph_log"] = {{"batches", first.records}, {"version", first.last_version},
                        {"bytes", first.bytes}, {"path", logs.front().first}};
      for (const auto& [path, l] : logs)
        j["graph_logs"].push_back(
            {{"path", path}, {"batches", l.records}, {"version", l.last_version}, {"bytes", l.bytes}});
      text = j.dump();
    }
    fmt::print("{}\n", text);
  } else {
    fmt::print("dataset {} ({})\n{}", dir, d.metadata().source, graph::format_table(s));
    for (const auto& [path, l] : logs)
      fmt::print("  {:<30} version {} ({} batches, {} bytes in {})\n", "graph updates",
                 l.last_version, l.records, l.bytes, path);
    if (verify) fmt::print("  {:<30} {}\n", "checksums", "verified");
  }
  return status::ok();
}

}  // namespace spindle::apps
