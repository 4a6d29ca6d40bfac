// The edge attributes a model reads (gine ops), from the served dataset into a
// sampled graph's blocks: the check that the dataset has them, as wide as the
// model reads them, and the gather of each sampled edge's row. Pure functions.
#pragma once

#include <vector>

#include "core/status.hpp"
#include "graph/dataset.hpp"
#include "graph/sampler.hpp"
#include "nn/model.hpp"

namespace spindle::serving {

/// Refuses, naming the op and the dataset, a model reading edge attributes
/// that `ds` lacks or holds at another width; ok for models reading none.
status check_edge_attr(const graph::dataset& ds, const nn::model& m);

/// `out` = the attribute rows of `sub`'s sampled edges, in edge order (sub was
/// sampled with sample_options::edge_ids).
void gather_edge_attr(const graph::dataset& ds, const graph::sampled_subgraph& sub,
                      std::vector<float>& out);

}  // namespace spindle::serving
