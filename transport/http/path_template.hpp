// Route paths matched by hand, without regex or recursion: a request path is
// attacker-controlled, and libstdc++'s regex recurses once per character (a
// 30 KB URL overflowed a worker's stack). A template is literal text with
// `{}` (one path segment, captured), `{a|b}` (one of the listed words,
// captured) and at most a few `[...]` optional parts, e.g.
// "/v2/models/{}[/versions/{}]/ready". Matching is linear in the path's length.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.hpp"

namespace spindle::transport::http {

/// Captures of a matched path: [0] is the whole path, [i] the i-th capture in
/// template order ("" for a capture inside an optional part that was absent).
using path_args = std::vector<std::string>;

class path_template {
 public:
  /// Parses `text`; errors name the fault (unbalanced braces, nested [], ...).
  static expected<path_template> parse(std::string_view text);
  /// The captures when `path` matches the whole template, else nullopt.
  std::optional<path_args> match(std::string_view path) const;
  const std::string& text() const { return text_; }

 private:
  struct token {
    bool capture = false;
    std::string literal;             // !capture
    std::vector<std::string> words;  // capture: allowed values (empty: any segment)
    int index = 0;                   // capture: its position in path_args
  };
  std::string text_;
  int captures_ = 0;
  std::vector<std::vector<token>> variants_;  // every optional part present or absent
};

}  // namespace spindle::transport::http
