// `spindle hps ...`: the hierarchical parameter server's offline and streaming
// tools. `load` fills the persistent DB (RocksDB) from .npy / safetensors / a
// DLRM model directory; `publish` appends online updates to the Redis stream of
// a table; `consume` runs an update consumer (one member of a consumer group)
// that applies the stream to the PDB and optionally a Redis VDB, until stopped.
#include <signal.h>

#include <atomic>
#include <cmath>
#include <chrono>
#include <cstdio>
#include <optional>
#include <thread>

#include "apps/commands/command.hpp"
#include "config/model.hpp"
#include "core/log.hpp"
#include "core/npy.hpp"
#include "hps/pdb/persistent_db.hpp"
#include "hps/updates/update_stream.hpp"

namespace spindle::apps {
namespace {

std::atomic<bool> g_stop{false};
void on_stop_signal(int) { g_stop = true; }

struct load_args {
  std::string pdb, table, npy, safetensors, tensor, model;
};

status run_load(const load_args& a) {
  SPINDLE_ASSIGN_OR_RETURN(auto db, hps::persistent_db::open(a.pdb));
  if (!a.model.empty()) {
    SPINDLE_ASSIGN_OR_RETURN(auto desc, config::load_model_desc(a.model));
    if (desc.arch != config::model_arch::dlrm) {
      return make_error(errc::invalid_argument, "{}/model.toml: arch is not dlrm", a.model);
    }
    for (std::size_t t = 0; t < desc.table_rows.size(); ++t) {
      SPINDLE_TRY(db->bulk_load_safetensors(fmt::format("emb{}", t), a.model + "/" + desc.weights,
                                            fmt::format("emb_l.{}.weight", t)));
    }
  } else if (a.table.empty()) {
    return make_error(errc::invalid_argument,
                      "hps load: give --model DIR, or --table with --npy or --safetensors");
  } else if (!a.npy.empty()) {
    SPINDLE_TRY(db->bulk_load_npy(a.table, a.npy));
  } else if (!a.safetensors.empty() && !a.tensor.empty()) {
    SPINDLE_TRY(db->bulk_load_safetensors(a.table, a.safetensors, a.tensor));
  } else {
    return make_error(errc::invalid_argument,
                      "hps load: --table needs --npy FILE or --safetensors FILE --tensor NAME");
  }
  for (const auto& t : db->tables()) {
    fmt::print("table {} dim {} rows ~{}\n", t, *db->table_dim(t), *db->approximate_size(t));
  }
  return status::ok();
}

struct publish_args {
  std::string redis, table, keys, vectors, prefix = "spindle";
  std::uint32_t max_keys = 1024;
};

status run_publish(const publish_args& a) {
  SPINDLE_ASSIGN_OR_RETURN(auto ep, hps::parse_endpoint(a.redis));
  SPINDLE_ASSIGN_OR_RETURN(auto keys_arr, npy_array::open(a.keys));
  SPINDLE_ASSIGN_OR_RETURN(auto vec_arr, npy_array::open(a.vectors));
  SPINDLE_ASSIGN_OR_RETURN(auto keys, keys_arr.as<std::int64_t>());
  SPINDLE_ASSIGN_OR_RETURN(auto vecs, vec_arr.as<float>());
  if (keys_arr.shape().size() != 1 || vec_arr.shape().size() != 2 ||
      vec_arr.shape()[0] != keys_arr.shape()[0]) {
    return make_error(errc::invalid_argument,
                      "{} / {}: expected keys [n] int64 and vectors [n, dim] float32", a.keys,
                      a.vectors);
  }
  for (std::size_t i = 0; i < vecs.size(); ++i)
    if (!std::isfinite(vecs[i]))
      return make_error(errc::invalid_argument, "{}: row {} holds the value {}: rows must be finite",
                        a.vectors, i / std::size_t(vec_arr.shape()[1]), vecs[i]);
  SPINDLE_ASSIGN_OR_RETURN(auto producer, hps::update_producer::connect(
                                              ep.first, ep.second, a.prefix, a.max_keys));
  std::vector<hps::cache_key> k(keys.begin(), keys.end());
  SPINDLE_ASSIGN_OR_RETURN(auto n,
                           producer.publish(a.table, std::uint32_t(vec_arr.shape()[1]), k, vecs));
  fmt::print("published {} keys in {} messages to {}\n", k.size(), n,
             hps::update_stream_name(a.prefix, a.table));
  return status::ok();
}

struct consume_args {
  std::string redis, vdb_redis, pdb, group = "spindle-updaters", consumer, prefix = "spindle";
  std::vector<std::string> tables;
  double rate = 0;
  int exit_when_idle_ms = 0;
};

// A Redis outage seen by the consumer: said once when it starts and once when
// it ends; meanwhile each retry waits a backoff (100 ms doubling to 2 s).
class outage {
 public:
  /// Waits before the next retry when `e` is Redis being unreachable (or empty
  /// after a restart); returns `e` for any other error.
  status wait_or_fail(const status& e) {
    const bool redis_gone = e.code() == errc::unavailable ||
                            e.message().find("NOGROUP") != std::string::npos ||
                            e.message().find("LOADING") != std::string::npos;
    if (!redis_gone) return e;
    if (backoff_.count() == 0) {
      fmt::print("redis unavailable ({}); retrying with backoff\n", e.message());
      std::fflush(stdout);
      since_ = std::chrono::steady_clock::now();
    }
    backoff_ = std::min(std::chrono::milliseconds(2000),
                        backoff_.count() == 0 ? std::chrono::milliseconds(100) : 2 * backoff_);
    std::this_thread::sleep_for(backoff_);
    return status::ok();
  }
  void over() {
    if (backoff_.count() == 0) return;
    fmt::print("redis back after {} ms\n", std::chrono::duration_cast<std::chrono::milliseconds>(
                                               std::chrono::steady_clock::now() - since_)
                                               .count());
    std::fflush(stdout);
    backoff_ = std::chrono::milliseconds(0);
  }

 private:
  std::chrono::milliseconds backoff_{0};
  std::chrono::steady_clock::time_point since_{};
};

status run_consume(const consume_args& a) {
  signal(SIGINT, on_stop_signal);
  signal(SIGTERM, on_stop_signal);
  SPINDLE_ASSIGN_OR_RETURN(auto ep, hps::parse_endpoint(a.redis));
  SPINDLE_ASSIGN_OR_RETURN(auto pdb, hps::persistent_db::open(a.pdb));
  for (const auto& t : a.tables) SPINDLE_TRY(pdb->table_dim(t).error_or_ok());
  std::unique_ptr<hps::volatile_db> vdb;
  if (!a.vdb_redis.empty()) {
    SPINDLE_ASSIGN_OR_RETURN(auto vep, hps::parse_endpoint(a.vdb_redis));
    SPINDLE_ASSIGN_OR_RETURN(vdb, hps::make_redis_vdb({}, vep.first, vep.second, a.prefix));
  }
  hps::consumer_options o;
  o.prefix = a.prefix;
  o.group = a.group;
  o.consumer = a.consumer;
  o.tables = a.tables;
  o.max_keys_per_second = a.rate;
  SPINDLE_ASSIGN_OR_RETURN(auto consumer, hps::update_consumer::connect(ep.first, ep.second, o));
  fmt::print("consumer {} ready\n", a.consumer);
  std::fflush(stdout);
  auto idle_since = std::chrono::steady_clock::now();
  outage redis_down;
  while (!g_stop) {
    auto n = consumer.poll([&](const hps::update_batch& b) {
      return hps::apply_update(b, vdb.get(), pdb.get());
    });
    if (!n) {
      // Redis went away (or came back empty, without our group): retry with
      // backoff instead of exiting; the connection reconnects by itself.
      SPINDLE_TRY(redis_down.wait_or_fail(n.error()));  // a lost group is made again by poll
      continue;
    }
    redis_down.over();
    const auto& s = consumer.stats();
    if (*n > 0) {
      idle_since = std::chrono::steady_clock::now();
      fmt::print("applied {} messages {} keys\n", s.applied_messages, s.applied_keys);
      std::fflush(stdout);
    } else if (a.exit_when_idle_ms > 0 && std::chrono::steady_clock::now() - idle_since >
                                              std::chrono::milliseconds(a.exit_when_idle_ms)) {
      break;
    }
  }
  const auto& s = consumer.stats();
  fmt::print("stopped: applied {} messages {} keys, rejected {}, claimed {}\n", s.applied_messages,
             s.applied_keys, s.rejected, s.claimed);
  return status::ok();
}

void add_load(CLI::App& hps) {
  auto [cmd, a] = add_command<load_args>(
      hps, "load", "Bulk-load embedding tables into the persistent DB (RocksDB)");
  cmd->add_option("--pdb", a->pdb, "RocksDB directory (created when absent)")->required();
  cmd->add_option("--model", a->model,
                  "DLRM model directory: loads emb_l.<i>.weight as table emb<i>");
  cmd->add_option("--table", a->table, "Table name (with --npy or --safetensors)");
  cmd->add_option("--npy", a->npy, "[rows, dim] float32 .npy; row i is key i");
  cmd->add_option("--safetensors", a->safetensors, "safetensors file (with --tensor)");
  cmd->add_option("--tensor", a->tensor, "Tensor name in --safetensors");
  on_run(cmd, [a] { return run_load(*a); });
}

void add_publish(CLI::App& hps) {
  auto [cmd, a] = add_command<publish_args>(hps, "publish",
                                            "Append embedding updates to a table's Redis stream");
  cmd->add_option("--redis", a->redis, "Stream broker HOST:PORT")->required();
  cmd->add_option("--table", a->table, "Table name")->required();
  cmd->add_option("--keys", a->keys, "Keys: [n] int64 .npy")->required();
  cmd->add_option("--vectors", a->vectors, "Vectors: [n, dim] float32 .npy")->required();
  cmd->add_option("--prefix", a->prefix, "Key namespace")->capture_default_str();
  cmd->add_option("--max-keys-per-message", a->max_keys, "Split into messages of this many keys")
      ->capture_default_str();
  on_run(cmd, [a] { return run_publish(*a); });
}

void add_consume(CLI::App& hps) {
  auto [cmd, a] = add_command<consume_args>(
      hps, "consume", "Apply a table's update stream to the PDB (and a Redis VDB) until stopped");
  cmd->add_option("--redis", a->redis, "Stream broker HOST:PORT")->required();
  cmd->add_option("--pdb", a->pdb, "RocksDB directory holding the tables")->required();
  cmd->add_option("--tables", a->tables, "Tables to follow")->required()->delimiter(',');
  cmd->add_option("--consumer", a->consumer, "Consumer name; reuse it after a restart to resume")
      ->required();
  cmd->add_option("--group", a->group, "Consumer group shared by the nodes")->capture_default_str();
  cmd->add_option("--vdb-redis", a->vdb_redis, "Also apply updates to this Redis VDB HOST:PORT");
  cmd->add_option("--prefix", a->prefix, "Key namespace")->capture_default_str();
  cmd->add_option("--max-keys-per-second", a->rate, "Rate limit (0: none)")->capture_default_str();
  cmd->add_option("--exit-when-idle-ms", a->exit_when_idle_ms,
                  "Exit after this long with nothing new (0: never)");
  on_run(cmd, [a] { return run_consume(*a); });
}

}  // namespace

void register_hps(CLI::App& app, global_options&) {
  auto* hps =
      app.add_subcommand("hps", "Hierarchical parameter server tools (PDB load, online updates)");
  hps->require_subcommand(1);
  add_load(*hps);
  add_publish(*hps);
  add_consume(*hps);
}

}  // namespace spindle::apps
