// GNNSched §3.3 peak-memory estimate (PMC) of one inference task: the model's
// forward pass as a DAG of operators in topological order, each with its
// weight, output and temporary tensors (Table 2, NE = edges, NN = nodes of the
// layer's block), lifetimes (weights and the input persist; temporaries are
// freed when their operator ends; outputs when their last consumer ends), the
// running maximum, a safety factor and 512-byte rounding. The DAG mirrors the
// allocations of nn/'s operators, so the estimate can be checked against the
// peak measured by nn's allocator. nn/ aggregates by sparse-dense products, so
// where PyG's Table 2 has an [NE x F] message temporary Spindle has none (GAT
// keeps its per-edge scores and messages). Pure functions.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "config/model.hpp"

namespace spindle::colocation {

/// Sizes of one sampled block (one GNN layer's input side and output side).
struct block_dims {
  std::int64_t num_dst = 0, num_src = 0, num_edges = 0;
};

struct pmc_op {
  std::string name;                // "convs.0.propagate", "convs.0.lin_l", ...
  std::uint64_t weight_bytes = 0;  // persistent
  std::uint64_t output_bytes = 0;  // freed after the last consumer
  std::uint64_t temp_bytes = 0;    // freed when the op ends
  std::vector<int> inputs;         // producing ops (-1: the task input)
};

struct pmc_graph {
  std::uint64_t input_bytes = 0;  // the task's input features (persistent)
  std::vector<pmc_op> ops;        // topological order
};

struct pmc_estimate {
  std::uint64_t weight_bytes = 0;
  std::uint64_t peak_bytes = 0;  // weights + input + activation peak, before the factor
  std::uint64_t pmc_bytes = 0;   // peak x safety factor, rounded up to 512 bytes
};

/// The forward DAG of a GNN over `blocks` (blocks[0] = input layer).
pmc_graph gnn_graph(const config::model_desc& d, std::span<const block_dims> blocks);
/// The forward DAG of a DLRM for a batch of `batch` rows.
pmc_graph dlrm_graph(const config::model_desc& d, std::int64_t batch);
/// Walks the DAG in order and returns the running maximum of live bytes.
pmc_estimate estimate_pmc(const pmc_graph& g, double safety_factor = 1.1);

}  // namespace spindle::colocation
