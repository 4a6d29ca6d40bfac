#include "config/topology.hpp"

#include <gtest/gtest.h>

#include <filesystem>

#include "config/colocation.hpp"

namespace spindle::config {
namespace {

constexpr const char* kMinimal = R"(
[[server]]
name = "a"
memory = "1GiB"
)";

expected<topology> parse(std::string text) { return parse_topology(text, "t.toml"); }

std::string error_of(std::string text) {
  auto t = parse(std::move(text));
  EXPECT_FALSE(t.has_value());
  return t ? "" : t.error().message();
}

TEST(topology_test, link_kind_names_round_trip) {
  for (int k = 0; k < kConfigurableLinks; ++k) {
    auto parsed = parse_link_kind(to_string(link_kind(k)));
    ASSERT_TRUE(parsed.has_value());
    EXPECT_EQ(*parsed, link_kind(k));
  }
  EXPECT_FALSE(parse_link_kind("carrier-pigeon").has_value());
  EXPECT_FALSE(parse_link_kind("remote_disk").has_value());  // derived, not configurable
  EXPECT_EQ(to_string(link_kind::remote_disk), "remote_disk");
}

TEST(topology_test, minimal_file_gets_defaults) {
  auto t = parse(kMinimal);
  ASSERT_TRUE(t.has_value()) << t.error().to_string();
  EXPECT_EQ(t->servers.size(), 1u);
  EXPECT_EQ(t->servers[0].memory_bytes, 1ull << 30);
  EXPECT_EQ(t->coordinator, "a");
  EXPECT_EQ(t->intra, link_kind::pcie);
  EXPECT_EQ(t->inter, link_kind::ethernet);
  EXPECT_DOUBLE_EQ(t->figures(link_kind::nvlink).bandwidth_gbs, 600.0);
  EXPECT_DOUBLE_EQ(t->figures(link_kind::infiniband).bandwidth_gbs, 100.0);
  EXPECT_EQ(t->launcher, "ssh {host}");
  EXPECT_TRUE(t->servers[0].door.empty());
}

// launch's settings: the launcher template for other hosts and a rank's own door.
TEST(topology_test, launcher_and_doors_are_read_and_checked) {
  auto t = parse("launcher = \"ip netns exec {host}\"\n[[server]]\nname = \"a\"\n"
                 "door = \"127.0.0.1:7401\"\nmemory = 1024\n");
  ASSERT_TRUE(t.has_value()) << t.error().to_string();
  EXPECT_EQ(t->launcher, "ip netns exec {host}");
  EXPECT_EQ(t->servers[0].door, "127.0.0.1:7401");
  EXPECT_NE(error_of("[[server]]\nname = \"a\"\nmemory = 1024\ndoor = \"7401\"\n")
                .find("server[0].door = '7401': expected HOST:PORT"),
            std::string::npos);
}

// A rank's door under launch may speak KServe and serve metrics on ports of its own.
TEST(topology_test, a_door_s_kserve_and_metrics_ports_are_read_and_checked) {
  auto t = parse(
      "[[server]]\nname = \"a\"\nmemory = 1024\ndoor = \"127.0.0.1:7401\"\n"
      "http = \"127.0.0.1:0\"\ngrpc = \"127.0.0.1:7403\"\nmetrics = \"127.0.0.1:7404\"\n");
  ASSERT_TRUE(t.has_value()) << t.error().to_string();
  EXPECT_EQ(t->servers[0].http, "127.0.0.1:0");
  EXPECT_EQ(t->servers[0].grpc, "127.0.0.1:7403");
  EXPECT_EQ(t->servers[0].metrics, "127.0.0.1:7404");
  EXPECT_NE(error_of("[[server]]\nname = \"a\"\nmemory = 1024\nmetrics = \"9100\"\n")
                .find("server[0].metrics = '9100': expected HOST:PORT"),
            std::string::npos);
}

TEST(topology_test, link_figures_are_overridable) {
  auto t = parse(std::string(kMinimal) +
                 "[links]\ninter = \"infiniband\"\n[links.infiniband]\n"
                 "bandwidth_gbs = 25.0\nlatency_us = 3.5\n");
  ASSERT_TRUE(t.has_value()) << t.error().to_string();
  EXPECT_TRUE(t->fast_network());
  EXPECT_DOUBLE_EQ(t->figures(link_kind::infiniband).bandwidth_gbs, 25.0);
  EXPECT_DOUBLE_EQ(t->figures(link_kind::infiniband).latency_us, 3.5);
  EXPECT_DOUBLE_EQ(t->figures(link_kind::remote_disk).latency_us, 3.5 + 100.0);
  EXPECT_DOUBLE_EQ(t->figures(link_kind::remote_disk).bandwidth_gbs, 1.25);
}

TEST(topology_test, replicas_expand_servers_with_distinct_names_and_ports) {
  auto t = parse("[[server]]\nname = \"g\"\nport = 7000\nreplicas = 3\nmemory = 10\n");
  ASSERT_TRUE(t.has_value()) << t.error().to_string();
  ASSERT_EQ(t->servers.size(), 3u);
  EXPECT_EQ(t->servers[2].name, "g-2");
  EXPECT_EQ(t->servers[2].port, 7002);
}

TEST(topology_test, rejects_impossible_configs_naming_the_field) {
  const std::string minimal(kMinimal);
  // Each config and what its error must name.
  const std::pair<std::string, std::string> cases[] = {
      {"coordinator = \"zz\"\n" + minimal, "coordinator = 'zz': unknown server"},
      {"[[server]]\nname = \"a\"\nmemory = -5\n", "server[0].memory = -5 is negative"},
      {"[[server]]\nname = \"a\"\nnuma_groups = 3\n[[server.device]]\nmemory = 1\n",
       "numa_groups = 3 is larger than the server's 1 devices"},
      {"[[server]]\nname = \"a\"\n[[server.device]]\nmemory = 1\nnuma = 2\n", "device[0].numa = 2"},
      {minimal + "[[server]]\nname = \"a\"\nmemory = 1\n", "used twice"},
      {minimal + "[links]\nintra = \"ethernet\"\n", "links.intra"},
      {minimal + "[links.pcie]\nbandwidth_gbs = 0.0\n", "links.pcie.bandwidth_gbs = 0"},
      {"[[server]]\nname = \"a\"\nmemroy = 1\n", "unknown field 'memroy'"},
      {"[[server]]\nname = \"a\"\nmemory = \"3 parsecs\"\n", "unknown unit"},
      {"[[server]\n", "t.toml:1"},
      // A misspelt link name names the file and the field (it named neither before).
      {minimal + "[links]\ninter = \"ethernt\"\n", "t.toml: links.inter: link 'ethernt'"},
  };
  for (const auto& [text, names] : cases) {
    const std::string error = error_of(text);
    EXPECT_NE(error.find(names), std::string::npos) << text << "\n -> " << error;
  }
}

TEST(topology_test, sizes_parse_with_binary_and_decimal_units) {
  EXPECT_EQ(*parse_size("4096"), 4096u);
  EXPECT_EQ(*parse_size("2 KiB"), 2048u);
  EXPECT_EQ(*parse_size("1.5GiB"), 1610612736u);
  EXPECT_EQ(*parse_size("3GB"), 3000000000u);
  EXPECT_FALSE(parse_size("GiB").has_value());
  // Past what 64 bits hold (the config fuzzer's find: converting was undefined).
  auto huge = parse_size("5e82 TiB");
  ASSERT_FALSE(huge.has_value());
  EXPECT_NE(huge.error().message().find("larger than 16 EiB"), std::string::npos);
  EXPECT_FALSE(parse_size("inf GiB").has_value());
}

TEST(topology_test, every_example_topology_loads) {
  int seen = 0;
  for (const auto& e : std::filesystem::directory_iterator(SPINDLE_SOURCE_DIR "/examples")) {
    auto name = e.path().filename().string();
    if (name.rfind("topology-", 0) != 0) continue;
    auto t = load_topology(e.path().string());
    EXPECT_TRUE(t.has_value()) << name << ": " << t.error().to_string();
    ++seen;
  }
  EXPECT_GE(seen, 7);
}

TEST(topology_test, with_server_count_copies_server_zero) {
  auto t = parse(kMinimal);
  ASSERT_TRUE(t.has_value());
  auto big = t->with_server_count(32);
  EXPECT_EQ(big.servers.size(), 32u);
  EXPECT_TRUE(validate(big).is_ok());
}

}  // namespace
}  // namespace spindle::config

namespace spindle::config {
namespace {

// The cluster TOML's [colocation] section (spindle launch, Hera Algorithm 2):
// paths relative to the file, and each bad field named.
TEST(colocation_section, is_read_with_paths_relative_to_the_file) {
  const std::string toml =
      "[colocation]\nprofiles = \"p.json\"\n[[colocation.model]]\nname = \"ncf\"\n"
      "dir = \"models/ncf\"\nqps = 300\n[[colocation.model]]\nname = \"wnd\"\ndir = \"/abs/wnd\"\n"
      "qps = 12.5\n";
  auto c = parse_colocation(toml, "/etc/spindle/cluster.toml");
  ASSERT_TRUE(c.has_value() && c->has_value()) << (c ? "" : c.error().to_string());
  EXPECT_EQ((*c)->profiles, "/etc/spindle/p.json");
  ASSERT_EQ((*c)->models.size(), 2u);
  EXPECT_EQ((*c)->models[0].dir, "/etc/spindle/models/ncf");
  EXPECT_EQ((*c)->models[0].qps, 300);
  EXPECT_EQ((*c)->models[1].dir, "/abs/wnd");
  EXPECT_FALSE(parse_colocation("coordinator = \"a\"\n", "c.toml")->has_value());  // none
  auto err = [](const std::string& text) {
    auto r = parse_colocation(text, "c.toml");
    return r ? std::string() : r.error().message();
  };
  EXPECT_NE(err("[colocation]\n").find("colocation.profiles"), std::string::npos);
  EXPECT_NE(err("[colocation]\nprofiles = \"p\"\n").find("at least one model"), std::string::npos);
  EXPECT_NE(err("[colocation]\nprofiles = \"p\"\n[[colocation.model]]\nname = \"a\"\ndir = \"d\"\n")
                .find("colocation.model[0].qps = 0"),
            std::string::npos);
  EXPECT_NE(err("[colocation]\nprofiles = \"p\"\n[[colocation.model]]\nname = \"a\"\ndir = \"d\"\n"
                "qps = 1\n[[colocation.model]]\nname = \"a\"\ndir = \"e\"\nqps = 2\n")
                .find("'a' is listed twice"),
            std::string::npos);
}

}  // namespace
}  // namespace spindle::config
