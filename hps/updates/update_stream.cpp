// Stream entry fields: "table", "dim" (decimal), "keys" (u64 little-endian
// bytes), "vectors" (f32 little-endian bytes, keys x dim).
#include "hps/updates/update_stream.hpp"

#include <algorithm>
#include <charconv>
#include <cmath>

#include <cstring>
#include <thread>

#include "core/log.hpp"

namespace spindle::hps {
namespace {

// The batch an entry holds; `error` says why it cannot apply.
update_batch parse_entry(const stream_entry& e, std::string_view table, std::string& error) {
  update_batch b;
  b.table = table;
  b.id = e.id;
  const std::string_view keys = e.field("keys"), vectors = e.field("vectors"), dim = e.field("dim");
  // The whole field a decimal in [1, 2^16]: "8abc", "-1" and 2^32 + 8 (which
  // strtoul would take for 8, or wrap) are refused, not read as another dim.
  std::uint64_t parsed = 0;
  const auto [end, ec] = std::from_chars(dim.data(), dim.data() + dim.size(), parsed);
  const bool whole = ec == std::errc() && end == dim.data() + dim.size();
  b.dim = whole && parsed >= 1 && parsed <= 65536 ? std::uint32_t(parsed) : 0;
  const std::string_view named = e.field("table");
  if (b.dim == 0) {
    error = fmt::format("field 'dim' is '{}' (must be an integer from 1 to 65536)", dim);
  } else if (!named.empty() && named != table) {
    error = fmt::format("field 'table' is '{}' on the stream of table '{}'", named, table);
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
  stream_group_options g;
  g.group = o.group;
  g.consumer = o.consumer;
  for (const auto& t : o.tables) g.streams.push_back(update_stream_name(o.prefix, t));
  g.read_count = o.read_count;
  g.block_ms = o.block_ms;
  g.claim_idle_ms = o.claim_idle_ms;
  SPINDLE_ASSIGN_OR_RETURN(stream_group group, stream_group::connect(host, port, std::move(g)));
  return update_consumer(std::move(group), std::move(o));
}

status update_consumer::check_keys(const update_batch& b) const {
  const auto t = std::find(o_.tables.begin(), o_.tables.end(), b.table) - o_.tables.begin();
  if (std::size_t(t) >= o_.table_rows.size() || o_.table_rows[t] == 0) return status::ok();
  for (const cache_key k : b.keys)
    if (k >= o_.table_rows[t])
      return make_error(errc::invalid_argument,
                        "update {} of table '{}': key {} is past the table's {} rows", b.id,
                        b.table, k, o_.table_rows[t]);
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

expected<std::uint64_t> update_consumer::poll(
    const std::function<status(const update_batch&)>& apply) {
  auto n = group_.poll([&](const stream_entry& e) -> status {
    std::string error;
    update_batch b = parse_entry(e, table_of_stream(e.stream, o_.prefix), error);
    if (!error.empty()) return make_error(errc::invalid_argument, "{}", error);
    SPINDLE_TRY(check_keys(b));
    SPINDLE_TRY(apply(b).with_context(fmt::format("update {} of table '{}': ", b.id, b.table)));
    throttle(b.keys.size());
    return status::ok();
  });
  const auto& g = group_.stats();
  stats_.applied_messages = g.applied;
  stats_.rejected = g.rejected;
  stats_.claimed = g.claimed;
  // Redis back without its data (or a stream deleted): the group is made again,
  // from each stream's start, so the next poll reads on; this one still fails.
  if (!n && n.error().message().find("NOGROUP") != std::string::npos)
    if (auto again = group_.recreate("0"); !again) return std::move(again);
  return n;
}

expected<std::uint64_t> update_consumer::pending() { return group_.pending(); }


status apply_update(const update_batch& b, volatile_db* vdb, persistent_db* pdb) {
  // A NaN or infinite row would be served (and kept in the PDB) as it is: the
  // whole message is refused, before any of it is written.
  for (std::size_t i = 0; i < b.vectors.size(); ++i)
    if (!std::isfinite(b.vectors[i]))
      return make_error(errc::invalid_argument, "table '{}': key {} has the value {}: a row must be finite",
                        b.table, b.keys[i / std::max<std::size_t>(1, b.dim)], b.vectors[i]);
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
