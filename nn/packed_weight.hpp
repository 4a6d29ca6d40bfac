// A dense weight reordered once, at model load (or a live precision switch), into
// the blocked layout oneDNN's AVX-512 matmul (brgemm) reads, for weights fixed for
// a model's life (a recommendation model's MLP layers in float32 or bfloat16, a GNN
// stack's projections in bfloat16): a call's product then skips repacking the
// weight, which OpenBLAS's sgemm and oneDNN's plain-layout matmul do on every call.
// Rows go through in blocks of kBlockRows, the last short block padded with zero
// rows to a multiple of kRowStep (one primitive per block size, layer shape,
// element type and thread); a float32 block of fewer than kMinShortRows rows (a
// GEMV's work) and a block oneDNN lays out differently take the plain route (nn/ops,
// nn/bf16_gemm). Products sum in float32.
#pragma once

#include <cstdint>
#include <memory>
#include <span>

namespace spindle::nn {

class packed_weight {
 public:
  static constexpr std::int64_t kBlockRows = 64, kRowStep = 8, kMinShortRows = 5;
  enum class element { f32, bf16 };

  /// W [out x in], row-major, reordered; null where products would not run so
  /// (no AVX-512 for oneDNN, or oneDNN refused it). Models pack float32 weights
  /// only where f32_packed_allowed() (SPINDLE_FP32_GEMM=openblas turns it off),
  /// bfloat16 ones where the CPU multiplies bfloat16 (bf16_unsupported_reason).
  static std::shared_ptr<const packed_weight> pack(std::span<const float> w, std::int64_t out,
                                                   std::int64_t in);
  static std::shared_ptr<const packed_weight> pack(std::span<const std::uint16_t> w_bf16,
                                                   std::int64_t out, std::int64_t in);
  ~packed_weight();

  /// y[r] = x[r] W^T (x [rows x in] in the weight's element type, y [rows x out]
  /// float32, row-major) for the first rows of `rows` on this thread; returns
  /// how many: all of them, or the whole blocks only (a short block oneDNN would
  /// not run on these weights, or float32 of fewer than kMinShortRows rows), or fewer
  /// where oneDNN failed (the rest of y untouched); 0 when x's type is not the
  /// weight's.
  std::int64_t multiply_blocks(const float* x, float* y, std::int64_t rows) const;
  std::int64_t multiply_blocks(const std::uint16_t* x_bf16, float* y, std::int64_t rows) const;
  element type() const { return type_; }
  std::int64_t in() const { return in_; }
  std::int64_t out() const { return out_; }
  /// Bytes of the packed copy (held beside the model's own weight).
  std::size_t bytes() const;

  struct held;  // the packed memory and its layout (oneDNN types stay in the .cpp)

 private:
  packed_weight(std::unique_ptr<held> h, element type, std::int64_t out, std::int64_t in);
  static std::shared_ptr<const packed_weight> pack_as(const void* w, std::size_t values,
                                                      element type, std::int64_t out,
                                                      std::int64_t in);
  std::int64_t multiply(const void* x, float* y, std::int64_t rows) const;
  std::unique_ptr<held> h_;
  element type_ = element::f32;
  std::int64_t out_ = 0, in_ = 0;
};

}  // namespace spindle::nn
