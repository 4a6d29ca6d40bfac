// The calls `spindle client load` sends to a GNN model: one seed node each,
// drawn uniformly, by degree from a prepared dataset (as the server's own
// generator does), or read from a trace file of node ids.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/status.hpp"
#include "transport/rpc/rpc_types.hpp"

namespace spindle::client {

/// `n` seeds from "uniform:N", "degree:DATASET_DIR" or a trace file of ids (one
/// per line, taken in turn); errors name --seeds and its value.
expected<std::vector<std::int64_t>> draw_seeds(const std::string& spec, std::size_t n,
                                               std::uint64_t seed);

/// One call to `model` per seed; with `reproducible`, call i carries sampler seed i + 1.
std::vector<transport::rpc::gnn_call> gnn_load_calls(const std::string& model,
                                                     const std::vector<std::int64_t>& seeds,
                                                     bool reproducible, std::uint32_t deadline_us);

}  // namespace spindle::client
