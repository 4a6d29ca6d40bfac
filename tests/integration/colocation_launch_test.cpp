// Hera Algorithm 2 applied by `spindle launch`: a cluster TOML's
// [colocation] section names the recommendation models, their target QPS and
// the profile table; launch plans the servers and starts each plan server on
// its rank as a `spindle serve` of its model pair. Each must serve exactly the
// models the plan gave it, with the golden answers, and stop with launch.
// Rank 1's own door (no dataset, no model of its own) forwards each model to
// the plan servers that serve it: the NCF golden batch answers there too.
#include <gtest/gtest.h>
#include <signal.h>

#include <fstream>
#include <map>
#include <set>

#include "../graph/test_util.hpp"
#include "config/topology.hpp"
#include "core/npy.hpp"
#include "core/subprocess.hpp"
#include "core/text_file.hpp"
#include "tests/integration/cluster_support.hpp"
#include "tests/support/spindle_cli.hpp"
#include "transport/rpc/rpc_client.hpp"

namespace spindle {
namespace {

namespace rpc = transport::rpc;
const std::string kSource = SPINDLE_SOURCE_DIR;

template <class T>
std::vector<T> golden(const std::string& model, const std::string& name) {
  auto a = npy_array::open(kSource + "/tests/nn/golden/" + model + "/" + name + ".npy");
  auto v = a->template as<T>();
  return {v->begin(), v->end()};
}

// The NCF golden batch as one call to `name`, and its PyTorch scores.
std::pair<rpc::rec_call, std::vector<float>> ncf_call(const std::string& name) {
  rpc::rec_call call{name, 6, {}, {}, 0};
  for (int t = 0; t < 4; ++t)
    call.sparse.push_back({golden<std::int64_t>("ncf", "indices" + std::to_string(t)),
                           golden<std::int64_t>("ncf", "offsets" + std::to_string(t))});
  return {call, golden<float>("ncf", "expected")};
}

TEST(colocation_launch_test, launch_places_each_plan_servers_models_on_its_rank) {
  const std::string dir = graph::testing::temp_dir("colocation_launch");
  // Three ranks on loopback; the hand-made profile table (examples/) with
  // targets D=200, N=100, W=50 plans (D + W), (D + W) and (N) (hera_test).
  std::string toml = "coordinator = \"r0\"\n[links]\nintra = \"shm\"\ninter = \"ethernet\"\n";
  const std::string door = fmt::format("127.0.0.1:{}", cluster_testing::free_port());
  for (int r = 0; r < 3; ++r) {
    toml += fmt::format(
        "[[server]]\nname = \"r{}\"\nhost = \"127.0.0.1\"\nport = {}\n"
        "memory = \"1GiB\"\n",
        r, 24000 + int(::getpid() % 3000) * 3 + r);
    if (r == 1) toml += fmt::format("door = \"{}\"\n", door);
  }
  toml +=
      fmt::format("[colocation]\nprofiles = \"{}/examples/hera-profile-handmade.json\"\n", kSource);
  for (auto [name, model, qps] :
       {std::tuple{"D", "dlrm", 200}, {"N", "ncf", 100}, {"W", "wnd", 50}})
    toml += fmt::format(
        "[[colocation.model]]\nname = \"{}\"\ndir = \"{}/tests/nn/golden/{}\"\n"
        "qps = {}\n",
        name, kSource, model, qps);
  const std::string config = dir + "/cluster.toml";
  std::ofstream(config) << toml;
  auto launch = child_process::spawn({SPINDLE_BINARY, "launch", "--config", config});
  ASSERT_TRUE(launch.has_value());
  std::map<int, std::string> endpoint;  // rank -> its plan server's front door
  std::map<int, std::string> planned;   // rank -> "D + W"
  std::string seen;
  std::set<int> ready;  // node ranks that joined (stopping one mid-join takes long)
  bool door_open = false;
  while (endpoint.size() < 3 || ready.size() < 3 || !door_open) {
    auto line = launch->read_line(120'000);
    ASSERT_TRUE(line.has_value()) << seen;
    seen += *line + "\n";
    int server = 0, rank = 0;
    char models[64] = {};
    if (std::sscanf(line->c_str(), "[plan] server %d on rank %d: %63[^e]", &server, &rank,
                    models) == 3)
      planned[rank] = std::string(models, std::strlen(models) - 1);
    // (sscanf counts a match before a literal that differs: check the text too)
    if (line->find(" hera] listening ") != std::string::npos &&
        std::sscanf(line->c_str(), "[rank %d", &rank) == 1)
      endpoint[rank] = line->substr(line->rfind(' ') + 1);
    if (line->starts_with("[rank 1] listening ")) door_open = true;
    if (line->ends_with("] ready") && line->find(" hera]") == std::string::npos &&
        std::sscanf(line->c_str(), "[rank %d", &rank) == 1)
      ready.insert(rank);
  }
  EXPECT_EQ(planned, (std::map<int, std::string>{{0, "D + W"}, {1, "D + W"}, {2, "N"}})) << seen;
  auto token = read_text_file(config::default_token_file(config), "token");
  ASSERT_TRUE(token.has_value());
  std::string t = *token;
  while (!t.empty() && std::isspace(static_cast<unsigned char>(t.back()))) t.pop_back();
  for (const auto& [rank, at] : endpoint) {
    auto c = rpc::rpc_client::connect(at);
    ASSERT_TRUE(c.has_value()) << at << ": " << c.error().to_string() << "\n" << seen;
    auto models = (*c)->list_models(t);
    ASSERT_TRUE(models.has_value() && models->status == rpc::rpc_status::ok);
    std::set<std::string> names;
    for (const auto& m : models->models) names.insert(m.name);
    const std::set<std::string> want =
        rank == 2 ? std::set<std::string>{"N"} : std::set<std::string>{"D", "W"};
    EXPECT_EQ(names, want) << "rank " << rank;
  }
  auto [call, want] = ncf_call("N");
  auto c = rpc::rpc_client::connect(endpoint[2]);
  auto r = (*c)->infer_rec(call);
  ASSERT_TRUE(r.has_value() && r->status == rpc::rpc_status::ok) << (r ? r->message : "");
  for (std::size_t b = 0; b < want.size(); ++b) EXPECT_NEAR(r->scores[b], want[b], 1e-5);
  // Through rank 1's door: N is forwarded to rank 2's plan server, and every
  // planned model is listed there with its description.
  auto d = rpc::rpc_client::connect(door);
  ASSERT_TRUE(d.has_value()) << d.error().to_string() << "\n" << seen;
  auto fr = (*d)->infer_rec(call);
  ASSERT_TRUE(fr.has_value() && fr->status == rpc::rpc_status::ok)
      << (fr ? fr->message : fr.error().to_string());
  for (std::size_t b = 0; b < want.size(); ++b) EXPECT_NEAR(fr->scores[b], want[b], 1e-5);
  auto listed = (*d)->models();
  ASSERT_TRUE(listed.has_value());
  std::set<std::string> at_door;
  for (const auto& m : *listed) at_door.insert(m.name);
  EXPECT_EQ(at_door, (std::set<std::string>{"D", "N", "W"}));
  // Several calls in flight through the door are forwarded, none refused by
  // the door itself (its admission floor follows the server's batching).
  auto load = testing::run_spindle_cli({"client", "--connect", door, "--model", "N", "load", "--batch",
                               "8", "--requests", "300", "--warmup", "10", "--clients", "4",
                               "--json"});
  EXPECT_EQ(load.code, 0) << load.out;
  EXPECT_NE(load.out.find("\"ok\": 300"), std::string::npos) << load.out;
  auto bad = call;
  bad.sparse[0].indices[0] = 1 << 30;  // checked at the door against the plan server's tables
  auto refused = (*d)->infer_rec(bad);
  ASSERT_TRUE(refused.has_value());
  EXPECT_EQ(refused->status, rpc::rpc_status::bad_request) << refused->message;
  launch->signal(SIGTERM);
  std::string rest;
  while (auto l = launch->read_line(30'000)) rest += *l + "\n";
  EXPECT_EQ(launch->wait(), 0) << rest;
  for (int rank : {0, 1, 2})
    EXPECT_NE(rest.find(fmt::format("[rank {} hera] exited with 0", rank)), std::string::npos)
        << rest;
}

}  // namespace
}  // namespace spindle
