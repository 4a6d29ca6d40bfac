#include "transport/net/file_requests.hpp"

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <sstream>
#include <utility>

#include "transport/net/file_manifest.hpp"

namespace spindle::transport::net {
namespace {

bool is_path_char(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_' || c == '.';
}

}  // namespace

std::vector<std::string> request_lines(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) out.push_back(line);
  return out;
}

const file_root* find_root(const std::vector<file_root>& roots, const std::string& name) {
  for (const auto& r : roots)
    if (r.name == name) return &r;
  return nullptr;
}

expected<get_request> parse_get(const std::vector<std::string>& q,
                                const std::vector<file_root>& roots) {
  if (q.size() != 5 && q.size() != 6) return make_error(errc::invalid_argument, "a malformed get");
  get_request g;
  g.root = find_root(roots, q[1]);
  if (!g.root)
    return make_error(errc::not_found, "this door serves no folder '{}'", q[1].substr(0, 64));
  if (q[2] != ".") SPINDLE_TRY(check_relative_path(q[2]).with_context("refused: "));
  SPINDLE_TRY(check_relative_path(q[3]).with_context("refused: "));
  g.unit = q[2];
  g.path = q[3];
  if (q.size() == 6) g.sha256 = q[5].substr(0, 64);
  try {
    g.offset = std::stoull(q[4]);
  } catch (const std::exception&) {
    return make_error(errc::invalid_argument, "offset '{}' is not a number", q[4].substr(0, 32));
  }
  return g;
}

std::string without_paths(std::string text, const std::vector<file_root>& roots) {
  std::vector<std::pair<std::string, std::string>> dirs;  // folder, root name
  for (const auto& r : roots) {
    std::error_code ec;
    const auto absolute = std::filesystem::absolute(r.dir, ec).lexically_normal().string();
    for (std::string d : {r.dir, absolute}) {
      while (d.size() > 1 && d.back() == '/') d.pop_back();
      if (!d.empty()) dirs.emplace_back(d, r.name);
    }
  }
  // Longest first: a folder inside another is replaced as itself.
  std::sort(dirs.begin(), dirs.end(),
            [](const auto& a, const auto& b) { return a.first.size() > b.first.size(); });
  for (const auto& [dir, name] : dirs) {
    for (std::size_t at = 0; (at = text.find(dir, at)) != std::string::npos;) {
      const std::size_t end = at + dir.size();
      // Only the whole folder name: not "/srv/parts2", not "/x/srv/parts".
      const bool whole = (end == text.size() || !is_path_char(text[end])) &&
                         (at == 0 || !(is_path_char(text[at - 1]) || text[at - 1] == '/'));
      if (!whole) {
        at = end;
        continue;
      }
      text.replace(at, dir.size(), name);
      at += name.size();
    }
  }
  return text;
}

}  // namespace spindle::transport::net
