// A model's answers on a whole (small) graph through the serving path: every
// node a seed, every neighbour sampled (fanouts -1), features gathered and the
// forward pass run as a served batch is. `spindle model verify` compares these,
// op by op, with the user's own module on the same graph before an export is
// written (a wrong answer becomes a refusal, not a served difference).
#pragma once

#include <cstdint>
#include <vector>

#include "core/status.hpp"
#include "graph/dataset.hpp"
#include "nn/model.hpp"

namespace spindle::serving {

/// One op's output over every node, rows in node-id order.
struct op_value {
  std::int64_t rows = 0, cols = 0;
  std::vector<float> values;  // rows x cols, row-major
};

/// Runs `model` (a stack model) over every node of `ds` with every neighbour;
/// returns each op's output in node order (the last is the model's answer).
/// Refuses graphs over `max_nodes` (one batch holds them all).
expected<std::vector<op_value>> full_graph_ops(const graph::dataset& ds, nn::model& model,
                                               std::int64_t max_nodes = 200000);

/// A typed model's answers for every node of each node type it answers (every
/// neighbour): one value per model output (config::model_types::outputs), rows
/// in the order of that type's nodes. Refuses graphs over `max_nodes`.
expected<std::vector<op_value>> full_graph_outputs(const graph::dataset& ds, nn::model& model,
                                                   std::int64_t max_nodes = 200000);

}  // namespace spindle::serving
