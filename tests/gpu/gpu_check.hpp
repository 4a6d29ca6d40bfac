// What the two halves of `make gpu-check`'s program share: a device copy of a
// host vector, the device-vs-host comparison every check reports, the stack
// model descriptions, and the served-path checks (gpu_check_served.cpp) that
// main (gpu_check.cpp) runs.
#pragma once

#include <cmath>
#include <cstdio>
#include <future>
#include <optional>
#include <random>
#include <string_view>

#include "colocation/device_scheduler.hpp"
#include "colocation/task_bytes.hpp"
#include "features/feature_tiers.hpp"
#include "gpu/device.hpp"
#include "gpu/gnn_kernels.hpp"
#include "graph/prepare.hpp"
#include "graph/rmat.hpp"
#include "graph/sampler.hpp"
#include "hps/cache/device_cache.hpp"
#include "nn/model.hpp"
#include "nn/ops.hpp"
#include "serving/batch_executor.hpp"
#include "serving/cuda_executor.hpp"
#include "serving/cuda_layers.hpp"
#include "serving/cuda_sampling.hpp"
#include "serving/gnn_pipeline.hpp"

namespace spindle::gpu {

// A device copy of `v`, freed at scope end.
template <class T>
struct device_array {
  T* p = nullptr;
  std::size_t n = 0;
  static expected<device_array> of(const std::vector<T>& v) {
    SPINDLE_ASSIGN_OR_RETURN(void* raw, device_alloc(v.size() * sizeof(T)));
    device_array a{static_cast<T*>(raw), v.size()};
    SPINDLE_TRY(copy_to_device(a.p, v.data(), v.size() * sizeof(T)));
    return a;
  }
  std::vector<T> to_host() const {
    std::vector<T> out(n);
    (void)copy_to_host(out.data(), p, n * sizeof(T));
    return out;
  }
  device_array(T* q, std::size_t m) : p(q), n(m) {}
  device_array(device_array&& o) noexcept : p(o.p), n(o.n) { o.p = nullptr; }
  device_array& operator=(device_array&& o) noexcept {
    std::swap(p, o.p);
    std::swap(n, o.n);
    return *this;
  }
  ~device_array() {
    if (p) device_free(p);
  }
};

// How far the device's numbers are from the host's: the largest |got - want|
// relative to the largest |want| (a float32 GEMM or sum accumulated in another
// order differs by a few ulps of its largest terms, not of each element; first
// seen on an H100, where per-element errors of 1e-4 on near-zero outputs came
// from sums that agree to 1e-7 of the output's scale), and the first answer that
// came back as an error instead of numbers.
struct comparison {
  double max_abs = 0, scale = 0;
  std::string error;
  void add(double got, double want) {
    max_abs = std::max(max_abs, std::abs(got - want));
    scale = std::max(scale, std::abs(want));
  }
  double relative() const { return max_abs / std::max(scale, 1e-30); }
  bool ok() const { return error.empty() && relative() <= 1e-5; }
  std::string describe() const {
    if (!error.empty()) return "an answer failed: " + error;
    return fmt::format("max abs diff {:.2e} = {:.2e} of the largest output magnitude {:.3g}",
                       max_abs, relative(), scale);
  }
  status check(const std::string& what, std::string& result) const {
    result = what + ", " + describe();
    return ok() ? status::ok() : make_error(errc::internal, "{}", result);
  }
};

/// Stack models covering every op kind with a device path (gpu_check.cpp).
expected<config::model_desc> stack_desc(int which);

/// Where the served-path checks put their executors and pool: the GPU, or with
/// --harness the host (both sides then run the host path: a check of the
/// comparison itself, which must show no difference).
extern device_kind served_device;

/// The served path on the device vs the host gnn_pipeline (gpu_check_served.cpp).
status check_served(config::model_arch arch, std::string& result);
/// A cluster rank's GPU: its device tier filled through a source (GPU only).
status check_rank_served(std::string& result);
status check_gnnsched(std::string& result);
status check_served_stack(int which, std::string& result);
status check_gnnsched_stack(std::string& result);

}  // namespace spindle::gpu
