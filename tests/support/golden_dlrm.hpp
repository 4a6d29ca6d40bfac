// The DLRM golden fixture of tests/nn/golden/dlrm (a PyTorch DLRM's weights, one
// batch of 6 samples over 3 tables, and its outputs) for the parameter-server
// tests. Header-only.
#pragma once

#include <string>
#include <vector>

#include "core/npy.hpp"
#include "nn/model.hpp"

namespace spindle::testing {

inline const std::string golden_dlrm_dir =
    std::string(SPINDLE_SOURCE_DIR) + "/tests/nn/golden/dlrm";

template <class T>
std::vector<T> golden_dlrm_array(const std::string& name) {
  auto a = npy_array::open(golden_dlrm_dir + "/" + name + ".npy");
  auto s = a->template as<T>();
  return {s->begin(), s->end()};
}

/// The fixture's batch: dense [6 x 13] and the bags of its 3 tables.
struct golden_dlrm_batch {
  std::vector<float> dense = golden_dlrm_array<float>("dense");
  std::vector<nn::sparse_input> sparse = [] {
    std::vector<nn::sparse_input> s;
    for (int t = 0; t < 3; ++t) {
      s.push_back({golden_dlrm_array<std::int64_t>("indices" + std::to_string(t)),
                   golden_dlrm_array<std::int64_t>("offsets" + std::to_string(t))});
    }
    return s;
  }();
  std::vector<float> expected = golden_dlrm_array<float>("expected");
};

}  // namespace spindle::testing
