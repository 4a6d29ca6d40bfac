// `spindle generate`: an R-MAT dataset directory with synthetic features and
// metrics, the embedded default `make demo` uses.
#include <fmt/format.h>

#include "apps/commands/command.hpp"
#include "apps/commands/metrics_flags.hpp"
#include "graph/dataset.hpp"
#include "graph/prepare.hpp"
#include "graph/summary.hpp"

namespace spindle::apps {

void register_generate(CLI::App& app, global_options& g) {
  auto* cmd = app.add_subcommand("generate",
                                 "Generate an R-MAT graph dataset (Graph500 a=0.57 b=0.19 c=0.19) "
                                 "with synthetic float32 features, PSGS and FAP");
  struct args {
    graph::generate_options o;
    metrics_flags metrics;
    std::string out;
  };
  auto a = std::make_shared<args>();
  cmd->add_option("--scale", a->o.rmat.scale, "log2 of the node count")
      ->default_val(16)
      ->check(CLI::Range(1, 40));
  cmd->add_option("--edge-factor", a->o.rmat.edge_factor, "Generated edges per node")
      ->default_val(16)
      ->check(CLI::PositiveNumber);
  cmd->add_option("--feature-dim", a->o.feature_dim, "Feature columns per node (0: none)")
      ->default_val(64)
      ->check(CLI::NonNegativeNumber);
  cmd->add_option("--seed", a->o.rmat.seed, "Random seed (same seed, same dataset)")
      ->default_val(1);
  cmd->add_flag("--undirected", a->o.undirected, "Store both directions of every edge");
  cmd->add_option("--out", a->out, "Output dataset directory (new or empty)")->required();
  cmd->add_flag("--force", a->o.force,
                "Replace a non-empty --out whole (written beside it, then renamed into place)");
  add_metrics_flags(*cmd, a->metrics);
  on_run(cmd, [a, &g] {
    status s = resolve_metrics_flags(a->metrics, a->o.metrics);
    if (s.is_ok()) s = graph::generate_dataset(a->o, a->out, g.pool());
    if (s.is_ok()) s = print_summary(a->out, false);
    return s;
  });
}

}  // namespace spindle::apps
