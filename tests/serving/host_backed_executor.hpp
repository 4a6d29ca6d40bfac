// A test executor that runs everything on the host executor: tests derive from
// it and override the one call they watch or change (device slots, rows kept
// off the host).
#pragma once

#include "serving/batch_executor.hpp"

namespace spindle::serving::testing {

class host_backed_executor : public batch_executor {
 public:
  status sample(const graph::csr_view& g, std::span<const std::int64_t> seeds,
                const graph::sample_options& o, graph::sampled_subgraph& out) override {
    return host.sample(g, seeds, o, out);
  }
  void gather(std::span<const float> table, std::int64_t dim, std::span<const std::int64_t> ids,
              float* out) override {
    host.gather(table, dim, ids, out);
  }
  expected<nn::tensor> forward(const nn::model& m, nn::allocator& a,
                               std::span<const nn::block> blocks, std::span<const float> degree,
                               const nn::tensor& x) override {
    return host.forward(m, a, blocks, degree, x);
  }

 protected:
  host_executor host;
};

}  // namespace spindle::serving::testing
