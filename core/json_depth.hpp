// The nesting depth of a JSON text, found by one linear scan (no recursion), so
// a parser or a dump() that recurses per level is never handed an input nested
// deeper than its caller allows (100,000 levels overflowed a worker's stack).
#pragma once

#include <cstddef>
#include <string_view>

namespace spindle {

/// Deepest [ / { nesting of `text` outside strings (escapes honoured); stops
/// counting once past `stop_after` and returns that value.
std::size_t json_depth(std::string_view text, std::size_t stop_after = 1u << 20);

/// The depth Spindle's JSON readers accept (request bodies, safetensors headers).
inline constexpr std::size_t kMaxJsonDepth = 64;

}  // namespace spindle
