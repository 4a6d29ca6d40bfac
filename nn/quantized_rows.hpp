// Row-wise quantised embedding tables (model.toml table_precision "int8" or
// "int4"): each row keeps its codes then its own scale and bias, and a value
// reads back as code * scale + bias. Lookups dequantise inside the bag's sum.
//
// Row layout (FBGEMM's row-wise format): int8: `dim` codes 0..255, then scale
// and bias as float32 (dim + 8 bytes); int4: two codes 0..15 a byte (element 2i
// in the low nibble), then scale and bias as float16 (ceil(dim / 2) + 4 bytes).
// bias <= the row's minimum and bias + scale * (levels - 1) >= its maximum, so
// every value reads back within scale / 2 of itself (plus float rounding).
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "core/status.hpp"
#include "nn/tensor.hpp"

namespace spindle::nn {

class quantized_table {
 public:
  quantized_table() = default;
  /// Quantises `values` ([rows x dim], row-major) with `bits` 8 or 4. Refuses a
  /// NaN or infinite value, and for 4 bits a row whose range needs more than
  /// float16 (|value| past 65504), naming `what` and the row.
  static expected<quantized_table> quantize(std::span<const float> values, std::int64_t rows,
                                            std::int64_t dim, int bits, const std::string& what);

  std::int64_t rows() const { return rows_; }
  std::int64_t dim() const { return dim_; }
  int bits() const { return bits_; }
  std::size_t row_bytes() const { return stride_; }
  std::size_t bytes() const { return data_.size(); }
  float scale(std::int64_t row) const;
  float bias(std::int64_t row) const;
  /// Row `row` as stored: its codes, then its scale and bias (the layout above).
  const std::uint8_t* row_data(std::int64_t row) const {
    return data_.data() + std::size_t(row) * stride_;
  }
  /// out[0..dim) = row `row` dequantised.
  void read_row(std::int64_t row, float* out) const;
  /// out[0..dim) += weight * row `row` dequantised (no copy of the row).
  void add_row(std::int64_t row, float weight, float* out) const;

 private:
  std::int64_t rows_ = 0, dim_ = 0;
  int bits_ = 8;
  std::size_t stride_ = 0;
  std::vector<std::uint8_t> data_;
};

/// Quantises one row of `dim` finite values into `out` (quantized_row_bytes(dim,
/// bits) bytes, the layout above); false (out untouched) for a NaN or infinite
/// value or, for 4 bits, a range past float16's.
bool quantize_row(const float* x, std::int64_t dim, int bits, std::uint8_t* out);
/// out[0..dim) = the row at `row` (quantize_row's layout) dequantised.
void dequantize_row(const std::uint8_t* row, std::int64_t dim, int bits, float* out);

/// Sum of each bag's rows, dequantised as they are added: bag i holds
/// indices[offsets[i], offsets[i+1]). Errors name the first index outside the table.
expected<tensor> embedding_bag(allocator& a, const quantized_table& table,
                               std::span<const std::int64_t> indices,
                               std::span<const std::int64_t> offsets);

/// The width in bits of a table_precision ("int8": 8, "int4": 4; "fp32": 32).
int table_precision_bits(const std::string& precision);

}  // namespace spindle::nn
