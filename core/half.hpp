// IEEE 754 half precision (float16) to float32, exactly (subnormals, inf, NaN),
// for the .npy and safetensors readers; and float32 to half, rounded to nearest
// even (4-bit embedding rows keep their scale and bias in half precision).
#pragma once

#include <bit>
#include <cstdint>

namespace spindle {

inline float half_to_float(std::uint16_t h) {
  std::uint32_t sign = std::uint32_t(h & 0x8000) << 16, exp = (h >> 10) & 0x1f, mant = h & 0x3ff;
  std::uint32_t bits;
  if (exp == 0) {
    if (mant == 0) {
      bits = sign;
    } else {  // subnormal: normalise
      exp = 127 - 15 + 1;
      while (!(mant & 0x400)) mant <<= 1, --exp;
      bits = sign | (exp << 23) | ((mant & 0x3ff) << 13);
    }
  } else if (exp == 31) {
    bits = sign | 0x7f800000 | (mant << 13);
  } else {
    bits = sign | ((exp + 127 - 15) << 23) | (mant << 13);
  }
  return std::bit_cast<float>(bits);
}

/// Rounds to the nearest half (ties to even); past 65504 gives infinity, NaN stays NaN.
inline std::uint16_t float_to_half(float f) {
  const std::uint32_t x = std::bit_cast<std::uint32_t>(f);
  const std::uint16_t sign = std::uint16_t((x >> 16) & 0x8000);
  const std::uint32_t abs = x & 0x7fffffff;
  if (abs > 0x7f800000) return std::uint16_t(sign | 0x7e00);  // NaN
  if (abs >= 0x477ff000) return std::uint16_t(sign | 0x7c00);  // rounds past 65504
  if (abs < 0x38800000) {  // below half's smallest normal: a subnormal (or zero)
    const float scaled = std::bit_cast<float>(abs) * 16777216.0f;  // units of 2^-24
    const std::uint32_t down = std::uint32_t(scaled);
    const float rest = scaled - float(down);
    const std::uint32_t m = down + ((rest > 0.5f || (rest == 0.5f && (down & 1))) ? 1 : 0);
    return std::uint16_t(sign | m);
  }
  const std::uint32_t mant = abs & 0x1fff, base = (abs - 0x38000000) >> 13;
  const std::uint32_t up = (mant > 0x1000 || (mant == 0x1000 && (base & 1))) ? 1 : 0;
  return std::uint16_t(sign | (base + up));
}

}  // namespace spindle
