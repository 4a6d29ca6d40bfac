// The standard front door against Spindle's own: per-call round trip and
// calls/s of a 1-seed GNN request over Cap'n Proto, KServe v2 HTTP/JSON, HTTP
// with Triton's binary-tensor extension, and gRPC, in the same run against the
// same `spindle serve` process, closed loop with 1 and 16 calls in flight (one
// connection per in-flight call), like perf_analyzer. Every client here is C++
// (rpc_client, cpp-httplib, the generated gRPC stub), so the table compares
// protocols, not client languages.
//
// EXPRESS is the server's --express-max-requests (1: a lone call that finds the
// model idle runs on the door's thread; 0: every call through the batcher).
//
// usage: kserve_bench SPINDLE_BINARY [CALLS=4000] [SCALE=14] [EXPRESS=1]
#include <grpcpp/grpcpp.h>
#include <httplib.h>

#include <atomic>
#include <cstring>
#include <functional>
#include <random>
#include <thread>

#include "bench/bench_util.hpp"
#include "core/subprocess.hpp"
#include "grpc_service.grpc.pb.h"
#include "tests/support/kserve_seed_request.hpp"
#include "transport/rpc/rpc_client.hpp"

using namespace spindle;

namespace {

// One call of a protocol on this thread's connection; returns false on a non-ok answer.
using call_fn = std::function<bool(std::int64_t seed)>;
using connect_fn = std::function<call_fn()>;

struct row {
  std::string protocol;
  int in_flight = 0;
  double p50_us = 0, p99_us = 0, calls_per_s = 0;
  std::size_t failed = 0;
};

row measure(const std::string& name, const connect_fn& connect, int in_flight, std::size_t calls,
            std::int64_t nodes) {
  std::vector<std::vector<double>> lat(static_cast<std::size_t>(in_flight));
  std::atomic<std::size_t> failed{0};
  std::vector<std::thread> threads;
  const std::size_t per_thread = calls / std::size_t(in_flight);
  std::atomic<int> warmed{0};
  std::chrono::steady_clock::time_point t0;
  std::atomic<bool> go{false};
  for (int t = 0; t < in_flight; ++t) {
    threads.emplace_back([&, t] {
      auto call = connect();
      std::mt19937_64 rng(std::uint64_t(t) + 1);
      std::uniform_int_distribution<std::int64_t> pick(0, nodes - 1);
      for (int i = 0; i < 50; ++i) call(pick(rng));  // warm-up
      if (++warmed == in_flight) {
        t0 = std::chrono::steady_clock::now();
        go = true;
      }
      while (!go) std::this_thread::yield();
      auto& mine = lat[std::size_t(t)];
      for (std::size_t i = 0; i < per_thread; ++i) {
        const auto a = std::chrono::steady_clock::now();
        if (!call(pick(rng))) ++failed;
        mine.push_back(bench::seconds_since(a) * 1e6);
      }
    });
  }
  for (auto& th : threads) th.join();
  const double wall = bench::seconds_since(t0);
  std::vector<double> all;
  for (auto& v : lat) all.insert(all.end(), v.begin(), v.end());
  row r{name, in_flight, 0, 0, double(all.size()) / wall, failed.load()};
  r.p50_us = bench::percentile(all, 0.5);
  r.p99_us = bench::percentile(all, 0.99);
  return r;
}

std::string json_body(std::int64_t seed) {
  return fmt::format(
      R"({{"inputs":[{{"name":"seeds","datatype":"INT64","shape":[1],"data":[{}]}}]}})", seed);
}

connect_fn capnp_door(const std::string& endpoint) {
  return [endpoint]() -> call_fn {
    auto c = std::shared_ptr<transport::rpc::rpc_client>(
        std::move(*transport::rpc::rpc_client::connect(endpoint, 30000)));
    return [c](std::int64_t seed) {
      auto r = c->infer_gnn({"sage", {seed}, 0, 0});
      return r && r->status == transport::rpc::rpc_status::ok;
    };
  };
}

connect_fn http_json(const std::string& host, int port) {
  return [host, port]() -> call_fn {
    auto c = std::make_shared<httplib::Client>(host, port);
    c->set_keep_alive(true);
    c->set_tcp_nodelay(true);
    return [c](std::int64_t seed) {
      auto r = c->Post("/v2/models/sage/infer", json_body(seed), "application/json");
      return r && r->status == 200;
    };
  };
}

connect_fn http_binary(const std::string& host, int port) {
  return [host, port]() -> call_fn {
    auto c = std::make_shared<httplib::Client>(host, port);
    c->set_keep_alive(true);
    c->set_tcp_nodelay(true);
    const std::string head =
        R"({"inputs":[{"name":"seeds","datatype":"INT64","shape":[1],"parameters":{"binary_data_size":8}}],"outputs":[{"name":"output","parameters":{"binary_data":true}}]})";
    return [c, head](std::int64_t seed) {
      std::string body = head;
      body.append(reinterpret_cast<const char*>(&seed), 8);
      httplib::Headers h{{"Inference-Header-Content-Length", std::to_string(head.size())}};
      auto r = c->Post("/v2/models/sage/infer", h, body, "application/octet-stream");
      return r && r->status == 200;
    };
  };
}

connect_fn grpc_door(const std::string& target) {
  return [target]() -> call_fn {
    grpc::ChannelArguments args;
    args.SetInt("grpc.use_local_subchannel_pool", 1);  // a connection per in-flight call
    auto stub = std::shared_ptr<inference::GRPCInferenceService::Stub>(
        inference::GRPCInferenceService::NewStub(
            grpc::CreateCustomChannel(target, grpc::InsecureChannelCredentials(), args)));
    return [stub](std::int64_t seed) {
      const auto req = spindle::testing::seed_request("sage", seed, true);
      inference::ModelInferResponse resp;
      grpc::ClientContext ctx;
      return stub->ModelInfer(&ctx, req, &resp).ok();
    };
  };
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    fmt::print(stderr, "usage: kserve_bench SPINDLE_BINARY [CALLS=4000] [SCALE=14] [EXPRESS=1]\n");
    return 2;
  }
  const std::string bin = argv[1];
  const auto calls = spindle::bench::arg_or<std::size_t>(argc, argv, 2, 4000);
  const auto scale = spindle::bench::arg_or<int>(argc, argv, 3, 14);
  const auto express = spindle::bench::arg_or<int>(argc, argv, 4, 1);
  const std::string dir = fmt::format("/tmp/spindle-kserve-bench-{}", ::getpid());
  auto run = [&](const std::string& args) {
    return std::system(fmt::format("{} {} >/dev/null 2>&1", bin, args).c_str());
  };
  if (run(fmt::format("generate --scale {} --feature-dim 64 --seed 1 --out {}/g", scale, dir)) ||
      run(fmt::format("model init --arch graphsage --in 64 --hidden 128 --classes 16 --seed 1 "
                      "--out-dir {}/m",
                      dir))) {
    fmt::print(stderr, "kserve_bench: cannot prepare the dataset and model in {}\n", dir);
    return 1;
  }
  auto server = child_process::spawn({bin, "serve", "--dataset", dir + "/g", "--model", dir + "/m",
                                      "--name", "sage", "--listen", "127.0.0.1:0", "--http",
                                      "127.0.0.1:0", "--grpc", "127.0.0.1:0",
                                      "--express-max-requests", std::to_string(express)});
  if (!server) return 1;
  auto http = server->wait_for("http http://127.0.0.1:", 120000);
  auto grpc_line = server->wait_for("grpc ", 120000);
  auto capnp = server->wait_for("listening ", 120000);
  if (!http || !grpc_line || !capnp) {
    fmt::print(stderr, "kserve_bench: the server did not start\n");
    return 1;
  }
  const int http_port = std::stoi(http->substr(0, http->find('/')));
  const std::int64_t nodes = std::int64_t(1) << scale;
  fmt::print(
      "front door, 1-seed GraphSAGE 64-128-16 request on R-MAT s{} ({} calls per row, "
      "same server, same run)\n",
      scale, calls);
  fmt::print("--express-max-requests {}\n", express);
  fmt::print("{:<22} {:>9} {:>10} {:>10} {:>10} {:>14} {:>7}\n", "protocol", "in flight", "p50 us",
             "p99 us", "calls/s", "p50 vs capnp", "failed");
  for (int in_flight : {1, 16}) {
    std::vector<std::pair<std::string, connect_fn>> doors = {
        {"Cap'n Proto", capnp_door(*capnp)},
        {"KServe HTTP/JSON", http_json("127.0.0.1", http_port)},
        {"KServe HTTP/binary", http_binary("127.0.0.1", http_port)},
        {"KServe gRPC", grpc_door(*grpc_line)}};
    double base = 0;
    for (const auto& [name, connect] : doors) {
      const row r = measure(name, connect, in_flight, calls, nodes);
      if (base == 0) base = r.p50_us;
      fmt::print("{:<22} {:>9} {:>10.1f} {:>10.1f} {:>10.0f} {:>13.2f}x {:>7}\n", r.protocol,
                 r.in_flight, r.p50_us, r.p99_us, r.calls_per_s, r.p50_us / base, r.failed);
    }
  }
  server->signal(SIGTERM);
  server->wait();
  std::filesystem::remove_all(dir);
  return 0;
}
