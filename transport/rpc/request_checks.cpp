#include "transport/rpc/request_checks.hpp"

#include <algorithm>
#include <cmath>

namespace spindle::transport::rpc {

status check_gnn_call(const gnn_call& call, std::int64_t num_nodes) {
  if (call.pairs) {  // said as the caller gave them: pairs [k, 2]
    if (call.seeds.empty()) return make_error(errc::invalid_argument, "pairs: empty");
    if (call.seeds.size() > kMaxSeedsPerRequest)
      return make_error(errc::invalid_argument, "pairs: {} (at most {} per request)",
                        call.seeds.size() / 2, kMaxSeedsPerRequest / 2);
    for (std::size_t i = 0; i < call.seeds.size(); ++i)
      if (call.seeds[i] < 0 || call.seeds[i] >= num_nodes)
        return make_error(errc::invalid_argument, "pairs[{}][{}]={} out of range (nodes {})",
                          i / 2, i % 2, call.seeds[i], num_nodes);
    return status::ok();
  }
  if (call.seeds.empty()) return make_error(errc::invalid_argument, "seeds: empty");
  if (call.seeds.size() > kMaxSeedsPerRequest)
    return make_error(errc::invalid_argument, "seeds: {} (at most {} per request)",
                      call.seeds.size(), kMaxSeedsPerRequest);
  for (std::size_t i = 0; i < call.seeds.size(); ++i) {
    if (call.seeds[i] < 0 || call.seeds[i] >= num_nodes) {
      return make_error(errc::invalid_argument, "seeds[{}]={} out of range (nodes {})", i,
                        call.seeds[i], num_nodes);
    }
  }
  return status::ok();
}

status check_rec_call(const rec_call& call, int dense_in, std::size_t tables) {
  if (call.batch == 0) return make_error(errc::invalid_argument, "batch: 0");
  if (call.dense.size() != std::size_t(call.batch) * std::size_t(std::max(0, dense_in))) {
    return make_error(errc::invalid_argument, "dense: {} values for batch {} x dense_in {}",
                      call.dense.size(), call.batch, dense_in);
  }
  for (std::size_t i = 0; i < call.dense.size(); ++i)  // NaN in, NaN scores out: refuse
    if (!std::isfinite(call.dense[i]))
      return make_error(errc::invalid_argument, "dense[{}] = {}: not a finite number (sample {})",
                        i, call.dense[i], i / std::size_t(std::max(1, dense_in)));
  if (call.sparse.size() != tables) {
    return make_error(errc::invalid_argument, "sparse: {} bags lists for {} tables",
                      call.sparse.size(), tables);
  }
  for (std::size_t t = 0; t < tables; ++t)
    SPINDLE_TRY(check_bag(call.sparse[t], call.batch, fmt::format("sparse[{}]", t)));
  return status::ok();
}

status check_bag(const rec_bag& bag, std::uint32_t batch, std::string_view name) {
  const auto& o = bag.offsets;
  if (o.size() != std::size_t(batch) + 1)
    return make_error(errc::invalid_argument, "{}: {} offsets, expected batch + 1 = {}", name,
                      o.size(), std::size_t(batch) + 1);
  if (o.front() != 0 || o.back() != std::int64_t(bag.indices.size()))
    return make_error(errc::invalid_argument,
                      "{}: offsets must start at 0 and end at its {} indices", name,
                      bag.indices.size());
  for (std::size_t b = 0; b + 1 < o.size(); ++b)
    if (o[b] > o[b + 1])
      return make_error(errc::invalid_argument, "{}: offsets[{}] > offsets[{}]", name, b, b + 1);
  return status::ok();
}

std::string check_gnn_batch(std::size_t requests, std::size_t seeds) {
  if (requests > kMaxBatchRequests)
    return fmt::format("inferGnnBatch: {} requests (at most {} per call)", requests,
                       kMaxBatchRequests);
  if (seeds > kMaxBatchSeeds)
    return fmt::format("inferGnnBatch: {} seeds in all (at most {} per call)", seeds,
                       kMaxBatchSeeds);
  return {};
}

}  // namespace spindle::transport::rpc
