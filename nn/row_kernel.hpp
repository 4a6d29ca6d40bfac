// SPINDLE_ROW_KERNEL: compiles a row kernel (aggregation, bags, element-wise
// activations) for the x86-64-v3 feature level (AVX2, FMA) and for the x86-64
// baseline; the loader picks the clone the CPU supports (GCC function
// multi-versioning), so one binary is fast everywhere. The level, not
// "arch=haswell": GCC dispatches an arch= clone on the CPU model, so every CPU
// but a Haswell (Skylake, Sapphire Rapids, Zen) would run the baseline clone.
#pragma once

#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
#define SPINDLE_ROW_KERNEL __attribute__((target_clones("arch=x86-64-v3", "default")))
#else
#define SPINDLE_ROW_KERNEL
#endif
