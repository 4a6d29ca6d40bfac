#include "serving/peer_exchange.hpp"

#include "gpu/gnn_kernels.hpp"

namespace spindle::serving {

expected<std::shared_ptr<peer_exchange>> peer_exchange::create(
    std::vector<std::shared_ptr<cuda_resident>> residents, std::vector<std::int32_t> owner) {
  std::shared_ptr<peer_exchange> x(new peer_exchange);
  SPINDLE_ASSIGN_OR_RETURN(x->nccl_, gpu::nccl_group::create(int(residents.size())));
  x->residents_ = std::move(residents);
  x->owner_ = std::move(owner);
  for (int g = 0; g < int(x->residents_.size()); ++g)
    x->scratch_.push_back({gpu::device_buffer(g), gpu::device_buffer(g)});
  return x;
}

status peer_exchange::fetch(int gpu, std::span<const std::int64_t> ids,
                            const std::vector<std::int64_t>& place_at, std::int64_t dim, float* dst,
                            void* stream) {
  std::lock_guard lock(mu_);
  const int gpus = int(residents_.size());
  for (auto v : ids)
    if (v < 0 || std::size_t(v) >= owner_.size() || !from_peer(gpu, v))
      return make_error(errc::invalid_argument,
                        "peer exchange: node {} is not held by a peer of GPU {}", v, gpu);
  const auto n = static_cast<std::size_t>(gpus);
  std::vector<std::vector<std::int64_t>> wanted(n);
  wanted[std::size_t(gpu)].assign(ids.begin(), ids.end());
  const auto plan =
      gpu::plan_exchange(wanted, gpus, [&](std::int64_t v) { return owner_[std::size_t(v)]; });
  const std::size_t row_bytes = std::size_t(dim) * sizeof(float);
  // Each owner gathers the rows asked of it into its send buffer.
  std::vector<std::vector<const float*>> send(n, std::vector<const float*>(n));
  std::vector<std::vector<float*>> recv(n, std::vector<float*>(n));
  for (int s = 0; s < gpus; ++s) {
    const auto& asked = plan.ask[std::size_t(gpu)][std::size_t(s)];
    if (s == gpu || asked.empty()) continue;
    auto& sc = scratch_[std::size_t(s)];
    SPINDLE_ASSIGN_OR_RETURN(void* d_ids, sc.ids.reserve(asked.size() * 8));
    SPINDLE_ASSIGN_OR_RETURN(void* d_rows, sc.rows.reserve(asked.size() * row_bytes));
    SPINDLE_TRY(gpu::copy_to_device(d_ids, asked.data(), asked.size() * 8));
    SPINDLE_TRY(residents_[std::size_t(s)]->gather_async(
        dim, static_cast<const std::int64_t*>(d_ids), std::int64_t(asked.size()),
        static_cast<float*>(d_rows), nullptr));
    SPINDLE_TRY(gpu::synchronize(nullptr));
    send[std::size_t(s)][std::size_t(gpu)] = static_cast<const float*>(d_rows);
  }
  // The asking GPU receives every owner's rows back to back.
  SPINDLE_ASSIGN_OR_RETURN(void* landing,
                           scratch_[std::size_t(gpu)].rows.reserve(ids.size() * row_bytes));
  std::size_t at = 0;
  for (int s = 0; s < gpus; ++s) {
    recv[std::size_t(gpu)][std::size_t(s)] = static_cast<float*>(landing) + at * std::size_t(dim);
    at += plan.ask[std::size_t(gpu)][std::size_t(s)].size();
  }
  SPINDLE_TRY(nccl_->exchange(plan, dim, send, recv));
  // Each received row to its place in the batch, on the asking GPU.
  SPINDLE_TRY(gpu::set_device(gpu));
  const auto to = gpu::landing_positions(plan, gpu, place_at);
  SPINDLE_ASSIGN_OR_RETURN(void* d_to, scratch_[std::size_t(gpu)].ids.reserve(to.size() * 8));
  SPINDLE_TRY(gpu::copy_to_device(d_to, to.data(), to.size() * 8));
  SPINDLE_TRY(gpu::place_rows_async(static_cast<const float*>(landing),
                                    static_cast<const std::int64_t*>(d_to), std::int64_t(to.size()),
                                    dim, dst, stream));
  SPINDLE_TRY(gpu::synchronize(stream));  // the landing buffer is reused by the next fetch
  rows_fetched_ += ids.size();
  return status::ok();
}

}  // namespace spindle::serving
