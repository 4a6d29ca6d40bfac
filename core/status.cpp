#include "core/status.hpp"

#include "core/enum_names.hpp"

namespace spindle {

constexpr enum_names<errc, 9> kCodeNames{{{
    {errc::ok, "ok"}, {errc::invalid_argument, "invalid_argument"},
    {errc::not_found, "not_found"}, {errc::io_error, "io_error"},
    {errc::corrupt_data, "corrupt_data"}, {errc::unsupported, "unsupported"},
    {errc::unavailable, "unavailable"}, {errc::resource_exhausted, "resource_exhausted"},
    {errc::internal, "internal"}}}};

std::string_view to_string(errc code) { return kCodeNames.name(code, "unknown"); }

std::string status::to_string() const {
  if (is_ok()) return "ok";
  return fmt::format("{}: {}", spindle::to_string(code_), message_);
}

status status::with_context(std::string_view context) && {
  if (!is_ok()) message_ = fmt::format("{}{}", context, message_);
  return std::move(*this);
}

}  // namespace spindle
