// OpenBLAS picks its kernels by CPU model, and takes a model it does not know
// (a new Xeon, a VM that hides the model) for Prescott: SSE3 kernels, a fifth of
// an AVX-512 core's GEMM rate. This piece picks the kernels by the features the
// CPU reports instead and, where OpenBLAS chose worse, restarts the process once
// with OPENBLAS_CORETYPE set (OpenBLAS reads it only when it loads). It finds
// OpenBLAS at run time, so a process without it (a tool, a test) is left alone.
#pragma once

#include <string>
#include <string_view>

namespace spindle {

/// The OpenBLAS kernels in use ("SkylakeX", "Prescott", ...); "" when this
/// process has no OpenBLAS loaded.
std::string blas_core();

/// The kernels this CPU's features allow: "SkylakeX" (AVX-512 F/BW/VL/DQ),
/// "Haswell" (AVX2 + FMA), or "" (leave OpenBLAS's choice). By features, not
/// model, as the OS reports them usable.
std::string_view best_blas_core();

/// The level of a core's kernels: 2 AVX-512 (SkylakeX, Cooperlake,
/// SapphireRapids), 1 AVX2 (Haswell, Zen, ...), 0 older or unknown; any case.
int blas_core_level(std::string_view core);

/// At the top of main: where OpenBLAS took a weaker core than the CPU allows
/// and the user set no OPENBLAS_CORETYPE, re-executes /proc/self/exe with the
/// same arguments and OPENBLAS_CORETYPE = best_blas_core() (same pid, once: a
/// marker in the environment stops a second restart). The restarted process
/// takes both variables out of its environment again, so the processes it
/// starts (on this host or, under a launcher that forwards it, on another)
/// decide for themselves. A user's OPENBLAS_CORETYPE stands (warned about when
/// it asks for more than this CPU has). Returns when no restart is needed or
/// possible (started through the dynamic loader, exec failed: logged).
void ensure_blas_kernels(char** argv);

/// What ensure_blas_kernels did in this process, for `spindle devices`: empty,
/// or "OpenBLAS took this CPU for Prescott; restarted with SkylakeX kernels".
const std::string& blas_kernels_note();

}  // namespace spindle
