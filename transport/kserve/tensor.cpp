#include "transport/kserve/tensor.hpp"

#include <fmt/ranges.h>

#include <cstring>
#include <limits>

#include "core/half.hpp"

namespace spindle::transport::kserve {
namespace {

struct type_row {
  const char* name;
  std::size_t bytes;
  char kind;  // 'i' signed, 'u' unsigned, 'f' float, 'b' bool, 's' bytes
};
constexpr type_row kTypes[] = {
    {"BOOL", 1, 'b'}, {"UINT8", 1, 'u'}, {"UINT16", 2, 'u'}, {"UINT32", 4, 'u'}, {"UINT64", 8, 'u'},
    {"INT8", 1, 'i'}, {"INT16", 2, 'i'}, {"INT32", 4, 'i'},  {"INT64", 8, 'i'},  {"FP16", 2, 'f'},
    {"FP32", 4, 'f'}, {"FP64", 8, 'f'},  {"BYTES", 0, 's'}};

const type_row* row_of(const std::string& name) {
  for (const auto& r : kTypes)
    if (name == r.name) return &r;
  return nullptr;
}

template <class T>
T load(const char* p) {
  T v;
  std::memcpy(&v, p, sizeof v);
  return v;
}

status decode_bytes(tensor& t, std::string_view bytes) {
  std::size_t at = 0;
  while (at < bytes.size()) {
    if (bytes.size() - at < 4)
      return make_error(errc::invalid_argument,
                        "input '{}': BYTES element {} has a cut length prefix", t.name,
                        t.strings.size());
    const std::uint32_t n = load<std::uint32_t>(bytes.data() + at);
    at += 4;
    if (n > bytes.size() - at)
      return make_error(errc::invalid_argument,
                        "input '{}': BYTES element {} says {} bytes, {} remain", t.name,
                        t.strings.size(), n, bytes.size() - at);
    t.strings.emplace_back(bytes.substr(at, n));
    at += n;
  }
  return status::ok();
}

}  // namespace

std::int64_t tensor::element_count() const {
  std::int64_t n = 1;
  for (auto d : shape) {
    if (d < 0 || (d > 0 && n > std::numeric_limits<std::int64_t>::max() / d)) return -1;
    n *= d;
  }
  return n;
}

bool tensor::is_integer() const {
  const auto* r = row_of(datatype);
  return r && (r->kind == 'i' || r->kind == 'u' || r->kind == 'b');
}

bool tensor::is_float() const {
  const auto* r = row_of(datatype);
  return r && r->kind == 'f';
}

std::size_t tensor::size() const {
  return is_bytes() ? strings.size() : is_float() ? floats.size() : ints.size();
}

const tensor* infer_request::input(const std::string& name) const {
  for (const auto& t : inputs)
    if (t.name == name) return &t;
  return nullptr;
}

bool known_datatype(const std::string& name) { return row_of(name) != nullptr; }

std::size_t element_bytes(const std::string& datatype) {
  const auto* r = row_of(datatype);
  return r ? r->bytes : 0;
}

status decode_raw(tensor& t, std::string_view bytes) {
  const auto* r = row_of(t.datatype);
  if (!r)
    return make_error(errc::invalid_argument, "input '{}': unknown datatype '{}'", t.name,
                      t.datatype);
  if (r->kind == 's') return decode_bytes(t, bytes);
  if (bytes.size() % r->bytes != 0)
    return make_error(errc::invalid_argument,
                      "input '{}': {} bytes is not a whole number of {} elements", t.name,
                      bytes.size(), t.datatype);
  const std::size_t n = bytes.size() / r->bytes;
  const char* p = bytes.data();
  if (r->kind == 'f') {
    t.floats.resize(n);
    if (r->bytes == 4) std::memcpy(t.floats.data(), p, n * 4);
    for (std::size_t i = 0; r->bytes == 8 && i < n; ++i)
      t.floats[i] = float(load<double>(p + 8 * i));
    for (std::size_t i = 0; r->bytes == 2 && i < n; ++i)
      t.floats[i] = half_to_float(load<std::uint16_t>(p + 2 * i));
    return status::ok();
  }
  t.ints.resize(n);
  for (std::size_t i = 0; i < n; ++i) {
    const char* e = p + i * r->bytes;
    std::int64_t v = 0;
    switch (r->bytes) {
      case 1:
        v = r->kind == 'i' ? load<std::int8_t>(e) : load<std::uint8_t>(e);
        break;
      case 2:
        v = r->kind == 'i' ? load<std::int16_t>(e) : load<std::uint16_t>(e);
        break;
      case 4:
        v = r->kind == 'i' ? load<std::int32_t>(e) : std::int64_t(load<std::uint32_t>(e));
        break;
      default: {
        const auto u = load<std::uint64_t>(e);
        if (r->kind == 'u' && u > std::uint64_t(std::numeric_limits<std::int64_t>::max()))
          return make_error(errc::invalid_argument, "input '{}': element {} = {} is past INT64",
                            t.name, i, u);
        v = std::int64_t(u);
      }
    }
    t.ints[i] = v;
  }
  return status::ok();
}

status check_shape(const tensor& t) {
  const std::int64_t want = t.element_count();
  if (want < 0)
    return make_error(errc::invalid_argument, "input '{}': shape [{}] is not a valid shape", t.name,
                      fmt::join(t.shape, ", "));
  if (std::uint64_t(want) != t.size())
    return make_error(errc::invalid_argument,
                      "input '{}': shape [{}] holds {} elements, {} were sent", t.name,
                      fmt::join(t.shape, ", "), want, t.size());
  return status::ok();
}

}  // namespace spindle::transport::kserve
