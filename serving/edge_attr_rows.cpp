#include "serving/edge_attr_rows.hpp"

#include <algorithm>

namespace spindle::serving {

status check_edge_attr(const graph::dataset& ds, const nn::model& m) {
  if (!m.needs_edge_attr()) return status::ok();
  return std::move(config::check_edge_attr(m.desc().ops, ds.edge_attr_cols(), ds.dir()))
      .with_context(m.desc().name + ": ");
}

void gather_edge_attr(const graph::dataset& ds, const graph::sampled_subgraph& sub,
                      std::vector<float>& out) {
  const std::int64_t k = ds.edge_attr_cols();
  const auto attr = ds.edge_attr();
  out.resize(sub.edge_ids.size() * std::size_t(k));
  for (std::size_t e = 0; e < sub.edge_ids.size(); ++e) {
    const float* row = attr.data() + sub.edge_ids[e] * k;
    std::copy(row, row + k, out.data() + e * std::size_t(k));
  }
}

}  // namespace spindle::serving
