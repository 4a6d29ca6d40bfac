// The shape checks every inference call passes before it is admitted: seed
// ranges, per-call and per-batch limits, dense widths and finiteness, one bag
// list per table. Pure functions of the decoded call and the model's shape, so
// the gateway and the request fuzz target run the same code.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>

#include "core/status.hpp"
#include "transport/rpc/rpc_types.hpp"

namespace spindle::transport::rpc {

/// Limits of one inferGnnBatch call, checked before any work (larger: badRequest).
inline constexpr std::size_t kMaxBatchRequests = 1024;
inline constexpr std::size_t kMaxBatchSeeds = 65536;
/// Seeds per GNN request.
inline constexpr std::size_t kMaxSeedsPerRequest = 4096;

/// A GNN request over a graph of `num_nodes`: 1..4096 seeds, each in range.
status check_gnn_call(const gnn_call& call, std::int64_t num_nodes);

/// A recommendation request for a model with `dense_in` dense features and
/// `tables` embedding tables: batch > 0, batch x dense_in finite values, one bag
/// list per table.
status check_rec_call(const rec_call& call, int dense_in, std::size_t tables);
/// One table's bags (torch.nn.EmbeddingBag offsets): batch + 1 offsets from 0, never
/// decreasing, ending at the index count; errors name `name` (a huge offset
/// read or allocated past the indices).
status check_bag(const rec_bag& bag, std::uint32_t batch, std::string_view name);

/// An inferGnnBatch call of `requests` requests with `seeds` seeds in all:
/// empty when within kMaxBatchRequests / kMaxBatchSeeds, else the refusal.
std::string check_gnn_batch(std::size_t requests, std::size_t seeds);

}  // namespace spindle::transport::rpc
