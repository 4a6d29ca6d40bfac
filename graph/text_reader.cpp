#include "graph/text_reader.hpp"

#include <zlib.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <memory>

#include "core/progress.hpp"

namespace spindle::graph {

status for_each_line(const std::string& path,
                     const std::function<status(std::int64_t, std::string_view)>& fn,
                     bool show_progress) {
  std::unique_ptr<gzFile_s, decltype(&gzclose)> file(gzopen(path.c_str(), "rb"), &gzclose);
  if (!file) {
    errc code = errno == ENOENT ? errc::not_found : errc::io_error;
    return make_error(code, "{}: cannot open: {}", path, std::strerror(errno));
  }
  gzbuffer(file.get(), 1 << 20);
  std::string buf(1 << 20, '\0');
  std::string carry;
  std::int64_t line_no = 0;
  std::unique_ptr<progress> prog;
  std::error_code ec;
  auto file_bytes = std::filesystem::file_size(path, ec);
  if (show_progress && !ec) prog = std::make_unique<progress>("reading " + path, file_bytes, "bytes");
  z_off_t consumed = 0;
  for (;;) {
    int n = gzread(file.get(), buf.data(), static_cast<unsigned>(buf.size()));
    if (n < 0) {
      int err = 0;
      return make_error(errc::corrupt_data, "{}: read failed after line {}: {}", path, line_no,
                        gzerror(file.get(), &err));
    }
    if (n == 0) break;
    if (prog) {
      z_off_t now = gzoffset(file.get());
      prog->advance(static_cast<std::uint64_t>(now - consumed));
      consumed = now;
    }
    std::string_view chunk(buf.data(), static_cast<std::size_t>(n));
    std::size_t pos;
    while ((pos = chunk.find('\n')) != std::string_view::npos) {
      std::string_view line = chunk.substr(0, pos);
      if (!carry.empty()) {
        carry.append(line);
        line = carry;
      }
      SPINDLE_TRY(fn(++line_no, line));
      carry.clear();
      chunk.remove_prefix(pos + 1);
    }
    carry.append(chunk);
  }
  if (!carry.empty()) SPINDLE_TRY(fn(++line_no, carry));
  return status::ok();
}

void split_fields(std::string_view line, std::vector<std::string_view>& out) {
  out.clear();
  if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
  std::size_t i = 0;
  while (i < line.size()) {
    while (i < line.size() && (line[i] == ' ' || line[i] == '\t')) ++i;
    if (i >= line.size()) break;
    std::size_t j = i;
    while (j < line.size() && line[j] != ',' && line[j] != ' ' && line[j] != '\t') ++j;
    out.push_back(line.substr(i, j - i));
    while (j < line.size() && (line[j] == ' ' || line[j] == '\t')) ++j;
    if (j < line.size() && line[j] == ',') {
      ++j;
      if (j >= line.size()) out.push_back({});  // trailing empty field
    }
    i = j;
  }
}

}  // namespace spindle::graph
