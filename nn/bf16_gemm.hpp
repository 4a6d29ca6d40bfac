// Reduced-precision dense layers: y = x W^T + b with x and W rounded to
// bfloat16 and the products summed in float32 (oneDNN's matmul: AMX or
// AVX-512 BF16 tiles), or in int8 (nn/int8_gemm.hpp). model.toml `precision =
// "bf16"` / `"int8"` runs a recommendation model's MLP layers and a GNN stack's
// projections so; everything else stays float32. Pure functions plus a
// per-thread primitive cache; refused by name on a CPU without support.
#pragma once

#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "core/status.hpp"
#include "core/thread_pool.hpp"
#include "nn/packed_weight.hpp"
#include "nn/tensor.hpp"

namespace spindle::nn {

/// Round-to-nearest-even bfloat16 of `f` (NaN stays NaN; a finite value past
/// bfloat16's range saturates to its largest, never to infinity), and back.
std::uint16_t to_bf16(float f);
float from_bf16(std::uint16_t b);
std::vector<std::uint16_t> to_bf16(std::span<const float> values);
/// out[0..n) = to_bf16(x[i]), 16 values an instruction where the CPU has AVX-512
/// BF16 (denormal inputs then read as zero); the scalar loop elsewhere.
void to_bf16(const float* x, std::uint16_t* out, std::int64_t n);

/// Whether this CPU runs bfloat16 matmuls natively ("" when it does; else why not:
/// the instruction sets it lacks), as oneDNN sees it.
std::string bf16_unsupported_reason();

/// y = x W^T (+ bias) with x and `weight_bf16` ([out x in], to_bf16 of the
/// float32 weight) multiplied in bfloat16, summed in float32. Rows split over
/// `pool` as the float32 linear does; `packed`: the same weight reordered for
/// oneDNN (nn/packed_weight), which takes the rows it can.
expected<tensor> linear_bf16(allocator& a, const tensor& x, std::span<const std::uint16_t> weight_bf16,
                             std::span<const float> bias, std::int64_t out_features,
                             thread_pool* pool = nullptr, const packed_weight* packed = nullptr);

/// One dense weight [out x in] in reduced precision: bfloat16 values, or (int8)
/// symmetric codes with one scale per output row (W[o][i] ~ s8[o][i] * scales[o]).
struct reduced_weight {
  std::vector<std::uint16_t> bf16;
  std::vector<std::int8_t> s8;
  std::vector<float> scales;
  std::shared_ptr<const packed_weight> packed;  // bf16 reordered for oneDNN; null: plain
};

/// y = x W^T (+ bias) in the weight's precision (int8 when it holds codes).
expected<tensor> linear_reduced(allocator& a, const tensor& x, const reduced_weight& w,
                                std::span<const float> bias, std::int64_t out_features,
                                thread_pool* pool = nullptr);

/// A model's dense weights in one reduced precision by parameter name, switched
/// while calls run (the live `precision` tunable): a call works on the snapshot
/// it took (null: float32 throughout), a switch replaces the whole set.
class bf16_weights {
 public:
  using map = std::map<std::string, reduced_weight>;
  bf16_weights() = default;
  bf16_weights(bf16_weights&& o) noexcept : held_(o.held_.load()) {}
  bf16_weights& operator=(bf16_weights&& o) noexcept {
    held_.store(o.held_.load());
    return *this;
  }
  std::shared_ptr<const map> snapshot() const { return held_.load(); }
  void set(std::shared_ptr<const map> m) { held_.store(std::move(m)); }
  /// "fp32", "bf16" or "int8": what a call starting now computes with.
  std::string kind() const;

 private:
  std::atomic<std::shared_ptr<const map>> held_;
};

}  // namespace spindle::nn
