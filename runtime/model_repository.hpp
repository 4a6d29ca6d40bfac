// A model repository in Triton's layout: DIR/NAME/VERSION/ holds model.toml
// and its weights (VERSION a positive integer). `spindle serve
// --model-repository DIR` serves every NAME at the versions its model.toml's
// version_policy picks (the latest by default) and re-reads DIR on each load,
// so a new version directory is found when it is loaded.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "core/status.hpp"

namespace spindle::runtime {

struct repository_model {
  std::string name;
  std::map<int, std::string> versions;  // version -> its directory
};

/// The models under `dir` (names are subdirectories holding at least one
/// numbered version with a model.toml). Errors name the directory.
expected<std::map<std::string, repository_model>> scan_repository(const std::string& dir);

struct picked_version {
  int version = 0;
  std::string path;
};
/// The versions of `name` its policy serves, highest first (the latest version's
/// model.toml holds the policy). Errors name the repository, the model and its versions.
expected<std::vector<picked_version>> pick_repository_versions(const std::string& dir,
                                                               const std::string& name);
/// The same versions as text ("2", "1"), as a gateway's loader names them.
expected<std::vector<std::string>> repository_versions_to_serve(const std::string& dir,
                                                                const std::string& name);
/// The directory of `name`'s `version` in `dir`; errors name the missing model.toml.
expected<std::string> repository_version_dir(const std::string& dir, const std::string& name,
                                             const std::string& version);

}  // namespace spindle::runtime
