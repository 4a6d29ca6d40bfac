// The first-segment size hints of the door's messages (transport/rpc/codec):
// a request or reply written into a message of its hint fits its first segment
// (one allocation per message, not the 8 KiB default), and the hint is not far
// above what the message takes.
#include <capnp/message.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "transport/rpc/codec.hpp"

namespace spindle::transport::rpc {
namespace {

// Words the struct `T` takes once `fill` wrote it into a message of `hint` words.
template <typename T, typename F>
std::pair<std::size_t, std::size_t> words_and_segments(::capnp::MessageSize hint, F&& fill) {
  ::capnp::MallocMessageBuilder m(unsigned(hint.wordCount), ::capnp::AllocationStrategy::FIXED_SIZE);
  fill(m.initRoot<T>());
  return {std::size_t(m.sizeInWords()), m.getSegmentsForOutput().size()};
}

TEST(message_size_test, gnn_calls_and_answers_fit_their_hint) {
  for (std::size_t n : {1u, 7u, 64u, 1000u}) {
    gnn_call c{"graphsage-with-a-long-name", std::vector<std::int64_t>(n, 42), 7, 100};
    c.outputs = {"embedding", "logits"};
    c.seed_ids = std::vector<std::string>(n % 3, "user:12345");
    auto [w, seg] = words_and_segments<::GnnRequest>(
        detail::size_of(c), [&](::GnnRequest::Builder b) { detail::write(b, c); });
    EXPECT_EQ(seg, 1u) << n;
    EXPECT_LE(w, detail::size_of(c).wordCount) << n;
    EXPECT_GE(w + 128, detail::size_of(c).wordCount) << n;
    gnn_answer a{rpc_status::ok, n == 7 ? "a message of some length" : "", 47,
                 std::vector<float>(n * 47, 0.5f), 12, 3, {40, 7}};
    auto [wa, sa] = words_and_segments<::GnnReply>(
        detail::size_of(a), [&](::GnnReply::Builder b) { detail::write(b, a); });
    EXPECT_EQ(sa, 1u) << n;
    EXPECT_GE(wa + 128, detail::size_of(a).wordCount) << n;
  }
}

TEST(message_size_test, rec_calls_and_answers_fit_their_hint) {
  for (std::uint32_t batch : {1u, 64u, 256u}) {
    rec_call c{"ctr", batch, std::vector<float>(batch * 13, 1.0f), {}, 0};
    for (int t = 0; t < 26; ++t)
      c.sparse.push_back({std::vector<std::int64_t>(batch, t), std::vector<std::int64_t>(batch + 1, 0)});
    auto [w, seg] = words_and_segments<::RecRequest>(
        detail::size_of(c), [&](::RecRequest::Builder b) { detail::write(b, c); });
    EXPECT_EQ(seg, 1u) << batch;
    EXPECT_GE(w + 128, detail::size_of(c).wordCount) << batch;
    rec_answer a{rpc_status::ok, "", std::vector<float>(batch, 0.25f), 5};
    auto [wa, sa] = words_and_segments<::RecReply>(
        detail::size_of(a), [&](::RecReply::Builder b) { detail::write(b, a); });
    EXPECT_EQ(sa, 1u) << batch;
    EXPECT_GE(wa + 128, detail::size_of(a).wordCount) << batch;
  }
}

}  // namespace
}  // namespace spindle::transport::rpc
