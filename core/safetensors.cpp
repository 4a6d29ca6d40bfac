#include "core/safetensors.hpp"

#include "core/json_depth.hpp"

#include <fmt/ranges.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "core/half.hpp"

namespace spindle {
namespace {

std::size_t dtype_bytes(const std::string& d) {
  if (d == "F64" || d == "I64" || d == "U64") return 8;
  if (d == "F32" || d == "I32" || d == "U32") return 4;
  if (d == "F16" || d == "BF16" || d == "I16" || d == "U16") return 2;
  if (d == "I8" || d == "U8" || d == "BOOL" || d == "F8_E4M3" || d == "F8_E5M2") return 1;
  return 0;
}

status parse_entry(const std::string& path, const std::string& name, const nlohmann::json& e,
                   const std::uint8_t* data, std::size_t data_bytes, safetensor_view& out) {
  auto where = [&] { return fmt::format("{}: tensor '{}'", path, name); };
  if (!e.is_object() || !e.contains("dtype") || !e.contains("shape") || !e.contains("data_offsets"))
    return make_error(errc::corrupt_data, "{}: needs dtype, shape and data_offsets", where());
  out.dtype = e["dtype"].get<std::string>();
  std::size_t esize = dtype_bytes(out.dtype);
  if (esize == 0) return make_error(errc::unsupported, "{}: unknown dtype {}", where(), out.dtype);
  std::int64_t count = 1;
  for (const auto& d : e["shape"]) {
    if (!d.is_number_integer() || d.get<std::int64_t>() < 0)
      return make_error(errc::corrupt_data, "{}: bad shape {}", where(), e["shape"].dump());
    out.shape.push_back(d.get<std::int64_t>());
    count *= out.shape.back();
  }
  const auto& off = e["data_offsets"];
  if (!off.is_array() || off.size() != 2)
    return make_error(errc::corrupt_data, "{}: data_offsets must be [begin, end]", where());
  auto begin = off[0].get<std::uint64_t>(), end = off[1].get<std::uint64_t>();
  if (begin > end || end > data_bytes)
    return make_error(errc::corrupt_data, "{}: data_offsets [{}, {}] outside the {}-byte data",
                      where(), begin, end, data_bytes);
  if (end - begin != std::uint64_t(count) * esize)
    return make_error(errc::corrupt_data, "{}: {} bytes for shape {} of {}", where(), end - begin,
                      format_shape(out.shape), out.dtype);
  out.bytes = std::span<const std::uint8_t>(data + begin, end - begin);
  return status::ok();
}

}  // namespace

std::int64_t safetensor_view::num_elements() const {
  std::int64_t n = 1;
  for (auto d : shape) n *= d;
  return n;
}

std::string format_shape(const std::vector<std::int64_t>& shape) {
  return fmt::format("[{}]", fmt::join(shape, ", "));
}

namespace {

// Two tensors sharing bytes: a crafted file, never one a writer makes; refused.
status check_no_overlap(const std::string& path, const std::map<std::string, safetensor_view>& ts) {
  std::vector<std::pair<const std::uint8_t*, const std::string*>> starts;
  for (const auto& [name, t] : ts)
    if (!t.bytes.empty()) starts.push_back({t.bytes.data(), &name});
  std::sort(starts.begin(), starts.end());
  for (std::size_t i = 1; i < starts.size(); ++i) {
    const auto& prev = ts.at(*starts[i - 1].second);
    if (prev.bytes.data() + prev.bytes.size() > starts[i].first)
      return make_error(errc::corrupt_data, "{}: tensors '{}' and '{}' overlap in the data section",
                        path, *starts[i - 1].second, *starts[i].second);
  }
  return status::ok();
}

}  // namespace

expected<safetensors_file> safetensors_file::open(const std::string& path) {
  safetensors_file f;
  SPINDLE_ASSIGN_OR_RETURN(f.file_, mapped_file::open(path));
  const std::uint8_t* p = f.file_.data();
  const std::size_t size = f.file_.size();
  if (size < 8)
    return make_error(errc::corrupt_data, "{}: shorter than the 8-byte header length", path);
  std::uint64_t hlen = 0;
  std::memcpy(&hlen, p, 8);  // little-endian on every platform Spindle builds for
  if (hlen > size - 8 || hlen > (100u << 20))
    return make_error(errc::corrupt_data,
                      "{}: its header length field exceeds the file or 100 MiB ({} bytes)", path,
                      size);
  const std::string_view head(reinterpret_cast<const char*>(p + 8), hlen);
  if (json_depth(head, kMaxJsonDepth) > kMaxJsonDepth)
    return make_error(errc::corrupt_data, "{}: header is nested deeper than {} levels", path,
                      kMaxJsonDepth);
  nlohmann::json header;
  try {
    header = nlohmann::json::parse(p + 8, p + 8 + hlen);
  } catch (const std::exception& e) {
    return make_error(errc::corrupt_data, "{}: header is not JSON: {}", path, e.what());
  }
  if (!header.is_object())
    return make_error(errc::corrupt_data, "{}: header is not an object", path);
  const std::uint8_t* data = p + 8 + hlen;
  const std::size_t data_bytes = size - 8 - hlen;
  for (auto& [name, e] : header.items()) {
    if (name == "__metadata__") {
      if (e.is_object())
        for (auto& [k, v] : e.items())
          f.metadata_[k] = v.is_string() ? v.get<std::string>() : v.dump();
      continue;
    }
    safetensor_view v;
    try {
      SPINDLE_TRY(parse_entry(path, name, e, data, data_bytes, v));
    } catch (const std::exception& ex) {
      return make_error(errc::corrupt_data, "{}: tensor '{}': {}", path, name, ex.what());
    }
    f.tensors_.emplace(name, std::move(v));
  }
  SPINDLE_TRY(check_no_overlap(path, f.tensors_));
  return f;
}

expected<std::vector<float>> safetensors_file::as_f32(
    const std::string& name, const std::vector<std::int64_t>& shape) const {
  auto it = tensors_.find(name);
  if (it == tensors_.end())
    return make_error(errc::not_found, "{}: missing tensor '{}' (expected shape {})", path(), name,
                      format_shape(shape));
  const safetensor_view& t = it->second;
  if (!shape.empty() && t.shape != shape)
    return make_error(errc::invalid_argument, "{}: tensor '{}' has shape {}, expected {}", path(),
                      name, format_shape(t.shape), format_shape(shape));
  std::vector<float> out(std::size_t(t.num_elements()));
  const std::uint8_t* b = t.bytes.data();
  if (t.dtype == "F32") {
    std::memcpy(out.data(), b, out.size() * 4);
  } else if (t.dtype == "F64") {
    for (std::size_t i = 0; i < out.size(); ++i) {
      double d;
      std::memcpy(&d, b + 8 * i, 8);
      out[i] = float(d);
    }
  } else if (t.dtype == "F16" || t.dtype == "BF16") {
    for (std::size_t i = 0; i < out.size(); ++i) {
      std::uint16_t h;
      std::memcpy(&h, b + 2 * i, 2);
      out[i] = t.dtype == "F16" ? half_to_float(h) : std::bit_cast<float>(std::uint32_t(h) << 16);
    }
  } else {
    return make_error(errc::unsupported,
                      "{}: tensor '{}' has dtype {}; weights must be F32, F64, F16 or BF16", path(),
                      name, t.dtype);
  }
  for (std::size_t i = 0; i < out.size(); ++i)  // a NaN weight answers NaN to every call
    if (!std::isfinite(out[i]))
      return make_error(errc::corrupt_data, "{}: tensor '{}' holds {} at element {}", path(), name,
                        out[i], i);
  return out;
}

status write_safetensors(const std::string& path, const std::vector<safetensor_f32>& tensors,
                         const std::map<std::string, std::string>& metadata) {
  nlohmann::json header = nlohmann::json::object();
  if (!metadata.empty()) header["__metadata__"] = metadata;
  std::uint64_t offset = 0;
  for (const auto& t : tensors) {
    std::int64_t count = 1;
    for (auto d : t.shape) count *= d;
    if (std::size_t(count) != t.values.size())
      return make_error(errc::invalid_argument, "{}: tensor '{}' has {} values for shape {}", path,
                        t.name, t.values.size(), format_shape(t.shape));
    header[t.name] = {{"dtype", "F32"},
                      {"shape", t.shape},
                      {"data_offsets", {offset, offset + 4 * t.values.size()}}};
    offset += 4 * t.values.size();
  }
  std::string text = header.dump();
  while ((8 + text.size()) % 8 != 0) text.push_back(' ');  // align the data section
  std::string tmp = path + ".tmp";
  FILE* f = std::fopen(tmp.c_str(), "wb");
  if (!f) return make_error(errc::io_error, "{}: cannot create", tmp);
  std::uint64_t hlen = text.size();
  bool ok = std::fwrite(&hlen, 8, 1, f) == 1 &&
            std::fwrite(text.data(), 1, text.size(), f) == text.size();
  for (const auto& t : tensors)
    ok = ok && std::fwrite(t.values.data(), 4, t.values.size(), f) == t.values.size();
  ok = (std::fclose(f) == 0) && ok;
  if (!ok) return make_error(errc::io_error, "{}: write failed", tmp);
  std::error_code ec;
  std::filesystem::rename(tmp, path, ec);
  if (ec) return make_error(errc::io_error, "{}: rename failed: {}", path, ec.message());
  return status::ok();
}

}  // namespace spindle
