// The "RPC tax" (SplitRPC §2 analogue): end-to-end latency and throughput of a
// tensor model ("sum": touches every payload byte once) for payloads of 1 KiB,
// 8 KiB, 64 KiB and 588 KiB (LeNet-, LSTM-, ResNet-sized inputs) over
//  (a) the unified path: the payload inside the Cap'n Proto message (loopback TCP),
//  (b) the SplitRPC path: control record over Cap'n Proto, payload over UCX
//      (shared memory here) straight into the server's tensor queue,
//  (c) an in-process call of the same model (the upper bound),
// with a breakdown: client serialization, payload bytes copied by Spindle per
// request, server time, compute, and transport (the rest). One call in flight.
//  (d) gRPC + protobuf (Debian's libgrpc++), the alternative a user would pick,
//      when it was found at configure time.
// Usage: rpc_tax_bench [calls_per_size=1000]
#include <capnp/message.h>

#include <cstdio>

#include "actors/gateway.hpp"
#include "bench/bench_util.hpp"
#include "transport/rpc/rpc_client.hpp"
#include "transport/rpc/rpc_server.hpp"
#include "transport/rpc/spindle.capnp.h"
#if SPINDLE_WITH_GRPC
#include "bench/grpc_baseline.hpp"
#endif

namespace spindle::bench {
namespace {

namespace rpc = transport::rpc;

struct row {
  std::vector<double> latency_us;
  double server_us = 0, compute_us = 0, wall_s = 0;
};

double mean(const std::vector<double>& v) {
  double s = 0;
  for (double x : v) s += x;
  return v.empty() ? 0 : s / double(v.size());
}

template <class Call>
row measure(int calls, Call call) {
  row r;
  for (int i = 0; i < 10; ++i) call(nullptr);  // warm up
  const auto t0 = std::chrono::steady_clock::now();
  for (int i = 0; i < calls; ++i) {
    const auto c0 = std::chrono::steady_clock::now();
    rpc::tensor_answer a;
    call(&a);
    r.latency_us.push_back(seconds_since(c0) * 1e6);
    r.server_us += double(a.server_us);
    r.compute_us += double(a.compute_us);
  }
  r.wall_s = seconds_since(t0);
  r.server_us /= calls;
  r.compute_us /= calls;
  return r;
}

// Client-side serialization: building the request message around the payload.
double serialization_us(const std::vector<float>& payload, int reps) {
  const auto t0 = std::chrono::steady_clock::now();
  for (int i = 0; i < reps; ++i) {
    capnp::MallocMessageBuilder msg;
    auto req = msg.initRoot<::Inference::InferTensorParams>();
    req.setModel("sum");
    req.setPayload(
        kj::arrayPtr(reinterpret_cast<const kj::byte*>(payload.data()), payload.size() * 4));
  }
  return seconds_since(t0) * 1e6 / reps;
}

void print_row(const char* path, std::size_t bytes, row& r, double ser_us, double copied,
               double inproc_rps) {
  const double rps = double(r.latency_us.size()) / r.wall_s;
  std::vector<double> l = r.latency_us;
  const double p50 = percentile(l, 0.5), p99 = percentile(l, 0.99);
  const double transport = std::max(0.0, mean(r.latency_us) - r.server_us - ser_us);
  std::printf(
      "| %zu KiB | %s | %.1f | %.1f | %.0f | %.0f | %.2f | %.1f | %.1f | %.1f | %.0f | %.2f |\n",
      bytes / 1024, path, p50, p99, rps, rps * double(bytes) / 1e6, ser_us, r.server_us,
      r.compute_us, transport, copied, inproc_rps > 0 ? rps / inproc_rps : 1.0);
}

}  // namespace
}  // namespace spindle::bench

int main(int argc, char** argv) {
  using namespace spindle;
  using namespace spindle::bench;
  const int calls = argc > 1 ? std::atoi(argv[1]) : 1000;
  caf::actor_system_config cfg;
  caf::actor_system sys{cfg};
  actors::gateway gw(sys);
  auto split = actors::split_path::create({actors::sum_model()});
  if (!split) return std::printf("%s\n", split.error().to_string().c_str()), 1;
  auto* sp = split->get();
  gw.set_split_path(std::move(*split));
  auto server = rpc::rpc_server::start({"127.0.0.1:0", "", 64ull << 20}, gw);
  if (!server) return std::printf("%s\n", server.error().to_string().c_str()), 1;
  auto client = rpc::rpc_client::connect("127.0.0.1:" + std::to_string((*server)->port()));
  if (!client || !(*client)->open_split()) return std::printf("cannot connect\n"), 1;
  auto& c = **client;
  std::printf(
      "one call in flight, %d calls per size; server and client in one process on 2 cores\n"
      "(Cap'n Proto over loopback TCP, UCX over shared memory); copied = payload bytes memcpy'd by "
      "Spindle per\n"
      "request (both sides); transport = mean latency - server time - client serialization\n\n",
      calls);
  std::printf(
      "| payload | path | p50 us | p99 us | req/s | MB/s | serialize us | server us | compute us | "
      "transport us | "
      "copied B/req | vs in-process |\n|---|---|---|---|---|---|---|---|---|---|---|---|\n");
  const auto model = actors::sum_model();
  for (std::size_t bytes : {1024u, 8192u, 65536u, 602112u}) {
    std::vector<float> payload(bytes / 4);
    for (std::size_t i = 0; i < payload.size(); ++i) payload[i] = float(i % 13);
    const int n = bytes > 100000 ? std::max(50, calls / 4) : calls;
    row inproc = measure(n, [&](rpc::tensor_answer* a) {
      auto t0 = std::chrono::steady_clock::now();
      auto r = model.compute(payload.data(), {payload.size()});
      if (a)
        a->compute_us = std::uint64_t(seconds_since(t0) * 1e6), a->server_us = a->compute_us,
        a->result = r[0];
    });
    const double inproc_rps = double(n) / inproc.wall_s;
    print_row("in-process call", bytes, inproc, 0, 0, 0);
    const double ser = serialization_us(payload, 200);
    auto before = sp->stats();
    row unified = measure(n, [&](rpc::tensor_answer* a) {
      auto r = c.infer_tensor("sum", payload);
      if (a && r) *a = *r;
    });
    auto mid = sp->stats();
    const double unified_copied = double(payload.size() * 4) /* client: into the message */ +
                                  double(mid.copied_bytes - before.copied_bytes) / (n + 10);
    print_row("unified Cap'n Proto", bytes, unified, ser, unified_copied, inproc_rps);
    row split_row = measure(n, [&](rpc::tensor_answer* a) {
      auto r = c.infer_split("sum", payload);
      if (a && r) *a = *r;
    });
    auto after = sp->stats();
    print_row("SplitRPC (UCX data path)", bytes, split_row, 0,
              double(after.copied_bytes - mid.copied_bytes) / (n + 10), inproc_rps);
#if SPINDLE_WITH_GRPC
    static auto grpc = grpc_baseline::start(actors::sum_model());
    row g = measure(n, [&](rpc::tensor_answer* a) {
      auto r = grpc->infer(payload);
      if (a) *a = r;
    });
    // Copies: client serialization into the protobuf, server parse into bytes.
    print_row("gRPC + protobuf", bytes, g, grpc->serialization_us(payload, 200),
              2.0 * double(bytes), inproc_rps);
#endif
    std::fflush(stdout);
  }
  // Pipelined: 16 calls in flight on one connection, so the server's tensor
  // queue can batch split calls (SplitRPC's zero-copy dynamic batching).
  std::printf(
      "\n16 calls in flight (one connection, closed loop)\n\n| payload | path | p50 us | p99 us "
      "| req/s | MB/s | vs 1 in flight |\n|---|---|---|---|---|---|---|\n");
  for (std::size_t bytes : {1024u, 8192u, 65536u, 602112u}) {
    std::vector<float> payload(bytes / 4, 1.0f);
    const int n = bytes > 100000 ? std::max(200, calls / 2) : calls * 2;
    for (bool split : {false, true}) {
      const double single_rps = double(n / 4) / measure(n / 4, [&](rpc::tensor_answer* a) {
                                                  auto r = split ? c.infer_split("sum", payload)
                                                                 : c.infer_tensor("sum", payload);
                                                  if (a && r) *a = *r;
                                                }).wall_s;
      std::vector<double> lat;
      std::size_t failed = 0;
      const auto t0 = std::chrono::steady_clock::now();
      auto st = c.run_tensor_closed_loop("sum", payload, std::size_t(n), 16, split,
                                         [&](std::size_t, const rpc::tensor_answer& a, double s) {
                                           if (a.status == rpc::rpc_status::ok)
                                             lat.push_back(s * 1e6);
                                           else
                                             ++failed;
                                         });
      const double wall = seconds_since(t0);
      if (!st || failed) {
        std::printf("| %zu | %s | failed: %s (%zu calls) |\n", bytes, split ? "split" : "unified",
                    st ? "" : st.message().c_str(), failed);
        continue;
      }
      const double rps = double(lat.size()) / wall;
      std::printf("| %zu | %s | %.0f | %.0f | %.0f | %.0f | %.2fx |\n", bytes,
                  split ? "SplitRPC (UCX data path)" : "unified Cap'n Proto", percentile(lat, 0.5),
                  percentile(lat, 0.99), rps, rps * double(bytes) / 1e6, rps / single_rps);
    }
    std::fflush(stdout);
  }
#if !SPINDLE_WITH_GRPC
  std::printf(
      "\nbaseline not run: gRPC + protobuf (install libgrpc++-dev protobuf-compiler-grpc, "
      "reconfigure)\n");
#endif
  return 0;
}
