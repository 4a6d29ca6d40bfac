#include <algorithm>
#include <numeric>

#include "features/policies/policies.hpp"

namespace spindle::features::detail {

std::vector<server_shards> index_shards(const config::topology& topo,
                                        const std::vector<shard_info>& shards) {
  std::vector<server_shards> out(topo.servers.size());
  for (std::size_t i = 0; i < shards.size(); ++i) {
    auto& s = out[shards[i].server];
    switch (shards[i].tier) {
      case shard_tier::device:
        s.devices.push_back(int(i));
        break;
      case shard_tier::host:
        s.host = int(i);
        break;
      case shard_tier::disk:
        s.disk = int(i);
        break;
    }
  }
  return out;
}

std::vector<std::uint64_t> rank_descending(std::span<const double> score) {
  std::vector<std::uint64_t> order(score.size());
  std::iota(order.begin(), order.end(), std::uint64_t{0});
  std::stable_sort(order.begin(), order.end(),
                   [&](std::uint64_t a, std::uint64_t b) { return score[a] > score[b]; });
  return order;
}

status capacity_error(std::uint64_t rows, std::uint64_t capacity, std::uint64_t row_bytes) {
  return make_error(errc::resource_exhausted,
                    "topology holds {} rows of {} bytes ({} MiB) but the table has {} rows: "
                    "raise server memory or disk",
                    capacity, row_bytes, capacity * row_bytes >> 20, rows);
}

plan_assembler::plan_assembler(std::uint64_t num_nodes, std::vector<shard_info> shards)
    : num_nodes_(num_nodes), shards_(std::move(shards)) {
  pairs_.reserve(num_nodes);
}

expected<placement_plan> plan_assembler::finish(std::string policy, std::uint64_t row_bytes) && {
  std::sort(pairs_.begin(), pairs_.end());
  lookup_builder builder(num_nodes_, shards_.size());
  placement_plan plan;
  std::vector<shard_index> owners;
  for (std::size_t i = 0; i < pairs_.size();) {
    std::size_t j = i;
    owners.clear();
    for (; j < pairs_.size() && pairs_[j].first == pairs_[i].first; ++j)
      owners.push_back(pairs_[j].second);
    if (owners.size() > 1) ++plan.replicated_rows;
    SPINDLE_TRY(builder.assign(pairs_[i].first, owners));
    i = j;
  }
  SPINDLE_ASSIGN_OR_RETURN(plan.lookup, std::move(builder).finish());
  plan.policy = std::move(policy);
  plan.row_bytes = row_bytes;
  plan.shards = std::move(shards_);
  auto rows = plan.shard_rows();
  for (std::size_t s = 0; s < rows.size(); ++s)
    if (rows[s] > plan.shards[s].capacity_rows)
      return make_error(errc::internal, "{} placement: shard {} holds {} rows, capacity {}",
                        plan.policy, s, rows[s], plan.shards[s].capacity_rows);
  return plan;
}

}  // namespace spindle::features::detail
