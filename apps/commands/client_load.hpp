// `spindle client load`: the load generator. Closed loop (--clients C) or
// open-loop Poisson (--rate R), swept level by level or at one level, over one
// door or several, for GNN and recommendation models, on the Cap'n Proto door
// or a KServe door; a report with throughput, latency percentiles and errors by
// status, the latency CDF as CSV and a gnuplot PNG.
#pragma once

#include <CLI/CLI.hpp>
#include <memory>

#include "apps/commands/client_args.hpp"

namespace spindle::apps {

/// Adds `load` and its flags under `client`.
void add_load_command(CLI::App& client, std::shared_ptr<client_args> c);

}  // namespace spindle::apps
