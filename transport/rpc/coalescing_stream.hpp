// A connection's bytes in batches, both ways. Writes of one event-loop turn
// are sent as one: each write is copied into a buffer and resolves at once,
// and the buffer goes out in one write once the loop has run everything else
// it holds (kj::evalLast). The answers one batch fulfils together thus cost one
// syscall and one wake-up of the peer instead of one each (on loopback TCP a
// send runs the receiver's side in the sender's thread). Past `max_buffered`
// bytes waiting to go out, a write waits for the send in flight and so does
// the next read from the socket: a peer that does not read its answers stops
// being read (no new calls), so what waits for it stays bounded. A failed send
// fails every later write. Reads take what the socket holds (up to 64 KiB) and
// serve Cap'n Proto's small reads (a message's first word, its segment table,
// its segments: three or four reads a message) from it; a read of 64 KiB or
// more goes straight into the caller's buffer. An idle connection keeps no
// buffer: the read buffer goes once emptied unless the socket filled it, and
// write buffers past 16 KiB go once sent.
#pragma once

#include <kj/async-io.h>

#include <cstddef>
#include <vector>

namespace spindle::transport::rpc {

class coalescing_stream final : public kj::AsyncIoStream, private kj::TaskSet::ErrorHandler {
 public:
  explicit coalescing_stream(kj::AsyncIoStream& inner, std::size_t max_buffered = 1 << 20);

  kj::Promise<size_t> tryRead(void* buffer, size_t min_bytes, size_t max_bytes) override;
  kj::Promise<void> write(const void* buffer, size_t size) override;
  kj::Promise<void> write(kj::ArrayPtr<const kj::ArrayPtr<const kj::byte>> pieces) override;
  kj::Promise<void> whenWriteDisconnected() override { return inner_.whenWriteDisconnected(); }
  /// After the buffered bytes are sent.
  void shutdownWrite() override;
  void abortRead() override { inner_.abortRead(); }

  std::size_t sends() const { return sends_; }  // writes of the inner stream so far
  /// Streams of this thread with bytes not yet sent: a loop about to end runs
  /// until none has (the answers a stopping server gave must reach the peers).
  static std::size_t unsent_on_this_thread();
  ~coalescing_stream() noexcept(false);

 private:
  void taskFailed(kj::Exception&& e) override;
  void schedule();
  kj::Promise<void> send_pending();
  void release_waiters();
  void set_unsent(bool unsent);
  kj::Promise<size_t> read_more(kj::byte* out, size_t min_bytes, size_t max_bytes, size_t got);
  kj::Promise<size_t> read_socket(kj::byte* out, size_t min_bytes, size_t max_bytes, size_t got);
  bool backlogged() const { return pending_.size() + sending_bytes_.size() > max_buffered_; }

  kj::AsyncIoStream& inner_;
  std::size_t max_buffered_;
  std::vector<kj::byte> pending_, sending_bytes_;
  static constexpr std::size_t kReadBuffer = 64 << 10, kKeptWriteBuffer = 16 << 10;
  kj::Array<kj::byte> read_buf_;               // empty while idle
  std::size_t read_begin_ = 0, read_end_ = 0;  // the bytes of read_buf_ not yet taken
  kj::Maybe<kj::Own<kj::PromiseFulfiller<void>>> read_waiter_;  // a read held by the backlog
  bool scheduled_ = false, sending_ = false, shutdown_ = false, unsent_ = false;
  std::size_t sends_ = 0;
  kj::Maybe<kj::Exception> failed_;
  std::vector<kj::Own<kj::PromiseFulfiller<void>>> waiters_;
  kj::TaskSet tasks_{*this};  // last: its tasks capture `this`
};

}  // namespace spindle::transport::rpc
