// What a file door offers and a fetcher checks: the regular files of a folder,
// each with its size and SHA-256, as one text a MAC can cover, and the rule a
// requested path must pass (relative, no "..", no "."). Stateless functions.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/status.hpp"

namespace spindle::transport::net {

struct file_entry {
  std::string path;  // relative to the folder, '/'-separated
  std::uint64_t size = 0;
  std::string sha256;  // 64 lower-case hex digits
};

/// The folder's unit ("." or a sub-folder such as "rank-1") and its files.
struct file_manifest {
  std::string unit = ".";
  std::vector<file_entry> files;
  std::uint64_t bytes() const;
  const file_entry* find(const std::string& path) const;
};

/// ok for a path a door may serve: relative, '/'-separated, no empty, "." or
/// ".." component, no NUL or newline; else an error naming the path.
status check_relative_path(const std::string& path);

/// SHA-256 of a whole file as hex; errors name the file.
expected<std::string> file_sha256(const std::string& path);

/// The relative paths of the regular files under `dir`, sorted: symbolic links
/// and other kinds are left out (never followed), as are paths a door may not
/// serve (check_relative_path).
expected<std::vector<std::string>> folder_files(const std::string& dir);

/// The regular files of folder_files(dir), hashed.
expected<file_manifest> list_folder(const std::string& dir, const std::string& unit);

/// Text form: "unit U\n" then "SIZE SHA256 PATH\n" per file; parse refuses
/// malformed lines and unsafe paths, naming the line.
std::string to_text(const file_manifest& m);
expected<file_manifest> parse_manifest(const std::string& text);

}  // namespace spindle::transport::net
