#include "graph/loaders.hpp"

#include <fmt/ranges.h>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <map>
#include <unordered_map>

#include "core/enum_names.hpp"
#include "core/npy.hpp"
#include "core/npz.hpp"
#include "graph/ogb.hpp"
#include "graph/text_reader.hpp"

namespace spindle::graph {
namespace {

bool ends_with(std::string_view s, std::string_view suffix) {
  return s.size() >= suffix.size() && s.substr(s.size() - suffix.size()) == suffix;
}

bool is_comment(std::string_view line) {
  std::size_t i = line.find_first_not_of(" \t\r");
  return i == std::string_view::npos || line[i] == '#' || line[i] == '%';
}

// Interns node names once an input turns out to use non-integer ids; ids read
// before that are re-interned by their decimal text.
struct name_table {
  std::unordered_map<std::string, std::int64_t> index;
  bool active = false;

  std::int64_t intern(std::string_view name, edge_list& out) {
    auto [it, inserted] =
        index.try_emplace(std::string(name), static_cast<std::int64_t>(out.names.size()));
    if (inserted) out.names.emplace_back(name);
    return it->second;
  }
  void activate(edge_list& out) {
    active = true;
    for (auto* ids : {&out.src, &out.dst})
      for (auto& id : *ids) id = intern(std::to_string(id), out);
  }
};

status parse_edge_line(const std::string& path, std::int64_t line_no,
                       const std::vector<std::string_view>& f, edge_list& out, name_table& names) {
  std::int64_t a = 0, b = 0;
  if (f.size() < 2 || f.size() > 3)
    return make_error(errc::invalid_argument, "{}:{}: expected 'src dst [weight]', got {} fields",
                      path, line_no, f.size());
  if (!names.active && (!parse_number(f[0], a) || !parse_number(f[1], b))) names.activate(out);
  if (names.active) {
    a = names.intern(f[0], out);
    b = names.intern(f[1], out);
  }
  if (f.size() == 3) {
    float w = 0;
    if (!parse_number(f[2], w))
      return make_error(errc::invalid_argument, "{}:{}: weight '{}' is not a number", path, line_no,
                        f[2]);
    if (out.weight.size() != out.src.size())
      return make_error(errc::invalid_argument, "{}:{}: weight given here but not on earlier lines",
                        path, line_no);
    out.weight.push_back(w);
  } else if (!out.weight.empty()) {
    return make_error(errc::invalid_argument, "{}:{}: weight missing (earlier lines have one)",
                      path, line_no);
  }
  out.src.push_back(a);
  out.dst.push_back(b);
  return status::ok();
}

expected<edge_list> load_text_edges(const std::string& path, bool csv) {
  edge_list out;
  name_table names;
  std::vector<std::string_view> fields;
  bool first = true;
  SPINDLE_TRY(for_each_line(
      path,
      [&](std::int64_t line_no, std::string_view line) -> status {
        if (is_comment(line)) return status::ok();
        split_fields(line, fields);
        std::int64_t probe = 0;
        bool header = csv && first && !fields.empty() && !parse_number(fields[0], probe);
        first = false;
        if (header) return status::ok();
        return parse_edge_line(path, line_no, fields, out, names);
      },
      true));
  return out;
}

// edge_index as PyG holds it, [2, E] (row 0 sources), or the [E, 2] of an edge
// list, in C or Fortran order (np.save(edges.T) writes Fortran order), with
// int32/int64/uint32/uint64 ids.
expected<edge_list> load_npy_edges(const std::string& path) {
  SPINDLE_ASSIGN_OR_RETURN(auto a, npy_array::open_any_order(path));
  const auto& shape = a.shape();
  if (shape.size() != 2 || (shape[0] != 2 && shape[1] != 2))
    return make_error(errc::invalid_argument,
                      "{}: edge_index must have shape [2, E] (or [E, 2]); found [{}]", path,
                      fmt::join(shape, ", "));
  if (a.type() == dtype::f16 || a.type() == dtype::f32 || a.type() == dtype::f64 ||
      a.type() == dtype::b1)
    return make_error(errc::unsupported,
                      "{}: edge_index dtype {} (expected int64, int32, uint64 or uint32)", path,
                      to_string(a.type()));
  const bool rows_are_ends = shape[0] == 2;  // [2, E]; a [2, 2] array is read as [2, E] too
  const std::int64_t m = rows_are_ends ? shape[1] : shape[0];
  edge_list out;
  out.src.resize(std::size_t(m));
  out.dst.resize(std::size_t(m));
  for (std::int64_t e = 0; e < m; ++e) {
    SPINDLE_ASSIGN_OR_RETURN(out.src[e], rows_are_ends ? a.element_i64(0, e) : a.element_i64(e, 0));
    SPINDLE_ASSIGN_OR_RETURN(out.dst[e], rows_are_ends ? a.element_i64(1, e) : a.element_i64(e, 1));
  }
  return out;
}

expected<feature_table> load_npy_features(const std::string& path) {
  SPINDLE_ASSIGN_OR_RETURN(auto a, npy_array::open_any_order(path));
  if (a.shape().size() != 2)
    return make_error(errc::invalid_argument, "{}: features must have shape [N, F], got {} dims",
                      path, a.shape().size());
  feature_table t;
  t.rows = a.shape()[0];
  t.cols = a.shape()[1];
  t.values.resize(std::size_t(t.rows * t.cols));
  if (a.type() == dtype::f32 && !a.fortran_order()) {  // the common case: one copy
    auto v = *a.as<float>();
    std::copy(v.begin(), v.end(), t.values.begin());
    return t;
  }
  // Any dtype (bool and integer features become 0/1 and counts), any order.
  for (std::int64_t r = 0; r < t.rows; ++r)
    for (std::int64_t c = 0; c < t.cols; ++c)
      t.values[std::size_t(r * t.cols + c)] = float(a.element(r, c));
  return t;
}

status parse_feature_row(const std::string& path, std::int64_t line_no,
                         const std::vector<std::string_view>& f, std::size_t first,
                         std::size_t last, feature_table& t) {
  std::int64_t cols = static_cast<std::int64_t>(last - first);
  if (t.rows == 0) t.cols = cols;
  if (cols != t.cols || cols == 0)
    return make_error(errc::invalid_argument, "{}:{}: {} feature columns, earlier rows have {}",
                      path, line_no, cols, t.cols);
  for (std::size_t i = first; i < last; ++i) {
    float x = 0;
    if (!parse_number(f[i], x))
      return make_error(errc::invalid_argument, "{}:{}: field {} '{}' is not a number", path,
                        line_no, i + 1, f[i]);
    t.values.push_back(x);
  }
  ++t.rows;
  return status::ok();
}

expected<feature_table> load_text_features(const std::string& path, bool linqs) {
  feature_table t;
  std::vector<std::string_view> f;
  std::vector<std::string> label_text;
  SPINDLE_TRY(for_each_line(
      path,
      [&](std::int64_t line_no, std::string_view line) -> status {
        if (is_comment(line)) return status::ok();
        split_fields(line, f);
        if (!linqs) {
          float probe = 0;
          if (t.rows == 0 && !f.empty() && !parse_number(f[0], probe))
            return status::ok();  // header
          return parse_feature_row(path, line_no, f, 0, f.size(), t);
        }
        if (f.size() < 3)
          return make_error(errc::invalid_argument, "{}:{}: expected 'id features... label'", path,
                            line_no);
        t.row_names.emplace_back(f[0]);
        label_text.emplace_back(f.back());
        return parse_feature_row(path, line_no, f, 1, f.size() - 1, t);
      },
      true));
  if (linqs) {
    std::map<std::string, std::int64_t> classes;
    for (const auto& s : label_text) classes.emplace(s, 0);
    std::int64_t next = 0;
    for (auto& [name, idx] : classes) {
      idx = next++;
      t.class_names.push_back(name);
    }
    for (const auto& s : label_text) t.labels.push_back(classes[s]);
  }
  return t;
}

}  // namespace

constexpr enum_names<edge_format, 4> kEdgeFormats{{{
    {edge_format::snap, "snap"}, {edge_format::csv, "csv"}, {edge_format::npy, "npy"},
    {edge_format::ogb, "ogb"}}}};

std::string_view to_string(edge_format f) { return kEdgeFormats.name(f, "unknown"); }

expected<edge_format> parse_edge_format(std::string_view name) {
  if (auto f = kEdgeFormats.parse(name)) return *f;
  return make_error(errc::invalid_argument, "--format: '{}' is not one of {}", name,
                    kEdgeFormats.choices(", "));
}

// A .npz (PyG/OGB export): the first of `names` it holds, read by `load` from
// a temporary .npy. Errors name the archive and the arrays it holds.
template <class Load>
auto from_npz(const std::string& path, std::initializer_list<const char*> names, Load load)
    -> decltype(load(path)) {
  SPINDLE_ASSIGN_OR_RETURN(auto held, npz_arrays(path));
  for (const char* name : names) {
    if (std::find(held.begin(), held.end(), name) == held.end()) continue;
    SPINDLE_ASSIGN_OR_RETURN(auto tmp, extract_npz_array(path, name));
    auto r = load(tmp);
    std::error_code ec;
    std::filesystem::remove(tmp, ec);
    if (!r) return std::move(r).error().with_context(fmt::format("{} ({}): ", path, name));
    return r;
  }
  return make_error(errc::invalid_argument, "{}: holds none of [{}] (it holds: {})", path,
                    fmt::join(names, ", "), fmt::join(held, ", "));
}

edge_format guess_edge_format(std::string_view path) {
  if (looks_like_ogb(std::string(path))) return edge_format::ogb;
  if (ends_with(path, ".npy") || ends_with(path, ".npz")) return edge_format::npy;
  if (ends_with(path, ".csv") || ends_with(path, ".csv.gz")) return edge_format::csv;
  return edge_format::snap;
}

expected<edge_list> load_edges(const std::string& path, edge_format format) {
  switch (format) {
    case edge_format::npy:
      if (ends_with(path, ".npz")) return from_npz(path, {"edge_index", "edges"}, load_npy_edges);
      return load_npy_edges(path);
    case edge_format::csv:
      return load_text_edges(path, true);
    case edge_format::ogb: {
      SPINDLE_ASSIGN_OR_RETURN(auto layout, find_ogb_layout(path));
      return load_text_edges(layout.edges, true);
    }
    case edge_format::snap:
      return load_text_edges(path, false);
  }
  return make_error(errc::internal, "unknown edge format");
}

constexpr enum_names<feature_format, 3> kFeatureFormats{{{
    {feature_format::npy, "npy"}, {feature_format::csv, "csv"}, {feature_format::linqs, "linqs"}}}};

std::string_view to_string(feature_format f) { return kFeatureFormats.name(f, "unknown"); }

expected<feature_format> parse_feature_format(std::string_view name) {
  if (auto f = kFeatureFormats.parse(name)) return *f;
  return make_error(errc::invalid_argument, "--features-format: '{}' is not one of {}", name,
                    kFeatureFormats.choices(", "));
}

feature_format guess_feature_format(std::string_view path) {
  if (ends_with(path, ".npy") || ends_with(path, ".npz")) return feature_format::npy;
  if (ends_with(path, ".content") || ends_with(path, ".content.gz")) return feature_format::linqs;
  return feature_format::csv;
}

expected<feature_table> load_features(const std::string& path, feature_format format) {
  switch (format) {
    case feature_format::npy:
      if (ends_with(path, ".npz"))
        return from_npz(path, {"x", "features", "node_feat"}, load_npy_features);
      return load_npy_features(path);
    case feature_format::csv:
      return load_text_features(path, false);
    case feature_format::linqs:
      return load_text_features(path, true);
  }
  return make_error(errc::internal, "unknown feature format");
}

}  // namespace spindle::graph
