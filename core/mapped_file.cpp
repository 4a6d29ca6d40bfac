#include "core/mapped_file.hpp"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <utility>

namespace spindle {

expected<mapped_file> mapped_file::open(const std::string& path) {
  // O_NONBLOCK: a FIFO must not block the open; it is refused below.
  int fd = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) {
    errc code = errno == ENOENT ? errc::not_found : errc::io_error;
    return make_error(code, "{}: cannot open: {}", path, std::strerror(errno));
  }
  struct stat st {};
  if (fstat(fd, &st) != 0) {
    int e = errno;
    ::close(fd);
    return make_error(errc::io_error, "{}: cannot stat: {}", path, std::strerror(e));
  }
  if (!S_ISREG(st.st_mode)) {
    ::close(fd);
    return make_error(errc::invalid_argument, "{}: must be a regular file (found {})", path,
                      S_ISFIFO(st.st_mode)  ? "a FIFO"
                      : S_ISCHR(st.st_mode) ? "a character device"
                      : S_ISDIR(st.st_mode) ? "a directory"
                                            : "a special file");
  }
  mapped_file f;
  f.path_ = path;
  f.size_ = static_cast<std::size_t>(st.st_size);
  if (f.size_ > 0) {
    void* p = mmap(nullptr, f.size_, PROT_READ, MAP_SHARED, fd, 0);
    if (p == MAP_FAILED) {
      int e = errno;
      ::close(fd);
      return make_error(errc::io_error, "{}: cannot map {} bytes: {}", path, f.size_,
                        std::strerror(e));
    }
    f.data_ = static_cast<const std::uint8_t*>(p);
  }
  ::close(fd);
  return f;
}

mapped_file::mapped_file(mapped_file&& other) noexcept
    : path_(std::move(other.path_)),
      data_(std::exchange(other.data_, nullptr)),
      size_(std::exchange(other.size_, 0)) {}

mapped_file& mapped_file::operator=(mapped_file&& other) noexcept {
  if (this != &other) {
    if (data_) munmap(const_cast<std::uint8_t*>(data_), size_);
    path_ = std::move(other.path_);
    data_ = std::exchange(other.data_, nullptr);
    size_ = std::exchange(other.size_, 0);
  }
  return *this;
}

mapped_file::~mapped_file() {
  if (data_) munmap(const_cast<std::uint8_t*>(data_), size_);
}

}  // namespace spindle
