// `spindle colocate` and `spindle profile` run as a user would: plans and
// affinities over a profile table, a measured profile the planner reads, and
// the model variants of Hera's Table I.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "tests/apps/cli_run.hpp"

namespace spindle {
namespace {

// `colocate affinity` and `colocate plan` over the hand-made profile
// table of examples/ (its by-hand answers: hera_test).
TEST(colocate_cli_test, plans_and_affinities_over_a_profile_table) {
  const std::string profiles =
      std::string(SPINDLE_SOURCE_DIR) + "/examples/hera-profile-handmade.json";
  auto r =
      run("colocate plan --profiles " + profiles + " --targets D=500,N=300,W=100 --json", true);
  ASSERT_EQ(r.code, 0) << r.out;
  auto j = nlohmann::json::parse(r.out);
  ASSERT_EQ(j["servers"].size(), 4u) << r.out;
  EXPECT_EQ(j["servers"][0]["models"], nlohmann::json({"D", "W"}));
  EXPECT_EQ(j["isolated_servers"], 5);
  EXPECT_EQ(j["scalability"]["D"], "low");
  r = run("colocate affinity --profiles " + profiles);
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find("D              W               0.974  1.000   0.974     3:1"),
            std::string::npos)
      << r.out;
  r = refused("colocate plan --profiles " + profiles + " --targets Q=5",
              "spindle: error: target for 'Q': no such model in the profiles");
  r = run("colocate simulate --profiles " + profiles + " --mix D=1,N=1,W=1 --servers 30 --json",
          true);
  ASSERT_EQ(r.code, 0) << r.out;
  j = nlohmann::json::parse(r.out);
  ASSERT_EQ(j.size(), 4u) << r.out;
  EXPECT_EQ(j[0]["servers"], 30);  // isolation
  EXPECT_EQ(j[1]["policy"], "Hera");
  EXPECT_EQ(j[1]["servers"], 26);  // hera_test works it out by hand
  r = refused("colocate plan --profiles /nonexistent.json --targets D=1", "/nonexistent.json");
}

}  // namespace
}  // namespace spindle

namespace spindle {
namespace {

// `spindle profile` measures a real model under Poisson load and
// writes a table the planner reads.
TEST(colocate_cli_test, profile_writes_a_table_the_planner_reads) {
  const std::string dir = ::testing::TempDir() + "/spindle-profile-" + std::to_string(::getpid());
  std::filesystem::create_directories(dir);
  const std::string golden = std::string(SPINDLE_SOURCE_DIR) + "/tests/nn/golden/dlrm";
  const std::string ncf = std::string(SPINDLE_SOURCE_DIR) + "/tests/nn/golden/ncf";
  auto r = run("profile --model ctr=" + golden + " --model ctr2=" + golden + " --model ncf=" + ncf +
               " --workers 2 --seconds 0.2 --steps 3 --sla-ms 1000 --out " + dir + "/p.json");
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find("profile table written to"), std::string::npos) << r.out;
  std::ifstream in(dir + "/p.json");
  auto j = nlohmann::json::parse(in);
  ASSERT_EQ(j["models"]["ctr"]["qps"].size(), 2u) << j.dump();
  // Each model, Table I's NCF included, meets its SLA at some measured rate (a
  // generous SLA: other tests share these cores, and the workers run at nice 10).
  for (const char* m : {"ctr", "ctr2", "ncf"}) {
    double best = 0;
    for (const auto& row : j["models"][m]["qps"]) best = std::max(best, row[0].get<double>());
    EXPECT_GT(best, 0) << m << ": " << j.dump();
  }
  EXPECT_GT(j["machine"]["mem_bw_gbps"].get<double>(), 0);
  r = run("colocate plan --profiles " + dir + "/p.json --targets ctr=100,ctr2=100");
  EXPECT_EQ(r.code, 0) << r.out;
  r = run("profile --model " + dir + " --out " + dir + "/q.json");  // not a model directory
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.out.find("model.toml"), std::string::npos) << r.out;
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace spindle

namespace spindle {
namespace {

// Hera Table I's DLRM variants as model init presets.
TEST(colocate_cli_test, model_init_writes_table_i_variants) {
  const std::string dir = ::testing::TempDir() + "/spindle-variants-" + std::to_string(::getpid());
  auto r = run("model init --arch dlrm --variant C --tables 100,200 --out-dir " + dir + "/c");
  ASSERT_EQ(r.code, 0) << r.out;
  std::ifstream in(dir + "/c/model.toml");
  const std::string toml((std::istreambuf_iterator<char>(in)), {});
  EXPECT_NE(toml.find("dense_in = 2560"), std::string::npos) << toml;
  EXPECT_NE(toml.find("bottom = [1024, 256, 32]"), std::string::npos) << toml;
  EXPECT_NE(toml.find("slo_ms = 100"), std::string::npos) << toml;
  r = run("model init --arch ncf --tables 10,20,10,20 --out-dir " + dir + "/n");
  ASSERT_EQ(r.code, 0) << r.out;
  r = refused("model init --arch ncf --tables 10,20 --out-dir " + dir + "/bad", "NCF has 4 tables");
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace spindle
