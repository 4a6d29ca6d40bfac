// A real `spindle serve` for the chaos tests (R-MAT scale 10, GraphSAGE "sage",
// the golden DLRM "ctr" in memory, every door on a free loopback port) and raw
// socket helpers to talk to its doors.
#pragma once

#include <arpa/inet.h>
#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>
#include <httplib.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <optional>
#include <string>
#include <vector>

#include "core/subprocess.hpp"
#include "graph/prepare.hpp"
#include "grpc_service.grpc.pb.h"
#include "nn/model.hpp"
#include "tests/graph/test_util.hpp"
#include "tests/support/kserve_seed_request.hpp"
#include "tests/support/loopback_socket.hpp"

namespace spindle {

/// Sends `bytes` on a new connection to `port` and returns all it gets back
/// before the server closes it (or 15 s pass).
inline std::string raw_exchange(int port, const std::string& bytes) {
  const int fd = testing::dial_loopback(port);
  if (fd < 0) return "(no connection)";
  [[maybe_unused]] auto w = ::send(fd, bytes.data(), bytes.size(), MSG_NOSIGNAL);
  std::string answer = testing::receive_all(fd, 15);
  ::close(fd);
  return answer;
}

/// An R-MAT graph of 2^scale nodes with 8 features (DIR/g) and a GraphSAGE "sage"
/// reading it (DIR/m, hidden `hidden`, `classes` outputs): what the chaos tests serve.
inline void make_small_gnn(const std::string& dir, int scale, int hidden, int classes) {
  thread_pool pool{1, "test"};
  graph::generate_options o;
  o.rmat.scale = scale;
  o.feature_dim = 8;
  ASSERT_TRUE(graph::generate_dataset(o, dir + "/g", pool).is_ok());
  config::model_desc d;
  d.name = "sage";
  d.arch = config::model_arch::graphsage;
  d.in = 8, d.hidden = hidden, d.out = classes;
  ASSERT_TRUE(nn::init_model(d, 2, dir + "/m").is_ok());
}

struct chaos_server {
  std::string dir = graph::testing::temp_dir("chaos_server");
  std::optional<child_process> proc;
  int http = 0, grpc = 0, metrics = 0;
  std::string capnp;
  /// `max_connections` 0: the server's default; `wrap`: a command line the
  /// server runs under (for example `prlimit --nofile=N:N --`).
  explicit chaos_server(int max_connections = 4000, std::vector<std::string> wrap = {}) {
    make_small_gnn(dir, 10, 16, 4);
    std::vector<std::string> argv = std::move(wrap);
    const std::vector<std::string> serve = {
        SPINDLE_BINARY, "serve", "--dataset", dir + "/g", "--model", dir + "/m", "--listen",
        "127.0.0.1:0", "--http", "127.0.0.1:0", "--grpc", "127.0.0.1:0", "--metrics",
        "127.0.0.1:0", "--rec-model", std::string("ctr=") + SPINDLE_SOURCE_DIR + "/tests/nn/golden/dlrm"};
    for (const auto& a : serve)
      argv.push_back(a);
    if (max_connections > 0) {
      argv.push_back("--max-connections");
      argv.push_back(std::to_string(max_connections));
    }
    proc.emplace(std::move(*child_process::spawn(argv)));
    auto m = proc->wait_for("metrics http://127.0.0.1:", 60'000);
    EXPECT_TRUE(m.has_value());
    metrics = std::stoi(m->substr(0, m->find('/')));
    auto h = proc->wait_for("http http://127.0.0.1:", 60'000);
    EXPECT_TRUE(h.has_value());
    http = std::stoi(h->substr(0, h->find('/')));
    auto g = proc->wait_for("grpc ", 60'000);
    EXPECT_TRUE(g.has_value());
    grpc = testing::port_of(*g);
    auto l = proc->wait_for("listening ", 60'000);
    EXPECT_TRUE(l.has_value());
    capnp = *l;
  }
  ~chaos_server() {
    proc->signal(SIGTERM);
    proc->wait();
  }
};

inline bool http_infer(int port) {
  httplib::Client c("127.0.0.1", port);
  c.set_read_timeout(10, 0);
  auto r = c.Post("/v2/models/sage/infer",
                  R"({"inputs":[{"name":"seeds","datatype":"INT64","shape":[1],"data":[3]}]})",
                  "application/json");
  return r && r->status == 200;
}

/// One KServe gRPC infer of "sage" on a fresh connection, within `deadline_s`.
inline bool grpc_infer(int port, int deadline_s) {
  grpc::ChannelArguments args;
  args.SetInt(GRPC_ARG_USE_LOCAL_SUBCHANNEL_POOL, 1);  // a new connection every time
  auto ch = grpc::CreateCustomChannel("127.0.0.1:" + std::to_string(port),
                                      grpc::InsecureChannelCredentials(), args);
  auto stub = inference::GRPCInferenceService::NewStub(ch);
  const auto req = testing::seed_request("sage", 7, false);
  inference::ModelInferResponse res;
  grpc::ClientContext ctx;
  ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(deadline_s));
  return stub->ModelInfer(&ctx, req, &res).ok();
}

}  // namespace spindle
