// Flags shared by `generate` and `prepare`: the fanouts and seed distribution
// PSGS/FAP are computed for, and printing the dataset summary afterwards.
#pragma once

#include <CLI/CLI.hpp>
#include <string>
#include <vector>

#include "core/status.hpp"
#include "graph/prepare.hpp"

namespace spindle::apps {

struct metrics_flags {
  std::string fanouts = "25,10";
  std::string seed_distribution = "uniform";
  std::vector<std::string> seed_node_types;  // typed graphs: the types seeds are of
};

void add_metrics_flags(CLI::App& cmd, metrics_flags& f);
/// Parses the flags into a metrics request; errors name the flag.
status resolve_metrics_flags(const metrics_flags& f, graph::metrics_request& out);
/// Opens `dir` and prints its summary table (or JSON) to stdout.
status print_summary(const std::string& dir, bool json, bool verify = false);

}  // namespace spindle::apps
