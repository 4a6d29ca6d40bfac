// The file door's requests as it reads them ("manifest ROOT RANK", "get ROOT
// UNIT PATH OFFSET [SHA256]") and the words it sends back, which name no path
// of its disk (only paths within the served folders). Stateless functions.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/status.hpp"
#include "transport/net/file_door.hpp"

namespace spindle::transport::net {

/// A `get`: a file of root's unit from a byte offset, with the SHA-256 the
/// fetch's manifest holds for it (empty from fetchers that send none).
struct get_request {
  const file_root* root = nullptr;
  std::string unit, path, sha256;
  std::uint64_t offset = 0;
  /// The unit's folder on the door's disk ("" when a root of folders by name no
  /// longer names it).
  std::string dir() const {
    if (root->folder_named) {
      auto d = root->folder_named(unit);
      return d ? *d : std::string();
    }
    return unit == "." ? root->dir : root->dir + "/" + unit;
  }
};

std::vector<std::string> request_lines(const std::string& text);
const file_root* find_root(const std::vector<file_root>& roots, const std::string& name);
/// A get's lines checked: a served root, safe unit and path, a numeric offset.
expected<get_request> parse_get(const std::vector<std::string>& q,
                                const std::vector<file_root>& roots);
/// `text` with each root's folder (as given, and absolute) replaced by the
/// root's name: "/srv/parts/rank-1/x.npy: ..." -> "dataset/rank-1/x.npy: ...".
std::string without_paths(std::string text, const std::vector<file_root>& roots);

}  // namespace spindle::transport::net
