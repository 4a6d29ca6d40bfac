// A node's rank and the world size from the environment a launcher gives its
// processes: Open MPI (OMPI_COMM_WORLD_*), PMIx, Slurm's srun, a Kubernetes
// StatefulSet's pod ordinal, or SPINDLE_RANK. Pure: the caller reads the
// environment (read_launcher_environment) and a test passes a table.
#pragma once

#include <cstddef>
#include <map>
#include <string>
#include <string_view>

#include "core/status.hpp"

namespace spindle::config {

/// The variables rank_from_environment reads, and the host's name.
struct launcher_environment {
  std::map<std::string, std::string> vars;  // only the names below that are set
  std::string hostname;
};

/// What the environment says: the rank, the world size (0: the launcher does
/// not say; the TOML's rank count is then the world) and where both came from
/// ("OMPI_COMM_WORLD_RANK", "the pod ordinal of hostname web-2", ...).
struct launcher_rank {
  int rank = 0;
  std::size_t size = 0;
  std::string source;
};

/// The first of, in this order: SPINDLE_RANK (with SPINDLE_WORLD_SIZE),
/// OMPI_COMM_WORLD_RANK (with OMPI_COMM_WORLD_SIZE), PMIX_RANK, SLURM_PROCID
/// (with SLURM_NTASKS, else SLURM_NPROCS), and inside Kubernetes
/// (KUBERNETES_SERVICE_HOST set) a hostname ending in -N (with
/// SPINDLE_WORLD_SIZE). Refused, naming the variable and its value: a value that
/// is no whole number, a rank not below the world size, a world size other than
/// `ranks` (the TOML `toml`'s rank count), a rank outside the TOML; and when no
/// launcher says a rank at all.
expected<launcher_rank> rank_from_environment(const launcher_environment& env, std::size_t ranks,
                                              std::string_view toml);

/// This process's environment (the variables above) and gethostname().
launcher_environment read_launcher_environment();

}  // namespace spindle::config
