#include "nn/link_decoder.hpp"

#include <cstring>

namespace spindle::nn {
namespace {

void dot_scores(const tensor& zu, const tensor& zv, std::span<const std::int32_t> rows,
                float* out) {
  const std::int64_t width = zu.cols();
  for (std::size_t i = 0; i < rows.size() / 2; ++i) {
    const float* u = zu.row(rows[2 * i]);
    const float* v = zv.row(rows[2 * i + 1]);
    float sum = 0;  // float32 throughout, as torch sums (z[u] * z[v]).sum(-1)
    for (std::int64_t c = 0; c < width; ++c) sum += u[c] * v[c];
    out[i] = sum;
  }
}

// The pairs' ends as two [pairs x width] tensors, then the model's decoder ops.
status op_scores(const model& m, allocator& a, const tensor& zu, const tensor& zv,
                 std::span<const std::int32_t> rows, float* out) {
  const auto k = std::int64_t(rows.size() / 2), width = zu.cols();
  SPINDLE_ASSIGN_OR_RETURN(auto src, tensor::empty(a, {k, width}));
  SPINDLE_ASSIGN_OR_RETURN(auto dst, tensor::empty(a, {k, width}));
  for (std::int64_t i = 0; i < k; ++i) {
    std::memcpy(src.row(i), zu.row(rows[2 * i]), std::size_t(width) * 4);
    std::memcpy(dst.row(i), zv.row(rows[2 * i + 1]), std::size_t(width) * 4);
  }
  SPINDLE_ASSIGN_OR_RETURN(auto scores, m.decode(a, src, dst));
  if (scores.rows() != k || scores.cols() != 1)
    return make_error(errc::internal, "decoder answered [{} x {}] for {} pairs", scores.rows(),
                      scores.cols(), k);
  std::memcpy(out, scores.data(), std::size_t(k) * 4);
  return status::ok();
}

}  // namespace

status score_pairs(const model& m, allocator& a, const tensor& z,
                   std::span<const std::int32_t> rows, float* out) {
  return score_pairs(m, a, z, z, rows, out);
}

status score_pairs(const model& m, allocator& a, const tensor& z_src, const tensor& z_dst,
                   std::span<const std::int32_t> rows, float* out) {
  if (z_src.cols() != z_dst.cols())
    return make_error(errc::invalid_argument, "pair ends of {} and {} columns", z_src.cols(),
                      z_dst.cols());
  for (std::size_t i = 0; i < rows.size(); ++i) {
    const auto& z = i % 2 ? z_dst : z_src;
    if (rows[i] < 0 || rows[i] >= z.rows())
      return make_error(errc::internal, "pair end {} reads row {} of {}", i, rows[i], z.rows());
  }
  if (rows.size() % 2 != 0)
    return make_error(errc::invalid_argument, "{} nodes do not make pairs (u0 v0 u1 v1 ...)",
                      rows.size());
  const auto& decoder = m.desc().decoder;
  if (decoder == "dot") {
    dot_scores(z_src, z_dst, rows, out);
    return status::ok();
  }
  if (decoder == "ops") return op_scores(m, a, z_src, z_dst, rows, out);
  return make_error(errc::invalid_argument, "decoder '{}': expected dot or ops",
                    std::string_view(decoder).substr(0, 32));
}

}  // namespace spindle::nn
