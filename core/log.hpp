// Process-wide logging to stderr with fmt formatting and a level threshold
// (SPINDLE_LOG=debug|info|warn|error, default info). Thread-safe: each line is
// written with one call so lines from different threads never interleave.
#pragma once

#include <string_view>

#include <fmt/format.h>

namespace spindle::log {

enum class level { debug, info, warn, error, off };

std::string_view to_string(level l);
/// Parses "debug", "info", "warn", "error", "off"; false on anything else.
bool parse_level(std::string_view text, level& out);
void set_level(level l);
level current_level();
/// Writes one formatted line ("[I 07:31:02.123] message") if `l` passes the threshold.
void write(level l, std::string_view message);

template <class... Args>
void debug(fmt::format_string<Args...> f, Args&&... args) {
  if (current_level() <= level::debug) write(level::debug, fmt::format(f, std::forward<Args>(args)...));
}
template <class... Args>
void info(fmt::format_string<Args...> f, Args&&... args) {
  if (current_level() <= level::info) write(level::info, fmt::format(f, std::forward<Args>(args)...));
}
template <class... Args>
void warn(fmt::format_string<Args...> f, Args&&... args) {
  if (current_level() <= level::warn) write(level::warn, fmt::format(f, std::forward<Args>(args)...));
}
template <class... Args>
void error(fmt::format_string<Args...> f, Args&&... args) {
  if (current_level() <= level::error) write(level::error, fmt::format(f, std::forward<Args>(args)...));
}

}  // namespace spindle::log
