#include "core/path_guard.hpp"

#include <filesystem>

namespace spindle {

status require_file_inside(const std::string& dir, const std::string& path) {
  namespace fs = std::filesystem;
  std::error_code ec;
  const fs::path root = fs::canonical(dir, ec);
  if (ec) return make_error(errc::not_found, "{}: {}", dir, ec.message());
  const fs::path real = fs::canonical(path, ec);
  if (ec) return make_error(errc::not_found, "{}: {}", path, ec.message());
  const auto rel = real.lexically_relative(root);
  if (rel.empty() || *rel.begin() == "..")
    return make_error(errc::invalid_argument,
                      "{}: a link to a file outside the model folder {}; refused (copy the file "
                      "into the folder)",
                      path, dir);
  if (!fs::is_regular_file(real, ec))
    return make_error(errc::invalid_argument, "{}: not a regular file", path);
  return status::ok();
}

}  // namespace spindle
