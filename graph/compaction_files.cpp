#include "graph/compaction_files.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "graph/graph_log.hpp"

namespace spindle::graph {
namespace fs = std::filesystem;
namespace {

std::string pointer_of(const std::string& log_path) { return log_path + ".current"; }

status fsync_path(const std::string& path, int flags) {
  const int fd = ::open(path.c_str(), flags | O_CLOEXEC);
  if (fd < 0) return make_error(errc::io_error, "{}: open: {}", path, std::strerror(errno));
  const int rc = ::fsync(fd);
  const int err = errno;
  ::close(fd);
  if (rc != 0) return make_error(errc::io_error, "{}: fsync: {}", path, std::strerror(err));
  return status::ok();
}

std::string parent_of(const std::string& path) {
  const auto p = fs::path(path).parent_path();
  return p.empty() ? "." : p.string();
}

}  // namespace

expected<graph_files> current_graph_files(const std::string& log_path) {
  std::ifstream in(pointer_of(log_path));
  if (!in) {
    // Compaction outputs without the file naming them, beside a log cut to its
    // header: the file was lost or removed, and starting from the log alone
    // would drop every update they hold. (A compaction cut short before its
    // switch leaves a base too, but the log then still holds every batch.)
    const std::string prefix = fs::path(log_path).filename().string() + ".v";
    std::error_code ec;
    const auto size = fs::file_size(log_path, ec);
    if (!ec && size > kGraphLogHeaderBytes) return graph_files{log_path, ""};
    for (const auto& e : fs::directory_iterator(parent_of(log_path), ec)) {
      const auto name = e.path().filename().string();
      if (name.starts_with(prefix) && name.ends_with(".base") &&
          fs::exists(e.path() / "metadata.json"))
        return make_error(errc::corrupt_data,
                          "{} is missing but the compacted graph {} is there: restore {} (two "
                          "lines: log=NAME of its log, base=NAME of its base) rather than start "
                          "from {} alone, which no longer holds the updates",
                          pointer_of(log_path), e.path().string(), pointer_of(log_path), log_path);
    }
    return graph_files{log_path, ""};
  }
  graph_files f;
  for (std::string line; std::getline(in, line);) {
    const auto eq = line.find('=');
    if (eq == std::string::npos) continue;
    const std::string key = line.substr(0, eq), name = line.substr(eq + 1);
    if (name.empty() || name.find('/') != std::string::npos || name == "." || name == "..")
      return make_error(errc::corrupt_data,
                        "{}: {} = '{}' is not a file name beside the log (compactions write "
                        "theirs there)",
                        pointer_of(log_path), key, name);
    const std::string path = (fs::path(parent_of(log_path)) / name).string();
    if (key == "log") f.log = path;
    if (key == "base") f.base_dir = path;
  }
  if (f.log.empty() || f.base_dir.empty() || !fs::exists(f.log) ||
      !fs::exists(f.base_dir + "/metadata.json"))
    return make_error(errc::corrupt_data,
                      "{}: names a compacted graph ({}, {}) that is missing or unreadable: "
                      "restore them (they hold the graph's updates; {} holds none of them "
                      "any more)",
                      pointer_of(log_path), f.base_dir.empty() ? "no base" : f.base_dir,
                      f.log.empty() ? "no log" : f.log, log_path);
  return f;
}

graph_files compaction_files(const std::string& log_path, std::uint64_t version) {
  const std::string stem = log_path + ".v" + std::to_string(version);
  return graph_files{stem, stem + ".base"};
}

status adopt_graph_files(const std::string& log_path, const graph_files& f) {
  const std::string ptr = pointer_of(log_path), tmp = ptr + ".tmp";
  {
    std::ofstream out(tmp, std::ios::trunc);
    out << "log=" << fs::path(f.log).filename().string() << "\n"
        << "base=" << fs::path(f.base_dir).filename().string() << "\n";
    out.flush();
    if (!out) return make_error(errc::io_error, "{}: cannot write", tmp);
  }
  SPINDLE_TRY(fsync_path(tmp, O_RDONLY));
  if (std::rename(tmp.c_str(), ptr.c_str()) != 0)
    return make_error(errc::io_error, "{}: rename: {}", ptr, std::strerror(errno));
  return fsync_path(parent_of(log_path), O_RDONLY | O_DIRECTORY);
}

std::uint64_t remove_replaced_files(const std::string& log_path, const graph_files& keep) {
  const std::string prefix = fs::path(log_path).filename().string() + ".v";
  std::uint64_t freed = 0;
  std::error_code ec;
  auto size_of = [&](const fs::path& p) {
    std::uint64_t n = 0;
    if (fs::is_directory(p, ec)) {
      for (const auto& e : fs::recursive_directory_iterator(p, ec))
        if (e.is_regular_file(ec)) n += e.file_size(ec);
    } else {
      n = fs::file_size(p, ec);
    }
    return ec ? 0 : n;
  };
  for (const auto& e : fs::directory_iterator(parent_of(log_path), ec)) {
    const auto name = e.path().filename().string();
    if (!name.starts_with(prefix)) continue;
    if (e.path() == fs::path(keep.log) || e.path() == fs::path(keep.base_dir)) continue;
    freed += size_of(e.path());
    fs::remove_all(e.path(), ec);
  }
  if (!keep.base_dir.empty()) {  // P's records are in the compacted base now
    const auto size = fs::file_size(log_path, ec);
    if (!ec && size > kGraphLogHeaderBytes && ::truncate(log_path.c_str(), off_t(kGraphLogHeaderBytes)) == 0)
      freed += size - kGraphLogHeaderBytes;
  }
  return freed;
}

status sync_directory(const std::string& dir) {
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(dir, ec))
    if (e.is_regular_file(ec)) SPINDLE_TRY(fsync_path(e.path().string(), O_RDONLY));
  if (ec) return make_error(errc::io_error, "{}: list: {}", dir, ec.message());
  return fsync_path(dir, O_RDONLY | O_DIRECTORY);
}

}  // namespace spindle::graph
