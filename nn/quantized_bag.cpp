// The embedding bag over a row-wise quantised table (nn/quantized_rows.hpp):
// each looked-up row's codes are widened to float and added times the row's
// scale plus its bias, row by row as the float32 bag adds rows (so a bag's
// partial sums stay those of its dequantised rows). Rows are prefetched a few
// lookups ahead, as the float32 bag does: the lookups are independent random
// rows, so the bag is bound by memory latency.
#include <cstring>

#include "nn/bag_offsets.hpp"
#include "nn/quantized_rows.hpp"
#include "nn/row_kernel.hpp"

namespace spindle::nn {
namespace {

constexpr std::int64_t kAhead = 8;  // lookups between a prefetch and its use

// o[0..dim) += s * code[c], int8 codes (one a byte). A plain loop: GCC widens
// the codes in vector registers (vpmovzxbd, vcvtdq2ps and an FMA in the
// x86-64-v3 clone), where generic vector types made it convert one at a time.
SPINDLE_ROW_KERNEL void add_codes8(const std::uint8_t* __restrict__ q, float s, float b,
                                   float* __restrict__ o, std::int64_t dim) {
  for (std::int64_t c = 0; c < dim; ++c) o[c] += s * float(q[c]) + b;
}

// o[0..dim) += s * code[c], int4 codes (element 2i in byte i's low nibble).
SPINDLE_ROW_KERNEL void add_codes4(const std::uint8_t* __restrict__ q, float s, float b,
                                   float* __restrict__ o, std::int64_t dim) {
  const std::int64_t pairs = dim / 2;
  for (std::int64_t i = 0; i < pairs; ++i) {
    o[2 * i] += s * float(q[i] & 0x0f) + b;
    o[2 * i + 1] += s * float(q[i] >> 4) + b;
  }
  if (dim % 2) o[dim - 1] += s * float(q[pairs] & 0x0f) + b;
}

void prefetch_row(const quantized_table& t, std::int64_t row) {
  const auto* p = reinterpret_cast<const char*>(t.row_data(row));
  for (std::size_t b = 0; b < t.row_bytes(); b += 64) __builtin_prefetch(p + b);
}

}  // namespace

expected<tensor> embedding_bag(allocator& a, const quantized_table& table,
                               std::span<const std::int64_t> indices,
                               std::span<const std::int64_t> offsets) {
  SPINDLE_TRY(check_bag_offsets(offsets, indices.size()));
  const std::int64_t bags = std::int64_t(offsets.size()) - 1, rows = table.rows();
  const std::int64_t dim = table.dim(), n = std::int64_t(indices.size());
  SPINDLE_ASSIGN_OR_RETURN(auto out, tensor::zeros(a, {bags, dim}));
  for (std::int64_t k = 0; k < std::min(kAhead, n); ++k)
    if (indices[k] >= 0 && indices[k] < rows) prefetch_row(table, indices[k]);
  for (std::int64_t b = 0; b < bags; ++b) {
    float* o = out.row(b);
    for (std::int64_t k = offsets[b]; k < offsets[b + 1]; ++k) {
      const std::int64_t r = indices[k];
      if (r < 0 || r >= rows)
        return make_error(errc::invalid_argument,
                          "embedding_bag: index {} at position {} outside [0, {})", r, k, rows);
      if (k + kAhead < n && indices[k + kAhead] >= 0 && indices[k + kAhead] < rows)
        prefetch_row(table, indices[k + kAhead]);
      if (table.bits() == 8)
        add_codes8(table.row_data(r), table.scale(r), table.bias(r), o, dim);
      else
        add_codes4(table.row_data(r), table.scale(r), table.bias(r), o, dim);
    }
  }
  return out;
}

}  // namespace spindle::nn
