#include "nn/f32_matmul.hpp"

#include <omp.h>

#include <cstdlib>
#include <cstring>
#include <dnnl.hpp>
#include <map>
#include <mutex>
#include <string>
#include <vector>
#include <tuple>

#include "core/blas_kernels.hpp"
#include "core/log.hpp"

namespace spindle::nn {
namespace {

using dt = dnnl::memory::data_type;
using tag = dnnl::memory::format_tag;

// Where OpenBLAS runs its AVX-512 kernels, its sgemm matches oneDNN's from a
// few hundred rows and beats it a little on the DLRM's 256-row batches (58-63K
// vs 52-55K samples/s served, 2026-11-28); oneDNN is ahead up to this many
// rows (1.2-3x at 5-64 rows, single thread: a batch of one GNN call's layer).
constexpr std::int64_t kOnednnRowsBesideAvx512Blas = 64;

enum class route { openblas, onednn, onednn_small };

// Chosen once: oneDNN's AVX-512 kernels for every product when OpenBLAS runs
// older ones (by CPU model, or OPENBLAS_CORETYPE: 1.4-2x), for small ones when
// it runs AVX-512 too; SPINDLE_FP32_GEMM=openblas (an A/B on one machine) or
// onednn overrides.
bool onednn_avx512() {
  static const bool on = [] {
    const auto want = int(dnnl::cpu_isa::avx512_core);
    return (int(dnnl::get_effective_cpu_isa()) & want) == want;
  }();
  return on;
}

route chosen_route() {
  static const route r = [] {
    const char* env = std::getenv("SPINDLE_FP32_GEMM");
    const std::string asked = env ? env : "";
    if (!asked.empty() && asked != "openblas" && asked != "onednn")
      log::warn("SPINDLE_FP32_GEMM={}: not openblas or onednn; each product goes where it runs "
                "faster",
                asked.substr(0, 32));
    if (asked == "onednn" && !onednn_avx512())
      log::warn("SPINDLE_FP32_GEMM=onednn: oneDNN has no AVX-512 kernels on this CPU; OpenBLAS "
                "runs the FP32 products");
    if (asked == "openblas" || !onednn_avx512()) return route::openblas;
    if (asked == "onednn") return route::onednn;
    return blas_core_level(blas_core()) >= 2 ? route::onednn_small : route::onednn;
  }();
  return r;
}

bool use_onednn(std::int64_t m) {
  const auto r = chosen_route();
  return r == route::onednn || (r == route::onednn_small && m <= kOnednnRowsBesideAvx512Blas);
}

// A thread's primitives by (k, n), the row count a run-time value: a GNN
// layer's rows change every batch, and one primitive serves them all. An
// accumulating product goes through `sum` first, so a oneDNN failure leaves y
// as it was and BLAS can run it instead.
struct f32_matmuls {
  dnnl::engine engine{dnnl::engine::kind::cpu, 0};
  dnnl::stream stream{engine};
  std::map<std::pair<std::int64_t, std::int64_t>, dnnl::matmul> made;

  dnnl::matmul& get(std::int64_t k, std::int64_t n) {
    const auto key = std::make_pair(k, n);
    if (auto it = made.find(key); it != made.end()) return it->second;
    if (made.size() >= 256) made.clear();  // many layer widths: start over
    dnnl::memory::desc src({DNNL_RUNTIME_DIM_VAL, k}, dt::f32, tag::ab),
        wei({k, n}, dt::f32, tag::ba), dst({DNNL_RUNTIME_DIM_VAL, n}, dt::f32, tag::ab);
    dnnl::matmul::primitive_desc pd(dnnl::matmul::desc(src, wei, dst), engine);
    return made.emplace(key, dnnl::matmul(pd)).first->second;
  }
  std::vector<float> sum;  // an accumulating product's rows before they are added
};

}  // namespace

bool f32_matmul(const float* x, const float* w, float* y, std::int64_t m, std::int64_t k,
                std::int64_t n, bool accumulate, std::int64_t product_rows) {
  if (m <= 0 || !use_onednn(product_rows > 0 ? product_rows : m)) return false;
  return f32_matmul_onednn(x, w, y, m, k, n, accumulate);
}

bool f32_matmul_onednn(const float* x, const float* w, float* y, std::int64_t m, std::int64_t k,
                       std::int64_t n, bool accumulate) {
  if (!onednn_avx512() || m <= 0 || k <= 0 || n <= 0) return false;
  thread_local f32_matmuls cache;
  try {
    omp_set_num_threads(1);  // this thread only: the pool already split the rows
    float* out = y;
    if (accumulate) {
      cache.sum.resize(std::size_t(m * n));
      out = cache.sum.data();
    }
    dnnl::memory src({{m, k}, dt::f32, tag::ab}, cache.engine, const_cast<float*>(x));
    dnnl::memory wei({{k, n}, dt::f32, tag::ba}, cache.engine, const_cast<float*>(w));
    dnnl::memory dst({{m, n}, dt::f32, tag::ab}, cache.engine, out);
    cache.get(k, n).execute(cache.stream,
                            {{DNNL_ARG_SRC, src}, {DNNL_ARG_WEIGHTS, wei}, {DNNL_ARG_DST, dst}});
    cache.stream.wait();
    if (accumulate)
      for (std::int64_t i = 0; i < m * n; ++i) y[i] += out[i];
    return true;
  } catch (const dnnl::error& e) {  // y untouched (beta 0: BLAS overwrites it): BLAS runs it
    static std::once_flag said;
    std::call_once(said, [&] {
      log::warn("oneDNN's FP32 matmul failed ({}); OpenBLAS runs such products", e.what());
    });
    return false;
  }
}

bool f32_packed_allowed() { return chosen_route() != route::openblas; }

bool onednn_runs_avx512() { return onednn_avx512(); }

const char* f32_gemm_kernels() {
  switch (chosen_route()) {
    case route::onednn: return "onednn";
    case route::onednn_small: return "onednn up to 64 rows, openblas above";
    default: return "openblas";
  }
}

}  // namespace spindle::nn
