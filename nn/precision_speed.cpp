#include "nn/precision_speed.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <map>
#include <mutex>
#include <random>
#include <tuple>

#include "nn/bf16_gemm.hpp"
#include "nn/int8_gemm.hpp"
#include "nn/ops.hpp"
#include "nn/packed_weight.hpp"

namespace spindle::nn {
namespace {

using clock_type = std::chrono::steady_clock;

// GFLOP/s of `product` (one [rows x in] x [in x out] call) over at least `seconds`.
template <class Product>
expected<double> gflops_of(Product&& product, std::int64_t flops, double seconds) {
  int reps = 0;
  const auto t0 = clock_type::now();
  double elapsed = 0;
  do {
    SPINDLE_TRY(product());
    ++reps;
    elapsed = std::chrono::duration<double>(clock_type::now() - t0).count();
  } while (elapsed < seconds);
  return double(flops) * reps / elapsed / 1e9;
}

}  // namespace

expected<precision_speed> measure_precision_speed(const std::string& precision, std::int64_t rows,
                                                  std::int64_t in, std::int64_t out,
                                                  double seconds) {
  if (precision != "bf16" && precision != "int8")
    return make_error(errc::invalid_argument,
                      "precision speed: '{}' is not a reduced precision (bf16, int8)", precision);
  if (rows < 1 || in < 1 || out < 1)
    return make_error(errc::invalid_argument, "precision speed: a {} x {} x {} product", rows, in,
                      out);
  const auto why = precision == "int8" ? int8_unsupported_reason() : bf16_unsupported_reason();
  if (!why.empty()) return make_error(errc::unsupported, "precision {}: {}", precision, why);
  std::mt19937 rng(1);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::vector<float> x(std::size_t(rows * in)), w(std::size_t(out * in));
  for (auto& v : x) v = normal(rng);
  for (auto& v : w) v = normal(rng) * 0.05f;
  const auto packed = packed_weight::pack(std::span<const float>(w), out, in);
  reduced_weight rw;
  if (precision == "bf16") {
    rw.bf16 = to_bf16(std::span<const float>(w));
    rw.packed = packed_weight::pack(std::span<const std::uint16_t>(rw.bf16), out, in);
  } else {
    SPINDLE_TRY(quantize_rows_s8(w, out, in, rw.s8, rw.scales, "precision speed"));
  }
  heap_allocator a;
  const auto xt = tensor::borrow(x.data(), {rows, in});
  auto fp32 = [&]() -> status {
    auto y = packed ? linear_packed(a, xt, *packed, w, {}, out) : linear(a, xt, w, {}, out);
    return y ? status::ok() : std::move(y).error();
  };
  auto reduced = [&]() -> status {
    auto y = linear_reduced(a, xt, rw, {}, out);
    return y ? status::ok() : std::move(y).error();
  };
  SPINDLE_TRY(fp32());  // warm: primitives built, weights touched
  SPINDLE_TRY(reduced());
  precision_speed s{precision, rows, in, out};
  const std::int64_t flops = 2 * rows * in * out;
  for (int turn = 0; turn < 3; ++turn) {  // alternating, so drift hits both alike
    SPINDLE_ASSIGN_OR_RETURN(const double f, gflops_of(fp32, flops, seconds / 3));
    SPINDLE_ASSIGN_OR_RETURN(const double r, gflops_of(reduced, flops, seconds / 3));
    s.fp32_gflops = std::max(s.fp32_gflops, f);
    s.reduced_gflops = std::max(s.reduced_gflops, r);
  }
  return s;
}

expected<precision_speed> precision_speed_here(const std::string& precision, std::int64_t rows,
                                               std::int64_t in, std::int64_t out) {
  static std::mutex mu;
  static std::map<std::tuple<std::string, std::int64_t, std::int64_t, std::int64_t>,
                  precision_speed>
      seen;
  std::lock_guard<std::mutex> lock(mu);  // one measurement at a time: they share the cores
  const auto key = std::make_tuple(precision, rows, in, out);
  if (auto it = seen.find(key); it != seen.end()) return it->second;
  SPINDLE_ASSIGN_OR_RETURN(auto s, measure_precision_speed(precision, rows, in, out));
  seen.emplace(key, s);
  return s;
}

std::string slow_precision_note(const std::string& model, const precision_speed& s) {
  if (s.ratio() >= kSlowPrecisionRatio) return {};
  return fmt::format(
      "model '{}': precision {} multiplies at {:.2f}x float32's speed on this CPU ({} x {} x {}: "
      "{:.0f} against {:.0f} GFLOP/s on one core); float32 serves it faster and exactly (precision "
      "= \"fp32\"); `spindle devices` prints each precision's figure here",
      model, s.precision, s.ratio(), s.rows, s.in, s.out, s.reduced_gflops, s.fp32_gflops);
}

}  // namespace spindle::nn
