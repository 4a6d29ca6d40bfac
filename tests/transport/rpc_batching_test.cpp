// The door's and the client's batching (transport/rpc): writes of one event-loop
// turn leave in one send and arrive whole and in order; small reads are served
// from one read of the socket; bytes written before shutdownWrite arrive before
// the end; a failed send fails later writes. Answers posted from other threads
// reach their calls' promises, many for one wake-up; an answer posted after the
// mailbox is gone is dropped.
#include <gtest/gtest.h>
#include <kj/async-io.h>

#include <string>
#include <thread>
#include <vector>

#include "transport/rpc/answer_mailbox.hpp"
#include "transport/rpc/coalescing_stream.hpp"

namespace spindle::transport::rpc {
namespace {

std::string read_exactly(kj::AsyncIoStream& s, kj::WaitScope& ws, std::size_t n) {
  std::string out(n, '\0');
  const auto got = s.tryRead(out.data(), n, n).wait(ws);
  out.resize(got);
  return out;
}

TEST(rpc_batching_test, writes_of_one_turn_leave_in_one_send_and_arrive_in_order) {
  auto io = kj::setupAsyncIo();
  auto pipe = io.provider->newTwoWayPipe();
  coalescing_stream out(*pipe.ends[0]);
  std::string all;
  for (int i = 0; i < 50; ++i) {
    const std::string piece = "message " + std::to_string(i) + ";";
    all += piece;
    out.write(piece.data(), piece.size()).wait(io.waitScope);  // resolves at once
  }
  EXPECT_EQ(out.sends(), 0u);  // nothing sent until the loop runs out of work
  EXPECT_EQ(read_exactly(*pipe.ends[1], io.waitScope, all.size()), all);
  EXPECT_EQ(out.sends(), 1u);
  const std::string later = "a later turn";
  out.write(later.data(), later.size()).wait(io.waitScope);
  EXPECT_EQ(read_exactly(*pipe.ends[1], io.waitScope, later.size()), later);
  EXPECT_EQ(out.sends(), 2u);
}

TEST(rpc_batching_test, small_reads_are_served_from_one_read_of_the_socket) {
  auto io = kj::setupAsyncIo();
  auto pipe = io.provider->newTwoWayPipe();
  coalescing_stream in(*pipe.ends[1]);
  std::string sent;
  for (int i = 0; i < 1000; ++i) sent += char('a' + i % 26);
  pipe.ends[0]->write(sent.data(), sent.size()).wait(io.waitScope);
  std::string got;
  for (std::size_t n : {8u, 4u, 100u, 888u}) got += read_exactly(in, io.waitScope, n);
  EXPECT_EQ(got, sent);
  // A read past what was sent waits for more; a large one goes straight in.
  std::string big(200'000, 'z');
  auto writing = pipe.ends[0]->write(big.data(), big.size());
  std::string back(200'000, '\0');
  EXPECT_EQ(in.tryRead(back.data(), back.size(), back.size()).wait(io.waitScope), back.size());
  writing.wait(io.waitScope);
  EXPECT_EQ(back, big);
}

TEST(rpc_batching_test, bytes_before_shutdown_arrive_before_the_end) {
  auto io = kj::setupAsyncIo();
  auto pipe = io.provider->newTwoWayPipe();
  coalescing_stream out(*pipe.ends[0]);
  const std::string last = "the last answer";
  out.write(last.data(), last.size()).wait(io.waitScope);
  out.shutdownWrite();
  char buf[64];
  EXPECT_EQ(pipe.ends[1]->tryRead(buf, last.size(), sizeof buf).wait(io.waitScope), last.size());
  EXPECT_EQ(std::string(buf, last.size()), last);
  EXPECT_EQ(pipe.ends[1]->tryRead(buf, 1, sizeof buf).wait(io.waitScope), 0u);  // the end
}

TEST(rpc_batching_test, a_failed_send_fails_later_writes) {
  auto io = kj::setupAsyncIo();
  auto pipe = io.provider->newTwoWayPipe();
  coalescing_stream out(*pipe.ends[0]);
  pipe.ends[1] = nullptr;  // the peer is gone
  const std::string bytes(1000, 'x');
  out.write(bytes.data(), bytes.size()).wait(io.waitScope);
  bool failed = false;
  for (int i = 0; i < 100 && !failed; ++i) {
    try {
      io.provider->getTimer().afterDelay(1 * kj::MILLISECONDS).wait(io.waitScope);
      out.write(bytes.data(), bytes.size()).wait(io.waitScope);
    } catch (const kj::Exception&) {
      failed = true;
    }
  }
  EXPECT_TRUE(failed);
}

TEST(rpc_batching_test, a_peer_that_does_not_read_its_answers_is_not_read_either) {
  auto io = kj::setupAsyncIo();
  auto pipe = io.provider->newTwoWayPipe();
  coalescing_stream server(*pipe.ends[0], 1 << 20);
  // 8 MiB of answers the peer does not read: more than the socket holds and the bound.
  const std::string answers(8 << 20, 'a');
  auto written = server.write(answers.data(), answers.size());
  const std::string call = "a new call";
  pipe.ends[1]->write(call.data(), call.size()).wait(io.waitScope);
  std::string got(call.size(), '\0');
  auto reading = server.tryRead(got.data(), got.size(), got.size());
  EXPECT_FALSE(reading.poll(io.waitScope));  // held while the answers wait
  std::string drained(answers.size(), '\0');
  auto draining = pipe.ends[1]->tryRead(drained.data(), drained.size(), drained.size());
  EXPECT_EQ(reading.wait(io.waitScope), call.size());
  EXPECT_EQ(got, call);
  EXPECT_EQ(draining.wait(io.waitScope), answers.size());
  written.wait(io.waitScope);
}

TEST(rpc_batching_test, answers_posted_from_other_threads_reach_their_promises) {
  auto io = kj::setupAsyncIo();
  std::vector<kj::Promise<int>> promises;
  std::vector<std::function<void(int)>> posts;
  {
    answer_mailbox<int> box;
    for (int i = 0; i < 500; ++i) {
      auto e = box.expect();
      promises.push_back(kj::mv(e.promise));
      posts.push_back(kj::mv(e.post));
    }
    std::thread producer([&] {
      for (int i = 499; i >= 0; --i) posts[std::size_t(i)](i * 3);  // any order
    });
    for (int i = 0; i < 500; ++i) EXPECT_EQ(promises[std::size_t(i)].wait(io.waitScope), i * 3);
    producer.join();
    auto late = box.expect();
    posts.push_back(kj::mv(late.post));
    promises.clear();
  }
  posts.back()(7);  // the mailbox is gone: dropped
}

}  // namespace
}  // namespace spindle::transport::rpc
