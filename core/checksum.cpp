#include "core/checksum.hpp"

#define XXH_STATIC_LINKING_ONLY  // XXH3_state_t by value
#include <fmt/format.h>
#include <xxhash.h>
#include <zlib.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <vector>

namespace spindle {

struct checksum_stream::state {
  XXH3_state_t s;
};

std::uint64_t checksum(const void* data, std::size_t size) { return XXH3_64bits(data, size); }

std::string checksum_hex(std::uint64_t value) { return fmt::format("{:016x}", value); }

checksum_stream::checksum_stream() : state_(std::make_unique<state>()) {
  XXH3_64bits_reset(&state_->s);
}
checksum_stream::~checksum_stream() = default;
checksum_stream::checksum_stream(checksum_stream&&) noexcept = default;
checksum_stream& checksum_stream::operator=(checksum_stream&&) noexcept = default;

void checksum_stream::update(const void* data, std::size_t size) {
  XXH3_64bits_update(&state_->s, data, size);
}

std::uint64_t checksum_stream::digest() const { return XXH3_64bits_digest(&state_->s); }

expected<std::string> file_crc32_hex(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return make_error(errc::io_error, "{}: cannot open: {}", path, std::strerror(errno));
  uLong crc = ::crc32(0L, Z_NULL, 0);
  std::vector<char> buf(1 << 20);
  while (in) {
    in.read(buf.data(), std::streamsize(buf.size()));
    const auto n = in.gcount();
    if (n > 0) crc = ::crc32(crc, reinterpret_cast<const Bytef*>(buf.data()), uInt(n));
  }
  if (in.bad()) return make_error(errc::io_error, "{}: read failed", path);
  return fmt::format("{:08x}", std::uint32_t(crc));
}

}  // namespace spindle
