#include "core/status.hpp"

namespace spindle {

std::string_view to_string(errc code) {
  switch (code) {
    case errc::ok: return "ok";
    case errc::invalid_argument: return "invalid_argument";
    case errc::not_found: return "not_found";
    case errc::io_error: return "io_error";
    case errc::corrupt_data: return "corrupt_data";
    case errc::unsupported: return "unsupported";
    case errc::unavailable: return "unavailable";
    case errc::resource_exhausted: return "resource_exhausted";
    case errc::internal: return "internal";
  }
  return "unknown";
}

std::string status::to_string() const {
  if (is_ok()) return "ok";
  return fmt::format("{}: {}", spindle::to_string(code_), message_);
}

status status::with_context(std::string_view context) && {
  if (!is_ok()) message_ = fmt::format("{}{}", context, message_);
  return std::move(*this);
}

}  // namespace spindle
