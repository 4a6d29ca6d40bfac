// SPINDLE_HOST_DEVICE marks per-element kernel logic that g++ compiles for the
// host backend and nvcc for the CUDA kernels. The only place
// outside gpu/cuda/ that looks at __CUDACC__.
#pragma once

#if defined(__CUDACC__)
#define SPINDLE_HOST_DEVICE __host__ __device__
#else
#define SPINDLE_HOST_DEVICE
#endif
