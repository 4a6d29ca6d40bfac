// `spindle prepare`: convert an edge list (+ features) into a dataset
// directory with PSGS/FAP, or recompute the metrics of an existing one.
#include "graph/prepare.hpp"

#include "apps/commands/command.hpp"
#include "apps/commands/metrics_flags.hpp"

namespace spindle::apps {
namespace {

struct prepare_args {
  std::string dir, input, format, features, features_format, out, relabel = "auto", name;
  std::string edge_direction = "in";
  bool undirected = false, keep_self_loops = false, keep_duplicates = false, force = false;
  bool drop_self_loops = false, drop_duplicates = false, allow_nonfinite = false;
  metrics_flags metrics;
};

status run_prepare(const prepare_args& a, global_options& g) {
  graph::metrics_request m;
  SPINDLE_TRY(resolve_metrics_flags(a.metrics, m));
  if (a.input.empty()) {
    if (a.dir.empty())
      return make_error(errc::invalid_argument, "give --input PATH --out DIR, or a dataset DIR");
    SPINDLE_TRY(graph::recompute_metrics(a.dir, m, g.pool()));
    return print_summary(a.dir, false);
  }
  if (a.out.empty())
    return make_error(errc::invalid_argument, "--out DIR is required with --input");
  graph::prepare_options o;
  o.input = a.input;
  if (!a.format.empty()) {
    SPINDLE_ASSIGN_OR_RETURN(o.format, graph::parse_edge_format(a.format));
  }
  SPINDLE_ASSIGN_OR_RETURN(o.synthetic, graph::parse_synthetic_features(a.features));
  if (!o.synthetic) o.features = a.features;
  if (!a.features_format.empty()) {
    SPINDLE_ASSIGN_OR_RETURN(o.features_format, graph::parse_feature_format(a.features_format));
  }
  SPINDLE_ASSIGN_OR_RETURN(o.direction, graph::parse_edge_direction(a.edge_direction));
  o.build.undirected = a.undirected;
  if (a.keep_self_loops && a.drop_self_loops)
    return make_error(errc::invalid_argument, "--keep-self-loops and --drop-self-loops: give one");
  if (a.keep_duplicates && a.drop_duplicates)
    return make_error(errc::invalid_argument, "--keep-duplicates and --drop-duplicates: give one");
  if (a.keep_self_loops || a.drop_self_loops) o.keep_self_loops = a.keep_self_loops;
  if (a.keep_duplicates || a.drop_duplicates) o.keep_duplicates = a.keep_duplicates;
  o.build.relabel = a.relabel == "always"  ? graph::relabel_mode::always
                    : a.relabel == "never" ? graph::relabel_mode::never
                                           : graph::relabel_mode::auto_detect;
  o.metrics = m;
  o.name = a.name;
  o.force = a.force;
  o.allow_nonfinite_features = a.allow_nonfinite;
  SPINDLE_TRY(graph::prepare_dataset(o, a.out, g.pool()));
  return print_summary(a.out, false);
}

}  // namespace

void register_prepare(CLI::App& app, global_options& g) {
  auto [cmd, a] = add_command<prepare_args>(
      app, "prepare",
      "Convert a graph (SNAP/CSV edge list, NumPy edge_index) and its features into a dataset "
      "directory and compute PSGS/FAP; `prepare DIR` alone recomputes the metrics in place");
  cmd->add_option("dir", a->dir, "Existing dataset directory whose metrics to recompute");
  cmd->add_option("--input", a->input,
                  "Edge file: SNAP text, CSV (.csv), edge_index .npy/.npz [2,E], or an OGB dataset "
                  "folder (raw/edge.csv.gz; its node-feat and node-label are read too); .gz ok; or a "
                  "folder holding graph.json (spindle_client.export.save_graph)");
  cmd->add_option("--format", a->format, "Edge file format (default: from the file name)")
      ->check(CLI::IsMember({"snap", "csv", "npy", "ogb"}));
  cmd->add_option(
      "--features", a->features,
      "Node features: .npy [N,F], CSV one row per node, or LINQS .content (id, features, "
      "label); for a featureless graph: degree, onehot-degree[:MAX] (PyG's OneHotDegree, "
      "MAX 32) or random:DIM (recorded in metadata.json)");
  cmd->add_option("--features-format", a->features_format,
                  "npy, csv or linqs (default: from the file name)")
      ->check(CLI::IsMember({"npy", "csv", "linqs"}));
  cmd->add_flag("--undirected", a->undirected, "Symmetrize: store both directions of every edge");
  cmd->add_option(
         "--edge-direction", a->edge_direction,
         "For an edge u -> v (edge_index column [u, v], or a line 'u v'): in = v "
         "aggregates over u, as PyG and DGL do (default, every format); out = u "
         "aggregates over v (what Spindle stored in earlier releases). Stored in metadata.json")
      ->check(CLI::IsMember({"in", "out"}))
      ->capture_default_str();
  cmd->add_flag("--keep-self-loops", a->keep_self_loops,
                "Keep u->u edges (the default for a NumPy edge_index, as PyG sees it)");
  cmd->add_flag("--drop-self-loops", a->drop_self_loops,
                "Drop u->u edges (the default for SNAP and CSV edge lists)");
  cmd->add_flag("--keep-duplicates", a->keep_duplicates,
                "Keep repeated u->v edges (the default for a NumPy edge_index)");
  cmd->add_flag("--drop-duplicates", a->drop_duplicates,
                "Keep one of each repeated u->v edge (the default for SNAP and CSV edge lists)");
  cmd->add_option(
         "--relabel", a->relabel,
         "auto: map sparse ids to 0..N-1 (saved as node_ids.npy) only when needed (a NumPy "
         "edge_index keeps its ids, as PyG does); always; never")
      ->check(CLI::IsMember({"auto", "always", "never"}))
      ->default_val("auto");
  cmd->add_option("--name", a->name, "Dataset name (default: input file stem)");
  cmd->add_option("--out", a->out, "Output dataset directory (new or empty)");
  cmd->add_flag("--allow-nonfinite-features", a->allow_nonfinite,
                "Keep NaN or infinite feature values (refused by default: answers reaching them "
                "would be NaN)");
  cmd->add_flag("--force", a->force,
                "Replace a non-empty --out whole (written beside it, then renamed into place)");
  add_metrics_flags(*cmd, a->metrics);
  on_run(cmd, [a, &g] { return run_prepare(*a, g); });
}

}  // namespace spindle::apps
