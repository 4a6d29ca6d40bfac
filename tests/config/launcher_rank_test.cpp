// A node's rank and world size from its launcher's environment: a table of
// environments (Open MPI, PMIx, Slurm, a Kubernetes pod, SPINDLE_RANK, none)
// and the rank, size and source each gives, or the error naming the variable.
#include "config/launcher_rank.hpp"

#include <gtest/gtest.h>

#include <cstdlib>

namespace spindle::config {
namespace {

struct rank_case {
  const char* what;
  launcher_environment env;
  int rank;              // expected rank (when no error)
  std::size_t size;      // expected size (0: the launcher gives none)
  const char* source;    // expected source, or the error's text when `error`
  bool error = false;
};

TEST(launcher_rank_test, environments_give_a_rank_and_size_or_an_error_naming_the_variable) {
  const rank_case cases[] = {
      {"Open MPI", {{{"OMPI_COMM_WORLD_RANK", "2"}, {"OMPI_COMM_WORLD_SIZE", "3"}}, "h"},
       2, 3, "OMPI_COMM_WORLD_RANK"},
      {"Open MPI sets PMIx too: OMPI first",
       {{{"OMPI_COMM_WORLD_RANK", "1"}, {"OMPI_COMM_WORLD_SIZE", "3"}, {"PMIX_RANK", "1"}}, "h"},
       1, 3, "OMPI_COMM_WORLD_RANK"},
      {"PMIx alone (no size)", {{{"PMIX_RANK", "0"}}, "h"}, 0, 0, "PMIX_RANK"},
      {"srun", {{{"SLURM_PROCID", "2"}, {"SLURM_NTASKS", "3"}}, "h"}, 2, 3, "SLURM_PROCID"},
      {"older Slurm", {{{"SLURM_PROCID", "1"}, {"SLURM_NPROCS", "3"}}, "h"}, 1, 3, "SLURM_PROCID"},
      {"SPINDLE_RANK wins over the launchers",
       {{{"SPINDLE_RANK", "1"}, {"OMPI_COMM_WORLD_RANK", "2"}, {"OMPI_COMM_WORLD_SIZE", "3"}}, "h"},
       1, 0, "SPINDLE_RANK"},
      {"SPINDLE_RANK with its size", {{{"SPINDLE_RANK", "0"}, {"SPINDLE_WORLD_SIZE", "3"}}, "h"},
       0, 3, "SPINDLE_RANK"},
      {"a StatefulSet's pod",
       {{{"KUBERNETES_SERVICE_HOST", "10.0.0.1"}}, "spindle-2"}, 2, 0,
       "the pod ordinal of hostname spindle-2 (a StatefulSet's pod)"},
      {"a pod with SPINDLE_WORLD_SIZE",
       {{{"KUBERNETES_SERVICE_HOST", "10.0.0.1"}, {"SPINDLE_WORLD_SIZE", "3"}}, "my-db-1"}, 1, 3,
       "the pod ordinal of hostname my-db-1 (a StatefulSet's pod)"},
      {"a hostname -N outside Kubernetes is no rank", {{}, "web-1"}, 0, 0,
       "no --rank, and no launcher gave one", true},
      {"a pod whose hostname has no ordinal",
       {{{"KUBERNETES_SERVICE_HOST", "10.0.0.1"}}, "spindle-abcde"}, 0, 0,
       "no --rank, and no launcher gave one", true},
      {"nothing at all", {{}, "h"}, 0, 0, "no --rank, and no launcher gave one", true},
      {"a size other than the TOML's",
       {{{"OMPI_COMM_WORLD_RANK", "0"}, {"OMPI_COMM_WORLD_SIZE", "4"}}, "h"}, 0, 0,
       "OMPI_COMM_WORLD_SIZE = 4, but c.toml has 3 ranks ([[server]] entries)", true},
      {"srun's size other than the TOML's", {{{"SLURM_PROCID", "0"}, {"SLURM_NTASKS", "2"}}, "h"},
       0, 0, "SLURM_NTASKS = 2, but c.toml has 3 ranks", true},
      {"a rank outside the TOML (PMIx, no size)", {{{"PMIX_RANK", "3"}}, "h"}, 0, 0,
       "rank 3 from PMIX_RANK, but c.toml has ranks 0..2", true},
      {"a pod ordinal outside the TOML",
       {{{"KUBERNETES_SERVICE_HOST", "10.0.0.1"}}, "spindle-7"}, 0, 0,
       "rank 7 from the pod ordinal of hostname spindle-7", true},
      {"not a number", {{{"SLURM_PROCID", "one"}}, "h"}, 0, 0,
       "SLURM_PROCID = 'one': not a rank (a whole number from 0)", true},
      {"negative", {{{"SPINDLE_RANK", "-1"}}, "h"}, 0, 0, "SPINDLE_RANK = '-1': not a rank", true},
      {"empty", {{{"SPINDLE_RANK", ""}}, "h"}, 0, 0, "SPINDLE_RANK = '': not a rank", true},
      {"a size of 0",
       {{{"OMPI_COMM_WORLD_RANK", "0"}, {"OMPI_COMM_WORLD_SIZE", "0"}}, "h"}, 0, 0,
       "OMPI_COMM_WORLD_SIZE = '0': a world has one rank at least", true},
      {"a size that is no number", {{{"SPINDLE_RANK", "0"}, {"SPINDLE_WORLD_SIZE", "3x"}}, "h"},
       0, 0, "SPINDLE_WORLD_SIZE = '3x': not a world size", true},
  };
  for (const auto& c : cases) {
    auto r = rank_from_environment(c.env, 3, "c.toml");
    if (c.error) {
      ASSERT_FALSE(r.has_value()) << c.what;
      EXPECT_NE(r.error().message().find(c.source), std::string::npos)
          << c.what << ": " << r.error().message();
      continue;
    }
    ASSERT_TRUE(r.has_value()) << c.what << ": " << r.error().message();
    EXPECT_EQ(r->rank, c.rank) << c.what;
    EXPECT_EQ(r->size, c.size) << c.what;
    EXPECT_EQ(r->source, c.source) << c.what;
  }
}

TEST(launcher_rank_test, this_process_environment_is_read_by_name) {
  ::setenv("SPINDLE_RANK", "1", 1);
  ::setenv("SPINDLE_WORLD_SIZE", "3", 1);
  auto env = read_launcher_environment();
  ::unsetenv("SPINDLE_RANK");
  ::unsetenv("SPINDLE_WORLD_SIZE");
  EXPECT_EQ(env.vars["SPINDLE_RANK"], "1");
  EXPECT_FALSE(env.hostname.empty());
  auto r = rank_from_environment(env, 3, "c.toml");
  ASSERT_TRUE(r.has_value()) << r.error().message();
  EXPECT_EQ(r->rank, 1);
}

}  // namespace
}  // namespace spindle::config
