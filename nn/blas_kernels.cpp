#include "nn/blas_kernels.hpp"

#include <unistd.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <cstdlib>

#include "core/log.hpp"

extern "C" char* openblas_get_corename();

namespace spindle::nn {
namespace {

// Set while the restarted process starts; holds the core OpenBLAS had chosen.
constexpr const char* k_marker = "SPINDLE_BLAS_RESTARTED_FROM";

std::string& note() {
  static std::string n;
  return n;
}

}  // namespace

std::string blas_core() {
  const char* name = openblas_get_corename();
  return name ? name : "";
}

std::string_view best_blas_core() {
  __builtin_cpu_init();
  const bool avx512 = __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
                      __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512dq");
  // SkylakeX also for CPUs with AVX-512 BF16: its sgemm kernels are Cooperlake's
  // (which adds bf16 GEMMs only, and which OpenBLAS 0.3.21 cannot be told by name).
  if (avx512) return "SkylakeX";
  if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) return "Haswell";
  return "";
}

bool strong_blas_core(std::string_view core) {
  static constexpr std::array<std::string_view, 7> strong = {
      "Haswell", "Zen", "SkylakeX", "Cooperlake", "SapphireRapids", "Skylake", "Excavator"};
  for (auto s : strong)
    if (core.size() == s.size() &&
        std::equal(core.begin(), core.end(), s.begin(),
                   [](char a, char b) { return std::tolower(a) == std::tolower(b); }))
      return true;
  return false;
}

void ensure_blas_kernels(char** argv) {
  if (const char* from = std::getenv(k_marker)) {  // the restarted process
    note() = "OpenBLAS took this CPU for " + std::string(from) + "; restarted with " +
             blas_core() + " kernels (OPENBLAS_CORETYPE)";
    log::debug("blas: {}", note());
    ::unsetenv(k_marker);
    return;
  }
  if (std::getenv("OPENBLAS_CORETYPE")) return;  // the user's choice stands
  const std::string current = blas_core();
  const std::string_view best = best_blas_core();
  if (best.empty() || strong_blas_core(current)) return;
  ::setenv("OPENBLAS_CORETYPE", std::string(best).c_str(), 1);
  ::setenv(k_marker, current.c_str(), 1);
  ::execv("/proc/self/exe", argv);
  ::unsetenv("OPENBLAS_CORETYPE");  // exec failed: OpenBLAS's choice stands
  ::unsetenv(k_marker);
  note() = "OpenBLAS took this CPU for " + current + " (the CPU allows " + std::string(best) +
           "); the restart to set OPENBLAS_CORETYPE failed";
  log::warn("blas: {}", note());
}

const std::string& blas_kernels_note() { return note(); }

}  // namespace spindle::nn
