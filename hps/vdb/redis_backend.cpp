// Redis VDB backend. Layout per table and partition p (prefix "spindle"):
//   spindle:<table>:<p>:<8 key bytes>   the vector (dim float32, little-endian)
//   spindle:<table>:<p>:z               sorted set of the partition's keys, scored
//                                       by last access (microseconds) or use count
//   spindle:<table>:dim                 the table's dim, set once
// Lookups are one pipelined MGET per partition; inserts one MSET plus the score
// update per partition, then ZCARD checks and pruning past the overflow margin.
// Access scores of hits are written by the thread "vdb-redis-touch" on its own
// connection. The request connection is shared under a mutex.
#include <chrono>
#include <condition_variable>
#include <cstring>
#include <mutex>
#include <thread>
#include <unordered_map>

#include "hps/vdb/background_queue.hpp"
#include "hps/vdb/redis_connection.hpp"
#include "hps/vdb/volatile_db.hpp"

namespace spindle::hps {
namespace {

// How long a serving lookup waits for Redis before the PDB answers instead: a
// frozen server (SIGSTOP) must cost a call this much, not the 5 s default.
constexpr int kCommandDeadlineMs = 200;

std::string key_bytes(cache_key k) {
  std::string s(8, '\0');
  for (int i = 0; i < 8; ++i) s[i] = static_cast<char>(k >> (8 * i));
  return s;
}

std::uint64_t now_us() {
  return std::chrono::duration_cast<std::chrono::microseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

struct pending_touch {
  std::string zset;
  std::string member;
  eviction_policy policy = eviction_policy::evict_oldest;
};

class redis_vdb final : public volatile_db {
 public:
  redis_vdb(const vdb_options& o, redis_connection conn, redis_connection touch_conn,
            std::string prefix)
      : options_(o),
        conn_(std::move(conn)),
        touch_conn_(std::move(touch_conn)),
        prefix_(std::move(prefix)),
        touches_("vdb-redis-touch", [this](std::vector<pending_touch>& b) { apply_touches(b); }) {}

  std::string_view backend() const override { return "redis"; }

  expected<std::uint64_t> lookup_checked(std::string_view table, std::uint32_t dim,
                                         std::span<const cache_key> keys, std::span<float> values,
                                         std::span<std::uint8_t> found) override {
    std::lock_guard lock(conn_mu_);
    const vdb_options o = options_.of(table);
    const auto groups = partition_groups(keys, o.partitions);
    SPINDLE_TRY(check_dim(table, dim, false));
    std::vector<std::vector<std::string>> names(o.partitions);
    for (std::uint32_t p = 0; p < o.partitions; ++p) {
      if (groups[p].empty()) continue;
      std::vector<std::string_view> argv{"MGET"};
      for (std::uint32_t i : groups[p]) names[p].push_back(data_key(table, p, keys[i]));
      for (const auto& n : names[p]) argv.push_back(n);
      conn_.append(argv);
    }
    std::uint64_t hits = 0;
    std::vector<pending_touch> touches;
    for (std::uint32_t p = 0; p < o.partitions; ++p) {
      if (groups[p].empty()) continue;
      SPINDLE_ASSIGN_OR_RETURN(redis_reply r, conn_.reply());
      for (std::size_t j = 0; j < groups[p].size(); ++j) {
        if (r.element_nil(j)) continue;
        const std::uint32_t i = groups[p][j];
        const std::string_view bytes = r.element_str(j);
        if (bytes.size() != std::size_t{dim} * sizeof(float)) {
          return make_error(errc::corrupt_data, "{}: {} holds {} bytes, expected {} (dim {})",
                            conn_.endpoint(), printable(names[p][j]), bytes.size(),
                            dim * sizeof(float), dim);
        }
        std::memcpy(values.data() + std::uint64_t{i} * dim, bytes.data(), bytes.size());
        found[i] = 1;
        ++hits;
        touches.push_back({zset_key(table, p), key_bytes(keys[i]), o.policy});
      }
    }
    if (o.policy != eviction_policy::evict_random) touches_.push(std::move(touches));
    return hits;
  }

  status insert_checked(std::string_view table, std::uint32_t dim, std::span<const cache_key> keys,
                        std::span<const float> values) override {
    std::lock_guard lock(conn_mu_);
    const vdb_options o = options_.of(table);
    const auto groups = partition_groups(keys, o.partitions);
    SPINDLE_TRY(check_dim(table, dim, true));
    const std::string score = std::to_string(now_us());
    std::uint32_t appended = 0;
    for (std::uint32_t p = 0; p < o.partitions; ++p) {
      if (groups[p].empty()) continue;
      std::vector<std::string> names, members;
      std::vector<std::string_view> mset{"MSET"}, zadd{"ZADD", "", "GT"};
      const std::string z = zset_key(table, p);
      zadd[1] = z;
      if (o.policy == eviction_policy::evict_least_used) zadd = {"ZADD", z, "NX"};
      for (std::uint32_t i : groups[p]) {
        names.push_back(data_key(table, p, keys[i]));
        members.push_back(key_bytes(keys[i]));
      }
      for (std::size_t j = 0; j < groups[p].size(); ++j) {
        const float* v = values.data() + std::uint64_t{groups[p][j]} * dim;
        mset.push_back(names[j]);
        mset.emplace_back(reinterpret_cast<const char*>(v), dim * sizeof(float));
        zadd.push_back(o.policy == eviction_policy::evict_least_used ? std::string_view("0")
                                                                     : std::string_view(score));
        zadd.push_back(members[j]);
      }
      conn_.append(mset);
      conn_.append(zadd);
      conn_.append({"ZCARD", z});
      appended += 3;
    }
    std::vector<std::pair<std::uint32_t, std::uint64_t>> over;
    for (std::uint32_t p = 0, seen = 0; seen < appended; ++p) {
      if (groups[p].empty()) continue;
      status first_error = status::ok();
      for (int k = 0; k < 3; ++k, ++seen) {
        auto r = conn_.reply();
        if (!r && first_error.is_ok()) first_error = r.error();
        if (r && k == 2 && static_cast<std::uint64_t>(r->integer()) > o.overflow_margin) {
          over.emplace_back(p, r->integer());
        }
      }
      SPINDLE_TRY(first_error);
    }
    for (const auto& [p, card] : over) SPINDLE_TRY(prune(table, o, p, card));
    return status::ok();
  }

  std::uint32_t partitions(std::string_view table) override {
    std::lock_guard lock(conn_mu_);
    return options_.of(table).partitions;
  }

  expected<std::uint64_t> partition_size(std::string_view table, std::uint32_t p) override {
    std::lock_guard lock(conn_mu_);
    const std::uint32_t parts = options_.of(table).partitions;
    if (p >= parts) {
      return make_error(errc::invalid_argument, "vdb '{}': partition {} of {}", table, p, parts);
    }
    SPINDLE_ASSIGN_OR_RETURN(redis_reply r, conn_.command({"ZCARD", zset_key(table, p)}));
    return static_cast<std::uint64_t>(r.integer());
  }

  status configure_table(std::string_view table, const vdb_options& o) override {
    SPINDLE_TRY(validate(o).with_context(fmt::format("vdb table '{}'", table)));
    std::lock_guard lock(conn_mu_);
    options_.set(table, o);
    return status::ok();
  }

  void flush() override { touches_.flush(); }

 private:
  // Caller holds conn_mu_.

  std::string part_prefix(std::string_view table, std::uint32_t p) const {
    return fmt::format("{}:{}:{}:", prefix_, table, p);
  }
  std::string data_key(std::string_view table, std::uint32_t p, cache_key k) const {
    return part_prefix(table, p) + key_bytes(k);
  }
  std::string zset_key(std::string_view table, std::uint32_t p) const {
    return part_prefix(table, p) + "z";
  }
  static std::string printable(std::string_view name) {
    cache_key k = 0;
    for (int i = 0; i < 8; ++i)
      k |= cache_key{static_cast<unsigned char>(name[name.size() - 8 + i])} << (8 * i);
    return fmt::format("{}<key {}>", name.substr(0, name.size() - 8), k);
  }

  // The table's dim is stored once (SET NX) and checked on every call after.
  status check_dim(std::string_view table, std::uint32_t dim, bool create) {
    const auto it = dims_.find(std::string(table));
    std::uint32_t stored = it != dims_.end() ? it->second : 0;
    if (stored == 0) {
      const std::string k = fmt::format("{}:{}:dim", prefix_, table);
      const std::string d = std::to_string(dim);
      if (create) SPINDLE_TRY(conn_.command({"SET", k, d, "NX"}).error_or_ok());
      SPINDLE_ASSIGN_OR_RETURN(redis_reply r, conn_.command({"GET", k}));
      if (r.is_nil()) return status::ok();  // nothing stored yet: every lookup misses
      SPINDLE_ASSIGN_OR_RETURN(stored, parse_stored_dim(r.str(), conn_.endpoint() + " " + k));
      dims_[std::string(table)] = stored;
    }
    if (stored != dim) {
      return make_error(errc::invalid_argument, "{}: vdb table '{}' holds dim {}, asked for dim {}",
                        conn_.endpoint(), table, stored, dim);
    }
    return status::ok();
  }

  // HPS §5: prune a partition past its overflow margin down to the resolution target.
  status prune(std::string_view table, const vdb_options& o, std::uint32_t p, std::uint64_t card) {
    const auto target = static_cast<std::uint64_t>(o.overflow_margin * o.overflow_resolution);
    const std::string excess = std::to_string(card - std::min(card, target));
    const std::string z = zset_key(table, p);
    auto victims = o.policy == eviction_policy::evict_random
                       ? conn_.command({"ZRANDMEMBER", z, excess})
                       : conn_.command({"ZRANGE", z, "0", std::to_string(card - target - 1)});
    SPINDLE_TRY(victims.error_or_ok());
    std::vector<std::string> names;
    std::vector<std::string_view> del{"DEL"}, zrem{"ZREM", z};
    for (std::size_t i = 0; i < victims->elements(); ++i) {
      names.push_back(part_prefix(table, p) + std::string(victims->element_str(i)));
      zrem.push_back(victims->element_str(i));
    }
    if (names.empty()) return status::ok();
    for (const auto& n : names) del.push_back(n);
    conn_.append(del);
    conn_.append(zrem);
    SPINDLE_TRY(conn_.reply().error_or_ok());
    return conn_.reply().error_or_ok();
  }

  void apply_touches(const std::vector<pending_touch>& batch) {
    const std::string score = std::to_string(now_us());
    for (const auto& t : batch) {
      if (t.policy == eviction_policy::evict_least_used) {
        touch_conn_.append({"ZINCRBY", t.zset, "1", t.member});
      } else {
        touch_conn_.append({"ZADD", t.zset, "XX", "GT", score, t.member});
      }
    }
    for (std::size_t i = 0; i < batch.size(); ++i) (void)touch_conn_.reply();
  }

  vdb_table_options options_;  // guarded by conn_mu_
  std::mutex conn_mu_;
  redis_connection conn_;        // guarded by conn_mu_
  redis_connection touch_conn_;  // used only by the "vdb-redis-touch" thread
  std::string prefix_;
  std::unordered_map<std::string, std::uint32_t> dims_;  // guarded by conn_mu_
  // Thread "vdb-redis-touch" (owns touch_conn_): writes access scores; last member.
  background_queue<pending_touch> touches_;
};

}  // namespace

expected<std::unique_ptr<volatile_db>> make_redis_vdb(const vdb_options& options,
                                                      const std::string& host, int port,
                                                      std::string prefix) {
  SPINDLE_TRY(validate(options));
  // A serving lookup waits at most kCommandDeadlineMs for Redis, then the PDB answers.
  SPINDLE_ASSIGN_OR_RETURN(redis_connection conn,
                           redis_connection::connect(host, port, kCommandDeadlineMs));
  SPINDLE_ASSIGN_OR_RETURN(redis_connection touch,
                           redis_connection::connect(host, port, kCommandDeadlineMs));
  SPINDLE_TRY(conn.command({"PING"}).error_or_ok());
  return std::unique_ptr<volatile_db>(
      new redis_vdb(options, std::move(conn), std::move(touch), std::move(prefix)));
}

}  // namespace spindle::hps
