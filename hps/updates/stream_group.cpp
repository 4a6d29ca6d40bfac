#include "hps/updates/stream_group.hpp"

#include <hiredis/hiredis.h>

#include <charconv>

#include "core/log.hpp"

namespace spindle::hps {
namespace {

std::string_view str_of(const redisReply* r) {
  if (r == nullptr || (r->type != REDIS_REPLY_STRING && r->type != REDIS_REPLY_STATUS)) return {};
  return {r->str, r->len};
}

// One [id, [field, value, ...]] entry (fields nil: the entry was deleted).
stream_entry entry_of(const redisReply* e, std::string_view stream) {
  stream_entry out;
  out.stream = stream;
  if (e == nullptr || e->type != REDIS_REPLY_ARRAY || e->elements < 2) return out;
  out.id = str_of(e->element[0]);
  const redisReply* f = e->element[1];
  for (std::size_t i = 0; f != nullptr && f->type == REDIS_REPLY_ARRAY && i + 1 < f->elements;
       i += 2)
    out.fields.emplace_back(str_of(f->element[i]), str_of(f->element[i + 1]));
  return out;
}

bool parse_id(std::string_view id, std::uint64_t& ms, std::uint64_t& seq) {
  const auto dash = id.find('-');
  if (dash == std::string_view::npos) return false;
  const char* b = id.data();
  auto r1 = std::from_chars(b, b + dash, ms);
  auto r2 = std::from_chars(b + dash + 1, b + id.size(), seq);
  return r1.ec == std::errc() && r1.ptr == b + dash && r2.ec == std::errc() &&
         r2.ptr == b + id.size() && dash > 0;
}

}  // namespace

std::string_view stream_entry::field(std::string_view name) const {
  for (const auto& [k, v] : fields)
    if (k == name) return v;
  return {};
}

bool stream_entry::has(std::string_view name) const {
  for (const auto& f : fields)
    if (f.first == name) return true;
  return false;
}

int compare_stream_ids(std::string_view a, std::string_view b) {
  std::uint64_t am = 0, as = 0, bm = 0, bs = 0;
  const bool av = parse_id(a, am, as), bv = parse_id(b, bm, bs);
  if (!av || !bv) return av == bv ? 0 : (av ? 1 : -1);
  if (am != bm) return am < bm ? -1 : 1;
  if (as != bs) return as < bs ? -1 : 1;
  return 0;
}

expected<stream_group> stream_group::connect(const std::string& host, int port,
                                             stream_group_options o) {
  if (o.consumer.empty()) return make_error(errc::invalid_argument, "stream group: empty consumer name");
  if (o.group.empty()) return make_error(errc::invalid_argument, "stream group: empty group name");
  if (o.streams.empty()) return make_error(errc::invalid_argument, "stream group: no streams");
  SPINDLE_ASSIGN_OR_RETURN(redis_connection c, redis_connection::connect(host, port));
  for (const auto& s : o.streams) {
    auto r = c.command({"XGROUP", "CREATE", s, o.group, o.create_at, "MKSTREAM"});
    if (!r && r.error().message().find("BUSYGROUP") == std::string::npos)
      return std::move(r).error();
  }
  return stream_group(std::move(c), std::move(o));
}

expected<std::vector<stream_entry>> stream_group::read(std::string_view start, bool block) {
  const std::string count = std::to_string(o_.read_count), block_ms = std::to_string(o_.block_ms);
  std::vector<std::string_view> argv{"XREADGROUP", "GROUP", o_.group, o_.consumer, "COUNT", count};
  if (block) {
    argv.push_back("BLOCK");
    argv.push_back(block_ms);
  }
  argv.push_back("STREAMS");
  for (const auto& s : o_.streams) argv.push_back(s);
  for (std::size_t i = 0; i < o_.streams.size(); ++i) argv.push_back(start);
  SPINDLE_ASSIGN_OR_RETURN(redis_reply r, conn_.command(argv));
  std::vector<stream_entry> out;
  for (std::size_t s = 0; s < r.elements(); ++s) {
    const redisReply* stream = r.element(s);
    const std::string_view name = str_of(stream->element[0]);
    const redisReply* entries = stream->element[1];
    for (std::size_t e = 0; e < entries->elements; ++e)
      out.push_back(entry_of(entries->element[e], name));
  }
  return out;
}

// HPS §6: "If a node becomes unresponsive, its current assignment is shifted to
// other nodes": XAUTOCLAIM takes entries another consumer left idle too long.
expected<std::vector<stream_entry>> stream_group::claim() {
  std::vector<stream_entry> out;
  const std::string idle = std::to_string(o_.claim_idle_ms), count = std::to_string(o_.read_count);
  for (const auto& s : o_.streams) {
    SPINDLE_ASSIGN_OR_RETURN(redis_reply r, conn_.command({"XAUTOCLAIM", s, o_.group, o_.consumer,
                                                           idle, "0-0", "COUNT", count}));
    if (r.elements() < 2) continue;
    const redisReply* entries = r.element(1);
    for (std::size_t e = 0; e < entries->elements; ++e) {
      if (entries->element[e]->type != REDIS_REPLY_ARRAY) continue;
      ++stats_.claimed;
      out.push_back(entry_of(entries->element[e], s));
    }
  }
  return out;
}

status stream_group::reject(const stream_entry& e, const std::string& why) {
  log::error("{}: entry {} rejected: {}", e.stream, e.id, why);
  conn_.append({"XADD", e.stream + ":rejected", "*", "id", e.id, "reason", why, "group", o_.group});
  conn_.append({"XACK", e.stream, o_.group, e.id});
  SPINDLE_TRY(conn_.reply().error_or_ok());
  SPINDLE_TRY(conn_.reply().error_or_ok());
  ++stats_.rejected;
  return status::ok();
}

status stream_group::recreate(std::string_view at) {
  for (const auto& s : o_.streams) {
    auto r = conn_.command({"XGROUP", "CREATE", s, o_.group, at, "MKSTREAM"});
    if (!r && r.error().message().find("BUSYGROUP") == std::string::npos) return std::move(r).error();
  }
  pending_drained_ = false;
  return status::ok();
}

status stream_group::ack(const std::vector<const stream_entry*>& entries) {
  for (const auto* e : entries) conn_.append({"XACK", e->stream, o_.group, e->id});
  status first = status::ok();
  for (std::size_t i = 0; i < entries.size(); ++i)
    if (auto r = conn_.reply(); !r && first) first = r.error();
  return first;
}

status stream_group::apply_all(const std::vector<stream_entry>& entries, const apply_fn& apply,
                               const std::function<status()>& before_ack, std::uint64_t& n) {
  std::vector<const stream_entry*> applied;
  status stopped = status::ok();
  for (const auto& e : entries) {
    status s = e.fields.empty()
                   ? make_error(errc::invalid_argument,
                                "the entry has no fields (deleted from the stream before it was "
                                "applied?)")
                   : apply(e);
    if (!s) {
      if (s.code() == errc::invalid_argument) {  // can never apply: dead-letter it, go on
        SPINDLE_TRY(reject(e, s.message()));
        continue;
      }
      pending_drained_ = false;  // retry it (and what follows) from the pending list
      stopped = std::move(s).with_context(fmt::format("{} entry {}: ", e.stream, e.id));
      break;
    }
    if (before_ack) {
      applied.push_back(&e);
      continue;
    }
    SPINDLE_TRY(ack({&e}));
    ++stats_.applied;
    ++n;
  }
  if (!applied.empty()) {  // what did apply is made durable and acknowledged
    if (status s = before_ack(); !s) {
      pending_drained_ = false;  // none acknowledged: all read again
      return s;
    }
    SPINDLE_TRY(ack(applied));
    stats_.applied += applied.size();
    n += applied.size();
  }
  return stopped;
}

expected<std::uint64_t> stream_group::poll(const apply_fn& apply,
                                           const std::function<status()>& before_ack) {
  std::uint64_t n = 0;
  if (!pending_drained_) {
    SPINDLE_ASSIGN_OR_RETURN(auto mine, read("0", false));
    if (mine.empty()) pending_drained_ = true;
    SPINDLE_TRY(apply_all(mine, apply, before_ack, n));
    if (!pending_drained_) return n;
  }
  const auto now = std::chrono::steady_clock::now();
  if (o_.claim_idle_ms > 0 && now - last_claim_ > std::chrono::milliseconds(o_.claim_idle_ms / 2)) {
    last_claim_ = now;
    SPINDLE_ASSIGN_OR_RETURN(auto claimed, claim());
    SPINDLE_TRY(apply_all(claimed, apply, before_ack, n));
  }
  SPINDLE_ASSIGN_OR_RETURN(auto fresh, read(">", true));
  SPINDLE_TRY(apply_all(fresh, apply, before_ack, n));
  return n;
}

expected<std::uint64_t> stream_group::pending() {
  std::uint64_t total = 0;
  for (const auto& s : o_.streams) {
    SPINDLE_ASSIGN_OR_RETURN(redis_reply r, conn_.command({"XPENDING", s, o_.group}));
    if (r.elements() > 0) total += static_cast<std::uint64_t>(r.element(0)->integer);
  }
  return total;
}

}  // namespace spindle::hps
