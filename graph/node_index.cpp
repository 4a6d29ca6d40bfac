#include "graph/node_index.hpp"

#include <charconv>
#include <fstream>

namespace spindle::graph {

expected<node_index> node_index::build(const dataset& ds) {
  node_index x;
  x.dataset_ = ds.metadata().name;
  x.rows_ = std::size_t(ds.num_nodes());
  const auto& build = ds.metadata().build;
  if (auto it = build.find("node_names"); it != build.end()) {
    const std::string path = ds.dir() + "/node_names.txt";
    std::ifstream in(path);
    if (!in) return make_error(errc::io_error, "{}: cannot open", path);
    std::string line;
    std::int64_t row = 0;
    while (std::getline(in, line)) {
      if (row >= ds.num_nodes())
        return make_error(errc::corrupt_data, "{}: more than {} lines", path, ds.num_nodes());
      x.by_name_.emplace(line, row++);
    }
    if (row != ds.num_nodes())
      return make_error(errc::corrupt_data, "{}: {} lines for {} nodes", path, row, ds.num_nodes());
    x.source_ = "node_names.txt";
    return x;
  }
  if (!ds.node_ids().empty()) {
    const auto ids = ds.node_ids();
    x.by_name_.reserve(ids.size());
    for (std::size_t r = 0; r < ids.size(); ++r) x.by_name_.emplace(std::to_string(ids[r]), r);
    x.source_ = "node_ids.npy";
    return x;
  }
  x.identity_ = true;
  x.source_ = "row numbers";
  return x;
}

expected<std::int64_t> node_index::resolve(std::string_view id) const {
  const auto shown = id.substr(0, 64);
  if (identity_) {
    std::int64_t row = -1;
    auto [p, ec] = std::from_chars(id.data(), id.data() + id.size(), row);
    if (ec == std::errc() && p == id.data() + id.size() && row >= 0 && std::size_t(row) < rows_)
      return row;
  } else if (auto it = by_name_.find(std::string(id)); it != by_name_.end()) {
    return it->second;
  }
  return make_error(errc::invalid_argument, "id '{}' is not a node of dataset '{}' (ids: {})",
                    shown, dataset_, source_);
}

}  // namespace spindle::graph
