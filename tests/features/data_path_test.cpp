// Two real processes on loopback: `spindle serve-shard` owns feature shards in
// UCX memory; this process gathers rows one-sidedly and checks every byte.
#include <gtest/gtest.h>
#include <signal.h>

#include <cstring>
#include <random>

#include "../graph/test_util.hpp"
#include "core/npy.hpp"
#include "core/subprocess.hpp"
#include "features/dataset_placement.hpp"
#include "features/feature_gather.hpp"
#include "features/feature_shard.hpp"
#include "graph/prepare.hpp"
#include "transport/ucx/ucx.hpp"

namespace spindle::features {
namespace {

namespace ucx = transport::ucx;

const std::string& dataset_dir() {
  static const std::string dir = [] {
    std::string d = graph::testing::temp_dir("data_path_ds");
    graph::generate_options o;
    o.rmat.scale = 14;
    o.feature_dim = 32;
    thread_pool pool(1, "gen");
    EXPECT_TRUE(graph::generate_dataset(o, d, pool).is_ok());
    return d;
  }();
  return dir;
}

struct owner {
  child_process proc;
  ucx::region_descriptor desc;
};

owner start_owner(std::vector<std::string> args, const std::string& tls) {
  std::vector<std::string> argv = {SPINDLE_BINARY, "serve-shard", dataset_dir()};
  argv.insert(argv.end(), args.begin(), args.end());
  std::vector<std::string> env = {"SPINDLE_PROGRESS=0"};
  if (!tls.empty()) env.push_back("UCX_TLS=" + tls);
  auto p = child_process::spawn(argv, env);
  EXPECT_TRUE(p.has_value());
  auto line = p->wait_for("descriptor ", 60'000);
  EXPECT_TRUE(line.has_value()) << line.error().to_string();
  auto desc = ucx::region_descriptor::decode(*line);
  EXPECT_TRUE(desc.has_value());
  EXPECT_TRUE(p->wait_for("ready", 10'000).has_value());
  return {std::move(*p), *desc};
}

std::vector<std::int64_t> random_ids(std::int64_t n, std::size_t count, unsigned seed,
                                     int parity = -1) {
  std::mt19937_64 rng(seed);
  std::vector<std::int64_t> ids(count);
  for (auto& v : ids) {
    v = std::int64_t(rng() % std::uint64_t(n));
    if (parity >= 0) v = (v & ~std::int64_t{1}) | parity;
    if (v >= n) v -= 2;
  }
  return ids;
}

void expect_rows_match(const graph::dataset& ds, std::span<const std::int64_t> ids,
                       const std::vector<std::byte>& out) {
  const std::size_t rb = std::size_t(ds.feature_dim()) * sizeof(float);
  for (std::size_t i = 0; i < ids.size(); ++i)
    ASSERT_EQ(
        std::memcmp(out.data() + i * rb, ds.features().data() + ids[i] * ds.feature_dim(), rb), 0)
        << "row " << i << " node " << ids[i];
}

class data_path_test : public ::testing::TestWithParam<std::string> {};

// The plan of the host-only two-process topology: this process is process 0 and
// holds shard 0 itself; process 1 is a real `spindle serve-shard`.
TEST_P(data_path_test, gathers_100k_random_rows_one_sidedly_and_checks_every_byte) {
  auto ds = graph::dataset::open(dataset_dir());
  ASSERT_TRUE(ds.has_value());
  const std::string topo_path = SPINDLE_SOURCE_DIR "/examples/topology-host-2proc.toml";
  auto topo = config::load_topology(topo_path);
  ASSERT_TRUE(topo.has_value());
  auto plan = features::place_dataset(*ds, *topo, "fap");
  ASSERT_TRUE(plan.has_value()) << plan.error().to_string();
  ASSERT_EQ(plan->shards.size(), 2u);
  const auto dim = std::uint32_t(ds->feature_dim());
  std::vector<std::byte> mine(shard_bytes(plan->lookup.shard_row_count(0), dim));
  ASSERT_TRUE(fill_shard(plan->lookup, 0, ds->features(), dim, mine).is_ok());

  // On shared memory the owner never progresses its worker: the reads are one-sided.
  const bool shm = GetParam().empty();
  std::vector<std::string> args = {"--topology", topo_path, "--shard", "1"};
  if (shm) args.push_back("--no-progress");
  auto peer = start_owner(args, GetParam());
  auto ctx = ucx::context::create(GetParam());
  ASSERT_TRUE(ctx.has_value());
  auto w = ucx::worker::create(*ctx);
  auto remote = ucx::remote_region::attach(*w, peer.desc);
  ASSERT_TRUE(remote.has_value()) << remote.error().to_string();
  feature_gatherer g(plan->lookup, dim * 4,
                     {{mine.data(), nullptr, 0.0}, {nullptr, remote->get(), 1.0}});

  auto ids = random_ids(ds->num_nodes(), 100'000, 11);
  std::vector<std::byte> out(ids.size() * dim * 4);
  auto report = g.gather(ids, out);
  ASSERT_TRUE(report.has_value()) << report.error().to_string();
  EXPECT_EQ(report->local_rows + report->remote_rows, ids.size());
  if (shm) {
    // UCX maps the peer's shard here (ucp_rkey_ptr): rows are read by pointer.
    EXPECT_NE((*remote)->mapped(), nullptr);
    EXPECT_GT(report->mapped_rows, 10'000u);
    EXPECT_LT(report->mapped_rows, report->local_rows);
  } else {
    EXPECT_EQ((*remote)->mapped(), nullptr);
    EXPECT_GT(report->remote_rows, 10'000u);
    EXPECT_GT(report->local_rows, 10'000u);
    EXPECT_LT(report->remote_ops, report->remote_rows);  // adjacent rows were coalesced
  }
  expect_rows_match(*ds, ids, out);
  peer.proc.signal(SIGTERM);
  EXPECT_EQ(peer.proc.wait(), 0);
}

INSTANTIATE_TEST_SUITE_P(transports, data_path_test, ::testing::Values("", "tcp"),
                         [](const auto& info) {
                           return info.param.empty() ? "ucx_default" : info.param;
                         });

// Owner A holds every row; owner B replicates the even rows. Kill A mid-run:
// even rows fail over to B (reported), odd rows fail with a clean error.
TEST(data_path_failover_test, killed_owner_falls_back_to_the_replica_and_reports_it) {
  auto ds = graph::dataset::open(dataset_dir());
  ASSERT_TRUE(ds.has_value());
  const auto n = std::uint64_t(ds->num_nodes());
  const auto dim = std::uint32_t(ds->feature_dim());
  features::lookup_builder b(n, 2);
  for (std::uint64_t v = 0; v < n; ++v)
    ASSERT_TRUE(b.assign(v, v % 2 ? std::vector<features::shard_index>{0}
                                  : std::vector<features::shard_index>{0, 1})
                    .is_ok());
  auto lookup = std::move(b).finish();
  ASSERT_TRUE(lookup.has_value());
  std::string dir = graph::testing::temp_dir("failover_rows");
  std::vector<owner> owners;
  for (int s = 0; s < 2; ++s) {
    auto rows = lookup->shard_rows(features::shard_index(s));
    std::vector<std::int64_t> ids(rows.begin(), rows.end());
    std::string path = dir + "/shard" + std::to_string(s) + ".npy";
    ASSERT_TRUE(write_npy(path, dtype::i64, {std::int64_t(ids.size())}, ids.data()).has_value());
    owners.push_back(start_owner({"--rows", path}, "tcp"));
  }
  auto ctx = ucx::context::create("tcp");
  auto w = ucx::worker::create(*ctx);
  auto a = ucx::remote_region::attach(*w, owners[0].desc, 3000);
  auto r = ucx::remote_region::attach(*w, owners[1].desc, 3000);
  ASSERT_TRUE(a.has_value() && r.has_value());
  feature_gatherer g(*lookup, dim * 4, {{nullptr, a->get(), 1.0}, {nullptr, r->get(), 2.0}});

  auto ids = random_ids(std::int64_t(n), 20'000, 5);
  std::vector<std::byte> out(ids.size() * dim * 4);
  auto first = g.gather(ids, out);
  ASSERT_TRUE(first.has_value()) << first.error().to_string();
  EXPECT_TRUE(first->failed_shards.empty());
  expect_rows_match(*ds, ids, out);

  owners[0].proc.signal(SIGKILL);
  owners[0].proc.wait();
  auto even = random_ids(std::int64_t(n), 20'000, 6, 0);
  std::fill(out.begin(), out.end(), std::byte{0});
  auto second = g.gather(even, out);
  ASSERT_TRUE(second.has_value()) << second.error().to_string();
  EXPECT_EQ(second->failed_shards, std::vector<int>{0});
  EXPECT_EQ(second->fallback_rows, even.size());
  expect_rows_match(*ds, even, out);
  EXPECT_EQ(g.unreachable(), std::vector<int>{0});

  auto odd = random_ids(std::int64_t(n), 100, 7, 1);
  auto third = g.gather(odd, out);
  ASSERT_FALSE(third.has_value());
  EXPECT_EQ(third.error().code(), errc::unavailable);
  EXPECT_NE(third.error().message().find("no reachable owner (shards: 0)"), std::string::npos)
      << third.error().message();
}

}  // namespace
}  // namespace spindle::features
