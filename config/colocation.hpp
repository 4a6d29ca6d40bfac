// The recommendation models a cluster serves and Hera's profile table, as the
// cluster TOML's [colocation] section gives them (spindle launch places them
// with Algorithm 2):
//   [colocation]
//   profiles = "profile.json"                      # spindle profile's table
//   [[colocation.model]]
//   name = "ncf"  dir = "models/ncf"  qps = 300    # target QPS
// Relative paths are taken from the cluster file's directory. Pure values.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.hpp"

namespace spindle::config {

struct colocation_section {
  std::string profiles;
  struct model {
    std::string name, dir;
    double qps = 0;
  };
  std::vector<model> models;
};

/// The [colocation] section of a cluster TOML (none: nullopt). Errors name the
/// file and the field.
expected<std::optional<colocation_section>> parse_colocation(std::string_view toml_text,
                                                             const std::string& path);

}  // namespace spindle::config
