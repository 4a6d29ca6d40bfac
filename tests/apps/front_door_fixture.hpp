// The server the front-door tests share (one `spindle serve` per test binary,
// started on first use: a GNN, the golden DLRM as "ctr", metrics and the
// SplitRPC `sum` model) and the helpers that run the spindle binary.
#pragma once

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <httplib.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <fstream>
#include <limits>
#include <nlohmann/json.hpp>
#include <thread>

#include "core/subprocess.hpp"
#include "graph/prepare.hpp"
#include "nn/ops.hpp"
#include "serving/gnn_pipeline.hpp"
#include "tests/graph/test_util.hpp"
#include "tests/support/golden_dlrm.hpp"
#include "transport/rpc/request_checks.hpp"
#include "transport/rpc/rpc_client.hpp"
#include "transport/rpc/rpc_server.hpp"

namespace spindle::front_door {

namespace rpc = transport::rpc;

struct server_fixture {
  std::string dir = graph::testing::temp_dir("front_door");
  std::string token_file = dir + "/admin.token";
  thread_pool pool{1, "test"};
  std::optional<child_process> server;
  std::unique_ptr<rpc::rpc_client> client;
  std::string endpoint, token;
  int metrics_port = 0;

  server_fixture() {
    nn::set_blas_threads(1);  // as the server: bit-for-bit answers need the same BLAS threading
    graph::generate_options o;
    o.rmat.scale = 11;
    o.feature_dim = 16;
    EXPECT_TRUE(graph::generate_dataset(o, dir + "/g", pool).is_ok());
    config::model_desc d;
    d.name = "sage";
    d.arch = config::model_arch::graphsage;
    d.in = 16, d.hidden = 32, d.out = 5;
    EXPECT_TRUE(nn::init_model(d, 2, dir + "/m").is_ok());
    auto s = child_process::spawn(
        {SPINDLE_BINARY, "serve", "--dataset", dir + "/g", "--model", dir + "/m", "--listen",
         "127.0.0.1:0", "--admin-token-file", token_file, "--dlrm-model", testing::golden_dlrm_dir,
         "--dlrm-name", "ctr", "--pdb", dir + "/pdb", "--hit-rate-threshold", "1.0", "--metrics",
         "127.0.0.1:0", "--rec-model",
         std::string("wd=") + SPINDLE_SOURCE_DIR + "/tests/nn/golden/wnd", "--tensor-models",
         "sum,wd",
         // Every GNN forward pass goes through GNNSched's device
         // scheduler: answers must still equal the direct pipeline.
         "--gnnsched", "sqtf"});
    EXPECT_TRUE(s.has_value());
    server.emplace(std::move(*s));
    auto metrics = server->wait_for("metrics http://127.0.0.1:", 60000);
    EXPECT_TRUE(metrics.has_value());
    metrics_port = std::stoi(metrics->substr(0, metrics->find('/')));
    auto line = server->wait_for("listening ", 60000);
    EXPECT_TRUE(line.has_value());
    endpoint = *line;
    std::ifstream(token_file) >> token;
    auto c = rpc::rpc_client::connect(endpoint, 30000);
    EXPECT_TRUE(c.has_value()) << (c ? "" : c.error().to_string());
    client = std::move(*c);
  }
  ~server_fixture() {
    client.reset();
    if (server) {
      server->signal(SIGTERM);
      server->wait();
    }
  }
};

inline server_fixture& fixture() {
  static server_fixture f;
  return f;
}

// Runs `cmd` through the shell; exit code and stdout (and stderr unless
// `stderr_too` is false).
inline std::pair<int, std::string> run_command(const std::string& command, bool stderr_too = true) {
  const std::string cmd = command + (stderr_too ? " 2>&1" : " 2>/dev/null");
  std::string out;
  FILE* p = popen(cmd.c_str(), "r");
  char buf[4096];
  for (std::size_t n; (n = fread(buf, 1, sizeof buf, p)) > 0;) out.append(buf, n);
  const int rc = pclose(p);
  return {WIFEXITED(rc) ? WEXITSTATUS(rc) : -1, out};
}

inline std::pair<int, std::string> run_spindle(const std::string& args, bool stderr_too = true) {
  return run_command(std::string(SPINDLE_BINARY) + " " + args, stderr_too);
}

}  // namespace spindle::front_door
