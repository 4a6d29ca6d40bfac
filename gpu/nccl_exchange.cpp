#include "gpu/nccl_exchange.hpp"

namespace spindle::gpu {

std::uint64_t exchange_plan::remote_rows() const {
  std::uint64_t n = 0;
  for (int d = 0; d < gpus; ++d)
    for (int s = 0; s < gpus; ++s)
      if (s != d) n += ask[std::size_t(d)][std::size_t(s)].size();
  return n;
}

exchange_plan plan_exchange(const std::vector<std::vector<std::int64_t>>& wanted, int gpus,
                            const std::function<int(std::int64_t)>& owner) {
  exchange_plan p;
  p.gpus = gpus;
  p.ask.assign(std::size_t(gpus), std::vector<std::vector<std::int64_t>>(std::size_t(gpus)));
  p.slot.assign(std::size_t(gpus), std::vector<std::vector<std::size_t>>(std::size_t(gpus)));
  for (int d = 0; d < gpus && std::size_t(d) < wanted.size(); ++d)
    for (std::size_t k = 0; k < wanted[std::size_t(d)].size(); ++k) {
      const std::int64_t id = wanted[std::size_t(d)][k];
      const int s = owner(id);
      p.ask[std::size_t(d)][std::size_t(s)].push_back(id);
      p.slot[std::size_t(d)][std::size_t(s)].push_back(k);
    }
  return p;
}

std::vector<std::int64_t> landing_positions(const exchange_plan& plan, int gpu,
                                            const std::vector<std::int64_t>& place_at) {
  std::vector<std::int64_t> out;
  for (const auto& slots : plan.slot[std::size_t(gpu)])
    for (std::size_t k : slots) out.push_back(place_at[k]);
  return out;
}

}  // namespace spindle::gpu
