// The offsets of an embedding bag call checked once for every bag kernel (float32
// tables in ops.cpp, quantised ones in quantized_rows.cpp): bag b is
// indices[offsets[b], offsets[b + 1]).
#pragma once

#include <cstdint>
#include <span>

#include "core/status.hpp"

namespace spindle::nn {

/// Fails, naming the offsets, unless they start at 0, end at `indices` and never fall.
inline status check_bag_offsets(std::span<const std::int64_t> offsets, std::size_t indices) {
  const std::int64_t bags = std::int64_t(offsets.size()) - 1;
  if (bags < 0 || offsets.front() != 0 || offsets.back() != std::int64_t(indices))
    return make_error(errc::invalid_argument,
                      "embedding_bag: offsets must start at 0 and end at {} indices", indices);
  for (std::int64_t b = 0; b < bags; ++b)
    if (offsets[b] > offsets[b + 1])
      return make_error(errc::invalid_argument, "embedding_bag: offsets[{}] > offsets[{}]", b,
                        b + 1);
  return status::ok();
}

}  // namespace spindle::nn
