#include "hps/lookup_session.hpp"

#include <absl/container/flat_hash_map.h>

#include <algorithm>
#include <atomic>
#include <cmath>

#include "core/log.hpp"
#include "gpu/device.hpp"
#include "hps/cache/replicated_cache.hpp"
#include "nn/quantized_row_bytes.hpp"
#include "nn/quantized_rows.hpp"

namespace spindle::hps {

void dedup_keys(std::span<const cache_key> keys, std::vector<cache_key>& unique,
                std::vector<std::uint32_t>& inverse) {
  unique.clear();
  inverse.resize(keys.size());
  absl::flat_hash_map<cache_key, std::uint32_t> seen;
  seen.reserve(keys.size());
  for (std::size_t i = 0; i < keys.size(); ++i) {
    const auto [it, fresh] = seen.try_emplace(keys[i], static_cast<std::uint32_t>(unique.size()));
    if (fresh) unique.push_back(keys[i]);
    inverse[i] = it->second;
  }
}

expected<std::unique_ptr<lookup_session>> lookup_session::create(std::vector<table_options> tables,
                                                                 volatile_db* vdb,
                                                                 persistent_db* pdb,
                                                                 session_options options) {
  SPINDLE_ASSIGN_OR_RETURN(const auto device, gpu::resolve_device(options.l1_device));
  const bool on_device = device == gpu::device_kind::cuda;
  if (options.l1_gpus < 1)
    return make_error(errc::invalid_argument, "hps.l1_gpus = {}: must be >= 1", options.l1_gpus);
  std::unique_ptr<lookup_session> s(new lookup_session(vdb, pdb, options));
  for (auto& o : tables) {
    if (o.name.empty()) return make_error(errc::invalid_argument, "hps table: empty name");
    if (!(o.cache_fraction > 0.0 && o.cache_fraction <= 1.0)) {
      return make_error(errc::invalid_argument,
                        "hps table '{}': cache_fraction={} (must be in (0, 1])", o.name,
                        o.cache_fraction);
    }
    if (!(o.hit_rate_threshold >= 0.0 && o.hit_rate_threshold <= 1.0)) {
      return make_error(errc::invalid_argument,
                        "hps table '{}': hit_rate_threshold={} (must be in [0, 1])", o.name,
                        o.hit_rate_threshold);
    }
    if (o.rows == 0)
      return make_error(errc::invalid_argument, "hps table '{}': rows must be > 0", o.name);
    auto t = std::make_unique<table_state>();
    const auto slots = static_cast<std::uint64_t>(std::ceil(double(o.rows) * o.cache_fraction));
    if (o.bits != 32 && on_device)
      return make_error(errc::unsupported,
                        "hps table '{}': int{} rows in a GPU's L1 cache are not built (the host "
                        "cache holds them; serve with the L1 on the host)",
                        o.name, o.bits);
    auto cache = make_l1_cache({slots, o.dim, o.slabs_per_set, o.bits}, on_device,
                               options.l1_gpus);
    if (!cache) return std::move(cache).error().with_context("hps table '" + o.name + "'");
    t->cache = std::move(*cache);
    t->threshold = o.hit_rate_threshold;
    t->options = std::move(o);
    s->tables_.push_back(std::move(t));
  }
  s->inserter_ = std::thread([p = s.get()] { p->insert_loop(); });
  pthread_setname_np(s->inserter_.native_handle(), "hps-insert");
  if (options.refresh_interval_ms > 0) {
    s->refresher_ = std::thread([p = s.get()] { p->refresh_loop(); });
    pthread_setname_np(s->refresher_.native_handle(), "hps-refresh");
  }
  return s;
}

lookup_session::~lookup_session() {
  {
    std::lock_guard lock(queue_mu_);
    stopping_ = true;
  }
  queue_cv_.notify_all();
  if (inserter_.joinable()) inserter_.join();
  if (refresher_.joinable()) refresher_.join();
}

expected<std::size_t> lookup_session::table_index(std::string_view name) const {
  for (std::size_t t = 0; t < tables_.size(); ++t) {
    if (tables_[t]->options.name == name) return t;
  }
  return make_error(errc::not_found, "no embedding table '{}'", name);
}

lookup_session::fetch_result lookup_session::fetch_lower(table_state& t,
                                                         std::span<const cache_key> keys,
                                                         std::span<float> values) {
  const std::uint32_t dim = t.options.dim;
  fetch_result r;
  r.found.assign(keys.size(), 0);
  if (vdb_ != nullptr) {
    auto got = vdb_->lookup(t.options.name, dim, keys, values, r.found);
    if (got) {
      r.from_vdb = *got;
    } else {
      // HPS §5: the PDB answers when a VDB lookup fails. One line per 1,000
      // failures: a VDB that is down fails every lookup until it is back.
      std::fill(r.found.begin(), r.found.end(), std::uint8_t{0});
      std::lock_guard lock(t.stats_mu);
      if (t.stats.vdb_errors++ % 1000 == 0)
        log::warn("vdb lookup failed ({} so far in table {}), using the persistent db: {}",
                  t.stats.vdb_errors, t.options.name, got.error().to_string());
    }
  }
  if (pdb_ == nullptr || r.from_vdb == keys.size()) return r;
  std::vector<cache_key> rest;
  std::vector<std::size_t> where;
  for (std::size_t i = 0; i < keys.size(); ++i) {
    if (!r.found[i]) {
      rest.push_back(keys[i]);
      where.push_back(i);
    }
  }
  std::vector<float> v(rest.size() * dim);
  std::vector<std::uint8_t> f(rest.size());
  auto got = pdb_->lookup(t.options.name, rest, v, f);
  if (!got) {
    t.pdb_failing = true;
    std::lock_guard lock(t.stats_mu);
    if (t.stats.pdb_errors++ % 1000 == 0)
      log::warn("persistent db lookup failed ({} so far in table {}): {}", t.stats.pdb_errors,
                t.options.name, got.error().to_string());
    // Damaged data answers the same on every retry: corrupt, not unavailable.
    const errc code = got.error().code() == errc::corrupt_data ? errc::corrupt_data : errc::unavailable;
    r.error = make_error(code, "hps table '{}': the persistent db could not be read: {}",
                         t.options.name, got.error().message());
    return r;
  }
  t.pdb_failing = false;
  for (std::size_t j = 0; j < rest.size(); ++j) {
    if (!f[j]) continue;
    std::copy_n(v.data() + j * dim, dim, values.data() + where[j] * dim);
    r.found[where[j]] = 2;  // from the PDB: the VDB lacks it
    ++r.from_pdb;
  }
  return r;
}

lookup_session::fetch_result lookup_session::fetch_and_insert(table_state& t,
                                                              std::span<const cache_key> keys,
                                                              std::span<float> values) {
  fetch_result r = fetch_lower(t, keys, values);
  const std::uint32_t dim = t.options.dim;
  std::vector<cache_key> ok_keys, vdb_keys;
  std::vector<float> ok_values, vdb_values;
  for (std::size_t i = 0; i < keys.size(); ++i) {
    if (!r.found[i]) continue;
    ok_keys.push_back(keys[i]);
    ok_values.insert(ok_values.end(), values.begin() + i * dim, values.begin() + (i + 1) * dim);
  }
  (void)t.cache->replace(ok_keys, ok_values);
  // Keys the VDB lacked but the PDB had go into the VDB for the next miss (HPS §5).
  if (vdb_ != nullptr && r.from_pdb > 0) {
    for (std::size_t i = 0; i < keys.size(); ++i) {
      if (r.found[i] != 2) continue;
      vdb_keys.push_back(keys[i]);
      vdb_values.insert(vdb_values.end(), values.begin() + i * dim, values.begin() + (i + 1) * dim);
    }
    if (auto s = vdb_->insert(t.options.name, dim, vdb_keys, vdb_values); !s) {
      static std::atomic<std::uint64_t> failures{0};
      if (const auto n = failures.fetch_add(1); n % 1000 == 0)
        log::warn("vdb insert failed ({} so far): {}", n + 1, s.to_string());
    }
  }
  return r;
}

namespace {

// An int8 L1: a row fetched for a call answers as it will once cached
// (quantised and back), so a key's answer does not depend on whether it was a
// hit. Only the synchronous path's rows are answers (the inserter's are not).
void as_cached(std::uint32_t dim, std::span<const std::uint8_t> found, std::span<float> values) {
  std::vector<std::uint8_t> codes(nn::quantized_row_bytes(dim, 8));
  for (std::size_t i = 0; i < found.size(); ++i) {
    float* row = values.data() + i * dim;
    if (found[i] && nn::quantize_row(row, dim, 8, codes.data()))
      nn::dequantize_row(codes.data(), dim, 8, row);
  }
}

}  // namespace

expected<lookup_report> lookup_session::lookup(std::size_t table, std::span<const cache_key> keys,
                                               std::span<float> out) {
  if (table >= tables_.size()) {
    return make_error(errc::invalid_argument, "embedding table index {} of {}", table,
                      tables_.size());
  }
  table_state& t = *tables_[table];
  const std::uint32_t dim = t.options.dim;
  if (out.size() != keys.size() * dim) {
    return make_error(errc::invalid_argument, "hps lookup '{}': {} keys need {} outputs, got {}",
                      t.options.name, keys.size(), keys.size() * dim, out.size());
  }
  std::vector<cache_key> unique;
  std::vector<std::uint32_t> inverse;
  dedup_keys(keys, unique, inverse);
  std::vector<float> uv(unique.size() * dim);
  cache_misses misses;
  SPINDLE_TRY(
      t.cache->query(unique, uv, misses).with_context("hps table '" + t.options.name + "'"));
  lookup_report rep;
  rep.keys = keys.size();
  rep.unique_keys = unique.size();
  rep.l1_misses = misses.keys.size();
  rep.hit_rate = unique.empty() ? 1.0 : 1.0 - double(rep.l1_misses) / double(unique.size());
  // Algorithm 1: synchronous insertion while the hit rate is below the threshold;
  // at or above it misses get default vectors now and are inserted in the
  // background (so threshold 0.0 is always asynchronous, 1.0 always synchronous).
  rep.synchronous =
      !misses.keys.empty() && (rep.hit_rate < t.threshold.load() || t.pdb_failing.load());
  std::vector<float> mv(misses.keys.size() * dim, t.options.default_value);
  std::vector<std::uint8_t> found(misses.keys.size(), 0);
  if (rep.synchronous) {
    fetch_result r = fetch_and_insert(t, misses.keys, mv);
    if (t.options.bits == 8) as_cached(dim, r.found, mv);
    if (!r.error) return r.error;  // never default vectors for rows that could not be read
    rep.from_vdb = r.from_vdb;
    rep.from_pdb = r.from_pdb;
    found = std::move(r.found);
  } else if (!misses.keys.empty()) {
    enqueue(table, misses.keys);
  }
  for (std::size_t j = 0; j < misses.keys.size(); ++j) {
    if (!found[j]) {
      std::fill_n(mv.data() + j * dim, dim, t.options.default_value);
      ++rep.defaulted;
    }
    std::copy_n(mv.data() + j * dim, dim, uv.data() + std::size_t{misses.positions[j]} * dim);
  }
  for (std::size_t i = 0; i < keys.size(); ++i) {
    std::copy_n(uv.data() + std::size_t{inverse[i]} * dim, dim, out.data() + i * dim);
  }
  std::lock_guard lock(t.stats_mu);
  ++t.stats.lookups;
  t.stats.unique_keys += rep.unique_keys;
  t.stats.l1_misses += rep.l1_misses;
  t.stats.defaulted += rep.defaulted;
  ++(rep.synchronous ? t.stats.sync_lookups : t.stats.async_lookups);
  return rep;
}

void lookup_session::enqueue(std::size_t table, std::vector<cache_key> keys) {
  std::lock_guard lock(queue_mu_);
  if (queue_.size() >= options_.async_queue_limit) {
    std::lock_guard slock(tables_[table]->stats_mu);
    ++tables_[table]->stats.async_dropped;  // backpressure: the next miss re-queues them
    return;
  }
  queue_.push_back({table, std::move(keys)});
  queue_cv_.notify_one();
}

void lookup_session::insert_loop() {
  std::unique_lock lock(queue_mu_);
  for (;;) {
    queue_cv_.wait(lock, [&] { return stopping_ || !queue_.empty(); });
    if (stopping_) return;
    async_job job = std::move(queue_.front());
    queue_.pop_front();
    busy_ = true;
    lock.unlock();
    table_state& t = *tables_[job.table];
    std::vector<float> values(job.keys.size() * t.options.dim);
    fetch_and_insert(t, job.keys, values);
    lock.lock();
    busy_ = false;
    queue_cv_.notify_all();
  }
}

void lookup_session::wait_idle() {
  std::unique_lock lock(queue_mu_);
  queue_cv_.wait(lock, [&] { return stopping_ || (queue_.empty() && !busy_); });
}

expected<std::uint64_t> lookup_session::refresh(std::size_t table) {
  if (table >= tables_.size()) {
    return make_error(errc::invalid_argument, "embedding table index {} of {}", table,
                      tables_.size());
  }
  table_state& t = *tables_[table];
  const std::uint32_t dim = t.options.dim;
  std::uint64_t rewritten = 0;
  std::vector<cache_key> keys, hit_keys;
  std::vector<float> values, hit_values;
  for (std::uint64_t set = 0; set < t.cache->num_sets(); set += options_.refresh_batch_sets) {
    keys.clear();
    t.cache->dump(set, set + options_.refresh_batch_sets, keys);  // Fig. 3 step 2
    values.assign(keys.size() * dim, 0.0f);
    const fetch_result r = fetch_lower(t, keys, values);  // step 3
    hit_keys.clear();
    hit_values.clear();
    for (std::size_t i = 0; i < keys.size(); ++i) {
      if (!r.found[i]) continue;
      hit_keys.push_back(keys[i]);
      hit_values.insert(hit_values.end(), values.begin() + i * dim, values.begin() + (i + 1) * dim);
    }
    SPINDLE_ASSIGN_OR_RETURN(std::uint64_t n, t.cache->update(hit_keys, hit_values));  // steps 4-5
    rewritten += n;
  }
  std::lock_guard lock(t.stats_mu);
  t.stats.refreshed += rewritten;
  return rewritten;
}

void lookup_session::refresh_loop() {
  std::unique_lock lock(queue_mu_);
  while (!stopping_) {
    queue_cv_.wait_for(lock, std::chrono::milliseconds(options_.refresh_interval_ms));
    if (stopping_) return;
    lock.unlock();
    for (std::size_t t = 0; t < tables_.size(); ++t) {
      if (auto r = refresh(t); !r) log::warn("cache refresh: {}", r.error().to_string());
    }
    lock.lock();
  }
}

void lookup_session::set_hit_rate_threshold(std::size_t table, double threshold) {
  tables_[table]->threshold = std::clamp(threshold, 0.0, 1.0);
}

table_stats lookup_session::stats(std::size_t table) const {
  std::lock_guard lock(tables_[table]->stats_mu);
  return tables_[table]->stats;
}

bool lookup_session::l1_holds_every_row(std::size_t t) const {
  const auto& c = *tables_[t]->cache;
  const auto& o = tables_[t]->options;
  return o.cache_fraction >= 1.0 && c.num_sets() > 0;
}

status lookup_session::warm_l1(std::size_t t, std::span<const cache_key> keys,
                               std::span<const float> values) {
  return tables_[t]->cache->replace(keys, values);
}

}  // namespace spindle::hps
