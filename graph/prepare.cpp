#include "graph/prepare.hpp"

#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <numeric>
#include <cmath>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <unordered_map>

#include "core/log.hpp"
#include "core/progress.hpp"
#include "graph/dataset.hpp"
#include "graph/graph_json.hpp"
#include "graph/metrics.hpp"
#include "graph/ogb.hpp"

namespace spindle::graph {

namespace {

// LINQS content files name their nodes: keep edges whose endpoints are known,
// renumbered to content-row order.
std::int64_t map_to_rows(edge_list& e, const std::vector<std::string>& row_names) {
  std::unordered_map<std::string, std::int64_t> row_of;
  for (std::size_t r = 0; r < row_names.size(); ++r)
    row_of.emplace(row_names[r], static_cast<std::int64_t>(r));
  auto lookup = [&](std::int64_t id) -> std::int64_t {
    auto it = row_of.find(e.names.empty() ? std::to_string(id) : e.names[id]);
    return it == row_of.end() ? -1 : it->second;
  };
  std::size_t kept = 0;
  for (std::size_t i = 0; i < e.src.size(); ++i) {
    std::int64_t a = lookup(e.src[i]), b = lookup(e.dst[i]);
    if (a < 0 || b < 0) continue;
    e.src[kept] = a;
    e.dst[kept] = b;
    if (!e.weight.empty()) e.weight[kept] = e.weight[i];
    ++kept;
  }
  auto dropped = static_cast<std::int64_t>(e.src.size() - kept);
  e.names.clear();
  e.src.resize(kept);
  e.dst.resize(kept);
  if (!e.weight.empty()) e.weight.resize(kept);
  return dropped;
}

status check_duplicate_ids(const std::vector<std::string>& ids, const std::string& path) {
  std::vector<std::string> sorted = ids;
  std::sort(sorted.begin(), sorted.end());
  auto dup = std::adjacent_find(sorted.begin(), sorted.end());
  if (dup != sorted.end())
    return make_error(errc::invalid_argument, "{}: node id {} appears on more than one row", path,
                      *dup);
  return status::ok();
}

std::string default_name(const std::string& path) {
  std::string stem = std::filesystem::path(path).filename().string();
  return stem.substr(0, stem.find('.'));
}

// Degrees as PyG's OneHotDegree counts them (in_degree=False): the edges a node
// sends, edge_index[0]. With rows holding sources (edge direction `in`) that is
// how often a node appears in the rows; otherwise its own row's length.
feature_table make_features(const synthetic_features_spec& s, const csr_view& g,
                            bool rows_hold_sources) {
  using kind = synthetic_features_spec::kind;
  feature_table t;
  t.rows = g.num_nodes;
  t.cols = s.columns;
  t.values.assign(std::size_t(t.rows * t.cols), 0.0f);
  std::vector<std::int64_t> sent;
  if (rows_hold_sources) {
    sent.assign(std::size_t(g.num_nodes), 0);
    for (std::int64_t e = 0; e < g.num_edges(); ++e) ++sent[std::size_t(g.neighbour(e))];
  }
  for (std::int64_t v = 0; v < t.rows; ++v) {
    float* row = t.values.data() + v * t.cols;
    const std::int64_t d = rows_hold_sources ? sent[std::size_t(v)] : g.degree(v);
    if (s.what == kind::degree) row[0] = float(d);
    if (s.what == kind::onehot_degree) row[std::min<std::int64_t>(d, t.cols - 1)] = 1.0f;
    if (s.what == kind::random) synthetic_features(1, v, {row, std::size_t(t.cols)});
  }
  return t;
}

struct ogb_extras {
  std::int64_t num_nodes = -1;
  ogb_labels labels;
};

// What an OGB folder adds to its edges: the node count, its node-feat file
// (unless --features names others) and its labels.
expected<ogb_extras> read_ogb_extras(const prepare_options& o, std::string& features_path,
                                     std::optional<feature_format>& features_format) {
  SPINDLE_ASSIGN_OR_RETURN(auto layout, find_ogb_layout(o.input));
  ogb_extras x;
  x.num_nodes = layout.num_nodes;
  if (features_path.empty() && !o.synthetic && !layout.features.empty()) {
    features_path = layout.features;
    features_format = feature_format::csv;
  }
  if (!layout.labels.empty()) {
    log::info("reading labels from {}", layout.labels);
    SPINDLE_ASSIGN_OR_RETURN(x.labels, load_ogb_labels(layout.labels));
  }
  return x;
}

// The writers proper, into the folder write_dataset_dir gives them.
status prepare_dataset_into(const prepare_options& o, const std::string& out_dir,
                            thread_pool& pool);
status generate_dataset_into(const generate_options& o, const std::string& out_dir,
                             thread_pool& pool);

}  // namespace

std::string_view to_string(edge_direction d) { return d == edge_direction::in ? "in" : "out"; }

expected<edge_direction> parse_edge_direction(std::string_view name) {
  if (name == "in") return edge_direction::in;
  if (name == "out") return edge_direction::out;
  return make_error(errc::invalid_argument, "--edge-direction '{}': expected in or out", name);
}

expected<std::optional<synthetic_features_spec>> parse_synthetic_features(std::string_view text) {
  using kind = synthetic_features_spec::kind;
  auto number = [&](std::string_view digits, int lo, int hi) -> expected<int> {
    int v = 0;
    if (digits.empty() || digits.size() > 6 ||
        !std::all_of(digits.begin(), digits.end(), [](char c) { return c >= '0' && c <= '9'; }))
      return make_error(errc::invalid_argument, "--features {}: '{}' is not a number", text,
                        digits);
    for (char c : digits) v = v * 10 + (c - '0');
    if (v < lo || v > hi)
      return make_error(errc::invalid_argument, "--features {}: {} is not in {}..{}", text, v, lo,
                        hi);
    return v;
  };
  synthetic_features_spec s;
  s.text = std::string(text);
  if (text == "degree") return std::optional{s};
  if (text == "onehot-degree" || text.starts_with("onehot-degree:")) {
    s.what = kind::onehot_degree;
    int max = 32;
    if (text.size() > 13) {
      SPINDLE_ASSIGN_OR_RETURN(max, number(text.substr(14), 1, 65535));
    }
    s.columns = max + 1;
    return std::optional{s};
  }
  if (text.starts_with("random:")) {
    s.what = kind::random;
    SPINDLE_ASSIGN_OR_RETURN(s.columns, number(text.substr(7), 1, 65536));
    return std::optional{s};
  }
  return std::optional<synthetic_features_spec>{};
}

namespace {

// Folders `out.partial-PID` and `out.old-PID` of a process that is gone (killed
// mid-write): a partial one is removed; an old one is the previous dataset,
// moved aside just before the new one went in, so it is put back when `out` is
// missing and removed otherwise. A live process's folders are left alone.
void clean_stale_staging(const std::string& out) {
  namespace fs = std::filesystem;
  const fs::path path(out);
  const fs::path parent = path.has_parent_path() ? path.parent_path() : fs::path(".");
  const std::string base = path.filename().string();
  std::error_code ec;
  for (auto it = fs::directory_iterator(parent, ec); !ec && it != fs::directory_iterator();
       it.increment(ec)) {
    const std::string name = it->path().filename().string();
    for (const std::string kind : {".partial-", ".old-"}) {
      if (!name.starts_with(base + kind)) continue;
      const std::string digits = name.substr(base.size() + kind.size());
      if (digits.empty() || digits.find_first_not_of("0123456789") != std::string::npos) continue;
      const pid_t pid = pid_t(std::stol(digits));
      if (pid == ::getpid() || ::kill(pid, 0) == 0 || errno != ESRCH) continue;  // alive
      std::error_code e2;
      if (kind == ".old-" && !fs::exists(out, e2)) {
        fs::rename(it->path(), out, e2);
        log::warn("{}: put back the dataset that process {} had moved aside when it died", out,
                  pid);
      } else {
        fs::remove_all(it->path(), e2);
        log::info("removed {}, left by process {} (no longer running)", it->path().string(), pid);
      }
    }
  }
}

}  // namespace

status write_dataset_dir(const std::string& out_dir, bool force,
                         const std::function<status(const std::string&)>& write) {
  namespace fs = std::filesystem;
  std::string out = out_dir;
  while (out.size() > 1 && out.back() == '/') out.pop_back();
  clean_stale_staging(out);
  std::error_code ec;
  if (fs::exists(out, ec)) {
    if (!fs::is_directory(out, ec))
      return make_error(errc::invalid_argument, "--out {}: exists and is not a directory", out);
    auto it = fs::directory_iterator(out, ec);
    if (!ec && it != fs::directory_iterator() && !force)
      return make_error(errc::invalid_argument,
                        "--out {}: not empty (holds '{}'); pass --force to replace it whole", out,
                        it->path().filename().string());
  }
  const std::string staging = fmt::format("{}.partial-{}", out, ::getpid());
  const std::string old = fmt::format("{}.old-{}", out, ::getpid());
  fs::remove_all(staging, ec);
  if (auto st = write(staging); !st) {
    fs::remove_all(staging, ec);
    return st;
  }
  const bool had = fs::exists(out, ec);
  if (had && std::rename(out.c_str(), old.c_str()) != 0)
    return make_error(errc::io_error, "--out {}: cannot move the old dataset aside: {}", out,
                      std::strerror(errno));
  if (std::rename(staging.c_str(), out.c_str()) != 0) {
    const std::string why = std::strerror(errno);
    if (had) (void)std::rename(old.c_str(), out.c_str());  // put the old one back
    return make_error(errc::io_error, "--out {}: cannot move the new dataset in: {}", out, why);
  }
  if (had) fs::remove_all(old, ec);
  return status::ok();
}

status prepare_dataset(const prepare_options& o, const std::string& out_dir, thread_pool& pool) {
  return write_dataset_dir(
      out_dir, o.force, [&](const std::string& dir) { return prepare_dataset_into(o, dir, pool); });
}

namespace {

// An edge file that looks undirected but was read as directed: say so, and
// which flag stores it as the user most likely meant.
void warn_if_undirected(const std::string& input, const csr_view& g) {
  const auto shape = inspect_edge_shape(g);
  if (shape.one_way())
    log::warn(
        "{}: every one of the {} edges is listed once, all from the lower id to the higher "
        "(or all the other way): this looks like an undirected graph listed once per edge "
        "(SNAP's undirected files are). Stored as directed, a node aggregates over one side "
        "only; if the graph is undirected, prepare it with --undirected (both directions)",
        input, shape.edges);
  else if (shape.symmetric())
    log::info(
        "{}: every edge is listed in both directions: stored as an undirected graph "
        "already (--undirected would change nothing)",
        input);
}

// Every edge prepare adds or drops, with the flag that changes it: a served
// model aggregates over what is stored, so a silent difference from the input
// is a silent difference from the user's PyG answers.
void report_edge_counts(const std::string& input, std::int64_t input_edges, const built_graph& b,
                        const build_options& build) {
  const std::int64_t stored = b.csr.view().num_edges();
  fmt::print(stderr, "spindle: {}: {} input edges -> {} stored\n", input, input_edges, stored);
  if (build.undirected)
    fmt::print(stderr, "  added the reverse of every edge (--undirected)\n");
  if (b.self_loops_dropped)
    fmt::print(stderr, "  dropped {} self-loops u->u (--keep-self-loops keeps them)\n",
               b.self_loops_dropped);
  else if (b.self_loops)
    fmt::print(stderr, "  kept {} self-loops u->u (--drop-self-loops drops them)\n", b.self_loops);
  if (b.duplicates_dropped)
    fmt::print(stderr, "  dropped {} repeated edges (--keep-duplicates keeps them)\n",
               b.duplicates_dropped);
  else if (b.duplicates)
    fmt::print(stderr, "  kept {} repeated edges (--drop-duplicates drops them)\n", b.duplicates);
}

// NaN or Inf in a feature row answers NaN for every seed that reaches it, with
// status ok: refused, naming the first, unless the user keeps them knowingly.
status check_finite(const feature_table& f, const std::string& path, bool allow,
                    dataset_metadata& meta) {
  std::int64_t bad = 0, first = -1;
  for (std::size_t i = 0; i < f.values.size(); ++i)
    if (!std::isfinite(f.values[i]) && bad++ == 0) first = std::int64_t(i);
  if (bad == 0) return status::ok();
  const std::int64_t row = f.cols ? first / f.cols : 0, col = f.cols ? first % f.cols : 0;
  if (!allow)
    return make_error(errc::invalid_argument,
                      "{}: {} feature values are NaN or infinite, the first at row {} column {} "
                      "({}): every answer reaching them would be NaN (--allow-nonfinite-features "
                      "keeps them)",
                      path, bad, row, col, f.values[std::size_t(first)]);
  log::warn("{}: keeping {} NaN or infinite feature values (--allow-nonfinite-features)", path, bad);
  meta.build["nonfinite_features_kept"] = std::to_string(bad);
  return status::ok();
}

status prepare_dataset_into(const prepare_options& o, const std::string& out_dir,
                            thread_pool& pool) {
  if (auto path = find_graph_json(o.input)) return prepare_graph_json(o, *path, out_dir, pool);
  edge_format fmt = o.format.value_or(guess_edge_format(o.input));
  log::info("reading edges from {} ({})", o.input, to_string(fmt));
  SPINDLE_ASSIGN_OR_RETURN(edge_list edges, load_edges(o.input, fmt));
  feature_table features;
  build_options build = o.build;
  dataset_metadata meta;
  std::string features_path = o.features;
  std::optional<feature_format> features_format = o.features_format;
  if (fmt == edge_format::ogb) {
    SPINDLE_ASSIGN_OR_RETURN(auto ogb, read_ogb_extras(o, features_path, features_format));
    build.relabel = relabel_mode::never;  // OGB numbers nodes 0..N-1
    if (ogb.num_nodes > 0) build.num_nodes = ogb.num_nodes;
    features.labels = std::move(ogb.labels.values);
    for (std::int64_t c = 0; c < ogb.labels.num_classes; ++c)
      features.class_names.push_back(std::to_string(c));
  }
  if (!features_path.empty()) {
    feature_format ff = features_format.value_or(guess_feature_format(features_path));
    log::info("reading features from {} ({})", features_path, to_string(ff));
    auto labels = std::move(features.labels);
    auto classes = std::move(features.class_names);
    SPINDLE_ASSIGN_OR_RETURN(features, load_features(features_path, ff));
    if (features.labels.empty()) {
      features.labels = std::move(labels);
      features.class_names = std::move(classes);
    }
    build.relabel = relabel_mode::never;
    if (build.num_nodes > 0 && build.num_nodes != features.rows)
      return make_error(errc::invalid_argument, "{}: {} feature rows, but the graph has {} nodes",
                        features_path, features.rows, build.num_nodes);
    build.num_nodes = features.rows;
    if (!features.row_names.empty()) {
      SPINDLE_TRY(check_duplicate_ids(features.row_names, o.features));
      std::int64_t dropped = map_to_rows(edges, features.row_names);
      meta.build["edges_with_unknown_endpoint_dropped"] = std::to_string(dropped);
      if (dropped)
        log::warn("{}: {} edges name nodes missing from {}; dropped", o.input, dropped, o.features);
    }
  }
  std::int64_t input_edges = static_cast<std::int64_t>(edges.src.size());
  const bool edge_index = fmt == edge_format::npy;
  build.keep_self_loops = o.keep_self_loops.value_or(edge_index);
  build.keep_duplicates = o.keep_duplicates.value_or(edge_index);
  // PyG's node ids are the edge_index's own (nodes 0..max, a gap an isolated node):
  // never renumbered unless asked, so seed numbers stay the user's.
  if (edge_index && build.relabel == relabel_mode::auto_detect) build.relabel = relabel_mode::never;
  // Rows are what a node aggregates over: with `in`, v's row holds u for u -> v.
  if (o.direction == edge_direction::in) std::swap(edges.src, edges.dst);
  std::vector<std::string> names = !features.row_names.empty() ? features.row_names : edges.names;
  if (!edges.names.empty()) build.relabel = relabel_mode::never;  // interned ids are already dense
  log::info("building CSR from {} edges", input_edges);
  auto built = build_csr(std::move(edges), build, &pool);
  if (!built) return std::move(built).error().with_context(o.input + ": ");
  if (!build.undirected) warn_if_undirected(o.input, built->csr.view());
  meta.name = o.name.empty() ? default_name(o.input) : o.name;
  meta.source = o.input + (features_path.empty() ? "" : " + " + features_path);
  meta.undirected = build.undirected;
  meta.edge_direction = build.undirected ? "both" : std::string(to_string(o.direction));
  meta.build["input_edges"] = std::to_string(input_edges);
  meta.build["self_loops_dropped"] = std::to_string(built->self_loops_dropped);
  meta.build["duplicates_dropped"] = std::to_string(built->duplicates_dropped);
  meta.build["self_loops_kept"] = std::to_string(built->self_loops - built->self_loops_dropped);
  meta.build["duplicates_kept"] = std::to_string(built->duplicates - built->duplicates_dropped);
  report_edge_counts(o.input, input_edges, *built, build);
  if (o.synthetic) {  // a featureless graph: the features are made, and metadata says how
    features = make_features(*o.synthetic, built->csr.view(),
                             !build.undirected && o.direction == edge_direction::in);
    meta.build["features"] = o.synthetic->text;
    meta.source += " + features " + o.synthetic->text;
  }
  SPINDLE_TRY(check_finite(features, features_path, o.allow_nonfinite_features, meta));
  SPINDLE_ASSIGN_OR_RETURN(auto w, dataset_writer::create(out_dir, meta));
  csr_view g = built->csr.view();
  SPINDLE_TRY(w.write_graph(g));
  if (!built->original_ids.empty()) SPINDLE_TRY(w.write_node_ids(built->original_ids));
  if (!names.empty()) SPINDLE_TRY(w.write_node_names(names));
  if (features.rows > 0)
    SPINDLE_TRY(w.write_features(features.rows, features.cols,
                                 [&](std::int64_t lo, std::int64_t hi, float* out) {
                                   std::copy(features.values.begin() + lo * features.cols,
                                             features.values.begin() + hi * features.cols, out);
                                 }));
  if (!features.labels.empty() && std::int64_t(features.labels.size()) != g.num_nodes)
    return make_error(errc::invalid_argument, "{}: {} labels, but the graph has {} nodes", o.input,
                      features.labels.size(), g.num_nodes);
  if (!features.labels.empty())
    SPINDLE_TRY(
        w.write_labels(features.labels, static_cast<std::int64_t>(features.class_names.size())));
  SPINDLE_TRY(write_metrics_for(w, g, o.metrics, pool));
  return w.finish();
}

}  // namespace

status generate_dataset(const generate_options& o, const std::string& out_dir, thread_pool& pool) {
  return write_dataset_dir(out_dir, o.force, [&](const std::string& dir) {
    return generate_dataset_into(o, dir, pool);
  });
}

namespace {

status generate_dataset_into(const generate_options& o, const std::string& out_dir,
                             thread_pool& pool) {
  if (o.feature_dim < 0)
    return make_error(errc::invalid_argument, "--feature-dim {} must be >= 0", o.feature_dim);
  SPINDLE_TRY(validate(o.rmat));
  std::uint64_t m =
      (std::uint64_t{1} << o.rmat.scale) * static_cast<std::uint64_t>(o.rmat.edge_factor);
  progress gen_prog("generating R-MAT edges", m, "edges");
  SPINDLE_ASSIGN_OR_RETURN(edge_list edges, generate_rmat(o.rmat, pool, &gen_prog));
  gen_prog.finish();
  build_options build;
  build.undirected = o.undirected;
  build.relabel = relabel_mode::never;
  build.num_nodes = std::int64_t{1} << o.rmat.scale;
  SPINDLE_ASSIGN_OR_RETURN(auto built, build_csr(std::move(edges), build, &pool));
  dataset_metadata meta;
  meta.name = fmt::format("rmat-s{}-e{}", o.rmat.scale, o.rmat.edge_factor);
  meta.source = fmt::format("rmat scale={} edge_factor={} a={} b={} c={} seed={}", o.rmat.scale,
                            o.rmat.edge_factor, o.rmat.a, o.rmat.b, o.rmat.c, o.rmat.seed);
  meta.undirected = o.undirected;
  meta.edge_direction = o.undirected ? "both" : "out";  // rows hold the generated edges' targets
  meta.build["self_loops_dropped"] = std::to_string(built.self_loops_dropped);
  meta.build["duplicates_dropped"] = std::to_string(built.duplicates_dropped);
  SPINDLE_ASSIGN_OR_RETURN(auto w, dataset_writer::create(out_dir, meta));
  csr_view g = built.csr.view();
  SPINDLE_TRY(w.write_graph(g));
  if (o.feature_dim > 0) {
    progress feat_prog("writing synthetic features", static_cast<std::uint64_t>(g.num_nodes),
                       "rows");
    SPINDLE_TRY(w.write_features(
        g.num_nodes, o.feature_dim, [&](std::int64_t lo, std::int64_t hi, float* out) {
          pool.parallel_for(lo, hi, 4096, [&](std::int64_t a, std::int64_t b, std::size_t) {
            for (std::int64_t v = a; v < b; ++v)
              synthetic_features(
                  o.rmat.seed, v,
                  {out + (v - lo) * o.feature_dim, static_cast<std::size_t>(o.feature_dim)});
          });
          feat_prog.advance(static_cast<std::uint64_t>(hi - lo));
        }));
  }
  SPINDLE_TRY(write_metrics_for(w, g, o.metrics, pool));
  return w.finish();
}

}  // namespace

}  // namespace spindle::graph
