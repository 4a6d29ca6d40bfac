// Built instead of cuda/nccl_group.cpp without CUDA or without NCCL.
#include "gpu/nccl_exchange.hpp"

namespace spindle::gpu {

expected<std::unique_ptr<nccl_group>> nccl_group::create(int gpus) {
  return make_error(errc::unsupported, "NCCL group of {} GPUs: this binary was built without NCCL",
                    gpus);
}

}  // namespace spindle::gpu
