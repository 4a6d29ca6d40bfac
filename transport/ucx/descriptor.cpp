#include <charconv>

#include "transport/ucx/ucx.hpp"

namespace spindle::transport::ucx {
namespace {

constexpr std::string_view kMagic = "spr1";

}  // namespace

void append_hex(std::string& out, std::span<const std::uint8_t> bytes) {
  static constexpr char digits[] = "0123456789abcdef";
  for (std::uint8_t b : bytes) {
    out.push_back(digits[b >> 4]);
    out.push_back(digits[b & 15]);
  }
}

expected<std::vector<std::uint8_t>> parse_hex(std::string_view text, std::string_view field) {
  if (text.size() % 2 != 0 || text.empty())
    return make_error(errc::invalid_argument, "{} has {} hex digits", field, text.size());
  std::vector<std::uint8_t> out(text.size() / 2);
  for (std::size_t i = 0; i < out.size(); ++i) {
    auto [p, ec] = std::from_chars(text.data() + 2 * i, text.data() + 2 * i + 2, out[i], 16);
    if (ec != std::errc() || p != text.data() + 2 * i + 2)
      return make_error(errc::invalid_argument, "{} is not hex", field);
  }
  return out;
}

namespace {

expected<std::uint64_t> parse_u64(std::string_view text, std::string_view field) {
  std::uint64_t v = 0;
  auto [p, ec] = std::from_chars(text.data(), text.data() + text.size(), v, 16);
  if (ec != std::errc() || p != text.data() + text.size() || text.empty())
    return make_error(errc::invalid_argument, "region descriptor: field {} = '{}' is not hex",
                      field, text);
  return v;
}

}  // namespace

std::string region_descriptor::encode() const {
  std::string out = fmt::format("{}:{:x}:{:x}:", kMagic, base, length);
  append_hex(out, worker_address);
  out.push_back(':');
  append_hex(out, rkey);
  return out;
}

expected<region_descriptor> region_descriptor::decode(std::string_view text) {
  std::vector<std::string_view> parts;
  while (!text.empty()) {
    auto colon = text.find(':');
    parts.push_back(text.substr(0, colon));
    text = colon == std::string_view::npos ? std::string_view() : text.substr(colon + 1);
  }
  if (parts.size() != 5 || parts[0] != kMagic)
    return make_error(errc::invalid_argument,
                      "region descriptor: expected spr1:BASE:LENGTH:ADDRESS:RKEY");
  region_descriptor d;
  SPINDLE_ASSIGN_OR_RETURN(d.base, parse_u64(parts[1], "base"));
  SPINDLE_ASSIGN_OR_RETURN(d.length, parse_u64(parts[2], "length"));
  SPINDLE_ASSIGN_OR_RETURN(d.worker_address,
                           parse_hex(parts[3], "region descriptor: field worker_address"));
  SPINDLE_ASSIGN_OR_RETURN(d.rkey, parse_hex(parts[4], "region descriptor: field rkey"));
  return d;
}

}  // namespace spindle::transport::ucx
