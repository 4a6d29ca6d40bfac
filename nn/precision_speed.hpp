// How fast a reduced precision ("bf16", "int8") multiplies on this CPU against
// float32: one layer's product timed both ways, so a precision that runs slower
// than float32 here is said by name at load and in `spindle devices` instead of
// silently slowing a model down (measured: oneDNN's AVX-512 BF16 kernels on an
// Intel core without AMX ran at 0.6x float32, where an AMD Zen core ran 2x).
#pragma once

#include <cstdint>
#include <string>

#include "core/status.hpp"

namespace spindle::nn {

struct precision_speed {
  std::string precision;                   // "bf16" or "int8"
  std::int64_t rows = 0, in = 0, out = 0;  // the product timed: [rows x in] x [in x out]
  double fp32_gflops = 0, reduced_gflops = 0;
  double ratio() const { return fp32_gflops > 0 ? reduced_gflops / fp32_gflops : 0; }
};

/// Times [rows x in] x [in x out] on one thread in float32 (the packed-weight
/// route a recommendation MLP takes) and in `precision`, alternating, each the
/// best of 3 turns of at least seconds / 3 (the best is the least disturbed by
/// other processes). Refused by name for an unknown precision or a CPU without
/// the instructions it needs.
expected<precision_speed> measure_precision_speed(const std::string& precision, std::int64_t rows,
                                                  std::int64_t in, std::int64_t out,
                                                  double seconds = 0.06);

/// measure_precision_speed once per precision and shape in this process (its
/// figure reused by every later model or switch), thread-safe.
expected<precision_speed> precision_speed_here(const std::string& precision, std::int64_t rows,
                                               std::int64_t in, std::int64_t out);

/// Below this share of float32's speed a reduced precision is reported as slower.
inline constexpr double kSlowPrecisionRatio = 0.9;

/// The warning for `model` when `s` runs below kSlowPrecisionRatio of float32,
/// naming both figures and what to do; "" when it is not slower.
std::string slow_precision_note(const std::string& model, const precision_speed& s);

}  // namespace spindle::nn
