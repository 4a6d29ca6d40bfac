#include "core/text_file.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace spindle {
namespace {

std::string_view kind_of(mode_t m) {
  if (S_ISFIFO(m)) return "a FIFO";
  if (S_ISCHR(m)) return "a character device";
  if (S_ISBLK(m)) return "a block device";
  if (S_ISSOCK(m)) return "a socket";
  if (S_ISDIR(m)) return "a directory";
  return "not a regular file";
}

// Closes the descriptor on every path out.
struct fd_guard {
  int fd;
  ~fd_guard() {
    if (fd >= 0) ::close(fd);
  }
};

}  // namespace

status require_regular_file(const std::string& path, std::string_view what) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0)
    return make_error(errc::not_found, "{}: cannot open {}: {}", path, what, std::strerror(errno));
  if (!S_ISREG(st.st_mode))
    return make_error(errc::invalid_argument, "{}: {} must be a regular file, found {}", path, what,
                      kind_of(st.st_mode));
  return status::ok();
}

expected<std::string> read_text_file(const std::string& path, std::string_view what,
                                     std::uint64_t max_bytes) {
  // O_NONBLOCK: opening a FIFO must not wait for a writer; it is refused below.
  fd_guard f{::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC)};
  if (f.fd < 0)
    return make_error(errc::not_found, "{}: cannot open {}: {}", path, what, std::strerror(errno));
  struct stat st {};
  if (::fstat(f.fd, &st) != 0)
    return make_error(errc::io_error, "{}: cannot stat {}: {}", path, what, std::strerror(errno));
  if (!S_ISREG(st.st_mode))
    return make_error(errc::invalid_argument, "{}: {} must be a regular file, found {}", path, what,
                      kind_of(st.st_mode));
  if (std::uint64_t(st.st_size) > max_bytes)
    return make_error(errc::invalid_argument, "{}: {} is {} bytes, more than the {} allowed", path,
                      what, st.st_size, max_bytes);
  std::string text(std::size_t(st.st_size), '\0');
  std::size_t got = 0;
  while (got < text.size()) {
    const ssize_t n = ::read(f.fd, text.data() + got, text.size() - got);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0)
      return make_error(errc::io_error, "{}: cannot read {}: {}", path, what, std::strerror(errno));
    if (n == 0) break;  // shrank meanwhile: what is there
    got += std::size_t(n);
  }
  text.resize(got);
  return text;
}

}  // namespace spindle
