#include "features/feature_gather.hpp"

#include <algorithm>
#include <cstring>

#include "core/log.hpp"

namespace spindle::features {
namespace {

constexpr int kPrefetchLookup = 16;
constexpr int kPrefetchRow = 8;

// LSD radix sort by row (8-bit digits, only as many passes as the rows need):
// Quiver §5.3 sorts remote reads by address; a comparison sort costs more than
// the reads it orders.
template <class T>
void sort_by_row(std::vector<T>& v, std::vector<T>& tmp) {
  std::uint64_t max_row = 0;
  for (const auto& e : v) max_row = std::max(max_row, e.row);
  tmp.resize(v.size());
  for (int shift = 0; shift < 64 && (max_row >> shift) != 0; shift += 8) {
    std::size_t count[257] = {};
    for (const auto& e : v) ++count[((e.row >> shift) & 255) + 1];
    for (int d = 0; d < 256; ++d) count[d + 1] += count[d];
    for (const auto& e : v) tmp[count[(e.row >> shift) & 255]++] = e;
    v.swap(tmp);
  }
}

}  // namespace

feature_gatherer::feature_gatherer(const features::feature_lookup& lookup, std::uint32_t row_bytes,
                                   std::vector<shard_access> shards)
    : lookup_(lookup),
      row_bytes_(row_bytes),
      shards_(std::move(shards)),
      down_(shards_.size(), false),
      per_shard_(shards_.size()) {
  // A remote shard mapped into this process (UCX over shared memory) is read by
  // pointer like a local one: same bytes, no per-row get.
  for (auto& a : shards_)
    if (a.remote && a.remote->mapped())
      a.local = a.remote->mapped(), a.remote = nullptr, a.mapped = true;
  refresh_choices();
}

int feature_gatherer::nearest_owner(std::size_t cls) const {
  int best = -1;
  for (const auto& o : lookup_.class_owners(cls)) {
    if (o.shard >= shards_.size() || down_[o.shard]) continue;
    const auto& a = shards_[o.shard];
    if (!a.local && !a.remote) continue;
    if (best < 0 || a.cost < shards_[best].cost) best = o.shard;
  }
  return best;
}

void feature_gatherer::refresh_choices() {
  choice_.assign(lookup_.num_classes(), -1);
  choice_start_.assign(lookup_.num_classes(), 0);
  for (std::size_t c = 0; c < choice_.size(); ++c) {
    choice_[c] = nearest_owner(c);
    for (const auto& o : lookup_.class_owners(c))
      if (int(o.shard) == choice_[c]) choice_start_[c] = o.start_row;
  }
}

status feature_gatherer::resolve(std::uint64_t node, resolved& r) const {
  std::size_t c = lookup_.class_of(node);
  r.shard = choice_[c];
  if (r.shard < 0) {
    std::string owners;
    for (const auto& o : lookup_.class_owners(c)) owners += fmt::format(" {}", o.shard);
    return make_error(errc::unavailable, "gather: node {} has no reachable owner (shards:{})", node,
                      owners);
  }
  r.row = choice_start_[c] + lookup_.index_of(node);
  return status::ok();
}

// Resolves every id (lookup entries prefetched ahead), then copies local rows
// (source rows prefetched ahead) and queues remote ones per shard.
status feature_gatherer::dispatch(std::span<const std::int64_t> ids, std::span<std::byte> out,
                                  gather_report& report) {
  const std::size_t n = ids.size();
  resolved_.resize(n);
  for (std::size_t i = 0; i < n; ++i) {
    if (i + kPrefetchLookup < n) lookup_.prefetch(std::uint64_t(ids[i + kPrefetchLookup]));
    SPINDLE_TRY(resolve(std::uint64_t(ids[i]), resolved_[i]));
  }
  for (std::size_t i = 0; i < n; ++i) {
    if (i + kPrefetchRow < n) {
      const auto& ahead = resolved_[i + kPrefetchRow];
      if (const std::byte* base = shards_[ahead.shard].local)
        __builtin_prefetch(base + ahead.row * row_bytes_);
    }
    const resolved& r = resolved_[i];
    if (const std::byte* base = shards_[r.shard].local) {
      std::memcpy(out.data() + i * row_bytes_, base + r.row * row_bytes_, row_bytes_);
      ++report.local_rows;
      report.mapped_rows += shards_[r.shard].mapped;
    } else {
      per_shard_[r.shard].push_back({r.row, std::uint32_t(i)});
    }
  }
  return status::ok();
}

status feature_gatherer::redispatch(std::span<const std::int64_t> ids,
                                    const std::vector<pending>& rows, std::span<std::byte> out,
                                    gather_report& report) {
  for (const pending& p : rows) {
    resolved r;
    SPINDLE_TRY(resolve(std::uint64_t(ids[p.pos]), r));
    ++report.fallback_rows;
    if (const std::byte* base = shards_[r.shard].local) {
      std::memcpy(out.data() + std::size_t(p.pos) * row_bytes_, base + r.row * row_bytes_,
                  row_bytes_);
      ++report.local_rows;
    } else {
      per_shard_[r.shard].push_back({r.row, p.pos});
    }
  }
  return status::ok();
}

void feature_gatherer::mark_unreachable(int shard) {
  if (shard < 0 || std::size_t(shard) >= down_.size() || down_[shard]) return;
  down_[shard] = true;
  refresh_choices();
}

void feature_gatherer::reattach(int shard, shard_access a) {
  if (shard < 0 || std::size_t(shard) >= shards_.size()) return;
  if (a.remote && a.remote->mapped())
    a.local = a.remote->mapped(), a.remote = nullptr, a.mapped = true;
  shards_[shard] = a;
  down_[shard] = false;
  refresh_choices();
}

std::vector<int> feature_gatherer::unreachable() const {
  std::vector<int> out;
  for (std::size_t s = 0; s < down_.size(); ++s)
    if (down_[s]) out.push_back(int(s));
  return out;
}

status feature_gatherer::read_remote(int shard, std::vector<pending>& rows,
                                     std::span<std::byte> out, gather_report& report) {
  std::vector<pending> tmp;
  sort_by_row(rows, tmp);
  ops_.clear();
  struct run {
    std::size_t first, len, staging;
  };
  std::vector<run> runs;
  std::size_t staged = 0;
  for (std::size_t i = 0; i < rows.size();) {
    std::size_t j = i + 1;
    while (j < rows.size() && rows[j].row == rows[j - 1].row + 1) ++j;
    if (j - i > 1) runs.push_back({i, j - i, staged}), staged += (j - i) * row_bytes_;
    i = j;
  }
  if (staging_.size() < staged) staging_.resize(staged);
  std::size_t r = 0;
  for (std::size_t i = 0; i < rows.size();) {
    if (r < runs.size() && runs[r].first == i) {
      ops_.push_back(
          {rows[i].row * row_bytes_, staging_.data() + runs[r].staging, runs[r].len * row_bytes_});
      i += runs[r++].len;
    } else {
      ops_.push_back({rows[i].row * row_bytes_, out.data() + std::size_t(rows[i].pos) * row_bytes_,
                      row_bytes_});
      ++i;
    }
  }
  SPINDLE_TRY(shards_[shard].remote->read(ops_));
  for (const auto& run : runs)
    for (std::size_t k = 0; k < run.len; ++k)
      std::memcpy(out.data() + std::size_t(rows[run.first + k].pos) * row_bytes_,
                  staging_.data() + run.staging + k * row_bytes_, row_bytes_);
  report.remote_rows += rows.size();
  report.remote_ops += ops_.size();
  return status::ok();
}

expected<gather_report> feature_gatherer::gather(std::span<const std::int64_t> ids,
                                                 std::span<std::byte> out) {
  if (out.size() < ids.size() * row_bytes_)
    return make_error(errc::invalid_argument, "gather: output holds {} bytes, {} rows need {}",
                      out.size(), ids.size(), ids.size() * row_bytes_);
  const auto n = std::int64_t(lookup_.num_nodes());
  for (std::size_t i = 0; i < ids.size(); ++i)
    if (ids[i] < 0 || ids[i] >= n)
      return make_error(errc::invalid_argument, "gather: node id {} at position {} outside [0, {})",
                        ids[i], i, n);
  gather_report report;
  for (auto& p : per_shard_) p.clear();
  SPINDLE_TRY(dispatch(ids, out, report));
  // Remote shards; a failed shard's rows are re-dispatched to the next replica.
  for (bool again = true; again;) {
    again = false;
    for (std::size_t s = 0; s < per_shard_.size(); ++s) {
      if (per_shard_[s].empty()) continue;
      std::vector<pending> rows;
      rows.swap(per_shard_[s]);
      if (status st = read_remote(int(s), rows, out, report); !st) {
        log::warn("feature shard {} unreachable ({}); reading its rows from replicas", s,
                  st.message());
        down_[s] = true;
        report.failed_shards.push_back(int(s));
        refresh_choices();
        SPINDLE_TRY(redispatch(ids, rows, out, report));
        again = true;
      }
    }
  }
  return report;
}

}  // namespace spindle::features
