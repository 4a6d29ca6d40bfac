#include "apps/commands/metrics_flags.hpp"

#include <fmt/format.h>

#include <filesystem>
#include <nlohmann/json.hpp>
#include <optional>

#include "config/sampling.hpp"
#include "graph/dataset.hpp"
#include "graph/graph_log.hpp"
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
  // Updates taken while serving (serve --graph-updates), if any.
  std::optional<graph::log_summary> log;
  if (std::filesystem::exists(dir + "/graph.log")) {
    SPINDLE_ASSIGN_OR_RETURN(log, graph::summarize_log(dir + "/graph.log"));
  }
  if (json) {
    std::string text = graph::format_json(s, d.metadata());
    if (log) {
      auto j = nlohmann::json::parse(text);
      j["graph_log"] = {{"batches", log->records}, {"version", log->last_version},
                        {"bytes", log->bytes}};
      text = j.dump();
    }
    fmt::print("{}\n", text);
  } else {
    fmt::print("dataset {} ({})\n{}", dir, d.metadata().source, graph::format_table(s));
    if (log)
      fmt::print("  {:<30} version {} ({} batches, {} bytes in graph.log)\n", "graph updates",
                 log->last_version, log->records, log->bytes);
    if (verify) fmt::print("  {:<30} {}\n", "checksums", "verified");
  }
  return status::ok();
}

}  // namespace spindle::apps
