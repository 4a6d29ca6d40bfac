#include "core/npy.hpp"

#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <limits>

#include "core/half.hpp"

namespace spindle {
namespace {

constexpr std::string_view kMagic = "\x93NUMPY";

struct dtype_row {
  dtype type;
  std::string_view name, descr;
  std::size_t size;
};
constexpr dtype_row kDtypes[] = {
    {dtype::u8, "uint8", "|u1", 1},    {dtype::i32, "int32", "<i4", 4},
    {dtype::i64, "int64", "<i8", 8},   {dtype::f16, "float16", "<f2", 2},
    {dtype::f32, "float32", "<f4", 4}, {dtype::f64, "float64", "<f8", 8},
    {dtype::u32, "uint32", "<u4", 4},  {dtype::u64, "uint64", "<u8", 8},
    {dtype::b1, "bool", "|b1", 1},     {dtype::i16, "int16", "<i2", 2},
};

const dtype_row& row_of(dtype t) { return kDtypes[static_cast<int>(t)]; }

// Finds the value text after `'key':` in the header dict.
expected<std::string_view> dict_value(std::string_view dict, std::string_view key,
                                      std::string_view name) {
  std::string quoted;  // 'key' (built in place: GCC 12 misreads the temporaries of a + chain)
  quoted.reserve(key.size() + 2);
  quoted.append(1, '\'').append(key).append(1, '\'');
  auto pos = dict.find(quoted);
  if (pos == std::string_view::npos)
    return make_error(errc::corrupt_data, "{}: header has no '{}' entry", name, key);
  pos = dict.find(':', pos + quoted.size());
  if (pos == std::string_view::npos)
    return make_error(errc::corrupt_data, "{}: header entry '{}' has no value", name, key);
  std::string_view rest = dict.substr(pos + 1);
  while (!rest.empty() && rest.front() == ' ') rest.remove_prefix(1);
  return rest;
}

expected<std::vector<std::int64_t>> parse_shape(std::string_view v, std::string_view name) {
  if (v.empty() || v.front() != '(')
    return make_error(errc::corrupt_data, "{}: header 'shape' is not a tuple", name);
  auto close = v.find(')');
  if (close == std::string_view::npos)
    return make_error(errc::corrupt_data, "{}: header 'shape' tuple is not closed", name);
  std::vector<std::int64_t> shape;
  std::string_view body = v.substr(1, close - 1);
  while (!body.empty()) {
    while (!body.empty() && (body.front() == ' ' || body.front() == ',')) body.remove_prefix(1);
    if (body.empty()) break;
    std::int64_t dim = 0;
    std::size_t digits = 0;
    while (digits < body.size() && body[digits] >= '0' && body[digits] <= '9') {
      if (dim > (std::numeric_limits<std::int64_t>::max() - 9) / 10)
        return make_error(errc::corrupt_data, "{}: header shape dimension overflows", name);
      dim = dim * 10 + (body[digits++] - '0');
    }
    if (digits == 0)
      return make_error(errc::corrupt_data, "{}: header shape has a non-integer dimension", name);
    shape.push_back(dim);
    body.remove_prefix(digits);
  }
  return shape;
}

expected<dtype> parse_descr(std::string_view v, std::string_view name) {
  if (v.size() < 5 || v.front() != '\'')
    return make_error(errc::corrupt_data, "{}: header 'descr' is not a string", name);
  std::string_view descr = v.substr(1, v.find('\'', 1) - 1);
  for (const auto& r : kDtypes)
    if (descr == r.descr) return r.type;
  if (!descr.empty() && descr.front() == '>')
    return make_error(errc::unsupported, "{}: big-endian dtype '{}' is not supported", name, descr);
  return make_error(errc::unsupported, "{}: dtype '{}' is not supported", name, descr);
}

}  // namespace

std::string_view to_string(dtype t) { return row_of(t).name; }
std::size_t dtype_size(dtype t) { return row_of(t).size; }
std::string_view npy_descr(dtype t) { return row_of(t).descr; }

expected<dtype> parse_dtype_name(std::string_view name) {
  for (const auto& r : kDtypes)
    if (name == r.name) return r.type;
  return make_error(errc::unsupported, "unknown dtype '{}'", name);
}

expected<npy_header> parse_npy_header(const std::uint8_t* data, std::size_t size,
                                      std::string_view name) {
  if (size < 10 || std::memcmp(data, kMagic.data(), kMagic.size()) != 0)
    return make_error(errc::corrupt_data, "{}: not an .npy file (bad magic)", name);
  std::uint8_t major = data[6];
  std::size_t len_bytes = major == 1 ? 2 : (major == 2 || major == 3) ? 4 : 0;
  if (len_bytes == 0)
    return make_error(errc::unsupported, "{}: .npy version {} is not supported", name, major);
  if (size < 8 + len_bytes) return make_error(errc::corrupt_data, "{}: truncated header", name);
  std::size_t header_len = 0;
  for (std::size_t i = 0; i < len_bytes; ++i) header_len |= std::size_t{data[8 + i]} << (8 * i);
  std::size_t offset = 8 + len_bytes + header_len;
  if (offset > size)
    return make_error(errc::corrupt_data,
                      "{}: header length {} runs past the end of the {}-byte file", name,
                      header_len, size);
  std::string_view dict(reinterpret_cast<const char*>(data + 8 + len_bytes), header_len);
  SPINDLE_ASSIGN_OR_RETURN(auto descr_text, dict_value(dict, "descr", name));
  SPINDLE_ASSIGN_OR_RETURN(auto order_text, dict_value(dict, "fortran_order", name));
  SPINDLE_ASSIGN_OR_RETURN(auto shape_text, dict_value(dict, "shape", name));
  const bool fortran = order_text.substr(0, 4) == "True";
  if (!fortran && order_text.substr(0, 5) != "False")
    return make_error(errc::corrupt_data, "{}: header 'fortran_order' is neither True nor False",
                      name);
  SPINDLE_ASSIGN_OR_RETURN(dtype type, parse_descr(descr_text, name));
  SPINDLE_ASSIGN_OR_RETURN(auto shape, parse_shape(shape_text, name));
  return npy_header{type, std::move(shape), offset, fortran};
}

std::int64_t npy_array::num_elements() const {
  std::int64_t n = 1;
  for (auto d : shape_) n *= d;
  return n;
}

expected<npy_array> npy_array::open(const std::string& path) {
  SPINDLE_ASSIGN_OR_RETURN(auto a, open_any_order(path));
  if (a.fortran_ && a.shape_.size() > 1)
    return make_error(errc::unsupported,
                      "{}: Fortran-order array; this file must be C order (np.ascontiguousarray)",
                      path);
  return a;
}

std::size_t npy_array::offset_of(std::int64_t r, std::int64_t c) const {
  const std::int64_t rows = shape_.empty() ? 1 : shape_[0];
  const std::int64_t cols = shape_.size() > 1 ? shape_[1] : 1;
  return std::size_t(fortran_ ? c * rows + r : r * cols + c) * dtype_size(type_);
}

namespace {

// The value of type T stored (unaligned) at p.
template <class T>
T load_at(const std::uint8_t* p) {
  T v;
  std::memcpy(&v, p, sizeof v);
  return v;
}

}  // namespace

double npy_array::element(std::int64_t r, std::int64_t c) const {
  const std::uint8_t* p = data_ + offset_of(r, c);
  switch (type_) {
    case dtype::u8:
      return load_at<std::uint8_t>(p);
    case dtype::b1:
      return *p != 0 ? 1.0 : 0.0;
    case dtype::i16:
      return load_at<std::int16_t>(p);
    case dtype::i32:
      return load_at<std::int32_t>(p);
    case dtype::i64:
      return double(load_at<std::int64_t>(p));
    case dtype::u32:
      return load_at<std::uint32_t>(p);
    case dtype::u64:
      return double(load_at<std::uint64_t>(p));
    case dtype::f32:
      return load_at<float>(p);
    case dtype::f64:
      return load_at<double>(p);
    case dtype::f16:
      return half_to_float(load_at<std::uint16_t>(p));
  }
  return 0;
}

expected<std::int64_t> npy_array::element_i64(std::int64_t r, std::int64_t c) const {
  const std::uint8_t* p = data_ + offset_of(r, c);
  switch (type_) {
    case dtype::u8:
    case dtype::b1:
      return std::int64_t(*p);
    case dtype::i16:
      return std::int64_t(load_at<std::int16_t>(p));
    case dtype::i32:
      return std::int64_t(load_at<std::int32_t>(p));
    case dtype::i64:
      return load_at<std::int64_t>(p);
    case dtype::u32:
      return std::int64_t(load_at<std::uint32_t>(p));
    case dtype::u64: {
      const auto v = load_at<std::uint64_t>(p);
      if (v > std::uint64_t(std::numeric_limits<std::int64_t>::max()))
        return make_error(errc::invalid_argument, "{}: [{}, {}] = {} is past the int64 range",
                          path(), r, c, v);
      return std::int64_t(v);
    }
    default:
      return make_error(errc::unsupported, "{}: dtype {} holds no integer ids", path(),
                        to_string(type_));
  }
}

expected<npy_array> npy_array::open_any_order(const std::string& path) {
  npy_array a;
  SPINDLE_ASSIGN_OR_RETURN(a.file_, mapped_file::open(path));
  SPINDLE_ASSIGN_OR_RETURN(auto h, parse_npy_header(a.file_.data(), a.file_.size(), path));
  std::size_t elem = dtype_size(h.type);
  std::size_t count = 1;
  for (auto d : h.shape) {
    if (d != 0 &&
        count > std::numeric_limits<std::size_t>::max() / elem / static_cast<std::size_t>(d))
      return make_error(errc::corrupt_data, "{}: shape is too large", path);
    count *= static_cast<std::size_t>(d);
  }
  std::size_t have = a.file_.size() - h.data_offset;
  if (have != count * elem)
    return make_error(
        errc::corrupt_data,
        "{}: {}: header says {} {} elements ({} bytes) but the file holds {} data bytes", path,
        have < count * elem ? "truncated" : "trailing bytes", count, to_string(h.type),
        count * elem, have);
  a.type_ = h.type;
  a.fortran_ = h.fortran;
  a.shape_ = std::move(h.shape);
  a.data_ = a.file_.data() + h.data_offset;
  a.bytes_ = have;
  return a;
}

expected<npy_writer> npy_writer::create(const std::string& path, dtype type,
                                        std::vector<std::int64_t> shape) {
  npy_writer w;
  w.path_ = path;
  w.tmp_path_ = path + ".tmp";
  w.file_ = std::fopen(w.tmp_path_.c_str(), "wb");
  if (!w.file_)
    return make_error(errc::io_error, "{}: cannot create: {}", w.tmp_path_, std::strerror(errno));
  std::string dims;
  std::size_t count = 1;
  for (auto d : shape) {
    dims += std::to_string(d) + (shape.size() == 1 ? "," : ", ");
    count *= static_cast<std::size_t>(d);
  }
  if (shape.size() > 1) dims.resize(dims.size() - 2);
  std::string header = fmt::format("{{'descr': '{}', 'fortran_order': False, 'shape': ({}), }}",
                                   npy_descr(type), dims);
  // Pad so magic + version + length + header + '\n' is a multiple of 64 (numpy's alignment).
  std::size_t total = 10 + header.size() + 1;
  header.append((64 - total % 64) % 64, ' ');
  header.push_back('\n');
  std::string prefix(kMagic);
  prefix += '\x01';
  prefix += '\x00';
  prefix += static_cast<char>(header.size() & 0xff);
  prefix += static_cast<char>(header.size() >> 8);
  std::string all = prefix + header;
  if (std::fwrite(all.data(), 1, all.size(), w.file_) != all.size())
    return make_error(errc::io_error, "{}: write failed: {}", w.tmp_path_, std::strerror(errno));
  w.expected_bytes_ = count * dtype_size(type);
  return w;
}

npy_writer::npy_writer(npy_writer&& o) noexcept
    : path_(std::move(o.path_)),
      tmp_path_(std::move(o.tmp_path_)),
      file_(std::exchange(o.file_, nullptr)),
      expected_bytes_(o.expected_bytes_),
      written_(o.written_),
      hash_(std::move(o.hash_)) {}

npy_writer::~npy_writer() {
  if (file_) {
    std::fclose(file_);
    ::unlink(tmp_path_.c_str());
  }
}

status npy_writer::write(const void* data, std::size_t bytes) {
  if (written_ + bytes > expected_bytes_)
    return make_error(errc::internal, "{}: writing {} bytes past the declared {}", path_,
                      written_ + bytes, expected_bytes_);
  if (std::fwrite(data, 1, bytes, file_) != bytes)
    return make_error(errc::io_error, "{}: write failed: {}", tmp_path_, std::strerror(errno));
  hash_.update(data, bytes);
  written_ += bytes;
  return status::ok();
}

expected<std::uint64_t> npy_writer::close() {
  if (written_ != expected_bytes_)
    return make_error(errc::internal, "{}: wrote {} of {} declared bytes", path_, written_,
                      expected_bytes_);
  int rc = std::fclose(std::exchange(file_, nullptr));
  if (rc != 0 || std::rename(tmp_path_.c_str(), path_.c_str()) != 0) {
    ::unlink(tmp_path_.c_str());
    return make_error(errc::io_error, "{}: cannot finish writing: {}", path_, std::strerror(errno));
  }
  return hash_.digest();
}

expected<std::uint64_t> write_npy(const std::string& path, dtype type,
                                  std::vector<std::int64_t> shape, const void* data) {
  SPINDLE_ASSIGN_OR_RETURN(auto w, npy_writer::create(path, type, std::move(shape)));
  SPINDLE_TRY(w.write(data, w.expected_bytes()));
  return w.close();
}

}  // namespace spindle
