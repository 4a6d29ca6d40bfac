// `spindle devices`: which devices this process will compute on.
#include <fmt/format.h>

#include "apps/commands/command.hpp"
#include "gpu/device.hpp"
#include "core/allocator.hpp"
#include "core/blas_kernels.hpp"
#include "nn/f32_matmul.hpp"
#include "nn/precision_speed.hpp"

namespace spindle::apps {

void register_devices(CLI::App& app, global_options&) {
  auto* cmd = app.add_subcommand(
      "devices", "List compute devices (CUDA devices, or the host when none answers) and the host's BLAS kernels");
  cmd->callback([] {
    const auto& r = gpu::query_devices();
    fmt::print("CUDA backend: {} ({})\n", r.cuda_built ? "built" : "not built", r.cuda_status);
    for (const auto& d : r.devices)
      fmt::print("  {}:{} {} ({:.1f} GiB)\n", gpu::to_string(d.kind), d.index, d.name,
                 static_cast<double>(d.memory_bytes) / (1u << 30));
    // The host's GEMMs: OpenBLAS's kernels, and why they are these.
    const auto& note = blas_kernels_note();
    fmt::print("BLAS kernels: {}{}\n", blas_core(), note.empty() ? "" : " (" + note + ")");
    // FP32 layers: oneDNN's AVX-512 matmul, OpenBLAS, or each by size (nn/f32_matmul).
    fmt::print("FP32 layer products: {}\n", nn::f32_gemm_kernels());
    fmt::print("FP32 recommendation MLP weights: {}\n",
               nn::f32_packed_allowed()
                   ? "packed for oneDNN at load (blocks of 64 rows, a last block of 5 or more padded to 8)"
                                        : "as loaded");
    // The malloc the process runs on (jemalloc unless built with SPINDLE_MALLOC=glibc).
    fmt::print("malloc: {}\n", allocator_in_use());
    // The reduced precisions as this CPU runs them, against float32 (nn/precision_speed).
    for (const char* p : {"bf16", "int8"}) {
      const auto s = nn::measure_precision_speed(p, 64, 1024, 1024);
      if (!s) {
        fmt::print("{} products: {}\n", p, s.error().message());
        continue;
      }
      fmt::print("{} products: {:.2f}x float32 here (64 x 1024 x 1024 on one core: {:.0f} against "
                 "{:.0f} GFLOP/s){}\n",
                 p, s->ratio(), s->reduced_gflops, s->fp32_gflops,
                 s->ratio() < nn::kSlowPrecisionRatio ? "; slower: serve float32" : "");
    }
  });
}

}  // namespace spindle::apps
