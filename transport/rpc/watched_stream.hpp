// A Cap'n Proto connection's stream as the door watches it: when it last
// delivered bytes, how many, and whether a message has begun and not ended
// (Cap'n Proto's framing followed byte by byte), so the acceptor can close a
// silent connection, one stalled inside a message, or the idlest when full.
#pragma once

#include <kj/async-io.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <vector>

namespace spindle::transport::rpc {

// Cap'n Proto's stream framing followed byte by byte (segment count - 1, the
// segment sizes in words, padding to 8 bytes, then the segments), to know whether
// a message has begun and not ended: a client that stalls inside one holds its
// buffer (up to the message limit) for nothing.
class frame_tracker {
 public:
  void feed(const kj::byte* p, std::size_t n) {
    while (n > 0 && !lost_) {
      if (body_left_ > 0) {
        const std::size_t k = std::size_t(std::min<std::uint64_t>(body_left_, n));
        body_left_ -= k, p += k, n -= k;
        continue;
      }
      table_.push_back(*p++);
      --n;
      if (table_.size() == 4) {
        const std::uint64_t segments = std::uint64_t(le32(0)) + 1;
        if (segments > 512) {  // garbage: the RPC layer refuses it and disconnects
          lost_ = true;
          return;
        }
        table_len_ = 4 + 4 * segments;
        table_len_ += table_len_ % 8;
      }
      if (table_.size() > 4 && table_.size() == table_len_) {
        const std::uint64_t segments = std::uint64_t(le32(0)) + 1;
        std::uint64_t words = 0;
        for (std::uint64_t seg = 0; seg < segments; ++seg) words += le32(std::size_t(4 + 4 * seg));
        body_left_ = words * 8;
        table_.clear();
        table_len_ = 0;
      }
    }
  }
  bool mid_message() const { return !lost_ && (!table_.empty() || body_left_ > 0); }

 private:
  std::uint32_t le32(std::size_t at) const {
    return std::uint32_t(table_[at]) | std::uint32_t(table_[at + 1]) << 8 |
           std::uint32_t(table_[at + 2]) << 16 | std::uint32_t(table_[at + 3]) << 24;
  }
  std::vector<kj::byte> table_;
  std::uint64_t table_len_ = 0, body_left_ = 0;
  bool lost_ = false;
};

// A connection's stream, noting when it last delivered bytes: the acceptor closes
// one that sends nothing by the handshake deadline, and when full evicts the one
// idle longest to admit a new client (idle sockets must not lock the door).
class watched_stream final : public kj::AsyncIoStream {
 public:
  explicit watched_stream(kj::Own<kj::AsyncIoStream> inner)
      : inner_(kj::mv(inner)), last_(std::chrono::steady_clock::now()) {}
  kj::Promise<size_t> tryRead(void* buffer, size_t min_bytes, size_t max_bytes) override {
    return inner_->tryRead(buffer, min_bytes, max_bytes).then([this, buffer](size_t n) {
      if (n > 0) {
        frames_.feed(static_cast<const kj::byte*>(buffer), n);
        bytes_ += n;
        last_ = std::chrono::steady_clock::now();
      }
      return n;
    });
  }
  kj::Promise<void> write(const void* buffer, size_t size) override {
    return inner_->write(buffer, size);
  }
  kj::Promise<void> write(kj::ArrayPtr<const kj::ArrayPtr<const kj::byte>> pieces) override {
    return inner_->write(pieces);
  }
  kj::Promise<void> whenWriteDisconnected() override { return inner_->whenWriteDisconnected(); }
  void shutdownWrite() override { inner_->shutdownWrite(); }
  void abortRead() override { inner_->abortRead(); }
  std::uint64_t bytes() const { return bytes_; }
  bool mid_message() const { return frames_.mid_message(); }
  double idle_s() const {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - last_).count();
  }
  // Ends the connection: its reads fail, so the RPC system disconnects.
  void close() {
    closed_ = true;
    inner_->abortRead();
    inner_->shutdownWrite();
  }
  bool closed() const { return closed_; }

 private:
  kj::Own<kj::AsyncIoStream> inner_;
  std::chrono::steady_clock::time_point last_;
  std::uint64_t bytes_ = 0;
  bool closed_ = false;
  frame_tracker frames_;
};

}  // namespace spindle::transport::rpc
