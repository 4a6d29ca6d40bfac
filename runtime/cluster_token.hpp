// How the cluster token reaches a rank under a launcher, as secrets reach
// processes there: the environment variable SPINDLE_CLUSTER_TOKEN (`launch`
// sets it for its ranks; `mpirun -x`, srun and a pod spec pass it on), or a
// file named by --token-file (a Kubernetes Secret mounted as a file). Neither
// given: the TOML's token_file on this host, as a one-host cluster uses it.
#pragma once

#include <optional>
#include <string>

#include "core/status.hpp"

namespace spindle::runtime {

inline constexpr const char* kClusterTokenEnv = "SPINDLE_CLUSTER_TOKEN";

/// The token handed to this process: `file` (--token-file; empty: not given)
/// and `env` (SPINDLE_CLUSTER_TOKEN's value; nullptr: unset). nullopt when
/// neither is given. Refused by name: an empty or short (< 16 characters)
/// token, an unreadable file or one other users may write, and both given with
/// different tokens. A file every user may read is taken with a warning.
expected<std::optional<std::string>> handed_cluster_token(const std::string& file,
                                                          const char* env);

/// The cluster token of a node or launch: the handed one (above, from this
/// process's environment), else the TOML's `toml_token_file` (created if
/// absent with `create`; else waited for up to `wait_s` seconds).
expected<std::string> cluster_token(const std::string& file, const std::string& toml_token_file,
                                    bool create, int wait_s);

}  // namespace spindle::runtime
