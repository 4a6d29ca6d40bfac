// RAII hiredis connection with a pipelined command API: append any number of
// commands, then read their replies in order. Errors name the server and the
// command. A connection that broke (Redis restarted, reset by peer) reconnects
// by itself at the next command, with backoff (50 ms doubling to 2 s), logging
// once when it is lost and once when it is back. One owner thread per
// connection (hiredis contexts are not thread-safe).
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.hpp"

struct redisContext;
struct redisReply;

namespace spindle::hps {

/// One reply, owned (freed with freeReplyObject).
class redis_reply {
 public:
  explicit redis_reply(redisReply* r) : r_(r) {}
  const redisReply* get() const { return r_.get(); }
  bool is_nil() const;
  bool is_array() const;
  std::size_t elements() const;
  /// Bytes of a string reply, or of element i of an array reply ("" when nil).
  std::string_view str() const;
  std::string_view element_str(std::size_t i) const;
  bool element_nil(std::size_t i) const;
  const redisReply* element(std::size_t i) const;
  long long integer() const;

 private:
  struct deleter {
    void operator()(redisReply* r) const;
  };
  std::unique_ptr<redisReply, deleter> r_;
};

class redis_connection {
 public:
  /// Connects to host:port within `timeout_ms` (also the per-command timeout).
  static expected<redis_connection> connect(const std::string& host, int port,
                                            int timeout_ms = 5000);

  /// Queues one command (binary-safe arguments) without waiting.
  void append(const std::vector<std::string_view>& argv);
  /// Reads the reply of the oldest appended command; a Redis error reply is an error.
  expected<redis_reply> reply();
  /// append + reply.
  expected<redis_reply> command(const std::vector<std::string_view>& argv);

  const std::string& endpoint() const { return endpoint_; }

 private:
  struct deleter {
    void operator()(redisContext* c) const;
  };
  redis_connection(redisContext* c, std::string endpoint) : c_(c), endpoint_(std::move(endpoint)) {}
  /// A broken context is replaced (at most once per backoff) when no reply is pending.
  void heal();

  std::unique_ptr<redisContext, deleter> c_;
  std::string endpoint_;
  std::string host_;
  int port_ = 0, timeout_ms_ = 5000;
  std::vector<std::string> pending_names_;  // command names awaiting replies, oldest first
  std::size_t pending_head_ = 0;
  // Reconnection: when the next attempt may run, the current backoff, and when it broke.
  std::chrono::steady_clock::time_point retry_at_{}, broken_since_{};
  std::chrono::milliseconds backoff_{0};
  bool broken_logged_ = false;
};

/// Parses "HOST:PORT" (e.g. "127.0.0.1:6379"); errors name the text.
expected<std::pair<std::string, int>> parse_endpoint(std::string_view text);

}  // namespace spindle::hps
