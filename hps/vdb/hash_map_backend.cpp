// In-process VDB backend: per table, P partitions, each an absl::flat_hash_map
// from key to a slot in a contiguous vector arena, under its own shared_mutex
// (lookups share it; inserts, pruning and access-time updates take it alone).
// Access times are a logical clock (one tick per call) applied asynchronously
// by the thread "vdb-touch" so a lookup never waits for a writer's lock twice.
#include <absl/container/flat_hash_map.h>

#include <algorithm>
#include <condition_variable>
#include <mutex>
#include <numeric>
#include <random>
#include <shared_mutex>
#include <thread>
#include <unordered_map>

#include "hps/vdb/background_queue.hpp"
#include "hps/vdb/volatile_db.hpp"

namespace spindle::hps {
namespace {

struct partition {
  const vdb_options* o = nullptr;  // its table's options
  std::shared_mutex mu;
  absl::flat_hash_map<cache_key, std::uint32_t> index;  // key -> slot
  std::vector<cache_key> slot_keys;
  std::vector<std::uint64_t> score;  // last access tick, or use count
  std::vector<float> values;         // [slots x dim]
  std::vector<std::uint32_t> free_slots;
  std::mt19937_64 rng;
};

struct table_state {
  vdb_options o;
  std::uint32_t dim = 0;
  std::vector<std::unique_ptr<partition>> parts;
};

struct touch {
  partition* part;
  cache_key key;
  std::uint64_t tick;
};

class hash_map_vdb final : public volatile_db {
 public:
  explicit hash_map_vdb(const vdb_options& o)
      : options_(o), touches_("vdb-touch", [this](std::vector<touch>& b) { apply_touches(b); }) {}

  std::string_view backend() const override { return "hash_map"; }

  expected<std::uint64_t> lookup_checked(std::string_view table, std::uint32_t dim,
                                         std::span<const cache_key> keys, std::span<float> values,
                                         std::span<std::uint8_t> found) override {
    SPINDLE_ASSIGN_OR_RETURN(table_state * t, find_table(table, dim, false));
    if (t == nullptr) return std::uint64_t{0};
    const std::uint64_t tick = ++clock_;
    const auto groups = partition_groups(keys, t->o.partitions);
    std::vector<touch> touches;
    for (std::uint32_t pi = 0; pi < t->o.partitions; ++pi) {
      if (groups[pi].empty()) continue;
      partition& p = *t->parts[pi];
      std::shared_lock lock(p.mu);
      for (std::uint32_t i : groups[pi]) {
        const auto it = p.index.find(keys[i]);
        if (it == p.index.end()) continue;
        std::copy_n(p.values.data() + std::uint64_t{it->second} * dim, dim,
                    values.data() + std::uint64_t{i} * dim);
        found[i] = 1;
        touches.push_back({&p, keys[i], tick});
      }
    }
    const std::uint64_t hits = touches.size();
    touches_.push(std::move(touches));
    return hits;
  }

  status insert_checked(std::string_view table, std::uint32_t dim, std::span<const cache_key> keys,
                        std::span<const float> values) override {
    SPINDLE_ASSIGN_OR_RETURN(table_state * t, find_table(table, dim, true));
    const std::uint64_t tick = ++clock_;
    const auto by_part = partition_groups(keys, t->o.partitions);
    for (std::uint32_t pi = 0; pi < t->o.partitions; ++pi) {
      if (by_part[pi].empty()) continue;
      partition& p = *t->parts[pi];
      std::unique_lock lock(p.mu);
      for (std::uint32_t i : by_part[pi])
        put(p, dim, keys[i], values.data() + std::uint64_t{i} * dim, tick);
      if (p.index.size() > t->o.overflow_margin) prune(p);
    }
    return status::ok();
  }

  std::uint32_t partitions(std::string_view table) override {
    return options_of(table).partitions;
  }

  expected<std::uint64_t> partition_size(std::string_view table, std::uint32_t pi) override {
    std::shared_lock lock(tables_mu_);
    const std::uint32_t parts = options_.of(table).partitions;
    if (pi >= parts) {
      return make_error(errc::invalid_argument, "vdb '{}': partition {} of {}", table, pi, parts);
    }
    const auto it = tables_.find(std::string(table));
    if (it == tables_.end()) return std::uint64_t{0};
    partition& p = *it->second->parts[pi];
    std::shared_lock plock(p.mu);
    return std::uint64_t{p.index.size()};
  }

  status configure_table(std::string_view table, const vdb_options& o) override {
    SPINDLE_TRY(validate(o).with_context(fmt::format("vdb table '{}'", table)));
    std::unique_lock lock(tables_mu_);
    if (tables_.count(std::string(table))) {
      return make_error(errc::invalid_argument,
                        "vdb table '{}' is in use: configure it before its first insert", table);
    }
    options_.set(table, o);
    return status::ok();
  }

  void flush() override { touches_.flush(); }

 private:
  // Options of `table`: its own when configured, else the backend's.
  vdb_options options_of(std::string_view table) const {
    std::shared_lock lock(tables_mu_);
    return options_.of(table);
  }

  expected<table_state*> find_table(std::string_view table, std::uint32_t dim, bool create) {
    {
      std::shared_lock lock(tables_mu_);
      const auto it = tables_.find(std::string(table));
      if (it != tables_.end()) return checked_dim(*it->second, table, dim);
      if (!create) return static_cast<table_state*>(nullptr);
    }
    std::unique_lock lock(tables_mu_);
    auto& slot = tables_[std::string(table)];
    if (!slot) {
      slot = std::make_unique<table_state>();
      slot->o = options_.of(table);
      slot->dim = dim;
      for (std::uint32_t p = 0; p < slot->o.partitions; ++p) {
        slot->parts.push_back(std::make_unique<partition>());
        slot->parts.back()->o = &slot->o;
        slot->parts.back()->rng.seed(slot->o.seed + p);
      }
    }
    return checked_dim(*slot, table, dim);
  }

  static expected<table_state*> checked_dim(table_state& t, std::string_view table,
                                            std::uint32_t dim) {
    if (t.dim != dim) {
      return make_error(errc::invalid_argument, "vdb table '{}' holds dim {}, asked for dim {}",
                        table, t.dim, dim);
    }
    return &t;
  }

  void put(partition& p, std::uint32_t dim, cache_key key, const float* v, std::uint64_t tick) {
    auto [it, inserted] = p.index.try_emplace(key, 0);
    if (inserted) {
      if (!p.free_slots.empty()) {
        it->second = p.free_slots.back();
        p.free_slots.pop_back();
        p.slot_keys[it->second] = key;
        p.score[it->second] = 0;
      } else {
        it->second = static_cast<std::uint32_t>(p.slot_keys.size());
        p.slot_keys.push_back(key);
        p.score.push_back(0);
        p.values.resize(p.values.size() + dim);
      }
    }
    std::copy_n(v, dim, p.values.data() + std::uint64_t{it->second} * dim);
    bump(p, it->second, tick);
  }

  void bump(partition& p, std::uint32_t slot, std::uint64_t tick) {
    if (p.o->policy == eviction_policy::evict_least_used) {
      ++p.score[slot];
    } else {
      p.score[slot] = std::max(p.score[slot], tick);
    }
  }

  // HPS §5: a partition past its overflow margin is pruned by its policy down to
  // margin * resolution entries.
  void prune(partition& p) {
    const auto target = static_cast<std::uint64_t>(p.o->overflow_margin * p.o->overflow_resolution);
    const std::uint64_t excess = p.index.size() - std::min<std::uint64_t>(target, p.index.size());
    std::vector<std::uint32_t> live;
    live.reserve(p.index.size());
    for (const auto& [key, slot] : p.index) live.push_back(slot);
    if (p.o->policy == eviction_policy::evict_random) {
      std::shuffle(live.begin(), live.end(), p.rng);
    } else {
      std::nth_element(live.begin(), live.begin() + excess, live.end(),
                       [&](std::uint32_t a, std::uint32_t b) { return p.score[a] < p.score[b]; });
    }
    for (std::uint64_t i = 0; i < excess; ++i) {
      p.index.erase(p.slot_keys[live[i]]);
      p.slot_keys[live[i]] = gpu::empty_key;
      p.free_slots.push_back(live[i]);
    }
  }

  // Touches arrive grouped by partition (lookups walk partitions in order), so
  // one exclusive lock covers each run of the same partition.
  void apply_touches(const std::vector<touch>& batch) {
    for (std::size_t i = 0; i < batch.size();) {
      partition* p = batch[i].part;
      std::unique_lock lock(p->mu);
      for (; i < batch.size() && batch[i].part == p; ++i) {
        const auto it = p->index.find(batch[i].key);
        if (it != p->index.end()) bump(*p, it->second, batch[i].tick);
      }
    }
  }

  std::atomic<std::uint64_t> clock_{0};
  mutable std::shared_mutex tables_mu_;
  std::unordered_map<std::string, std::unique_ptr<table_state>> tables_;  // guarded by tables_mu_
  vdb_table_options options_;                                             // guarded by tables_mu_
  background_queue<touch> touches_;  // thread "vdb-touch": applies access times; last member
};

}  // namespace

expected<std::unique_ptr<volatile_db>> make_hash_map_vdb(const vdb_options& options) {
  SPINDLE_TRY(validate(options));
  return std::unique_ptr<volatile_db>(new hash_map_vdb(options));
}

}  // namespace spindle::hps
