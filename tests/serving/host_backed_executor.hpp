// Test pieces the serving tests share: an executor that runs everything on the
// host executor (tests derive from it and override the one call they watch or
// change: device slots, rows kept off the host), and a small stack model's
// description (16 -> conv1 32 -> act -> conv2 5) for named outputs.
#pragma once

#include "config/model.hpp"
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

/// A two-layer stack of sage ops over 16 features with named values conv1, act, conv2.
inline expected<config::model_desc> small_stack_desc() {
  return config::parse_model_desc(
      "[model]\narch = \"stack\"\nin = 16\nout = 5\n"
      "[[op]]\nkind = \"sage\"\nname = \"conv1\"\nprefix = \"conv1\"\nin = 16\nout = 32\n"
      "[[op]]\nkind = \"relu\"\nname = \"act\"\n"
      "[[op]]\nkind = \"sage\"\nname = \"conv2\"\nprefix = \"conv2\"\nin = 32\nout = 5\n",
      "stack");
}

}  // namespace spindle::serving::testing
