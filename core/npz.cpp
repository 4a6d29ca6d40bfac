#include "core/npz.hpp"

#include <unistd.h>
#include <zlib.h>

#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>

#include "core/mapped_file.hpp"

namespace spindle {
namespace {

std::uint32_t u32(const std::uint8_t* p) {
  return std::uint32_t(p[0]) | std::uint32_t(p[1]) << 8 | std::uint32_t(p[2]) << 16 |
         std::uint32_t(p[3]) << 24;
}
std::uint16_t u16(const std::uint8_t* p) { return std::uint16_t(p[0] | p[1] << 8); }

struct member {
  std::string name;
  std::uint16_t method = 0;
  std::uint64_t compressed = 0, size = 0, local_offset = 0;
};

// The central directory's entries (zip64 sizes and offsets read from the extra field).
expected<std::vector<member>> members_of(const mapped_file& f, const std::string& path) {
  const std::uint8_t* d = f.data();
  const std::size_t n = f.size();
  if (n < 22) return make_error(errc::corrupt_data, "{}: not a zip (.npz) archive", path);
  std::size_t eocd = n - 22;
  for (std::size_t back = 0; u32(d + eocd) != 0x06054b50u; ++back) {
    if (eocd == 0 || back > 65535)
      return make_error(errc::corrupt_data, "{}: not a zip (.npz) archive (no directory)", path);
    --eocd;
  }
  std::uint64_t count = u16(d + eocd + 10), offset = u32(d + eocd + 16);
  if (count == 0xffff || offset == 0xffffffffu) {  // zip64 end of central directory
    if (eocd < 20 || u32(d + eocd - 20) != 0x07064b50u)
      return make_error(errc::corrupt_data, "{}: zip64 locator missing", path);
    std::uint64_t z64 = 0;
    std::memcpy(&z64, d + eocd - 20 + 8, 8);
    if (z64 + 56 > n || u32(d + z64) != 0x06064b50u)
      return make_error(errc::corrupt_data, "{}: bad zip64 directory record", path);
    std::memcpy(&count, d + z64 + 32, 8);
    std::memcpy(&offset, d + z64 + 48, 8);
  }
  std::vector<member> out;
  std::size_t at = std::size_t(offset);
  for (std::uint64_t i = 0; i < count; ++i) {
    if (at + 46 > n || u32(d + at) != 0x02014b50u)
      return make_error(errc::corrupt_data, "{}: bad central directory entry {}", path, i);
    member m;
    m.method = u16(d + at + 10);
    m.compressed = u32(d + at + 20);
    m.size = u32(d + at + 24);
    const std::size_t name_len = u16(d + at + 28), extra_len = u16(d + at + 30),
                      comment_len = u16(d + at + 32);
    m.local_offset = u32(d + at + 42);
    if (at + 46 + name_len + extra_len > n)
      return make_error(errc::corrupt_data, "{}: truncated directory entry {}", path, i);
    m.name.assign(reinterpret_cast<const char*>(d + at + 46), name_len);
    // Zip64 extra field (id 1): the 0xffffffff fields, in order size, compressed, offset.
    for (std::size_t e = at + 46 + name_len; e + 4 <= at + 46 + name_len + extra_len;) {
      const std::uint16_t id = u16(d + e), len = u16(d + e + 2);
      std::size_t v = e + 4;
      if (id == 1) {
        for (auto* field : {&m.size, &m.compressed, &m.local_offset})
          if (*field == 0xffffffffu && v + 8 <= e + 4 + len) {
            std::memcpy(field, d + v, 8);
            v += 8;
          }
      }
      e += 4 + len;
    }
    out.push_back(std::move(m));
    at += 46 + name_len + extra_len + comment_len;
  }
  return out;
}

}  // namespace

expected<std::vector<std::string>> npz_arrays(const std::string& path) {
  SPINDLE_ASSIGN_OR_RETURN(auto f, mapped_file::open(path));
  SPINDLE_ASSIGN_OR_RETURN(auto ms, members_of(f, path));
  std::vector<std::string> names;
  for (const auto& m : ms)
    names.push_back(m.name.ends_with(".npy") ? m.name.substr(0, m.name.size() - 4) : m.name);
  return names;
}

expected<std::string> extract_npz_array(const std::string& path, const std::string& name) {
  SPINDLE_ASSIGN_OR_RETURN(auto f, mapped_file::open(path));
  SPINDLE_ASSIGN_OR_RETURN(auto ms, members_of(f, path));
  const member* found = nullptr;
  std::string names;
  for (const auto& m : ms) {
    if (m.name == name + ".npy" || m.name == name) found = &m;
    names += (names.empty() ? "" : ", ") + m.name;
  }
  if (!found)
    return make_error(errc::not_found, "{}: no array '{}' (it holds: {})", path, name,
                      names.empty() ? "nothing" : names);
  const std::uint8_t* d = f.data();
  const std::uint64_t lh = found->local_offset;
  if (lh + 30 > f.size() || u32(d + lh) != 0x04034b50u)
    return make_error(errc::corrupt_data, "{}: bad local header of '{}'", path, found->name);
  const std::uint64_t start = lh + 30 + u16(d + lh + 26) + u16(d + lh + 28);
  if (start + found->compressed > f.size())
    return make_error(errc::corrupt_data, "{}: '{}' runs past the end of the archive", path,
                      found->name);
  if (found->size > (std::uint64_t(1) << 40))
    return make_error(errc::corrupt_data, "{}: '{}' claims {} bytes", path, found->name,
                      found->size);
  std::vector<std::uint8_t> bytes(found->size);
  if (found->method == 0) {
    if (found->compressed != found->size)
      return make_error(errc::corrupt_data, "{}: stored '{}' has two sizes", path, found->name);
    std::memcpy(bytes.data(), d + start, bytes.size());
  } else if (found->method == 8) {
    z_stream z{};
    if (inflateInit2(&z, -15) != Z_OK)
      return make_error(errc::internal, "{}: zlib inflateInit failed", path);
    z.next_in = const_cast<Bytef*>(d + start);
    z.avail_in = uInt(found->compressed);
    z.next_out = bytes.data();
    z.avail_out = uInt(bytes.size());
    const int rc = inflate(&z, Z_FINISH);
    const std::uint64_t got = z.total_out;
    inflateEnd(&z);
    if (rc != Z_STREAM_END || got != found->size)
      return make_error(errc::corrupt_data, "{}: '{}' does not inflate to {} bytes", path,
                        found->name, found->size);
  } else {
    return make_error(errc::unsupported, "{}: '{}' uses zip method {} (stored or deflate only)",
                      path, found->name, found->method);
  }
  const auto tmp = std::filesystem::temp_directory_path() /
                   ("spindle-npz-" + std::to_string(::getpid()) + "-" + name + ".npy");
  std::ofstream out(tmp, std::ios::binary);
  out.write(reinterpret_cast<const char*>(bytes.data()), std::streamsize(bytes.size()));
  if (!out) return make_error(errc::io_error, "cannot write {}", tmp.string());
  return tmp.string();
}

}  // namespace spindle
