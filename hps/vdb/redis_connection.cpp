#include "hps/vdb/redis_connection.hpp"

#include <hiredis/hiredis.h>

#include <charconv>

#include "core/log.hpp"

namespace spindle::hps {

void redis_reply::deleter::operator()(redisReply* r) const {
  if (r != nullptr) freeReplyObject(r);
}

bool redis_reply::is_nil() const { return r_->type == REDIS_REPLY_NIL; }
bool redis_reply::is_array() const { return r_->type == REDIS_REPLY_ARRAY; }
std::size_t redis_reply::elements() const { return is_array() ? r_->elements : 0; }
long long redis_reply::integer() const { return r_->integer; }

std::string_view redis_reply::str() const {
  if (r_->type != REDIS_REPLY_STRING && r_->type != REDIS_REPLY_STATUS) return {};
  return {r_->str, r_->len};
}

const redisReply* redis_reply::element(std::size_t i) const { return r_->element[i]; }

bool redis_reply::element_nil(std::size_t i) const {
  return r_->element[i]->type == REDIS_REPLY_NIL;
}

std::string_view redis_reply::element_str(std::size_t i) const {
  const redisReply* e = r_->element[i];
  if (e->type != REDIS_REPLY_STRING && e->type != REDIS_REPLY_STATUS) return {};
  return {e->str, e->len};
}

void redis_connection::deleter::operator()(redisContext* c) const {
  if (c != nullptr) redisFree(c);
}

expected<redis_connection> redis_connection::connect(const std::string& host, int port,
                                                     int timeout_ms) {
  const timeval tv{timeout_ms / 1000, (timeout_ms % 1000) * 1000};
  redisContext* c = redisConnectWithTimeout(host.c_str(), port, tv);
  const std::string endpoint = fmt::format("redis {}:{}", host, port);
  if (c == nullptr) return make_error(errc::unavailable, "{}: cannot allocate a context", endpoint);
  if (c->err != 0) {
    status s = make_error(errc::unavailable, "{}: {}", endpoint, c->errstr);
    redisFree(c);
    return s;
  }
  redisSetTimeout(c, tv);
  redis_connection conn(c, endpoint);
  conn.host_ = host, conn.port_ = port, conn.timeout_ms_ = timeout_ms;
  return conn;
}

namespace {

// A reconnection is trusted once the server answers: a PING within a short
// deadline (at most 50 ms), then the context gets back its command deadline.
bool answers_ping(redisContext* c, int timeout_ms) {
  const int probe_ms = std::min(timeout_ms, 50);
  redisSetTimeout(c, timeval{0, probe_ms * 1000});
  void* raw = redisCommand(c, "PING");
  const bool ok = raw != nullptr && c->err == 0;
  if (raw) freeReplyObject(raw);
  redisSetTimeout(c, timeval{timeout_ms / 1000, (timeout_ms % 1000) * 1000});
  return ok;
}

}  // namespace

void redis_connection::heal() {
  if (c_ && c_->err == 0) return;
  if (pending_head_ < pending_names_.size()) return;  // replies of the old context pending
  const auto now = std::chrono::steady_clock::now();
  if (!broken_logged_) {
    log::warn("{}: connection lost ({}); reconnecting with backoff", endpoint_,
              c_ ? c_->errstr : "no context");
    broken_logged_ = true;
    broken_since_ = now;
  }
  if (now < retry_at_) return;
  auto fresh = connect(host_, port_, timeout_ms_);
  if (fresh && !answers_ping(fresh->c_.get(), timeout_ms_)) {  // a frozen server accepts
    fresh = make_error(errc::unavailable, "{}: no answer to PING", endpoint_);
  }
  if (!fresh) {
    backoff_ = std::min<std::chrono::milliseconds>(
        std::chrono::milliseconds(2000),
        backoff_.count() == 0 ? std::chrono::milliseconds(50) : 2 * backoff_);
    retry_at_ = now + backoff_;
    return;
  }
  c_ = std::move(fresh->c_);
  log::info("{}: reconnected after {} ms", endpoint_,
            std::chrono::duration_cast<std::chrono::milliseconds>(now - broken_since_).count());
  broken_logged_ = false;  // the backoff stays until a command is answered
}

void redis_connection::append(const std::vector<std::string_view>& argv) {
  heal();
  std::vector<const char*> args(argv.size());
  std::vector<std::size_t> lens(argv.size());
  for (std::size_t i = 0; i < argv.size(); ++i) {
    args[i] = argv[i].data();
    lens[i] = argv[i].size();
  }
  redisAppendCommandArgv(c_.get(), static_cast<int>(argv.size()), args.data(), lens.data());
  pending_names_.emplace_back(argv.empty() ? "" : argv[0]);
}

expected<redis_reply> redis_connection::reply() {
  std::string name = pending_head_ < pending_names_.size() ? pending_names_[pending_head_] : "";
  if (++pending_head_ >= pending_names_.size()) {
    pending_names_.clear();
    pending_head_ = 0;
  }
  void* raw = nullptr;
  const bool was_broken = c_->err != 0;  // failing at once, within a backoff
  if (redisGetReply(c_.get(), &raw) != REDIS_OK || raw == nullptr) {
    // The context is broken: none of the other pending replies will come.
    pending_names_.clear();
    pending_head_ = 0;
    if (c_->err == 0) c_->err = REDIS_ERR_IO;  // make heal() replace it
    // A frozen server (SIGSTOP, a hung host) still accepts connections: reconnecting
    // at once would wait out the deadline again on every command. Until retry_at_
    // commands fail at once (callers fall back to the PDB); the backoff grows while
    // commands keep failing and resets at the first reply.
    if (!was_broken) {
      backoff_ = std::min<std::chrono::milliseconds>(
          std::chrono::milliseconds(2000),
          backoff_.count() == 0 ? std::chrono::milliseconds(50) : 2 * backoff_);
      retry_at_ = std::chrono::steady_clock::now() + backoff_;
    }
    return make_error(errc::unavailable, "{}: {}: {}", endpoint_, name, c_->errstr);
  }
  backoff_ = std::chrono::milliseconds(0);  // the server answers: no backoff
  redis_reply r(static_cast<redisReply*>(raw));
  if (r.get()->type == REDIS_REPLY_ERROR) {
    return make_error(errc::invalid_argument, "{}: {}: {}", endpoint_, name,
                      std::string_view(r.get()->str, r.get()->len));
  }
  return r;
}

expected<redis_reply> redis_connection::command(const std::vector<std::string_view>& argv) {
  append(argv);
  return reply();
}

expected<std::pair<std::string, int>> parse_endpoint(std::string_view text) {
  const auto colon = text.rfind(':');
  int port = 0;
  if (colon == std::string_view::npos || colon == 0) {
    return make_error(errc::invalid_argument, "endpoint '{}': expected HOST:PORT", text);
  }
  const auto tail = text.substr(colon + 1);
  const auto [p, ec] = std::from_chars(tail.data(), tail.data() + tail.size(), port);
  if (ec != std::errc() || p != tail.data() + tail.size() || port <= 0 || port > 65535) {
    return make_error(errc::invalid_argument, "endpoint '{}': bad port '{}'", text, tail);
  }
  return std::make_pair(std::string(text.substr(0, colon)), port);
}

}  // namespace spindle::hps
