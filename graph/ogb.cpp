#include "graph/ogb.hpp"

#include <filesystem>
#include <vector>

#include "graph/text_reader.hpp"

namespace spindle::graph {
namespace {

namespace fs = std::filesystem;

// OGB writes gzip; a user who unpacked the files keeps plain .csv.
std::string find_csv(const fs::path& raw, const std::string& stem) {
  std::error_code ec;
  for (const char* ext : {".csv.gz", ".csv"}) {
    fs::path p = raw / (stem + ext);
    if (fs::is_regular_file(p, ec)) return p.string();
  }
  return {};
}

fs::path raw_dir(const std::string& dir) {
  std::error_code ec;
  fs::path raw = fs::path(dir) / "raw";
  return fs::is_directory(raw, ec) ? raw : fs::path(dir);
}

expected<std::vector<std::int64_t>> read_integers(const std::string& path) {
  std::vector<std::int64_t> out;
  SPINDLE_TRY(for_each_line(path, [&](std::int64_t line_no, std::string_view line) -> status {
    std::int64_t v = 0;
    if (!parse_number(line, v))
      return make_error(errc::invalid_argument, "{}:{}: '{}' is not an integer", path, line_no,
                        line);
    out.push_back(v);
    return status::ok();
  }));
  return out;
}

}  // namespace

bool looks_like_ogb(const std::string& dir) {
  std::error_code ec;
  return fs::is_directory(dir, ec) && !find_csv(raw_dir(dir), "edge").empty();
}

expected<ogb_layout> find_ogb_layout(const std::string& dir) {
  std::error_code ec;
  if (!fs::is_directory(dir, ec))
    return make_error(errc::invalid_argument,
                      "--input {}: --format ogb needs the dataset folder (holding raw/edge.csv.gz)",
                      dir);
  const fs::path raw = raw_dir(dir);
  if (fs::is_directory(raw / "relations", ec))
    return make_error(errc::unsupported,
                      "{}: a heterogeneous OGB graph (raw/relations); Spindle serves one node "
                      "and edge type",
                      dir);
  ogb_layout l;
  l.edges = find_csv(raw, "edge");
  if (l.edges.empty())
    return make_error(errc::not_found, "{}: no edge.csv.gz (looked in {})", dir, raw.string());
  l.features = find_csv(raw, "node-feat");
  l.labels = find_csv(raw, "node-label");
  if (std::string counts = find_csv(raw, "num-node-list"); !counts.empty()) {
    SPINDLE_ASSIGN_OR_RETURN(auto n, read_integers(counts));
    if (n.size() != 1)
      return make_error(errc::unsupported,
                        "{}: holds {} graphs (a graph-property dataset); Spindle serves one graph",
                        counts, n.size());
    if (n[0] < 0) return make_error(errc::invalid_argument, "{}: {} nodes", counts, n[0]);
    l.num_nodes = n[0];
  }
  return l;
}

expected<ogb_labels> load_ogb_labels(const std::string& path) {
  ogb_labels out;
  SPINDLE_TRY(for_each_line(path, [&](std::int64_t line_no, std::string_view line) -> status {
    while (!line.empty() && (line.back() == '\r' || line.back() == ' ')) line.remove_suffix(1);
    if (line.empty() || line == "nan" || line == "NaN") {
      out.values.push_back(-1);
      return status::ok();
    }
    double v = 0;  // OGB writes some label files as floats ("3.0")
    if (!parse_number(line, v) || v < 0 || v != static_cast<double>(std::int64_t(v)) || v > 1e9)
      return make_error(errc::invalid_argument,
                        "{}:{}: label '{}' is not a class index (one integer >= 0 per line; a "
                        "multi-label file is not supported)",
                        path, line_no, line);
    out.values.push_back(std::int64_t(v));
    out.num_classes = std::max(out.num_classes, std::int64_t(v) + 1);
    return status::ok();
  }));
  return out;
}

}  // namespace spindle::graph
