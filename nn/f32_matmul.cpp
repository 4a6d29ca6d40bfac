#include "nn/f32_matmul.hpp"

#include <omp.h>

#include <cstdlib>
#include <cstring>
#include <dnnl.hpp>
#include <map>
#include <tuple>

#include "core/blas_kernels.hpp"

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
route chosen_route() {
  static const route r = [] {
    const auto isa = int(dnnl::get_effective_cpu_isa());
    const auto want = int(dnnl::cpu_isa::avx512_core);
    const char* env = std::getenv("SPINDLE_FP32_GEMM");
    if ((env && std::strcmp(env, "openblas") == 0) || (isa & want) != want) return route::openblas;
    if (env && std::strcmp(env, "onednn") == 0) return route::onednn;
    return blas_core_level(blas_core()) >= 2 ? route::onednn_small : route::onednn;
  }();
  return r;
}

bool use_onednn(std::int64_t m) {
  const auto r = chosen_route();
  return r == route::onednn || (r == route::onednn_small && m <= kOnednnRowsBesideAvx512Blas);
}

// A thread's primitives by (k, n, accumulate), the row count a run-time value:
// a GNN layer's rows change every batch, and one primitive serves them all.
struct f32_matmuls {
  dnnl::engine engine{dnnl::engine::kind::cpu, 0};
  dnnl::stream stream{engine};
  std::map<std::tuple<std::int64_t, std::int64_t, bool>, dnnl::matmul> made;

  dnnl::matmul& get(std::int64_t k, std::int64_t n, bool accumulate) {
    const auto key = std::make_tuple(k, n, accumulate);
    if (auto it = made.find(key); it != made.end()) return it->second;
    if (made.size() >= 256) made.clear();  // many layer widths: start over
    dnnl::memory::desc src({DNNL_RUNTIME_DIM_VAL, k}, dt::f32, tag::ab),
        wei({k, n}, dt::f32, tag::ba), dst({DNNL_RUNTIME_DIM_VAL, n}, dt::f32, tag::ab);
    dnnl::primitive_attr attr;
    if (accumulate) {
      dnnl::post_ops sum;
      sum.append_sum(1.0f);
      attr.set_post_ops(sum);
    }
    dnnl::matmul::primitive_desc pd(dnnl::matmul::desc(src, wei, dst), attr, engine);
    return made.emplace(key, dnnl::matmul(pd)).first->second;
  }
};

}  // namespace

bool f32_matmul(const float* x, const float* w, float* y, std::int64_t m, std::int64_t k,
                std::int64_t n, bool accumulate) {
  if (m <= 0 || !use_onednn(m)) return false;
  return f32_matmul_onednn(x, w, y, m, k, n, accumulate);
}

bool f32_matmul_onednn(const float* x, const float* w, float* y, std::int64_t m, std::int64_t k,
                       std::int64_t n, bool accumulate) {
  static const bool avx512 = [] {
    const auto want = int(dnnl::cpu_isa::avx512_core);
    return (int(dnnl::get_effective_cpu_isa()) & want) == want;
  }();
  if (!avx512 || m <= 0) return false;
  thread_local f32_matmuls cache;
  omp_set_num_threads(1);  // this thread only: the pool already split the rows
  dnnl::memory src({{m, k}, dt::f32, tag::ab}, cache.engine, const_cast<float*>(x));
  dnnl::memory wei({{k, n}, dt::f32, tag::ba}, cache.engine, const_cast<float*>(w));
  dnnl::memory dst({{m, n}, dt::f32, tag::ab}, cache.engine, y);
  cache.get(k, n, accumulate)
      .execute(cache.stream, {{DNNL_ARG_SRC, src}, {DNNL_ARG_WEIGHTS, wei}, {DNNL_ARG_DST, dst}});
  cache.stream.wait();
  return true;
}

const char* f32_gemm_kernels() {
  switch (chosen_route()) {
    case route::onednn: return "onednn";
    case route::onednn_small: return "onednn up to 64 rows, openblas above";
    default: return "openblas";
  }
}

}  // namespace spindle::nn
