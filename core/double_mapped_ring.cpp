#include "core/double_mapped_ring.hpp"

#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <utility>

namespace spindle {

namespace {
status sys_error(const char* call) {
  return make_error(errc::io_error, "double-mapped ring: {}: {}", call, std::strerror(errno));
}
}  // namespace

expected<double_mapped_ring> double_mapped_ring::create(std::size_t min_bytes, const char* name) {
  const auto page = static_cast<std::size_t>(::sysconf(_SC_PAGESIZE));
  const std::size_t bytes = std::max(page, (min_bytes + page - 1) / page * page);
  const int fd = ::memfd_create(name, MFD_CLOEXEC);
  if (fd < 0) return sys_error("memfd_create");
  if (::ftruncate(fd, static_cast<off_t>(bytes)) != 0) {
    ::close(fd);
    return sys_error("ftruncate");
  }
  // Reserve 2x the size, then map the file over both halves.
  void* area = ::mmap(nullptr, 2 * bytes, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (area == MAP_FAILED) {
    ::close(fd);
    return sys_error("mmap (reserve)");
  }
  auto* base = static_cast<std::byte*>(area);
  for (int half = 0; half < 2; ++half) {
    void* got =
        ::mmap(base + half * bytes, bytes, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_FIXED, fd, 0);
    if (got == MAP_FAILED) {
      const status s = sys_error("mmap (map half)");
      ::munmap(area, 2 * bytes);
      ::close(fd);
      return s;
    }
  }
  ::close(fd);  // the mappings keep the memory alive
  double_mapped_ring r;
  r.base_ = base;
  r.capacity_ = bytes;
  return r;
}

double_mapped_ring::double_mapped_ring(double_mapped_ring&& o) noexcept
    : base_(std::exchange(o.base_, nullptr)), capacity_(std::exchange(o.capacity_, 0)) {}

double_mapped_ring& double_mapped_ring::operator=(double_mapped_ring&& o) noexcept {
  if (this != &o) {
    if (base_ != nullptr) ::munmap(base_, 2 * capacity_);
    base_ = std::exchange(o.base_, nullptr);
    capacity_ = std::exchange(o.capacity_, 0);
  }
  return *this;
}

double_mapped_ring::~double_mapped_ring() {
  if (base_ != nullptr) ::munmap(base_, 2 * capacity_);
}

}  // namespace spindle
