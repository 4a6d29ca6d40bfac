#include "core/checksum.hpp"

#define XXH_STATIC_LINKING_ONLY  // XXH3_state_t by value
#include <xxhash.h>

#include <fmt/format.h>

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

}  // namespace spindle
