#include "splitrpc/rec_wire.hpp"

#include <cmath>
#include <cstring>

namespace spindle::splitrpc {
namespace {

// Writers into a buffer sized beforehand; each returns the next free word.
float* put_u32(float* at, std::uint32_t v) {
  std::memcpy(at, &v, 4);
  return at + 1;
}

float* put_i64(float* at, std::int64_t v) {
  std::memcpy(at, &v, 8);
  return at + 2;
}

// Reads words in order; every read is bounds-checked.
struct reader {
  std::span<const float> w;
  std::size_t at = 0;
  bool has(std::size_t n) const { return w.size() - at >= n; }
  std::uint32_t u32() {
    std::uint32_t v;
    std::memcpy(&v, &w[at++], 4);
    return v;
  }
  std::int64_t i64() {
    std::int64_t v;
    std::memcpy(&v, &w[at], 8);
    at += 2;
    return v;
  }
};

}  // namespace

std::vector<float> pack_rec_request(std::int64_t batch, std::span<const float> dense,
                                    std::span<const nn::sparse_input> sparse) {
  std::size_t words = 4 + dense.size();
  for (const auto& t : sparse) words += 2 * (t.offsets.size() + t.indices.size());
  std::vector<float> w(words);
  float* at = w.data();
  at = put_u32(at, kRecWireMagic);
  at = put_u32(at, std::uint32_t(batch));
  at = put_u32(at, batch > 0 ? std::uint32_t(dense.size() / std::size_t(batch)) : 0);
  at = put_u32(at, std::uint32_t(sparse.size()));
  if (!dense.empty()) std::memcpy(at, dense.data(), dense.size() * sizeof(float));
  at += dense.size();
  for (const auto& t : sparse) {
    for (auto o : t.offsets) at = put_i64(at, o);
    for (auto k : t.indices) at = put_i64(at, k);
  }
  return w;
}

expected<serving::rec_batch_input> unpack_rec_request(std::span<const float> words, std::int64_t dense_in,
                                             std::size_t tables) {
  reader r{words};
  if (!r.has(4))
    return make_error(errc::invalid_argument, "payload: {} words, no header", words.size());
  if (const auto magic = r.u32(); magic != kRecWireMagic)
    return make_error(errc::invalid_argument, "payload: magic {:#x}, expected {:#x} (REC1)", magic,
                      kRecWireMagic);
  serving::rec_batch_input in;
  in.batch = r.u32();
  const std::int64_t width = r.u32();
  const std::size_t count = r.u32();
  if (in.batch <= 0 || in.batch > (1 << 20))
    return make_error(errc::invalid_argument, "batch = {}: expected 1..1048576", in.batch);
  if (width != dense_in)
    return make_error(errc::invalid_argument, "dense_in = {}: the model has {}", width, dense_in);
  if (count != tables)
    return make_error(errc::invalid_argument, "tables = {}: the model has {}", count, tables);
  const auto n_dense = std::size_t(in.batch * width);
  if (!r.has(n_dense))
    return make_error(errc::invalid_argument, "dense: {} values for batch {} x {}, payload ends",
                      n_dense, in.batch, width);
  in.dense.assign(words.begin() + std::ptrdiff_t(r.at),
                  words.begin() + std::ptrdiff_t(r.at + n_dense));
  r.at += n_dense;
  for (std::size_t i = 0; i < in.dense.size(); ++i)
    if (!std::isfinite(in.dense[i]))
      return make_error(errc::invalid_argument, "dense[{}] = {}: not a finite number (sample {})",
                        i, in.dense[i], std::int64_t(i) / std::max<std::int64_t>(1, width));
  for (std::size_t t = 0; t < tables; ++t) {
    nn::sparse_input s;
    if (!r.has(2 * std::size_t(in.batch + 1)))
      return make_error(errc::invalid_argument, "table {}: payload ends in its offsets", t);
    for (std::int64_t b = 0; b <= in.batch; ++b) {
      s.offsets.push_back(r.i64());
      if ((b == 0 && s.offsets[0] != 0) || (b > 0 && s.offsets[b] < s.offsets[b - 1]))
        return make_error(errc::invalid_argument,
                          "table {}: offsets[{}] = {} (must start at 0 "
                          "and not decrease)",
                          t, b, s.offsets[b]);
    }
    const auto keys = std::size_t(s.offsets.back());
    if (keys > words.size() || !r.has(2 * keys))
      return make_error(errc::invalid_argument, "table {}: {} keys, payload ends", t, keys);
    for (std::size_t k = 0; k < keys; ++k) s.indices.push_back(r.i64());
    in.sparse.push_back(std::move(s));
  }
  if (r.at != words.size())
    return make_error(errc::invalid_argument, "payload: {} words past the request",
                      words.size() - r.at);
  return in;
}

}  // namespace spindle::splitrpc
