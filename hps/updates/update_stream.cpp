// Stream entry fields: "table", "dim" (decimal), "keys" (u64 little-endian
// bytes), "vectors" (f32 little-endian bytes, keys x dim).
#include "hps/updates/update_stream.hpp"

#include <hiredis/hiredis.h>

#include <cstring>
#include <thread>

#include "core/log.hpp"

namespace spindle::hps {
namespace {

std::string_view str_of(const redisReply* r) {
  if (r == nullptr || (r->type != REDIS_REPLY_STRING && r->type != REDIS_REPLY_STATUS)) return {};
  return {r->str, r->len};
}

// Parses one [id, [field, value, ...]] entry; `error` says why it cannot apply.
update_batch parse_entry(const redisReply* e, std::string_view table, std::string& error) {
  update_batch b;
  b.table = table;
  b.id = str_of(e->element[0]);
  const redisReply* f = e->element[1];
  std::string_view keys, vectors, dim;
  for (std::size_t i = 0; f != nullptr && f->type == REDIS_REPLY_ARRAY && i + 1 < f->elements;
       i += 2) {
    const auto name = str_of(f->element[i]);
    const auto value = str_of(f->element[i + 1]);
    if (name == "keys")
      keys = value;
    else if (name == "vectors")
      vectors = value;
    else if (name == "dim")
      dim = value;
  }
  b.dim = dim.empty()
              ? 0
              : static_cast<std::uint32_t>(std::strtoul(std::string(dim).c_str(), nullptr, 10));
  if (b.dim == 0) {
    error = fmt::format("field 'dim' is '{}' (must be a positive integer)", dim);
  } else if (keys.empty() || keys.size() % 8 != 0) {
    error =
        fmt::format("field 'keys' has {} bytes (must be a non-zero multiple of 8)", keys.size());
  } else if (vectors.size() != keys.size() / 8 * b.dim * sizeof(float)) {
    error = fmt::format("field 'vectors' has {} bytes, {} keys of dim {} need {}", vectors.size(),
                        keys.size() / 8, b.dim, keys.size() / 8 * b.dim * sizeof(float));
  }
  if (!error.empty()) return b;
  b.keys.resize(keys.size() / 8);
  std::memcpy(b.keys.data(), keys.data(), keys.size());
  b.vectors.resize(vectors.size() / sizeof(float));
  std::memcpy(b.vectors.data(), vectors.data(), vectors.size());
  return b;
}

std::string table_of_stream(std::string_view stream, std::string_view prefix) {
  return std::string(stream.substr(prefix.size() + std::string_view(":updates:").size()));
}

}  // namespace

std::string update_stream_name(std::string_view prefix, std::string_view table) {
  return fmt::format("{}:updates:{}", prefix, table);
}

expected<update_producer> update_producer::connect(const std::string& host, int port,
                                                   std::string prefix,
                                                   std::uint32_t max_keys_per_message) {
  if (max_keys_per_message == 0) {
    return make_error(errc::invalid_argument, "update producer: max_keys_per_message must be > 0");
  }
  SPINDLE_ASSIGN_OR_RETURN(redis_connection c, redis_connection::connect(host, port));
  return update_producer(std::move(c), std::move(prefix), max_keys_per_message);
}

expected<std::uint64_t> update_producer::publish(std::string_view table, std::uint32_t dim,
                                                 std::span<const cache_key> keys,
                                                 std::span<const float> vectors) {
  SPINDLE_TRY(check_vdb_batch(table, dim, keys.size(), vectors.size(), "publish"));
  const std::string stream = update_stream_name(prefix_, table);
  const std::string dim_text = std::to_string(dim);
  std::uint64_t messages = 0;
  for (std::size_t begin = 0; begin < keys.size(); begin += max_keys_) {
    const std::size_t n = std::min<std::size_t>(max_keys_, keys.size() - begin);
    const std::string_view k(reinterpret_cast<const char*>(keys.data() + begin), n * 8);
    const std::string_view v(reinterpret_cast<const char*>(vectors.data() + begin * dim),
                             n * dim * sizeof(float));
    conn_.append({"XADD", stream, "*", "table", table, "dim", dim_text, "keys", k, "vectors", v});
    ++messages;
  }
  status first = status::ok();
  for (std::uint64_t i = 0; i < messages; ++i) {
    auto r = conn_.reply();
    if (!r && first.is_ok()) first = r.error();
  }
  SPINDLE_TRY(first);
  return messages;
}

expected<update_consumer> update_consumer::connect(const std::string& host, int port,
                                                   consumer_options o) {
  if (o.consumer.empty())
    return make_error(errc::invalid_argument, "update consumer: empty consumer name");
  if (o.tables.empty()) return make_error(errc::invalid_argument, "update consumer: no tables");
  SPINDLE_ASSIGN_OR_RETURN(redis_connection c, redis_connection::connect(host, port));
  for (const auto& t : o.tables) {
    auto r =
        c.command({"XGROUP", "CREATE", update_stream_name(o.prefix, t), o.group, "0", "MKSTREAM"});
    if (!r && r.error().message().find("BUSYGROUP") == std::string::npos)
      return std::move(r).error();
  }
  return update_consumer(std::move(c), std::move(o));
}

expected<std::vector<update_batch>> update_consumer::read(std::string_view start, bool block) {
  std::vector<std::string> streams;
  for (const auto& t : o_.tables) streams.push_back(update_stream_name(o_.prefix, t));
  const std::string count = std::to_string(o_.read_count), block_ms = std::to_string(o_.block_ms);
  std::vector<std::string_view> argv{"XREADGROUP", "GROUP", o_.group, o_.consumer, "COUNT", count};
  if (block) {
    argv.push_back("BLOCK");
    argv.push_back(block_ms);
  }
  argv.push_back("STREAMS");
  for (const auto& s : streams) argv.push_back(s);
  for (std::size_t i = 0; i < streams.size(); ++i) argv.push_back(start);
  SPINDLE_ASSIGN_OR_RETURN(redis_reply r, conn_.command(argv));
  std::vector<update_batch> out;
  for (std::size_t s = 0; s < r.elements(); ++s) {
    const redisReply* stream = r.element(s);
    const std::string table = table_of_stream(str_of(stream->element[0]), o_.prefix);
    const redisReply* entries = stream->element[1];
    for (std::size_t e = 0; e < entries->elements; ++e) {
      std::string error;
      update_batch b = parse_entry(entries->element[e], table, error);
      if (!error.empty()) {
        SPINDLE_TRY(reject(b, error));
        continue;
      }
      out.push_back(std::move(b));
    }
  }
  return out;
}

// HPS §6: "If a node becomes unresponsive, its current assignment is shifted to
// other nodes": XAUTOCLAIM takes messages another consumer left idle too long.
expected<std::vector<update_batch>> update_consumer::claim() {
  std::vector<update_batch> out;
  const std::string idle = std::to_string(o_.claim_idle_ms), count = std::to_string(o_.read_count);
  for (const auto& t : o_.tables) {
    SPINDLE_ASSIGN_OR_RETURN(
        redis_reply r, conn_.command({"XAUTOCLAIM", update_stream_name(o_.prefix, t), o_.group,
                                      o_.consumer, idle, "0-0", "COUNT", count}));
    if (r.elements() < 2) continue;
    const redisReply* entries = r.element(1);
    for (std::size_t e = 0; e < entries->elements; ++e) {
      if (entries->element[e]->type != REDIS_REPLY_ARRAY) continue;
      std::string error;
      update_batch b = parse_entry(entries->element[e], t, error);
      if (!error.empty()) {
        SPINDLE_TRY(reject(b, error));
        continue;
      }
      ++stats_.claimed;
      out.push_back(std::move(b));
    }
  }
  return out;
}

status update_consumer::reject(const update_batch& b, const std::string& why) {
  const std::string stream = update_stream_name(o_.prefix, b.table);
  log::error("{}: update {} rejected: {}", stream, b.id, why);
  conn_.append({"XADD", stream + ":rejected", "*", "id", b.id, "reason", why});
  conn_.append({"XACK", stream, o_.group, b.id});
  SPINDLE_TRY(conn_.reply().error_or_ok());
  SPINDLE_TRY(conn_.reply().error_or_ok());
  ++stats_.rejected;
  return status::ok();
}

void update_consumer::throttle(std::uint64_t keys) {
  stats_.applied_keys += keys;
  if (o_.max_keys_per_second <= 0) return;
  const auto due =
      started_ + std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                     std::chrono::duration<double>(stats_.applied_keys / o_.max_keys_per_second));
  std::this_thread::sleep_until(due);
}

status update_consumer::apply_all(std::vector<update_batch>& batches,
                                  const std::function<status(const update_batch&)>& apply,
                                  std::uint64_t& n) {
  for (const auto& b : batches) {
    if (status s = apply(b); !s) {
      if (s.code() == errc::invalid_argument) {  // can never apply: dead-letter it, go on
        SPINDLE_TRY(reject(b, s.message()));
        continue;
      }
      pending_drained_ = false;  // retry it (and what follows) from the pending list
      return std::move(s).with_context(fmt::format("update {} of table '{}'", b.id, b.table));
    }
    SPINDLE_TRY(conn_.command({"XACK", update_stream_name(o_.prefix, b.table), o_.group, b.id})
                    .error_or_ok());
    ++stats_.applied_messages;
    ++n;
    throttle(b.keys.size());
  }
  return status::ok();
}

expected<std::uint64_t> update_consumer::poll(
    const std::function<status(const update_batch&)>& apply) {
  std::uint64_t n = 0;
  if (!pending_drained_) {
    SPINDLE_ASSIGN_OR_RETURN(auto mine, read("0", false));
    if (mine.empty()) pending_drained_ = true;
    SPINDLE_TRY(apply_all(mine, apply, n));
    if (!pending_drained_) return n;
  }
  const auto now = std::chrono::steady_clock::now();
  if (o_.claim_idle_ms > 0 && now - last_claim_ > std::chrono::milliseconds(o_.claim_idle_ms / 2)) {
    last_claim_ = now;
    SPINDLE_ASSIGN_OR_RETURN(auto claimed, claim());
    SPINDLE_TRY(apply_all(claimed, apply, n));
  }
  SPINDLE_ASSIGN_OR_RETURN(auto fresh, read(">", true));
  SPINDLE_TRY(apply_all(fresh, apply, n));
  return n;
}

expected<std::uint64_t> update_consumer::pending() {
  std::uint64_t total = 0;
  for (const auto& t : o_.tables) {
    SPINDLE_ASSIGN_OR_RETURN(
        redis_reply r, conn_.command({"XPENDING", update_stream_name(o_.prefix, t), o_.group}));
    if (r.elements() > 0) total += static_cast<std::uint64_t>(r.element(0)->integer);
  }
  return total;
}

status apply_update(const update_batch& b, volatile_db* vdb, persistent_db* pdb) {
  if (pdb != nullptr) {
    SPINDLE_ASSIGN_OR_RETURN(std::uint32_t dim, pdb->table_dim(b.table));
    if (dim != b.dim) {
      return make_error(errc::invalid_argument, "table '{}' holds dim {}, update has dim {}",
                        b.table, dim, b.dim);
    }
    SPINDLE_TRY(pdb->insert(b.table, b.keys, b.vectors));
  }
  if (vdb != nullptr) SPINDLE_TRY(vdb->insert(b.table, b.dim, b.keys, b.vectors));
  return status::ok();
}

}  // namespace spindle::hps
