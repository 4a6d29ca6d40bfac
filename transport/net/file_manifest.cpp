#include "transport/net/file_manifest.hpp"

#include <fcntl.h>
#include <openssl/evp.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <memory>
#include <sstream>

namespace spindle::transport::net {

namespace fs = std::filesystem;

std::uint64_t file_manifest::bytes() const {
  std::uint64_t n = 0;
  for (const auto& f : files) n += f.size;
  return n;
}

const file_entry* file_manifest::find(const std::string& path) const {
  for (const auto& f : files)
    if (f.path == path) return &f;
  return nullptr;
}

status check_relative_path(const std::string& path) {
  if (path.empty()) return make_error(errc::invalid_argument, "an empty path");
  if (path.front() == '/')
    return make_error(errc::invalid_argument, "'{}' is an absolute path", path.substr(0, 200));
  if (path.find('\0') != std::string::npos || path.find('\n') != std::string::npos)
    return make_error(errc::invalid_argument, "a path with a NUL or newline");
  std::size_t at = 0;
  while (at <= path.size()) {
    const auto end = std::min(path.find('/', at), path.size());
    const std::string part = path.substr(at, end - at);
    if (part.empty() || part == "." || part == "..")
      return make_error(errc::invalid_argument,
                        "'{}' leaves its folder or has an empty, '.' or "
                        "'..' component",
                        path.substr(0, 200));
    at = end + 1;
  }
  return status::ok();
}

expected<std::string> file_sha256(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return make_error(errc::io_error, "{}: {}", path, std::strerror(errno));
  std::unique_ptr<EVP_MD_CTX, decltype(&EVP_MD_CTX_free)> ctx(EVP_MD_CTX_new(), EVP_MD_CTX_free);
  EVP_DigestInit_ex(ctx.get(), EVP_sha256(), nullptr);
  std::vector<char> buf(1 << 20);
  for (;;) {
    const ssize_t n = ::read(fd, buf.data(), buf.size());
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      const int e = errno;
      ::close(fd);
      return make_error(errc::io_error, "{}: read: {}", path, std::strerror(e));
    }
    if (n == 0) break;
    EVP_DigestUpdate(ctx.get(), buf.data(), std::size_t(n));
  }
  ::close(fd);
  unsigned char md[EVP_MAX_MD_SIZE];
  unsigned len = 0;
  EVP_DigestFinal_ex(ctx.get(), md, &len);
  static constexpr char hex[] = "0123456789abcdef";
  std::string out;
  for (unsigned i = 0; i < len; ++i) out += {hex[md[i] >> 4], hex[md[i] & 15]};
  return out;
}

expected<std::vector<std::string>> folder_files(const std::string& dir) {
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) return make_error(errc::not_found, "{}: not a folder", dir);
  std::vector<std::string> out;
  fs::recursive_directory_iterator it(dir, fs::directory_options::none, ec), end;
  if (ec) return make_error(errc::io_error, "{}: {}", dir, ec.message());
  for (; it != end; it.increment(ec)) {
    if (ec) return make_error(errc::io_error, "{}: {}", dir, ec.message());
    if (it->is_symlink(ec) || !it->is_regular_file(ec)) continue;  // links are not followed
    std::string rel = fs::relative(it->path(), dir, ec).generic_string();
    if (check_relative_path(rel).is_ok()) out.push_back(std::move(rel));
  }
  std::sort(out.begin(), out.end());
  return out;
}

expected<file_manifest> list_folder(const std::string& dir, const std::string& unit) {
  SPINDLE_ASSIGN_OR_RETURN(auto paths, folder_files(dir));
  file_manifest m;
  m.unit = unit;
  for (auto& rel : paths) {
    const std::string path = dir + "/" + rel;
    std::error_code ec;
    const auto size = fs::file_size(path, ec);
    if (ec) return make_error(errc::io_error, "{}: {}", path, ec.message());
    SPINDLE_ASSIGN_OR_RETURN(auto sha, file_sha256(path));
    m.files.push_back({std::move(rel), std::uint64_t(size), std::move(sha)});
  }
  return m;
}

std::string to_text(const file_manifest& m) {
  std::string out = "unit " + m.unit + "\n";
  for (const auto& f : m.files) out += fmt::format("{} {} {}\n", f.size, f.sha256, f.path);
  return out;
}

expected<file_manifest> parse_manifest(const std::string& text) {
  std::istringstream in(text);
  std::string line;
  file_manifest m;
  if (!std::getline(in, line) || line.rfind("unit ", 0) != 0)
    return make_error(errc::corrupt_data, "a manifest without its 'unit' line");
  m.unit = line.substr(5);
  if (m.unit != ".") SPINDLE_TRY(check_relative_path(m.unit));
  for (int n = 2; std::getline(in, line); ++n) {
    const auto a = line.find(' '), b = a == std::string::npos ? a : line.find(' ', a + 1);
    if (b == std::string::npos || b - a != 65)
      return make_error(errc::corrupt_data, "manifest line {}: expected SIZE SHA256 PATH", n);
    file_entry f{line.substr(b + 1), 0, line.substr(a + 1, 64)};
    try {
      f.size = std::stoull(line.substr(0, a));
    } catch (const std::exception&) {
      return make_error(errc::corrupt_data, "manifest line {}: size '{}'", n, line.substr(0, a));
    }
    if (auto st = check_relative_path(f.path); !st.is_ok())
      return make_error(errc::corrupt_data, "manifest line {}: {}", n, st.message());
    m.files.push_back(std::move(f));
  }
  return m;
}

}  // namespace spindle::transport::net
