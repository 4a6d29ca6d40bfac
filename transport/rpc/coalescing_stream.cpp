#include "transport/rpc/coalescing_stream.hpp"

#include <algorithm>
#include <cstring>

namespace spindle::transport::rpc {

namespace {
thread_local std::size_t unsent_streams = 0;  // this thread's streams with bytes to send
}  // namespace

coalescing_stream::coalescing_stream(kj::AsyncIoStream& inner, std::size_t max_buffered)
    : inner_(inner), max_buffered_(max_buffered) {}

coalescing_stream::~coalescing_stream() noexcept(false) { set_unsent(false); }

std::size_t coalescing_stream::unsent_on_this_thread() { return unsent_streams; }

void coalescing_stream::set_unsent(bool unsent) {
  if (unsent == unsent_) return;
  unsent_ = unsent;
  if (unsent) ++unsent_streams;
  else --unsent_streams;
}

kj::Promise<size_t> coalescing_stream::tryRead(void* buffer, size_t min_bytes, size_t max_bytes) {
  return read_more(static_cast<kj::byte*>(buffer), min_bytes, max_bytes, 0);
}

// Copies what the buffer holds, then reads the socket until `min_bytes` are in.
kj::Promise<size_t> coalescing_stream::read_more(kj::byte* out, size_t min_bytes,
                                                 size_t max_bytes, size_t got) {
  const size_t take = std::min(read_end_ - read_begin_, max_bytes - got);
  if (take > 0) std::memcpy(out + got, read_buf_.begin() + read_begin_, take);
  read_begin_ += take;
  got += take;
  if (got >= min_bytes) return got;
  // Emptied: an idle connection keeps no buffer (a socket that filled it keeps it).
  if (read_end_ < read_buf_.size()) read_buf_ = nullptr;
  read_begin_ = read_end_ = 0;
  if (!backlogged()) return read_socket(out, min_bytes, max_bytes, got);
  // The peer is not taking its answers: no more calls are read until it does.
  auto paf = kj::newPromiseAndFulfiller<void>();
  read_waiter_ = kj::mv(paf.fulfiller);
  return paf.promise.then([this, out, min_bytes, max_bytes, got] {
    return read_more(out, min_bytes, max_bytes, got);
  });
}

kj::Promise<size_t> coalescing_stream::read_socket(kj::byte* out, size_t min_bytes,
                                                   size_t max_bytes, size_t got) {
  if (max_bytes - got >= kReadBuffer)  // a large read: no copy through the buffer
    return inner_.tryRead(out + got, min_bytes - got, max_bytes - got).then([got](size_t n) {
      return got + n;
    });
  if (read_buf_.size() == 0) read_buf_ = kj::heapArray<kj::byte>(kReadBuffer);
  return inner_.tryRead(read_buf_.begin(), 1, read_buf_.size())
      .then([this, out, min_bytes, max_bytes, got](size_t n) -> kj::Promise<size_t> {
        if (n == 0) return got;  // end of stream
        read_begin_ = 0;
        read_end_ = n;
        return read_more(out, min_bytes, max_bytes, got);
      });
}

kj::Promise<void> coalescing_stream::write(const void* buffer, size_t size) {
  const kj::ArrayPtr<const kj::byte> piece(static_cast<const kj::byte*>(buffer), size);
  return write(kj::arrayPtr(&piece, 1));
}

kj::Promise<void> coalescing_stream::write(
    kj::ArrayPtr<const kj::ArrayPtr<const kj::byte>> pieces) {
  KJ_IF_MAYBE(e, failed_) { return kj::cp(*e); }
  for (const auto& p : pieces) pending_.insert(pending_.end(), p.begin(), p.end());
  set_unsent(true);
  schedule();
  if (pending_.size() <= max_buffered_) return kj::READY_NOW;
  // Too much waiting to go out: this writer waits for the send in flight.
  auto paf = kj::newPromiseAndFulfiller<void>();
  waiters_.push_back(kj::mv(paf.fulfiller));
  return kj::mv(paf.promise);
}

void coalescing_stream::shutdownWrite() {
  shutdown_ = true;
  if (!sending_ && pending_.empty()) return inner_.shutdownWrite();
  schedule();
}

void coalescing_stream::schedule() {
  if (scheduled_ || sending_) return;  // a send in flight sends the rest when it ends
  scheduled_ = true;
  tasks_.add(kj::evalLast([this] {
    scheduled_ = false;
    return send_pending();
  }));
}

// Sends what is buffered in one write, then whatever was buffered meanwhile.
kj::Promise<void> coalescing_stream::send_pending() {
  if (sending_) return kj::READY_NOW;
  if (pending_.empty()) {
    set_unsent(false);
    release_waiters();
    if (shutdown_) inner_.shutdownWrite();
    return kj::READY_NOW;
  }
  sending_ = true;
  sending_bytes_.swap(pending_);
  pending_.clear();
  ++sends_;
  return inner_.write(sending_bytes_.data(), sending_bytes_.size()).then([this] {
    sending_ = false;
    sending_bytes_.clear();
    if (sending_bytes_.capacity() > kKeptWriteBuffer) std::vector<kj::byte>().swap(sending_bytes_);
    if (pending_.size() <= max_buffered_) release_waiters();
    return send_pending();
  });
}

void coalescing_stream::release_waiters() {
  for (auto& w : waiters_) w->fulfill();
  waiters_.clear();
  KJ_IF_MAYBE(r, read_waiter_) {
    if (!backlogged()) {
      (*r)->fulfill();
      read_waiter_ = nullptr;
    }
  }
}

void coalescing_stream::taskFailed(kj::Exception&& e) {
  sending_ = false;
  set_unsent(false);  // nothing more can leave
  for (auto& w : waiters_) w->reject(kj::cp(e));
  waiters_.clear();
  KJ_IF_MAYBE(r, read_waiter_) {
    (*r)->reject(kj::cp(e));
    read_waiter_ = nullptr;
  }
  failed_ = kj::mv(e);
}

}  // namespace spindle::transport::rpc
