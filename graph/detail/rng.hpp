// Small counter-seeded random generator for samplers: a node's draws depend
// only on (sampler seed, hop, node), so every executor, thread count and device
// gives the same sample. The generator itself is gpu/kernels/sample_draw.hpp's,
// which the CUDA sampling kernel runs too. Value type; one instance per thread.
#pragma once

#include <cstdint>

#include "gpu/kernels/sample_draw.hpp"

namespace spindle::graph::detail {

inline std::uint64_t mix64(std::uint64_t x) { return gpu::splitmix64(x); }

using rng = gpu::draw_rng;

}  // namespace spindle::graph::detail
