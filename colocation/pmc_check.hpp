// Runs a model's forward pass on one sampled batch with a tracking allocator
// and reports the measured peak next to the PMC estimate: how GNNSched's
// estimator is validated (tests, `bench/pmc_bench`). Pure; thread-safe.
#pragma once

#include "colocation/pmc.hpp"
#include "graph/sampler.hpp"
#include "nn/model.hpp"

namespace spindle::colocation {

struct pmc_check {
  pmc_estimate estimate;
  std::uint64_t measured_peak = 0;  // weights + input + activations, from nn's allocator
  std::int64_t nodes = 0, edges = 0;
  /// (estimate.peak - measured) / measured.
  double relative_error() const {
    return (double(estimate.peak_bytes) - double(measured_peak)) / double(measured_peak);
  }
};

/// Block sizes of a sampled batch, input layer first.
std::vector<block_dims> block_sizes(const graph::sampled_subgraph& sub);

/// Loads the model in `model_dir` into a fresh tracked heap, runs it on `sub` with
/// random input features, and compares the allocator's peak with the estimate.
expected<pmc_check> check_pmc(const std::string& model_dir, const graph::sampled_subgraph& sub,
                              double safety_factor = 1.1);

}  // namespace spindle::colocation
