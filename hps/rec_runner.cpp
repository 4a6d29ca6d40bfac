#include "hps/rec_runner.hpp"

#include <chrono>

namespace spindle::hps {

expected<nn::tensor> memory_rec_runner::infer(nn::allocator& a, const nn::tensor& dense,
                                              const std::vector<nn::sparse_input>& sparse,
                                              dlrm_timing* timing) const {
  const auto start = std::chrono::steady_clock::now();
  auto out = model_->forward_rec(a, dense, sparse);
  if (timing)
    timing->compute_ms =
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  return out;
}

}  // namespace spindle::hps
