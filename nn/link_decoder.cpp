#include "nn/link_decoder.hpp"

namespace spindle::nn {

status score_pairs(std::string_view decoder, const tensor& z, std::span<const std::int32_t> rows,
                   float* out) {
  if (decoder != "dot")
    return make_error(errc::invalid_argument, "decoder '{}': expected dot", decoder.substr(0, 32));
  if (rows.size() % 2 != 0)
    return make_error(errc::invalid_argument, "{} nodes do not make pairs (u0 v0 u1 v1 ...)",
                      rows.size());
  const std::int64_t width = z.cols();
  for (std::size_t i = 0; i < rows.size() / 2; ++i) {
    const float* u = z.row(rows[2 * i]);
    const float* v = z.row(rows[2 * i + 1]);
    float sum = 0;  // float32 throughout, as torch sums (z[u] * z[v]).sum(-1)
    for (std::int64_t c = 0; c < width; ++c) sum += u[c] * v[c];
    out[i] = sum;
  }
  return status::ok();
}

}  // namespace spindle::nn
