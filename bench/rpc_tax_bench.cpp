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
// Then a real recommendation model (Hera Table I's DLRM(A): 128 dense, 8 tables
// of 64, 80 lookups per table, rows scaled to 100,000) for batches of 256 and
// 4,096 samples: inferRec (the request as Cap'n Proto structs, through the
// gateway's batcher and pool), the unified tensor path and the SplitRPC path
// (the packed request, splitrpc/rec_wire.hpp), against the in-process forward pass.
// Usage: rpc_tax_bench [calls_per_size=1000] [DLRM_A_DIR]
#include <capnp/message.h>

#include <cstdio>
#include <filesystem>
#include <random>

#include "actors/gateway.hpp"
#include "bench/bench_util.hpp"
#include "runtime/rec_models.hpp"
#include "splitrpc/rec_wire.hpp"
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

// Hera Table I's DLRM(A) with 100,000 rows per table, written once to `dir`.
spindle::expected<spindle::actors::rec_model_binding> dlrm_a(const std::string& dir) {
  using namespace spindle;
  if (!std::filesystem::exists(dir + "/model.toml")) {
    config::model_desc d;
    d.name = "dlrm_a";
    d.arch = config::model_arch::dlrm;
    d.dense_in = 128, d.bottom = {64, 64}, d.top = {256, 64, 1}, d.embedding_dim = 64;
    d.table_rows.assign(8, 100000);
    SPINDLE_TRY(nn::init_model(d, 1, dir));
  }
  return runtime::load_rec_model("dlrm_a", dir, {});
}

struct rec_request {
  std::vector<float> dense;
  std::vector<spindle::nn::sparse_input> sparse;
};

rec_request random_request(std::int64_t batch, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<float> x(0, 1);
  std::uniform_int_distribution<std::int64_t> key(0, 99999);
  rec_request r;
  r.dense.resize(std::size_t(batch * 128));
  for (auto& v : r.dense) v = x(rng);
  for (int t = 0; t < 8; ++t) {
    spindle::nn::sparse_input s;
    for (std::int64_t b = 0; b <= batch; ++b) s.offsets.push_back(b * 80);
    for (std::int64_t i = 0; i < batch * 80; ++i) s.indices.push_back(key(rng));
    r.sparse.push_back(std::move(s));
  }
  return r;
}

void rec_rpc_tax(spindle::transport::rpc::rpc_client& c,
                 const spindle::actors::rec_model_binding& b, int calls) {
  using namespace spindle;
  using namespace spindle::bench;
  namespace rpc = transport::rpc;
  std::printf(
      "\nRecommendation model dlrm_a (Hera Table I DLRM(A): 128 dense, 8 tables x 64, 80 "
      "lookups/table, 100,000 rows/table), one call in flight; RPC tax = 1 - in-process / p50\n\n"
      "| batch | path | request MB | p50 ms | p99 ms | samples/s | RPC tax |\n"
      "|---|---|---|---|---|---|---|\n");
  for (std::int64_t batch : {256, 4096}) {
    auto req = random_request(batch, 5);
    const auto payload = splitrpc::pack_rec_request(batch, req.dense, req.sparse);
    const double mb = double(payload.size()) * 4 / 1e6;
    const int n = batch > 1000 ? std::max(10, calls / 50) : std::max(20, calls / 10);
    row inproc = measure(n, [&](rpc::tensor_answer* a) {
      nn::heap_allocator alloc;
      auto t0 = std::chrono::steady_clock::now();
      auto y =
          b.runner->infer(alloc, nn::tensor::borrow(req.dense.data(), {batch, 128}), req.sparse);
      if (a) a->server_us = a->compute_us = std::uint64_t(seconds_since(t0) * 1e6);
      if (!y) std::printf("in-process: %s\n", y.error().to_string().c_str());
    });
    rpc::rec_call call{"dlrm_a", std::uint32_t(batch), req.dense, {}, 0};
    for (const auto& s : req.sparse) call.sparse.push_back({s.indices, s.offsets});
    std::size_t failed = 0;
    row over_rec = measure(n, [&](rpc::tensor_answer* a) {
      auto r = c.infer_rec(call);
      failed += !r || r->status != rpc::rpc_status::ok;
      if (a && r) a->server_us = r->server_us;
    });
    row unified = measure(n, [&](rpc::tensor_answer* a) {
      auto r = c.infer_tensor("dlrm_a", payload);
      failed += !r || r->status != rpc::rpc_status::ok;
      if (a && r) *a = *r;
    });
    row split = measure(n, [&](rpc::tensor_answer* a) {
      auto r = c.infer_split("dlrm_a", payload);
      failed += !r || r->status != rpc::rpc_status::ok;
      if (a && r) *a = *r;
    });
    const double base = percentile(inproc.latency_us, 0.5);
    auto line = [&](const char* path, row& r) {
      const double p50 = percentile(r.latency_us, 0.5);
      std::printf("| %lld | %s | %.1f | %.2f | %.2f | %.0f | %.0f%% |\n", (long long)batch, path,
                  mb, p50 / 1e3, percentile(r.latency_us, 0.99) / 1e3, double(batch) * 1e6 / p50,
                  100 * (1 - base / p50));
    };
    line("in-process forward", inproc);
    line("inferRec (Cap'n Proto structs, pool)", over_rec);
    line("unified tensor path (packed)", unified);
    line("SplitRPC (packed, UCX data path)", split);
    if (failed) std::printf("(%zu calls failed)\n", failed);
    std::fflush(stdout);
  }
}

int main(int argc, char** argv) {
  using namespace spindle;
  using namespace spindle::bench;
  const int calls = argc > 1 ? std::atoi(argv[1]) : 1000;
  const std::string rec_dir = argc > 2 ? argv[2] : "/tmp/spindle-rpc-tax-dlrm-a";
  caf::actor_system_config cfg;
  caf::actor_system sys{cfg};
  actors::gateway gw(sys);
  auto rec = dlrm_a(rec_dir);
  if (!rec) return std::printf("%s\n", rec.error().to_string().c_str()), 1;
  gw.add_model(*rec);
  auto split = actors::split_path::create(
      {actors::sum_model(),
       actors::rec_tensor_model("dlrm_a", rec->runner, rec->model, rec->owner)},
      256u << 20);
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
  rec_rpc_tax(c, *rec, calls);
  gw.quiesce();
#if !SPINDLE_WITH_GRPC
  std::printf(
      "\nbaseline not run: gRPC + protobuf (install libgrpc++-dev protobuf-compiler-grpc, "
      "reconfigure)\n");
#endif
  return 0;
}
