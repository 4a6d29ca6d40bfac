// Line-by-line reading of text files, plain or gzip-compressed (zlib detects
// which), in large blocks, plus the field splitting the edge and feature
// loaders share. One reader per thread.
#pragma once

#include <charconv>
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.hpp"

namespace spindle::graph {

/// Calls fn(line_number, line) for every line (1-based, without the newline).
/// A non-ok status from fn stops the read and is returned. Shows a progress
/// bar over the file's (compressed) bytes when `show_progress`.
status for_each_line(const std::string& path,
                     const std::function<status(std::int64_t, std::string_view)>& fn,
                     bool show_progress = false);

/// Splits on commas, tabs and spaces (runs of blanks count once); empty fields
/// between two commas are kept.
void split_fields(std::string_view line, std::vector<std::string_view>& out);

template <class T>
bool parse_number(std::string_view text, T& out) {
  while (!text.empty() && (text.back() == '\r' || text.back() == ' ')) text.remove_suffix(1);
  auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), out);
  return ec == std::errc() && ptr == text.data() + text.size() && !text.empty();
}

}  // namespace spindle::graph
