// A string as a TOML basic string (quoted, with `"`, `\` and control
// characters escaped), for the model.toml writers: a name holding a quote or a
// newline reads back as itself, never as further keys.
#pragma once

#include <fmt/format.h>

#include <string>
#include <string_view>
#include <vector>

namespace spindle::config::detail {

inline std::string toml_string(std::string_view s) {
  std::string out = "\"";
  for (const char ch : s) {
    const auto c = static_cast<unsigned char>(ch);
    if (c == '"' || c == '\\') {
      out += '\\';
      out += ch;
    } else if (c < 0x20 || c == 0x7f) {
      out += fmt::format("\\u{:04X}", unsigned(c));
    } else {
      out += ch;
    }
  }
  return out + "\"";
}

/// ["a", "b"] with each element as toml_string() writes it.
inline std::string toml_strings(const std::vector<std::string>& v) {
  std::string out = "[";
  for (std::size_t i = 0; i < v.size(); ++i) out += (i ? ", " : "") + toml_string(v[i]);
  return out + "]";
}

}  // namespace spindle::config::detail
