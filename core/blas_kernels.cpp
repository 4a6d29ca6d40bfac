#include "core/blas_kernels.hpp"

#include <dlfcn.h>
#include <link.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <cerrno>
#include <cstdlib>
#include <cstring>

#include "core/log.hpp"

namespace spindle {
namespace {

// Set while the restarted process starts; holds the core OpenBLAS had chosen.
constexpr const char* k_marker = "SPINDLE_BLAS_RESTARTED_FROM";

std::string& note() {
  static std::string n;
  return n;
}

bool same_name(std::string_view a, std::string_view b) {
  return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) {
           return std::tolower(static_cast<unsigned char>(x)) ==
                  std::tolower(static_cast<unsigned char>(y));
         });
}

// The main program's PT_INTERP (the dynamic loader it names), "" if none.
int find_interp(dl_phdr_info* info, std::size_t, void* out) {
  for (int i = 0; i < info->dlpi_phnum; ++i)
    if (info->dlpi_phdr[i].p_type == PT_INTERP)
      *static_cast<std::string*>(out) =
          reinterpret_cast<const char*>(info->dlpi_addr + info->dlpi_phdr[i].p_vaddr);
  return 1;  // the first object is the main program
}

// Whether /proc/self/exe is the dynamic loader (`ld.so spindle ...`): executing
// it again would hand the loader the program's arguments, shifted by one.
bool started_through_loader() {
  std::string interp;
  dl_iterate_phdr(find_interp, &interp);
  struct stat exe {}, ld {};
  return !interp.empty() && ::stat("/proc/self/exe", &exe) == 0 &&
         ::stat(interp.c_str(), &ld) == 0 && exe.st_dev == ld.st_dev && exe.st_ino == ld.st_ino;
}

// A user's OPENBLAS_CORETYPE asking for kernels this CPU lacks dies on an
// illegal instruction at the first GEMM: said once, the choice still stands.
void check_users_choice(const char* chosen) {
  const int want = blas_core_level(chosen), have = blas_core_level(best_blas_core());
  if (want > have)
    log::warn("blas: OPENBLAS_CORETYPE={} asks for kernels this CPU lacks ({}); expect an "
              "illegal instruction at the first matrix product",
              chosen, have == 2 ? "it has AVX-512" : have == 1 ? "it has AVX2, no AVX-512"
                                                               : "it has no AVX2");
}

}  // namespace

std::string blas_core() {
  using corename_fn = char* (*)();
  auto fn = reinterpret_cast<corename_fn>(::dlsym(RTLD_DEFAULT, "openblas_get_corename"));
  const char* name = fn ? fn() : nullptr;
  return name ? name : "";
}

std::string_view best_blas_core() {
  __builtin_cpu_init();
  const bool avx512 = __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
                      __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512dq");
  // SkylakeX also for CPUs with AVX-512 BF16: its sgemm kernels are Cooperlake's
  // (which adds bf16 GEMMs only; OpenBLAS 0.3.21's OPENBLAS_CORETYPE list lacks it).
  if (avx512) return "SkylakeX";
  if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) return "Haswell";
  return "";
}

int blas_core_level(std::string_view core) {
  for (auto s : {"SkylakeX", "Cooperlake", "SapphireRapids"})
    if (same_name(core, s)) return 2;
  for (auto s : {"Haswell", "Zen", "Skylake", "Excavator"})
    if (same_name(core, s)) return 1;
  return 0;
}

void ensure_blas_kernels(char** argv) {
  const char* chosen = std::getenv("OPENBLAS_CORETYPE");
  const char* from = std::getenv(k_marker);
  if (from && chosen) {  // the restarted process: say so, and let descendants decide
    note() = "OpenBLAS took this CPU for " + std::string(from) + "; restarted with " +
             blas_core() + " kernels (OPENBLAS_CORETYPE)";
    log::debug("blas: {}", note());
    ::unsetenv(k_marker);
    ::unsetenv("OPENBLAS_CORETYPE");
    return;
  }
  ::unsetenv(k_marker);  // a marker without the variable is not ours
  if (chosen) return check_users_choice(chosen);
  const std::string current = blas_core();
  const std::string_view best = best_blas_core();
  if (current.empty() || best.empty() || blas_core_level(current) >= blas_core_level(best)) return;
  const std::string remedy = "set OPENBLAS_CORETYPE=" + std::string(best) + " to run them";
  if (started_through_loader()) {
    note() = "OpenBLAS took this CPU for " + current + "; started through the dynamic loader, " +
             "so not restarted: " + remedy;
    log::warn("blas: {}", note());
    return;
  }
  ::setenv("OPENBLAS_CORETYPE", std::string(best).c_str(), 1);
  ::setenv(k_marker, current.c_str(), 1);
  ::execv("/proc/self/exe", argv);
  const int err = errno;  // exec failed: OpenBLAS's choice stands
  ::unsetenv("OPENBLAS_CORETYPE");
  ::unsetenv(k_marker);
  note() = "OpenBLAS took this CPU for " + current + "; the restart with " + std::string(best) +
           " kernels failed (" + std::strerror(err) + "): " + remedy;
  log::warn("blas: {}", note());
}

const std::string& blas_kernels_note() { return note(); }

}  // namespace spindle
