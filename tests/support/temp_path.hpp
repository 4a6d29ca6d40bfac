// Scratch files for unit tests: a path in a folder of the system temp dir that
// is the test's own (its name and the process id), created on first use.
// Header-only; the files are left for the OS to clean.
#pragma once

#include <unistd.h>

#include <filesystem>
#include <string>

namespace spindle::testing {

/// `name` in `<temp>/spindle_<folder>_<pid>/`, which exists on return.
inline std::string temp_path(const std::string& folder, const std::string& name) {
  auto dir = std::filesystem::temp_directory_path() /
             ("spindle_" + folder + "_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  return (dir / name).string();
}

}  // namespace spindle::testing
