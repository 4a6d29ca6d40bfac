#include "runtime/token_file.hpp"

#include <fmt/format.h>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <random>

#include "core/log.hpp"
#include "core/text_file.hpp"

namespace spindle::runtime {
namespace {

expected<std::string> read_token(const std::string& path, std::string_view what) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0)
    return make_error(errc::not_found, "{}: no {} ({})", path, what, std::strerror(errno));
  // A token others can read is no secret: refuse it rather than serve with it.
  if ((st.st_mode & 077) != 0)
    return make_error(errc::invalid_argument,
                      "{}: the {} is open to other users (mode {:04o}); run chmod 600 {}", path,
                      what, st.st_mode & 07777, path);
  SPINDLE_ASSIGN_OR_RETURN(auto text, read_text_file(path, std::string(what), 4096));
  std::string token = text.substr(0, text.find('\n'));
  if (token.size() < 16)
    return make_error(errc::invalid_argument, "{}: the {} must hold at least 16 characters", path,
                      what);
  return token;
}

}  // namespace

expected<std::string> token_file(const std::string& path, std::string_view what, bool create) {
  struct stat st {};
  if (::stat(path.c_str(), &st) == 0 || !create) return read_token(path, what);
  std::random_device rd;
  std::string token;
  for (int i = 0; i < 32; ++i) token += "0123456789abcdef"[rd() % 16];
  if (const auto parent = std::filesystem::path(path).parent_path(); !parent.empty()) {
    std::error_code ec;  // the state folder (default_token_file's) may not exist yet
    if (std::filesystem::create_directories(parent, ec) && !ec)  // made here: private
      std::filesystem::permissions(parent, std::filesystem::perms::owner_all,
                                   std::filesystem::perm_options::replace, ec);
  }
  // Written whole under a private name, then linked into place (link fails if
  // the file exists): a reader sees no file or the whole token, never a part.
  // The private name is the process's and this call's own: two creators in one
  // process must not write the same temporary file.
  const std::string tmp = fmt::format("{}.tmp-{}-{:08x}", path, ::getpid(), rd());
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (fd < 0)
    return make_error(errc::io_error, "{}: cannot create the {}: {}", path, what,
                      std::strerror(errno));
  const std::string line = token + "\n";
  const bool written = ::write(fd, line.data(), line.size()) == ssize_t(line.size()) &&
                       ::fsync(fd) == 0;
  ::close(fd);
  const int linked = written ? ::link(tmp.c_str(), path.c_str()) : -1;
  const int link_errno = errno;
  ::unlink(tmp.c_str());
  if (!written) return make_error(errc::io_error, "{}: cannot write the {}", path, what);
  if (linked != 0) {
    if (link_errno == EEXIST) return read_token(path, what);  // created meanwhile by another process
    return make_error(errc::io_error, "{}: cannot create the {}: {}", path, what,
                      std::strerror(link_errno));
  }
  log::info("created {} {}", what, path);
  return token;
}

}  // namespace spindle::runtime
