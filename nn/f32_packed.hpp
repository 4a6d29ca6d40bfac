// A float32 dense weight reordered once, at model load, into the blocked layout
// oneDNN's AVX-512 matmul (brgemm) reads, for weights fixed for a model's life (a
// recommendation model's MLP layers): a call's product then skips repacking the
// weight, which OpenBLAS's sgemm and oneDNN's plain-layout matmul do on every
// call. Rows go through in blocks of kBlockRows, the last short block padded with
// zero rows to a multiple of kRowStep (one primitive per block size, layer shape
// and thread); a block of fewer than kMinShortRows rows (a GEMV's work) and a
// block oneDNN lays out differently take the plain route (nn/ops).
#pragma once

#include <cstdint>
#include <memory>
#include <span>

namespace spindle::nn {

class packed_f32_weight {
 public:
  static constexpr std::int64_t kBlockRows = 64, kRowStep = 8, kMinShortRows = 5;

  /// W [out x in], row-major, reordered; null where products would not run so
  /// (no AVX-512 for oneDNN, or oneDNN refused it). Models pack only where
  /// f32_packed_allowed() (SPINDLE_FP32_GEMM=openblas turns it off).
  static std::shared_ptr<const packed_f32_weight> pack(std::span<const float> w, std::int64_t out,
                                                       std::int64_t in);
  ~packed_f32_weight();

  /// y[r] = x[r] W^T (x [rows x in], y [rows x out], row-major) for the first
  /// rows of `rows` on this thread; returns how many: all of them, or the whole
  /// blocks only (a short block oneDNN would not run on these weights, or of
  /// fewer than kMinShortRows rows), or fewer where oneDNN failed (the rest of y
  /// untouched).
  std::int64_t multiply_blocks(const float* x, float* y, std::int64_t rows) const;
  std::int64_t in() const { return in_; }
  std::int64_t out() const { return out_; }
  /// Bytes of the packed copy (held beside the model's own weight).
  std::size_t bytes() const;

  struct held;  // the packed memory and its layout (oneDNN types stay in the .cpp)

 private:
  packed_f32_weight(std::unique_ptr<held> h, std::int64_t out, std::int64_t in);
  std::unique_ptr<held> h_;
  std::int64_t out_ = 0, in_ = 0;
};

}  // namespace spindle::nn
