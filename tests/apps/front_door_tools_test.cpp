// The tools around the front door, with real processes: the load generator
// (open-loop latencies, concurrency sweeps, several doors), the Prometheus
// endpoint, and the interactive shell (live policy changes, completion).
#include <string>
#include <tuple>

#include "tests/apps/front_door_fixture.hpp"

namespace spindle {
namespace {

using namespace front_door;

// the open loop mixed kj's cached timer.now() with
// steady_clock and reported negative latencies (p50 -29 ms in 2 of ~10 runs).
// Every latency is now positive and at least the server's own time.
TEST(front_door_test, open_loop_latencies_are_positive_and_cover_the_server_time) {
  auto& f = fixture();
  std::vector<rpc::gnn_call> calls(400, {"sage", {5}, 0, 0});
  std::vector<double> at(calls.size());
  for (std::size_t i = 0; i < at.size(); ++i) at[i] = 0.001 * double(i);  // 1,000/s
  std::size_t answered = 0, bad = 0;
  ASSERT_TRUE(
      f.client->run_open_loop(calls, at, [&](std::size_t, const rpc::gnn_answer& a, double s) {
        ++answered;
        if (!(s > 0) || (a.status == rpc::rpc_status::ok && s * 1e6 < double(a.server_us))) {
          ++bad;
          ADD_FAILURE() << "latency " << s * 1e3 << " ms, server " << a.server_us << " us";
        }
      }));
  EXPECT_EQ(answered, calls.size());
  EXPECT_EQ(bad, 0u);
}

// a sweep like perf_analyzer's, one row per level.
TEST(front_door_test, the_load_generator_sweeps_concurrency_levels) {
  auto& f = fixture();
  auto [rc, out] =
      run_spindle("client --connect " + f.endpoint +
                      " --model sage load --requests 200 --warmup 20 --seeds uniform:100 "
                      "--concurrency-range 1:3:2 --json --plot \"" +
                      f.dir + "/it's sweep.png\"",
                  false);
  ASSERT_EQ(rc, 0) << out;
  auto rows = nlohmann::json::parse(out);
  ASSERT_EQ(rows.size(), 2u) << out;
  EXPECT_EQ(rows[0]["concurrency"], 1.0);
  EXPECT_EQ(rows[1]["concurrency"], 3.0);
  for (const auto& r : rows) {
    EXPECT_GT(r["throughput_rps"].get<double>(), 0) << r.dump();
    EXPECT_GT(r["client_cpu_us_per_call"].get<double>(), 0) << r.dump();
    EXPECT_GE(r["windows"].get<int>(), 1);
    EXPECT_LE(r["windows"].get<int>(), 4);
  }
  // A path with a quote and a space (gnuplot once failed and left a file named `it`).
  EXPECT_TRUE(std::filesystem::exists(f.dir + "/it's sweep.png"));
  EXPECT_FALSE(std::filesystem::exists(f.dir + "/it"));
}

// One call in flight may wait for its answers by polling (an idle server's
// latency without the client's wake-up); with more in flight it is refused by name.
TEST(front_door_test, a_lone_load_polls_for_its_answers_and_only_a_lone_one) {
  auto& f = fixture();
  auto [rc, out] = run_spindle("client --connect " + f.endpoint +
                                   " --model sage load --requests 300 --warmup 20 "
                                   "--seeds uniform:100 --clients 1 --poll-us 300 --json",
                               false);
  ASSERT_EQ(rc, 0) << out;
  const auto j = nlohmann::json::parse(out.substr(out.find('{')));
  EXPECT_EQ(j["answered_ok"], 300) << out;
  // Its own CPU over the run, which a server on the same cores does not get: a
  // polling client spends at least some of the run's wall time on its core.
  EXPECT_GT(j["client_cpu_s"].get<double>(), 0.0) << out;
  EXPECT_LE(j["client_cpu_s"].get<double>(), 4 * j["wall_s"].get<double>()) << out;
  EXPECT_NEAR(j["client_cpu_us_per_call"].get<double>(),
              j["client_cpu_s"].get<double>() / 300 * 1e6, 1e-6) << out;
  const std::string two_doors = f.endpoint + "," + f.endpoint;
  for (auto [connect, more, named] :
       {std::tuple{f.endpoint, "--clients 2", "not with --clients 2"},
        std::tuple{f.endpoint, "", "not with --clients 8"},  // the default
        std::tuple{f.endpoint, "--clients 1 --rate 100", "not with --rate"},
        std::tuple{f.endpoint, "--clients 1 --concurrency-range 1:2:1", "not with a sweep"},
        std::tuple{two_doors, "--clients 1", "not with several --connect doors"},
        std::tuple{f.endpoint, "--clients 1 --door grpc", "not with --door grpc"}}) {
    const std::string cmd = "client --connect " + connect +
                            " --model sage load --requests 10 --seeds uniform:100 --poll-us 300 ";
    const std::string want = "--poll-us is for one call in flight on one Cap'n Proto door, ";
    auto [bad, said] = run_spindle(cmd + more);
    EXPECT_NE(bad, 0) << more << ": " << said;
    EXPECT_NE(said.find(want + named), std::string::npos) << said;
  }
}

// Several doors (a cluster's ranks): `--connect A,B,C` sends a single call to the
// first door that accepts, and `client load` spreads its calls over every door
// that accepts, moving on from a refused one.
TEST(front_door_test, the_client_spreads_calls_over_several_doors) {
  auto& f = fixture();
  auto second = child_process::spawn({SPINDLE_BINARY, "serve", "--dataset", f.dir + "/g",
                                      "--model", f.dir + "/m", "--listen", "127.0.0.1:0"});
  ASSERT_TRUE(second.has_value());
  auto listening = second->wait_for("listening ", 60'000);
  ASSERT_TRUE(listening.has_value()) << listening.error().to_string();
  const std::string refused = "127.0.0.1:1";  // nothing listens there
  auto [rc, out] = run_spindle("client --connect " + f.endpoint + "," + refused + "," +
                                   *listening +
                                   " --model sage load --requests 300 --warmup 10 "
                                   "--seeds uniform:100 --clients 4 --json",
                               false);
  ASSERT_EQ(rc, 0) << out;
  auto j = nlohmann::json::parse(out.substr(out.find('{')));
  EXPECT_EQ(j["answered_ok"], 300) << out;
  ASSERT_EQ(j["answered_ok_by_door"].size(), 2u) << out;
  // One queue of calls for both doors: each takes calls as it answers them.
  EXPECT_GT(j["answered_ok_by_door"].value(f.endpoint, 0), 0) << out;
  EXPECT_GT(j["answered_ok_by_door"].value(*listening, 0), 0) << out;
  EXPECT_EQ(
      j["answered_ok_by_door"].value(f.endpoint, 0) + j["answered_ok_by_door"].value(*listening, 0),
      300)
      << out;
  auto [rc1, one] = run_spindle(
      "client --connect " + refused + "," + *listening + " --model sage infer --seeds 1 --json",
      false);
  EXPECT_EQ(rc1, 0) << one;
  EXPECT_NE(one.find("\"ok\""), std::string::npos) << one;
  // A call naming no model gets the only one loaded there.
  auto [rc2, unnamed] =
      run_spindle("client --connect " + *listening + " infer --seeds 1 --json", false);
  EXPECT_EQ(rc2, 0) << unnamed;
  EXPECT_NE(unnamed.find("\"ok\""), std::string::npos) << unnamed;
  // The C++ client library: the first door that accepts.
  std::vector<std::string> skipped;
  auto any = rpc::rpc_client::connect_any(refused + "," + f.endpoint, 30000, &skipped);
  ASSERT_TRUE(any.has_value()) << any.error().to_string();
  EXPECT_EQ(skipped.size(), 1u);
  auto answer = (*any)->infer_gnn({"sage", {1}, 7, 0});
  ASSERT_TRUE(answer.has_value());
  EXPECT_EQ(answer->status, rpc::rpc_status::ok) << answer->message;
  auto none = rpc::rpc_client::connect_any(refused + ",127.0.0.1:2");
  ASSERT_FALSE(none.has_value());
  EXPECT_NE(none.error().message().find("no door answered"), std::string::npos)
      << none.error().message();
  second->signal(SIGTERM);
  EXPECT_EQ(second->wait(), 0);
}

TEST(front_door_test, the_metrics_endpoint_exposes_counters_histograms_and_hit_rates) {
  auto& f = fixture();
  ASSERT_EQ(f.client->infer_gnn({"sage", {4}, 1, 0})->status, rpc::rpc_status::ok);
  httplib::Client http("127.0.0.1", f.metrics_port);
  auto res = http.Get("/metrics");
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 200);
  const std::string& body = res->body;
  EXPECT_NE(body.find("# TYPE spindle_request_latency_seconds histogram"), std::string::npos);
  EXPECT_NE(body.find("spindle_responses_total{model=\"sage\",status=\"ok\"}"), std::string::npos);
  EXPECT_NE(
      body.find(
          "spindle_stage_latency_seconds_bucket{model=\"sage\",stage=\"sampling\",le=\"+Inf\"}"),
      std::string::npos);
  EXPECT_NE(body.find("spindle_cache_hit_rate{model=\"ctr\",table=\"emb0\"}"), std::string::npos);
  // buckets from 10 us; a DLRM exports no GNN stage histograms.
  EXPECT_NE(body.find("stage=\"sampling\",le=\"1e-05\"}"), std::string::npos)
      << body.substr(0, 2000);
  EXPECT_EQ(body.find("spindle_stage_latency_seconds_bucket{model=\"ctr\""), std::string::npos);
  EXPECT_NE(body.find("spindle_admission_limit{model=\"sage\"}"), std::string::npos);
  EXPECT_NE(body.find("spindle_model_ready{model=\"sage\"} 1"), std::string::npos);
  EXPECT_EQ(body.find("spindle_inferences_total{model=\"sage\"} 0\n"), std::string::npos);
  // The process's own cost, as every Prometheus exporter gives it.
  for (const char* series : {"process_cpu_seconds_total ", "process_resident_memory_bytes ",
                             "process_open_fds ", "process_max_fds ", "process_start_time_seconds "})
    EXPECT_NE(body.find(std::string("\n") + series), std::string::npos) << series;
  // Each family is one group: its TYPE line comes once, before its first sample.
  EXPECT_EQ(body.find("# TYPE spindle_requests_total"),
            body.rfind("# TYPE spindle_requests_total"));
  // Triton-like execution counters: batches run and their sizes, queue time.
  EXPECT_NE(body.find("# TYPE spindle_batch_size histogram"), std::string::npos);
  EXPECT_NE(body.find("spindle_batch_size_bucket{model=\"sage\",le=\"+Inf\"}"), std::string::npos);
  EXPECT_EQ(body.find("spindle_executions_total{model=\"sage\"} 0\n"), std::string::npos);
  EXPECT_NE(body.find("spindle_queue_duration_seconds_total{model=\"sage\"}"), std::string::npos);
  auto stats = nlohmann::json::parse(f.client->stats(f.token)->json);
  const auto& sage = stats["models"]["sage"];
  EXPECT_GE(sage["executions"].get<std::uint64_t>(), 1u) << sage.dump();
  EXPECT_LE(sage["executions"].get<std::uint64_t>(), sage["requests"].get<std::uint64_t>());
  // The exposition format as Prometheus itself reads it (promtool lints too).
  const std::string scrape = f.dir + "/scrape.txt";
  std::ofstream(scrape) << body;
  if (std::system("command -v promtool >/dev/null") != 0)
    GTEST_SKIP() << "promtool not installed (Debian package prometheus; make deps installs it)";
  auto [rc, out] = run_command("promtool check metrics < " + scrape);
  EXPECT_EQ(rc, 0) << out;
}

std::pair<int, std::string> run_shell(const std::string& args) {
  return run_spindle("shell " + args);
}

TEST(front_door_test, the_shell_changes_a_policy_live_and_survives_bad_input) {
  auto& f = fixture();
  const std::string base = "--connect " + f.endpoint + " --token-file " + f.token_file;
  auto [code, out] = run_shell(
      base + " -c 'models; set sage batch_deadline_us 1500; tunables sage; infer sage 1,2 7'");
  EXPECT_EQ(code, 0) << out;
  EXPECT_NE(out.find("sage  gnn (graphsage)"), std::string::npos) << out;
  EXPECT_NE(out.find("batch_deadline_us = 1500"), std::string::npos) << out;
  auto t = f.client->get_tunables(f.token, "sage");
  bool seen = false;
  for (const auto& x : t->tunables) seen |= x.name == "batch_deadline_us" && x.value == "1500";
  EXPECT_TRUE(seen);
  auto j = nlohmann::json::parse(f.client->stats(f.token)->json);
  EXPECT_EQ(j["models"]["sage"]["tunables"]["batch_deadline_us"], "1500");
  std::tie(code, out) = run_shell(
      base + " -c 'frobnicate; set sage max_batch many; infer sage x; watch stats 0.01 1'");
  EXPECT_EQ(code, 1);
  EXPECT_NE(out.find("error: unknown or incomplete command 'frobnicate'"), std::string::npos)
      << out;
  EXPECT_NE(out.find("error: bad_request: max_batch = 'many'"), std::string::npos) << out;
  EXPECT_NE(out.find("error: 'infer sage x': bad number"), std::string::npos) << out;
  EXPECT_NE(out.find("p99 ms"), std::string::npos) << out;  // the last command still ran
  // watch shows the last 10 s beside the whole ring.
  EXPECT_NE(out.find("p99 ms (10s)"), std::string::npos) << out;
  auto recent = nlohmann::json::parse(f.client->stats(f.token)->json)["models"]["sage"];
  EXPECT_GT(recent["latency_ms_10s"]["count"].get<std::size_t>(), 0u) << recent.dump();
  // `stats nope` printed `null`; `set sage` said "unknown command".
  std::tie(code, out) = run_shell(base + " -c 'stats nope; set sage'");
  EXPECT_EQ(code, 1);
  EXPECT_NE(out.find("error: unknown model 'nope' (loaded: "), std::string::npos) << out;
  EXPECT_NE(out.find("error: usage: set MODEL TUNABLE VALUE"), std::string::npos) << out;
  EXPECT_EQ(out.find("null"), std::string::npos) << out;
  std::tie(code, out) = run_shell("--connect " + f.endpoint + " --token nope -c 'stats'");
  EXPECT_EQ(code, 1);
  EXPECT_NE(out.find("unauthorized: wrong admin token"), std::string::npos) << out;
}

// tab completion depends on the position (the shell's
// `complete TEXT` prints what tab offers after TEXT).
TEST(front_door_test, shell_completion_offers_commands_models_then_tunables) {
  auto& f = fixture();
  auto offers = [&](const std::string& text) {
    auto [code, out] = run_shell("--connect " + f.endpoint + " --token-file " + f.token_file +
                                 " -c 'complete " + text + "'");
    EXPECT_EQ(code, 0) << out;
    std::vector<std::string> words;
    std::istringstream in(out);
    for (std::string w; std::getline(in, w);) words.push_back(w);
    return words;
  };
  auto has = [](const std::vector<std::string>& v, const std::string& w) {
    return std::find(v.begin(), v.end(), w) != v.end();
  };
  auto first = offers("");
  EXPECT_TRUE(has(first, "stats") && has(first, "set") && has(first, "watch"));
  EXPECT_FALSE(has(first, "sage"));
  EXPECT_EQ(offers("se"), std::vector<std::string>{"set"});
  auto models = offers("stats ");
  EXPECT_TRUE(has(models, "sage")) << ::testing::PrintToString(models);
  EXPECT_FALSE(has(models, "stats"));
  EXPECT_EQ(offers("set sa"), std::vector<std::string>{"sage"});
  auto tunables = offers("set sage ");
  EXPECT_TRUE(has(tunables, "batch_deadline_us") && has(tunables, "fanouts"))
      << ::testing::PrintToString(tunables);
  EXPECT_FALSE(has(tunables, "sage"));
  for (const auto& t : offers("set sage max_")) EXPECT_EQ(t.rfind("max_", 0), 0u) << t;
  EXPECT_TRUE(offers("set sage max_batch ").empty());  // a value: nothing to offer
  EXPECT_TRUE(offers("set nope ").empty());
}

}  // namespace
}  // namespace spindle
