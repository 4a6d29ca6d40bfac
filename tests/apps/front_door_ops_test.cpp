// What an operator reads from a running server: the access log (one line per
// call, naming its door), the log line of every tunable change and who asked,
// and one table of tunables that the server and the shell's help share.
#include <gtest/gtest.h>
#include <httplib.h>
#include <signal.h>

#include <fstream>
#include <sstream>

#include "config/tunables.hpp"
#include "transport/kserve/kserve_client.hpp"
#include "tests/apps/front_door_fixture.hpp"

namespace spindle {
namespace {

using namespace front_door;

TEST(front_door_ops_test, the_access_log_and_the_admin_log_name_the_door_and_help_lists_tunables) {
  auto& f = fixture();
  const std::string log = f.dir + "/access.log", token = f.dir + "/ops.token";
  auto s = child_process::spawn(
      {SPINDLE_BINARY, "serve", "--dataset", f.dir + "/g", "--model", f.dir + "/m", "--listen",
       "127.0.0.1:0", "--http", "127.0.0.1:0", "--admin-token-file", token, "--access-log", log,
       "--door-poll-us", "0"},  // the door that never polls (every other test's polls)
      {}, true);  // its log lines too
  ASSERT_TRUE(s.has_value());
  auto http = s->wait_for("http http://127.0.0.1:", 60'000);
  ASSERT_TRUE(http.has_value()) << http.error().to_string();
  const int http_port = std::stoi(http->substr(0, http->find('/')));
  auto listening = s->wait_for("listening ", 60'000);
  ASSERT_TRUE(listening.has_value());
  // Two calls over Cap'n Proto (one naming no model), one over HTTP, one refused.
  for (const char* args : {" --model sage infer --seeds 1,2", " infer --seeds 3"})
    EXPECT_EQ(run_spindle("client --connect " + *listening + args).first, 0);
  httplib::Client c("127.0.0.1", http_port);
  auto r = c.Post("/v2/models/sage/infer",
                  R"({"inputs":[{"name":"seeds","datatype":"INT64","shape":[1],"data":[4]}]})",
                  "application/json");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 200) << r->body;
  EXPECT_NE(run_spindle("client --connect " + *listening + " --model nope infer --seeds 1").first,
            0);
  // A tunable change and a refused one, each logged with the door that asked.
  EXPECT_EQ(run_spindle("client --connect " + *listening + " --token-file " + token +
                        " admin set sage max_batch 16")
                .first,
            0);
  EXPECT_NE(run_spindle("client --connect " + *listening + " --token-file " + token +
                        " admin set sage max_batch zero")
                .first,
            0);
  // Every GNN tunable of the shared table is one the server knows (a bad value
  // is refused by its own name, never as an unknown tunable).
  for (const auto& t : config::tunables()) {
    if (t.scope != config::tunable_scope::gnn) continue;
    auto [rc, out] = run_spindle("client --connect " + *listening + " --token-file " + token +
                                 " admin set sage " + std::string(t.name) + " '?bad?'");
    EXPECT_NE(rc, 0) << t.name;
    EXPECT_EQ(out.find("unknown tunable"), std::string::npos) << t.name << ": " << out;
  }
  // The shell's help lists every tunable of the table the server refuses with.
  auto [help_rc, help] = run_spindle("shell --connect " + *listening + " -c help");
  ASSERT_EQ(help_rc, 0) << help;
  for (const auto& t : config::tunables())
    EXPECT_NE(help.find(std::string(t.name)), std::string::npos) << t.name << "\n" << help;
  s->signal(SIGTERM);
  std::string server_log;
  while (auto line = s->read_line(30'000)) server_log += *line + "\n";
  EXPECT_EQ(s->wait(), 0) << server_log;
  EXPECT_NE(server_log.find("admin via capnp: sage max_batch = 16"), std::string::npos)
      << server_log;
  EXPECT_NE(server_log.find("admin via capnp: sage max_batch = zero refused"), std::string::npos)
      << server_log;
  std::ifstream in(log);
  std::vector<std::string> lines;
  for (std::string l; std::getline(in, l);) lines.push_back(l);
  ASSERT_GE(lines.size(), 4u);
  auto count = [&](const std::string& needle) {
    int n = 0;
    for (const auto& l : lines) n += l.find(needle) != std::string::npos;
    return n;
  };
  EXPECT_EQ(count("door=capnp model=sage kind=gnn items=2 status=ok"), 1);
  EXPECT_EQ(count("door=capnp model=- kind=gnn items=1 status=ok"), 1);  // no model named
  EXPECT_EQ(count("door=http 127.0.0.1:"), 1);
  EXPECT_EQ(count("model=nope kind=gnn items=1 status=bad_request"), 1);
  for (const auto& l : lines) EXPECT_NE(l.find(" ms="), std::string::npos) << l;
}


// Run to completion: a lone call that finds its model idle runs on the door's
// thread (the express lane, Admin stats' `express`) over Cap'n Proto and KServe
// gRPC (not over KServe HTTP), and answers as the batcher's pipeline does, bit for bit; with
// the tunable at 0 every call goes through the batcher; under load (16 in
// flight, with deadlines) the batcher takes them; work_conserving false turns
// the lane off; a bad value is refused by name.
TEST(front_door_ops_test, a_lone_call_on_an_idle_model_runs_on_the_door_thread_as_the_batcher_answers) {
  auto& f = fixture();
  const std::string token_file = f.dir + "/express.token";
  auto s = child_process::spawn({SPINDLE_BINARY, "serve", "--dataset", f.dir + "/g", "--model",
                                 f.dir + "/m", "--listen", "127.0.0.1:0", "--http", "127.0.0.1:0",
                                 "--grpc", "127.0.0.1:0", "--admin-token-file", token_file});
  ASSERT_TRUE(s.has_value());
  auto http = s->wait_for("http http://127.0.0.1:", 60'000);
  ASSERT_TRUE(http.has_value()) << http.error().to_string();
  auto grpc = s->wait_for("grpc ", 60'000);
  ASSERT_TRUE(grpc.has_value()) << grpc.error().to_string();
  auto listening = s->wait_for("listening ", 60'000);
  ASSERT_TRUE(listening.has_value());
  std::string token;
  std::ifstream(token_file) >> token;
  auto c = rpc::rpc_client::connect(*listening, 30'000);
  ASSERT_TRUE(c.has_value());
  auto express_batches = [&] {
    auto st = (*c)->stats(token);
    EXPECT_TRUE(st.has_value());
    return nlohmann::json::parse(st->json)["models"]["sage"]["express"]["batches"]
        .get<std::uint64_t>();
  };
  auto answers = [&] {
    std::vector<std::vector<float>> out;
    for (std::int64_t seed : {3, 77, 500, 1999}) {
      auto a = (*c)->infer_gnn({"sage", {seed}, std::uint64_t(seed) + 11});
      EXPECT_TRUE(a.has_value() && a->status == rpc::rpc_status::ok);
      out.push_back(a ? a->outputs : std::vector<float>{});
    }
    return out;
  };
  const auto before = express_batches();
  const auto express = answers();
  EXPECT_EQ(express_batches(), before + 4);  // one call in flight: each ran on the door thread
  // Not over KServe HTTP: a door without turns hands every call to the batcher.
  httplib::Client h("127.0.0.1", std::stoi(http->substr(0, http->find('/'))));
  auto r = h.Post("/v2/models/sage/infer",
                  R"({"inputs":[{"name":"seeds","datatype":"INT64","shape":[1],"data":[4]}]})",
                  "application/json");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 200) << r->body;
  EXPECT_EQ(express_batches(), before + 4);
  // Over KServe gRPC a lone call (the door empty and quiet) runs on gRPC's
  // thread, and answers as the Cap'n Proto door's lane did, bit for bit.
  auto g = transport::kserve::connect_grpc(grpc->substr(0, grpc->find(' ')), 30'000);
  ASSERT_TRUE(g.has_value()) << g.error().to_string();
  const auto lone = (*g)->infer_gnn({"sage", {3}, 14});
  ASSERT_EQ(lone.status, rpc::rpc_status::ok) << lone.message;
  EXPECT_EQ(lone.outputs, express[0]);
  EXPECT_EQ(express_batches(), before + 5);
  auto off = (*c)->set_tunable(token, "sage", "express_max_requests", "0");
  ASSERT_TRUE(off.has_value() && off->status == rpc::rpc_status::ok) << (off ? off->message : "");
  EXPECT_EQ(answers(), express);  // the batcher's pipeline answers the same, bit for bit
  EXPECT_EQ((*g)->infer_gnn({"sage", {3}, 14}).outputs, express[0]);
  EXPECT_EQ(express_batches(), before + 5);
  // Under load the batcher takes the calls, those with a deadline too: 16 in
  // flight, each call read in a turn with others or behind outstanding ones.
  ASSERT_TRUE((*c)->set_tunable(token, "sage", "express_max_requests", "1").has_value());
  std::vector<rpc::gnn_call> loaded;
  for (int i = 0; i < 800; ++i) {
    rpc::gnn_call call{"sage", {std::int64_t(i % 2000)}};
    call.deadline_us = 1'000'000;
    loaded.push_back(call);
  }
  int ok = 0;
  const auto before_load = express_batches();
  ASSERT_TRUE((*c)->run_closed_loop(loaded, 16, [&](std::size_t, const rpc::gnn_answer& a, double) {
                     ok += a.status == rpc::rpc_status::ok;
                   }).is_ok());
  EXPECT_EQ(ok, 800);
  const auto lane_took = express_batches() - before_load;
  std::printf("16 calls in flight with a deadline: the express lane ran %llu of 800\n",
              static_cast<unsigned long long>(lane_took));
  EXPECT_LT(lane_took, 400u);
  // work_conserving false: every call waits for its batch, a lone one too.
  ASSERT_TRUE((*c)->set_tunable(token, "sage", "work_conserving", "false").has_value());
  const auto before_wc = express_batches();
  answers();
  EXPECT_EQ(express_batches(), before_wc);
  auto bad = (*c)->set_tunable(token, "sage", "express_max_requests", "65");
  ASSERT_TRUE(bad.has_value());
  EXPECT_NE(bad->status, rpc::rpc_status::ok);
  EXPECT_NE(bad->message.find("express_max_requests = '65'"), std::string::npos) << bad->message;
  c->reset();
  s->signal(SIGTERM);
  EXPECT_EQ(s->wait(), 0);
}
}  // namespace
}  // namespace spindle

namespace spindle {
namespace {

using namespace front_door;

// `client load` drives recommendation models too: batches drawn from the
// model's description (its dense width and table rows, Zipf keys), closed and
// open loop, with the same report as for GNNs plus samples per second.
TEST(front_door_ops_test, client_load_drives_a_recommendation_model_from_its_description) {
  // Its own server: the shared fixture is stopped by the last front_door_test.
  const std::string dir = graph::testing::temp_dir("front_door_rec_load");
  auto server = child_process::spawn(
      {SPINDLE_BINARY, "serve", "--listen", "127.0.0.1:0", "--admin-token-file",
       dir + "/admin.token", "--dlrm-model", testing::golden_dlrm_dir, "--dlrm-name", "ctr",
       "--pdb", dir + "/pdb", "--rec-model",
       std::string("wd=") + SPINDLE_SOURCE_DIR + "/tests/nn/golden/wnd"});
  ASSERT_TRUE(server.has_value());
  auto listening = server->wait_for("listening ", 60'000);
  ASSERT_TRUE(listening.has_value()) << listening.error().to_string();
  struct server_fixture {
    std::string endpoint;
  } f{*listening};
  for (const char* model : {"ctr", "wd"}) {
    auto [rc, out] = run_spindle("client --connect " + f.endpoint + " --model " + model +
                                     " load --batch 16 --requests 60 --warmup 5 --json",
                                 false);
    ASSERT_EQ(rc, 0) << out;
    auto j = nlohmann::json::parse(out.substr(out.find('{')));
    EXPECT_EQ(j["answered_ok"], 60) << out;
    EXPECT_EQ(j["samples_per_call"], 16) << out;
    EXPECT_GT(j["samples_per_s"].get<double>(), 0) << out;
  }
  auto [rc, out] = run_spindle("client --connect " + f.endpoint +
                                   " --model ctr load --batch 4 --requests 40 --rate 400 --json",
                               false);
  ASSERT_EQ(rc, 0) << out;
  EXPECT_EQ(nlohmann::json::parse(out.substr(out.find('{')))["mode"], "open") << out;
  // Intra-call parallelism (idle workers share a large batch) gives the same
  // scores as one worker running it whole (wd: tables in memory, 2 workers).
  {
    std::string batch = R"({"dense": [)", sparse;
    for (int i = 0; i < 300; ++i) {
      batch += (i ? "," : "") + std::string("[");
      for (int k = 0; k < 13; ++k)
        batch += (k ? "," : "") + std::to_string(0.01 * ((i * 7 + k) % 97));
      batch += "]";
      sparse += (i ? "," : "") + fmt::format("[[{}], [{}], [{}]]", i % 20, i % 30, i % 25);
    }
    batch += R"(], "sparse": [)" + sparse + "]}";
    const std::string file = dir + "/batch300.json";
    std::ofstream(file) << batch;
    auto scores = [&](const char* intra) {
      EXPECT_EQ(run_spindle("client --connect " + f.endpoint + " --token-file " + dir +
                            "/admin.token admin set wd intra_call " + intra)
                    .first,
                0);
      auto [rc, out] = run_spindle(
          "client --connect " + f.endpoint + " --model wd rec --input " + file + " --json", false);
      EXPECT_EQ(rc, 0) << out;
      return nlohmann::json::parse(out.substr(out.find('{')))["scores"].get<std::vector<float>>();
    };
    const auto whole = scores("false"), chunked = scores("true");
    ASSERT_EQ(whole.size(), 300u);
    ASSERT_EQ(chunked.size(), 300u);
    for (std::size_t i = 0; i < whole.size(); ++i) EXPECT_NEAR(chunked[i], whole[i], 1e-6) << i;
  }
  // A model it cannot find, or a GNN, needs seeds, and says so.
  auto [rc2, gnn] = run_spindle("client --connect " + f.endpoint + " --model sage load");
  EXPECT_NE(rc2, 0);
  EXPECT_NE(gnn.find("--seeds uniform:N | degree:DIR | FILE is required for a GNN model"),
            std::string::npos)
      << gnn;
  server->signal(SIGTERM);
  EXPECT_EQ(server->wait(), 0);
}

}  // namespace
}  // namespace spindle
