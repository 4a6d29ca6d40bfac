// The NCCL communicator of nccl_exchange.hpp: one communicator and stream per
// local GPU; the exchange is one ncclGroupStart/End of every send and receive.
// Built with the CUDA backend when NCCL is found; compiled and linked here, run
// only where GPUs exist.
#include <cuda_runtime.h>
#include <nccl.h>

#include "gpu/nccl_exchange.hpp"

namespace spindle::gpu {
namespace {

status nccl_check(ncclResult_t r, const char* what) {
  if (r == ncclSuccess) return status::ok();
  return make_error(errc::unavailable, "{}: {}", what, ncclGetErrorString(r));
}

class nccl_group_impl final : public nccl_group {
 public:
  explicit nccl_group_impl(int gpus) : comms_(std::size_t(gpus)), streams_(std::size_t(gpus)) {}
  ~nccl_group_impl() override {
    for (std::size_t g = 0; g < comms_.size(); ++g) {
      if (comms_[g]) ncclCommDestroy(comms_[g]);
      if (streams_[g]) cudaStreamDestroy(streams_[g]);
    }
  }

  status init() {
    std::vector<int> devices(comms_.size());
    for (std::size_t g = 0; g < devices.size(); ++g) {
      devices[g] = int(g);
      cudaSetDevice(int(g));
      if (cudaStreamCreate(&streams_[g]) != cudaSuccess)
        return make_error(errc::unavailable, "GPU {}: cannot create a stream", g);
    }
    return nccl_check(ncclCommInitAll(comms_.data(), int(comms_.size()), devices.data()),
                      "ncclCommInitAll");
  }

  status exchange(const exchange_plan& plan, std::int64_t dim,
                  const std::vector<std::vector<const float*>>& send,
                  const std::vector<std::vector<float*>>& recv) override {
    SPINDLE_TRY(nccl_check(ncclGroupStart(), "ncclGroupStart"));
    for (int s = 0; s < plan.gpus; ++s)
      for (int d = 0; d < plan.gpus; ++d) {
        const std::size_t rows = plan.ask[std::size_t(d)][std::size_t(s)].size();
        if (s == d || rows == 0) continue;
        const std::size_t count = rows * std::size_t(dim);
        ncclSend(send[std::size_t(s)][std::size_t(d)], count, ncclFloat, d, comms_[std::size_t(s)],
                 streams_[std::size_t(s)]);
        ncclRecv(recv[std::size_t(d)][std::size_t(s)], count, ncclFloat, s, comms_[std::size_t(d)],
                 streams_[std::size_t(d)]);
      }
    SPINDLE_TRY(nccl_check(ncclGroupEnd(), "ncclGroupEnd"));
    return synchronize_all();
  }

  status broadcast(int root, const std::vector<void*>& buffers, std::size_t bytes) override {
    SPINDLE_TRY(nccl_check(ncclGroupStart(), "ncclGroupStart"));
    for (std::size_t g = 0; g < comms_.size(); ++g)
      ncclBroadcast(buffers[std::size_t(root)], buffers[g], bytes, ncclUint8, root, comms_[g],
                    streams_[g]);
    SPINDLE_TRY(nccl_check(ncclGroupEnd(), "ncclGroupEnd"));
    return synchronize_all();
  }

 private:
  status synchronize_all() {
    for (std::size_t g = 0; g < streams_.size(); ++g) {
      cudaSetDevice(int(g));
      if (cudaStreamSynchronize(streams_[g]) != cudaSuccess)
        return make_error(errc::unavailable, "GPU {}: stream failed", g);
    }
    return status::ok();
  }

  std::vector<ncclComm_t> comms_;
  std::vector<cudaStream_t> streams_;
};

}  // namespace

expected<std::unique_ptr<nccl_group>> nccl_group::create(int gpus) {
  int have = 0;
  if (cudaGetDeviceCount(&have) != cudaSuccess) have = 0;
  if (gpus < 1 || have < gpus)
    return make_error(errc::unavailable, "NCCL group of {} GPUs: {} usable here", gpus, have);
  auto g = std::make_unique<nccl_group_impl>(gpus);
  SPINDLE_TRY(g->init());
  return std::unique_ptr<nccl_group>(std::move(g));
}

}  // namespace spindle::gpu
