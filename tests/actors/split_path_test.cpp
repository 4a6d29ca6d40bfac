// The SplitRPC data path without the RPC server: control and payload in either
// order give the answer; a payload without its control record does not block the
// model's queue for ever; a control record without its payload is answered.
#include "actors/split_path.hpp"

#include <gtest/gtest.h>

#include <cstring>
#include <future>

#include "transport/ucx/ucx.hpp"

namespace spindle::actors {
namespace {

namespace rpc = transport::rpc;
namespace ucx = transport::ucx;

struct sender {
  std::optional<ucx::context> ctx;
  std::optional<ucx::worker> worker;
  std::optional<ucx::endpoint> ep;
  explicit sender(const rpc::split_session& s) {
    ctx.emplace(std::move(*ucx::context::create()));
    worker.emplace(std::move(*ucx::worker::create(*ctx)));
    ep.emplace(std::move(*ucx::endpoint::connect(*worker, s.worker_address)));
  }
  void send(std::uint64_t call, const std::vector<float>& payload) {
    std::byte header[12];
    const std::uint32_t model = 0;
    std::memcpy(header, &call, 8);
    std::memcpy(header + 8, &model, 4);
    ASSERT_TRUE(ep->send_bulk(rpc::split_am_id, header, std::as_bytes(std::span(payload)), 10000));
  }
};

std::future<rpc::tensor_answer> control(split_path& p, std::uint64_t call, std::size_t bytes) {
  auto promise = std::make_shared<std::promise<rpc::tensor_answer>>();
  auto f = promise->get_future();
  p.infer_split("sum", call, bytes, 0,
                [promise](rpc::tensor_answer a) { promise->set_value(std::move(a)); });
  return f;
}

TEST(split_path_test, halves_in_either_order_and_orphans_are_resolved) {
  auto p = split_path::create({sum_model()}, 1 << 20, std::chrono::milliseconds(200));
  ASSERT_TRUE(p.has_value()) << p.error().to_string();
  auto session = (*p)->open();
  ASSERT_TRUE(session.has_value());
  EXPECT_EQ(session->models, std::vector<std::string>{"sum"});
  sender s(*session);
  const std::vector<float> payload(1024, 0.5f);  // 4 KiB: eager

  auto first = control(**p, 1, payload.size() * 4);  // control first, then the payload
  s.send(1, payload);
  ASSERT_EQ(first.wait_for(std::chrono::seconds(10)), std::future_status::ready);
  auto a = first.get();
  ASSERT_EQ(a.status, rpc::rpc_status::ok) << a.message;
  EXPECT_EQ(a.result, (std::vector<float>{512.0f, 1024.0f}));

  s.send(2, payload);  // payload first, then the control
  auto second = control(**p, 2, payload.size() * 4);
  ASSERT_EQ(second.wait_for(std::chrono::seconds(10)), std::future_status::ready);
  EXPECT_EQ(second.get().status, rpc::rpc_status::ok);

  s.send(3, payload);  // an orphan payload: later requests must still be served
  auto unified = std::make_shared<std::promise<rpc::tensor_answer>>();
  auto uf = unified->get_future();
  (*p)->infer_tensor("sum", std::as_bytes(std::span(payload)), 0,
                     [unified](rpc::tensor_answer x) { unified->set_value(std::move(x)); });
  ASSERT_EQ(uf.wait_for(std::chrono::seconds(10)), std::future_status::ready)
      << "blocked behind the orphan";
  EXPECT_EQ(uf.get().result[0], 512.0f);

  auto lonely = control(**p, 4, 4096);  // a control record whose payload never comes
  ASSERT_EQ(lonely.wait_for(std::chrono::seconds(10)), std::future_status::ready);
  auto l = lonely.get();
  EXPECT_EQ(l.status, rpc::rpc_status::unavailable);
  EXPECT_NE(l.message.find("payload of call 4 never arrived"), std::string::npos) << l.message;
}

}  // namespace
}  // namespace spindle::actors
