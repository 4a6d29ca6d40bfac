// One tensor a model reads: its PyTorch name, shape and what the forward pass
// uses it for (`spindle model info`, the loader's shape checks).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace spindle::nn {

struct param_spec {
  std::string name;
  std::vector<std::int64_t> shape;
  bool optional = false;  // e.g. GIN's eps buffer (0 when absent)
  std::string purpose;    // what the forward pass uses it for (`spindle model info`)
  bool load = true;       // false: a buffer the pass does not read (BatchNorm's
                          // num_batches_tracked), accepted when present, never loaded
};

}  // namespace spindle::nn
