// Int8 dense layers (model.toml precision = "int8"): y = x W^T + b with W held
// as symmetric int8 codes, one scale per output row, and each input row
// quantised on the fly with its own scale (dynamic quantisation: nothing to
// calibrate); products summed exactly in int32 by oneDNN (AVX-512 VNNI or
// AVX-VNNI), then scaled back to float32. Refused by name on a CPU without VNNI.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "core/status.hpp"
#include "core/thread_pool.hpp"
#include "nn/tensor.hpp"

namespace spindle::nn {

/// The widest layer int8 holds: each product is at most 127 * 127, and their
/// sum over this many inputs still fits int32. Wider layers are refused by name.
inline constexpr std::int64_t kInt8MaxInputs = 2147483647 / (127 * 127);

/// Whether this CPU runs int8 matmuls natively ("" when it does; else why not).
std::string int8_unsupported_reason();

/// Row r of `values` ([rows x cols]) as codes[r][c] = round(values / scale[r]),
/// scale[r] = max |values[r]| / 127 (1 for a row of zeros), codes in [-127, 127].
/// Non-finite values, and rows wider than kInt8MaxInputs, are refused by name (`what`).
status quantize_rows_s8(std::span<const float> values, std::int64_t rows, std::int64_t cols,
                        std::vector<std::int8_t>& codes, std::vector<float>& scales,
                        std::string_view what);

/// y = x W^T (+ bias), W as `codes` [out x in] with per-row `scales`; x's rows
/// quantised per row (a row holding NaN or infinity answers NaN). Rows split over `pool` as the float32 linear does.
expected<tensor> linear_int8(allocator& a, const tensor& x, std::span<const std::int8_t> codes,
                             std::span<const float> scales, std::span<const float> bias,
                             std::int64_t out_features, thread_pool* pool = nullptr);

}  // namespace spindle::nn
