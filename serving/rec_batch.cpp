#include "serving/rec_batch.hpp"

namespace spindle::serving {

rec_batch_input merge_rec_batches(std::span<const rec_batch_view> parts) {
  rec_batch_input out;
  if (parts.empty()) return out;
  out.sparse.resize(parts.front().sparse.size());
  std::size_t dense = 0;
  for (const auto& p : parts) dense += p.dense.size();
  out.dense.reserve(dense);
  for (auto& bag : out.sparse) bag.offsets.push_back(0);
  for (const auto& p : parts) {
    out.batch += p.batch;
    out.dense.insert(out.dense.end(), p.dense.begin(), p.dense.end());
    for (std::size_t t = 0; t < out.sparse.size() && t < p.sparse.size(); ++t) {
      auto& dst = out.sparse[t];
      const auto& src = p.sparse[t];
      const std::int64_t base = std::int64_t(dst.indices.size());
      dst.indices.insert(dst.indices.end(), src.indices.begin(), src.indices.end());
      for (std::size_t b = 1; b < src.offsets.size(); ++b)
        dst.offsets.push_back(base + src.offsets[b] - src.offsets.front());
    }
  }
  return out;
}

std::vector<std::vector<float>> split_scores(std::span<const float> scores,
                                             std::span<const std::int64_t> batches) {
  std::vector<std::vector<float>> out;
  std::size_t at = 0;
  for (auto n : batches) {
    const std::size_t end = std::min(scores.size(), at + std::size_t(n));
    out.emplace_back(scores.begin() + std::ptrdiff_t(at), scores.begin() + std::ptrdiff_t(end));
    at = end;
  }
  return out;
}

rec_batch_input slice_rec_batch(const rec_batch_view& b, std::int64_t begin, std::int64_t end) {
  rec_batch_input out;
  out.batch = end - begin;
  const std::size_t width = b.batch > 0 ? b.dense.size() / std::size_t(b.batch) : 0;
  out.dense.assign(b.dense.begin() + std::ptrdiff_t(std::size_t(begin) * width),
                   b.dense.begin() + std::ptrdiff_t(std::size_t(end) * width));
  for (const auto& t : b.sparse) {
    nn::sparse_input s;
    const auto first = t.offsets[std::size_t(begin)], last = t.offsets[std::size_t(end)];
    s.indices.assign(t.indices.begin() + first, t.indices.begin() + last);
    s.offsets.reserve(std::size_t(out.batch) + 1);
    for (std::int64_t i = begin; i <= end; ++i)
      s.offsets.push_back(t.offsets[std::size_t(i)] - first);
    out.sparse.push_back(std::move(s));
  }
  return out;
}

}  // namespace spindle::serving
