// The front door's recommendation-model calls on the shared server: the golden
// DLRM through the parameter server, `spindle client rec`, the worker pool
// resized under load, and dynamic batching. Linked before
// front_door_test.cpp, whose last test stops the server.
#include "splitrpc/rec_wire.hpp"
#include "tests/apps/front_door_fixture.hpp"

namespace spindle {
namespace {

using front_door::fixture;
using front_door::run_spindle;
namespace rpc = transport::rpc;

TEST(front_door_test, a_dlrm_answers_the_golden_batch_through_the_parameter_server) {
  auto& f = fixture();
  testing::golden_dlrm_batch g;
  rpc::rec_call call{"ctr", 6, g.dense, {}, 0};
  for (auto& s : g.sparse) call.sparse.push_back({s.indices, s.offsets});
  auto r = f.client->infer_rec(call);
  ASSERT_TRUE(r.has_value()) << r.error().to_string();
  ASSERT_EQ(r->status, rpc::rpc_status::ok) << r->message;
  for (int b = 0; b < 6; ++b) EXPECT_NEAR(r->scores[b], g.expected[b], 1e-5);
  call.sparse[0].indices[0] = 50;  // table 0 has 50 rows
  auto bad = f.client->infer_rec(call);
  EXPECT_EQ(bad->status, rpc::rpc_status::bad_request);
  EXPECT_NE(bad->message.find("table 0: indices[0]=50 out of range"), std::string::npos)
      << bad->message;
  call.sparse[0].indices[0] = 1;
  call.dense[14] = std::numeric_limits<float>::quiet_NaN();  // NaN in: refused, not NaN scores
  auto nan = f.client->infer_rec(call);
  ASSERT_TRUE(nan.has_value());
  EXPECT_EQ(nan->status, rpc::rpc_status::bad_request);
  EXPECT_NE(nan->message.find("dense[14] = nan: not a finite number (sample 1)"), std::string::npos)
      << nan->message;
}

// `spindle client rec` queries a recommendation model, from a
// JSON batch or one sample on the command line, with the golden scores.
TEST(front_door_test, the_client_queries_a_recommendation_model) {
  auto& f = fixture();
  testing::golden_dlrm_batch g;
  nlohmann::json batch = {{"dense", nlohmann::json::array()}, {"sparse", nlohmann::json::array()}};
  for (int b = 0; b < 6; ++b) {
    batch["dense"].push_back(
        std::vector<float>(g.dense.begin() + b * 13, g.dense.begin() + b * 13 + 13));
    nlohmann::json tables = nlohmann::json::array();
    for (const auto& s : g.sparse)
      tables.push_back(std::vector<std::int64_t>(s.indices.begin() + s.offsets[b],
                                                 s.indices.begin() + s.offsets[b + 1]));
    batch["sparse"].push_back(tables);
  }
  std::ofstream(f.dir + "/rec.json") << batch.dump();
  const std::string door = "client --connect " + f.endpoint + " --model ctr rec ";
  auto [rc, out] = run_spindle(door + "--json --input " + f.dir + "/rec.json");
  ASSERT_EQ(rc, 0) << out;
  auto j = nlohmann::json::parse(out);
  ASSERT_EQ(j["status"], "ok") << out;
  for (int b = 0; b < 6; ++b) EXPECT_NEAR(j["scores"][b].get<float>(), g.expected[b], 1e-5);
  // Sample 2 alone, from flags.
  std::string args = door + "--dense ";
  for (int k = 0; k < 13; ++k) args += fmt::format("{}{}", k ? "," : "", g.dense[2 * 13 + k]);
  for (const auto& t : batch["sparse"][2]) {
    std::string keys;
    for (const auto& k : t) keys += (keys.empty() ? "" : ",") + std::to_string(k.get<long>());
    args += " --sparse " + (keys.empty() ? std::string("''") : keys);
  }
  std::tie(rc, out) = run_spindle(args);
  ASSERT_EQ(rc, 0) << out;
  const float score = std::stof(out.substr(out.find("sample 0: ") + 10));
  EXPECT_NEAR(score, g.expected[2], 1e-4) << out;
  // Bad input names the file or the value.
  std::ofstream(f.dir + "/bad.json") << "{\"dense\": [[1]]}";
  std::tie(rc, out) = run_spindle(door + "--input " + f.dir + "/bad.json");
  EXPECT_EQ(rc, 1);
  EXPECT_NE(out.find("bad.json: expected {\"dense\""), std::string::npos) << out;
  std::tie(rc, out) = run_spindle(door + "--dense 1 --sparse 1,x");
  EXPECT_EQ(rc, 1);
  EXPECT_NE(out.find("--sparse 1,x: 'x' is not a key"), std::string::npos) << out;
}

// A recommendation model runs on a worker pool that is resized live
// (tunable `workers`); calls in flight through the resizes all answer ok.
TEST(front_door_test, a_recommendation_pool_resized_under_load_loses_no_call) {
  auto& f = fixture();
  testing::golden_dlrm_batch g;
  rpc::rec_call call{"ctr", 6, g.dense, {}, 0};
  for (auto& s : g.sparse) call.sparse.push_back({s.indices, s.offsets});
  std::atomic<int> ok{0}, bad{0};
  std::atomic<bool> stop{false};
  std::vector<std::thread> clients;
  for (int c = 0; c < 3; ++c)
    clients.emplace_back([&] {
      auto client = rpc::rpc_client::connect(f.endpoint, 30000);
      while (!stop) {
        auto r = (*client)->infer_rec(call);
        (r && r->status == rpc::rpc_status::ok ? ok : bad)++;
      }
    });
  for (const char* n : {"3", "1", "4", "2"}) {
    ASSERT_EQ(f.client->set_tunable(f.token, "ctr", "workers", n)->status, rpc::rpc_status::ok);
    std::this_thread::sleep_for(std::chrono::milliseconds(60));
  }
  stop = true;
  for (auto& t : clients) t.join();
  EXPECT_EQ(bad.load(), 0);
  EXPECT_GT(ok.load(), 10);
  bool seen = false;
  const auto tunables = f.client->get_tunables(f.token, "ctr");  // held: the loop reads into it
  ASSERT_TRUE(tunables.has_value()) << tunables.error().to_string();
  for (const auto& t : tunables->tunables) seen |= t.name == "workers" && t.value == "2";
  EXPECT_TRUE(seen);
  EXPECT_EQ(f.client->set_tunable(f.token, "ctr", "workers", "0")->status,
            rpc::rpc_status::bad_request);
}

// Recommendation calls queued together run as one batch (one
// forward pass), each caller still gets exactly its own golden scores; with a
// sample budget of one call, every call runs alone. The work changes: the
// executions counted per call.
TEST(front_door_test, recommendation_calls_are_batched_and_answered_exactly) {
  auto& f = fixture();
  testing::golden_dlrm_batch g;
  rpc::rec_call call{"ctr", 6, g.dense, {}, 0};
  for (auto& s : g.sparse) call.sparse.push_back({s.indices, s.offsets});
  auto executions = [&] {
    return nlohmann::json::parse(f.client->stats(f.token)->json)["models"]["ctr"]["executions"]
        .get<std::uint64_t>();
  };
  auto run_clients = [&](int clients, int calls) {
    std::atomic<int> wrong{0};
    std::vector<std::thread> ts;
    for (int c = 0; c < clients; ++c)
      ts.emplace_back([&] {
        auto client = rpc::rpc_client::connect(f.endpoint, 30000);
        for (int i = 0; i < calls; ++i) {
          auto r = (*client)->infer_rec(call);
          bool ok = r && r->status == rpc::rpc_status::ok && r->scores.size() == 6;
          for (int b = 0; ok && b < 6; ++b) ok = std::abs(r->scores[b] - g.expected[b]) < 1e-5;
          if (!ok) ++wrong;
        }
      });
    for (auto& t : ts) t.join();
    return wrong.load();
  };
  // Served on Hera's worker pool: its dynamic batcher runs the calls.
  EXPECT_EQ(nlohmann::json::parse(f.client->stats(f.token)->json)["models"]["ctr"]["scheduler"],
            "dynamic_batcher");
  ASSERT_EQ(f.client->set_tunable(f.token, "ctr", "workers", "1")->status, rpc::rpc_status::ok);
  // Admit every call (8 in flight on one worker would otherwise meet the SLO limit).
  ASSERT_EQ(f.client->set_tunable(f.token, "ctr", "slo_ms", "0")->status, rpc::rpc_status::ok);
  const auto before = executions();
  EXPECT_EQ(run_clients(8, 40), 0);
  const auto batched = executions() - before;
  std::printf("dynamic batching: 320 calls from 8 clients ran as %llu forward passes\n",
              static_cast<unsigned long long>(batched));
  EXPECT_LT(batched, 320u) << "8 clients on 1 worker: calls must share forward passes";
  ASSERT_EQ(f.client->set_tunable(f.token, "ctr", "max_batch_samples", "6")->status,
            rpc::rpc_status::ok);
  const auto before_alone = executions();
  EXPECT_EQ(run_clients(8, 40), 0);
  EXPECT_EQ(executions() - before_alone, 320u);
  ASSERT_EQ(f.client->set_tunable(f.token, "ctr", "max_batch_samples", "4096")->status,
            rpc::rpc_status::ok);
  ASSERT_EQ(f.client->set_tunable(f.token, "ctr", "slo_ms", "30")->status, rpc::rpc_status::ok);
  // A bad call merged with good ones fails alone.
  rpc::rec_call bad = call;
  bad.sparse[0].indices[0] = 50;
  std::atomic<int> good_ok{0};
  std::thread t([&] {
    auto client = rpc::rpc_client::connect(f.endpoint, 30000);
    for (int i = 0; i < 50; ++i)
      good_ok += (*client)->infer_rec(call)->status == rpc::rpc_status::ok;
  });
  for (int i = 0; i < 50; ++i)
    EXPECT_EQ(f.client->infer_rec(bad)->status, rpc::rpc_status::bad_request);
  t.join();
  EXPECT_EQ(good_ok.load(), 50);
}

template <class T>
std::vector<T> golden_wnd(const std::string& name) {
  auto a =
      npy_array::open(std::string(SPINDLE_SOURCE_DIR) + "/tests/nn/golden/wnd/" + name + ".npy");
  auto v = a->template as<T>();
  return {v->begin(), v->end()};
}

// A recommendation model (the Wide & Deep golden, served by
// --rec-model) also answers over SplitRPC's data path and the unified tensor
// path: the same scores as PyTorch, as its inferRec gives. 16 split calls in
// flight are batched by the model's executor, each answered with its own
// scores; bad payloads are refused naming the field, and it keeps serving.
TEST(front_door_test, a_recommendation_model_answers_over_splitrpc_as_over_infer_rec) {
  auto& f = fixture();
  const auto dense = golden_wnd<float>("dense");
  const auto want = golden_wnd<float>("expected");
  std::vector<nn::sparse_input> sparse;
  for (int t = 0; t < 3; ++t)
    sparse.push_back({golden_wnd<std::int64_t>("indices" + std::to_string(t)),
                      golden_wnd<std::int64_t>("offsets" + std::to_string(t))});
  rpc::rec_call call{"wd", 6, dense, {}, 0};
  for (auto& s : sparse) call.sparse.push_back({s.indices, s.offsets});
  auto over_rec = f.client->infer_rec(call);
  ASSERT_TRUE(over_rec.has_value() && over_rec->status == rpc::rpc_status::ok);
  const auto payload = splitrpc::pack_rec_request(6, dense, sparse);
  ASSERT_TRUE(f.client->open_split());
  auto split = f.client->infer_split("wd", payload);
  auto unified = f.client->infer_tensor("wd", payload);
  ASSERT_TRUE(split.has_value() && unified.has_value());
  ASSERT_EQ(split->status, rpc::rpc_status::ok) << split->message;
  ASSERT_EQ(unified->status, rpc::rpc_status::ok) << unified->message;
  ASSERT_EQ(split->result.size(), want.size());
  for (std::size_t b = 0; b < want.size(); ++b) {
    EXPECT_NEAR(split->result[b], want[b], 1e-5) << b;
    EXPECT_EQ(split->result[b], unified->result[b]) << b;
    EXPECT_EQ(split->result[b], over_rec->scores[b]) << b;
  }
  std::size_t ok = 0, wrong = 0;
  ASSERT_TRUE(f.client->run_tensor_closed_loop(
      "wd", payload, 64, 16, true, [&](std::size_t, const rpc::tensor_answer& a, double) {
        ok += a.status == rpc::rpc_status::ok;
        // A merged batch may round differently from a lone one (sgemm's blocking
        // depends on the row count): each answer within 1e-5 of PyTorch's.
        bool off = a.result.size() != want.size();
        for (std::size_t b = 0; !off && b < want.size(); ++b)
          off = std::abs(a.result[b] - want[b]) > 1e-5f;
        wrong += off;
      }));
  EXPECT_EQ(ok, 64u);
  EXPECT_EQ(wrong, 0u);
  auto bad = payload;
  bad[2] = splitrpc::pack_rec_request(1, std::vector<float>(12), {})[2];  // dense_in 12, not 13
  auto r = f.client->infer_split("wd", bad);
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(r->status, rpc::rpc_status::bad_request);
  EXPECT_NE(r->message.find("dense_in = 12: the model has 13"), std::string::npos) << r->message;
  r = f.client->infer_split("wd", std::vector<float>(payload.begin(), payload.end() - 2));
  EXPECT_EQ(r->status, rpc::rpc_status::bad_request);
  EXPECT_NE(r->message.find("table 2: 15 keys, payload ends"), std::string::npos) << r->message;
  auto keys = sparse;
  keys[1].indices[0] = 30;  // table 1 has 30 rows
  r = f.client->infer_split("wd", splitrpc::pack_rec_request(6, dense, keys));
  EXPECT_EQ(r->status, rpc::rpc_status::bad_request);
  EXPECT_NE(r->message.find("index 30"), std::string::npos) << r->message;
  split = f.client->infer_split("wd", payload);  // still serving
  ASSERT_EQ(split->status, rpc::rpc_status::ok);
}

}  // namespace
}  // namespace spindle
