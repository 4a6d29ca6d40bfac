#include "features/feature_lookup.hpp"

#include <algorithm>
#include <limits>

namespace spindle::features {
namespace {
constexpr std::uint16_t kUnassigned = std::numeric_limits<std::uint16_t>::max();
}

std::vector<std::uint64_t> feature_lookup::shard_rows(shard_index shard) const {
  std::vector<std::uint64_t> out(shard_row_count(shard));
  for (std::size_t c = 0; c < owners_.size(); ++c)
    for (const auto& o : owners_[c])
      if (o.shard == shard) std::copy(rows_[c].begin(), rows_[c].end(), out.begin() + o.start_row);
  return out;
}

std::uint64_t feature_lookup::shard_row_count(shard_index shard) const {
  std::uint64_t n = 0;
  for (std::size_t c = 0; c < owners_.size(); ++c)
    for (const auto& o : owners_[c])
      if (o.shard == shard) n += rows_[c].size();
  return n;
}

lookup_builder::lookup_builder(std::uint64_t num_nodes, std::size_t num_shards)
    : num_shards_(num_shards), class_of_(num_nodes, kUnassigned), index_(num_nodes, 0) {}

status lookup_builder::assign(std::uint64_t node, std::vector<shard_index> owners) {
  if (node >= class_of_.size())
    return make_error(errc::invalid_argument, "lookup: node {} out of range [0, {})", node,
                      class_of_.size());
  if (class_of_[node] != kUnassigned)
    return make_error(errc::internal, "lookup: node {} assigned twice", node);
  std::sort(owners.begin(), owners.end());
  owners.erase(std::unique(owners.begin(), owners.end()), owners.end());
  if (owners.empty() || owners.back() >= num_shards_)
    return make_error(errc::invalid_argument, "lookup: node {} has no valid owner", node);
  auto it = std::lower_bound(set_ids_.begin(), set_ids_.end(), owners,
                             [](const auto& e, const auto& key) { return e.first < key; });
  std::uint16_t id;
  if (it != set_ids_.end() && it->first == owners) {
    id = it->second;
  } else {
    if (sets_.size() >= kUnassigned)
      return make_error(errc::resource_exhausted, "lookup: more than {} owner sets", kUnassigned);
    id = static_cast<std::uint16_t>(sets_.size());
    sets_.push_back(owners);
    rows_.emplace_back();
    set_ids_.insert(it, {std::move(owners), id});
  }
  if (rows_[id].size() >= std::numeric_limits<std::uint32_t>::max())
    return make_error(errc::resource_exhausted, "lookup: class {} exceeds 2^32 rows", id);
  class_of_[node] = id;
  index_[node] = static_cast<std::uint32_t>(rows_[id].size());
  rows_[id].push_back(node);
  return status::ok();
}

expected<feature_lookup> lookup_builder::finish() && {
  for (std::uint64_t v = 0; v < class_of_.size(); ++v)
    if (class_of_[v] == kUnassigned)
      return make_error(errc::internal, "lookup: node {} was never placed", v);
  feature_lookup t;
  std::vector<std::uint64_t> next_row(num_shards_, 0);
  t.owners_.resize(sets_.size());
  for (std::size_t c = 0; c < sets_.size(); ++c) {
    for (shard_index s : sets_[c]) {
      t.owners_[c].push_back({s, next_row[s]});
      next_row[s] += rows_[c].size();
    }
  }
  t.class_of_ = std::move(class_of_);
  t.index_ = std::move(index_);
  t.rows_ = std::move(rows_);
  return t;
}

expected<feature_lookup> restore_lookup(std::vector<std::uint16_t> class_of,
                                        std::vector<std::uint32_t> index,
                                        const std::vector<std::vector<shard_index>>& class_shards,
                                        std::size_t num_shards) {
  if (class_of.size() != index.size())
    return make_error(errc::corrupt_data, "{} class entries for {} index entries",
                      class_of.size(), index.size());
  feature_lookup t;
  const std::size_t classes = class_shards.size();
  // Each class's size first, so an index is bounded before any row is placed.
  std::vector<std::uint64_t> size(classes, 0);
  for (std::uint64_t v = 0; v < class_of.size(); ++v) {
    if (class_of[v] >= classes)
      return make_error(errc::corrupt_data, "node {} is in class {} of {}", v, class_of[v],
                        classes);
    ++size[class_of[v]];
  }
  constexpr auto kFree = ~std::uint64_t(0);
  t.rows_.resize(classes);
  for (std::size_t c = 0; c < classes; ++c) t.rows_[c].assign(size[c], kFree);
  for (std::uint64_t v = 0; v < class_of.size(); ++v) {
    auto& rows = t.rows_[class_of[v]];
    if (index[v] >= rows.size())
      return make_error(errc::corrupt_data, "node {} has row {} of class {}, which has {} rows", v,
                        index[v], class_of[v], rows.size());
    if (rows[index[v]] != kFree)
      return make_error(errc::corrupt_data, "nodes {} and {} both have row {} of class {}",
                        rows[index[v]], v, index[v], class_of[v]);
    rows[index[v]] = v;
  }
  std::vector<std::uint64_t> next_row(num_shards, 0);
  t.owners_.resize(classes);
  for (std::size_t c = 0; c < classes; ++c) {
    if (class_shards[c].empty())
      return make_error(errc::corrupt_data, "class {} has no owner", c);
    for (shard_index s : class_shards[c]) {
      if (s >= num_shards)
        return make_error(errc::corrupt_data, "class {} names shard {} of {}", c, s,
                          num_shards);
      t.owners_[c].push_back({s, next_row[s]});
      next_row[s] += t.rows_[c].size();
    }
  }
  t.class_of_ = std::move(class_of);
  t.index_ = std::move(index);
  return t;
}

}  // namespace spindle::features
