// A file a folder names must stay inside it: a model folder's model.toml and
// weights are read only when they are regular files whose real path (symbolic
// links resolved) lies under the folder's. A link to /etc/shadow is refused
// by name, without a byte of the target read or quoted.
#pragma once

#include <string>

#include "core/status.hpp"

namespace spindle {

/// ok when `path` is a regular file inside `dir` (after resolving links);
/// otherwise an error naming `path` and why (outside, not a regular file, missing).
status require_file_inside(const std::string& dir, const std::string& path);

}  // namespace spindle
