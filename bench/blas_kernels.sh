# Sourced by the benchmark scripts: gives every process of the run (Spindle's
# benches and the PyTorch/NumPy peers) the OpenBLAS kernels Spindle runs.
# OpenBLAS takes CPUs it does not know by model for Prescott (SSE3 kernels);
# `spindle` restarts itself with the kernels the CPU's features allow and
# reports them in `spindle devices`. A peer left on Prescott would be handicapped.
#   usage: . bench/blas_kernels.sh SPINDLE
if [ -z "${OPENBLAS_CORETYPE:-}" ]; then
  OPENBLAS_CORETYPE=$({ "$1" devices 2> /dev/null || echo "spindle devices failed: OpenBLAS picks the kernels" >&2; } |
    sed -n 's/^BLAS kernels: \([A-Za-z0-9]*\).*/\1/p')
  if [ -n "$OPENBLAS_CORETYPE" ]; then export OPENBLAS_CORETYPE; else unset OPENBLAS_CORETYPE; fi
fi
echo "OpenBLAS kernels of every process in this run: ${OPENBLAS_CORETYPE:-as OpenBLAS picks them}"
