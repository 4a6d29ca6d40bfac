// Reading the small text files Spindle takes from users (model.toml, topology
// and cluster TOML, --hps-config, metadata.json, calibrations, tokens) safely:
// only regular files (a FIFO or a device such as /dev/zero is refused at once,
// never read or waited on), and only up to a size limit, so a hostile or
// mistaken path ends in a clean error naming it instead of a hang or bad_alloc.
// Pure functions; thread-safe.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "core/status.hpp"

namespace spindle {

/// The default limit for configuration and metadata files: 16 MiB.
inline constexpr std::uint64_t kMaxTextFileBytes = std::uint64_t{16} << 20;

/// The whole file at `path`. Errors name `what` and the path: not_found when it
/// cannot be opened, invalid_argument when it is not a regular file or is larger
/// than `max_bytes` (naming its size and the limit).
expected<std::string> read_text_file(const std::string& path, std::string_view what,
                                     std::uint64_t max_bytes = kMaxTextFileBytes);

/// Ok when `path` names a regular file (not a FIFO, socket or device); else an
/// error naming `what`, the path and the kind of file found.
status require_regular_file(const std::string& path, std::string_view what);

}  // namespace spindle
