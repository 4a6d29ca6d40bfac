#include "nn/quantized_rows.hpp"
#include "nn/quantized_row_bytes.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "core/half.hpp"

namespace spindle::nn {
namespace {

// The next half towards -infinity / +infinity (finite inputs).
std::uint16_t half_down(std::uint16_t h) {
  if (h == 0) return 0x8001;
  return (h & 0x8000) ? std::uint16_t(h + 1) : std::uint16_t(h - 1);
}
std::uint16_t half_up(std::uint16_t h) {
  if (h == 0x8000) return 0x0001;
  return (h & 0x8000) ? std::uint16_t(h - 1) : std::uint16_t(h + 1);
}

struct row_params {
  float scale = 0, bias = 0;
  std::uint16_t scale16 = 0, bias16 = 0;  // 4 bits: what the row stores
};

// Scale and bias for a row spanning [lo, hi] with `levels` codes, chosen so that
// bias <= lo and bias + scale * (levels - 1) >= hi with the values as stored.
bool params_for(float lo, float hi, int bits, row_params& p) {
  const float top = bits == 8 ? 255.0f : 15.0f;
  if (bits == 8) {
    p.bias = lo;
    p.scale = (hi - lo) / top;
    return std::isfinite(p.scale);
  }
  if (std::abs(lo) > 65504.0f || std::abs(hi) > 65504.0f) return false;
  p.bias16 = float_to_half(lo);
  while (half_to_float(p.bias16) > lo) p.bias16 = half_down(p.bias16);
  p.bias = half_to_float(p.bias16);
  p.scale16 = float_to_half((hi - p.bias) / top);
  while (p.bias + half_to_float(p.scale16) * top < hi) p.scale16 = half_up(p.scale16);
  p.scale = half_to_float(p.scale16);
  return std::isfinite(p.bias) && std::isfinite(p.scale);
}

std::uint8_t code_of(float x, const row_params& p, int bits) {
  if (p.scale == 0) return 0;
  const float top = bits == 8 ? 255.0f : 15.0f;
  return std::uint8_t(std::clamp(std::nearbyint((x - p.bias) / p.scale), 0.0f, top));
}

}  // namespace

bool quantize_row(const float* x, std::int64_t dim, int bits, std::uint8_t* out) {
  const auto [lo, hi] = std::minmax_element(x, x + dim);
  row_params p;
  if (!std::all_of(x, x + dim, [](float v) { return std::isfinite(v); }) ||
      !params_for(*lo, *hi, bits, p))
    return false;
  const std::size_t codes = bits == 8 ? std::size_t(dim) : std::size_t(dim + 1) / 2;
  std::fill(out, out + codes, std::uint8_t(0));
  for (std::int64_t c = 0; c < dim; ++c) {
    const std::uint8_t q = code_of(x[c], p, bits);
    if (bits == 8) out[c] = q;
    else out[c / 2] |= std::uint8_t(c % 2 ? q << 4 : q);
  }
  if (bits == 8) {
    std::memcpy(out + codes, &p.scale, sizeof(float));
    std::memcpy(out + codes + sizeof(float), &p.bias, sizeof(float));
  } else {
    std::memcpy(out + codes, &p.scale16, sizeof(std::uint16_t));
    std::memcpy(out + codes + sizeof(std::uint16_t), &p.bias16, sizeof(std::uint16_t));
  }
  return true;
}

expected<quantized_table> quantized_table::quantize(std::span<const float> values,
                                                    std::int64_t rows, std::int64_t dim, int bits,
                                                    const std::string& what) {
  if (bits != 8 && bits != 4)
    return make_error(errc::invalid_argument, "{}: {}-bit rows are not built (8 or 4)", what, bits);
  if (rows < 0 || dim <= 0 || std::int64_t(values.size()) != rows * dim)
    return make_error(errc::invalid_argument, "{}: {} values for [{} x {}]", what, values.size(),
                      rows, dim);
  quantized_table t;
  t.rows_ = rows, t.dim_ = dim, t.bits_ = bits;
  t.stride_ = quantized_row_bytes(dim, bits);
  t.data_.assign(t.stride_ * std::size_t(rows), 0);
  for (std::int64_t r = 0; r < rows; ++r) {
    const float* x = values.data() + r * dim;
    if (!quantize_row(x, dim, bits, t.data_.data() + std::size_t(r) * t.stride_)) {
      const auto [lo, hi] = std::minmax_element(x, x + dim);
      return make_error(errc::invalid_argument,
                        "{}: row {} (values in [{}, {}]) cannot be stored as int{}: it holds a "
                        "NaN, an infinity or a range wider than float{}",
                        what, r, *lo, *hi, bits, bits == 4 ? "16's (|value| past 65504)" : "32's");
    }
  }
  return t;
}

float quantized_table::scale(std::int64_t row) const {
  const std::uint8_t* tail = data_.data() + std::size_t(row) * stride_ + stride_ -
                             (bits_ == 8 ? 2 * sizeof(float) : 2 * sizeof(std::uint16_t));
  if (bits_ == 8) {
    float s;
    std::memcpy(&s, tail, sizeof s);
    return s;
  }
  std::uint16_t h;
  std::memcpy(&h, tail, sizeof h);
  return half_to_float(h);
}

float quantized_table::bias(std::int64_t row) const {
  const std::uint8_t* end = data_.data() + std::size_t(row + 1) * stride_;
  if (bits_ == 8) {
    float b;
    std::memcpy(&b, end - sizeof(float), sizeof b);
    return b;
  }
  std::uint16_t h;
  std::memcpy(&h, end - sizeof(std::uint16_t), sizeof h);
  return half_to_float(h);
}

void quantized_table::read_row(std::int64_t row, float* out) const {
  std::fill(out, out + dim_, 0.0f);
  add_row(row, 1.0f, out);
}

void quantized_table::add_row(std::int64_t row, float weight, float* out) const {
  const std::uint8_t* q = data_.data() + std::size_t(row) * stride_;
  const float ws = weight * scale(row), wb = weight * bias(row);
  if (bits_ == 8) {
    for (std::int64_t c = 0; c < dim_; ++c) out[c] += ws * float(q[c]) + wb;
    return;
  }
  const std::int64_t pairs = dim_ / 2;
  for (std::int64_t i = 0; i < pairs; ++i) {
    out[2 * i] += ws * float(q[i] & 0x0f) + wb;
    out[2 * i + 1] += ws * float(q[i] >> 4) + wb;
  }
  if (dim_ % 2) out[dim_ - 1] += ws * float(q[pairs] & 0x0f) + wb;
}

void dequantize_row(const std::uint8_t* row, std::int64_t dim, int bits, float* out) {
  const std::size_t codes = bits == 8 ? std::size_t(dim) : std::size_t(dim + 1) / 2;
  float scale, bias;
  if (bits == 8) {
    std::memcpy(&scale, row + codes, sizeof scale);
    std::memcpy(&bias, row + codes + sizeof(float), sizeof bias);
    for (std::int64_t c = 0; c < dim; ++c) out[c] = scale * float(row[c]) + bias;
    return;
  }
  std::uint16_t s16, b16;
  std::memcpy(&s16, row + codes, sizeof s16);
  std::memcpy(&b16, row + codes + sizeof s16, sizeof b16);
  scale = half_to_float(s16), bias = half_to_float(b16);
  for (std::int64_t c = 0; c < dim; ++c)
    out[c] = scale * float(c % 2 ? row[c / 2] >> 4 : row[c / 2] & 0x0f) + bias;
}

int table_precision_bits(const std::string& precision) {
  if (precision == "int8") return 8;
  if (precision == "int4") return 4;
  return 32;
}

}  // namespace spindle::nn
