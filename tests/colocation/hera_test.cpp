// Hera's algorithms on a hand-made profile table whose answers were worked
// out by hand (the comments show the arithmetic): worker scalability,
// Algorithm 1's affinity, Algorithm 2's plan, Algorithm 3's worker and LLC
// choices, and the profile file's errors.
#include <gtest/gtest.h>

#include <atomic>
#include <thread>

#include "colocation/hera/colocation.hpp"
#include "colocation/hera/manager.hpp"
#include "colocation/hera/profiler.hpp"
#include "colocation/hera/simulate.hpp"
#include "serving/rec_batch.hpp"
#include "serving/worker_pool.hpp"

namespace spindle::colocation::hera {
namespace {

// 4 cores, 4 LLC ways, 10 GB/s. D: bandwidth bound (flat past 2 workers);
// N: compute bound and cache sensitive; W: compute bound, cache insensitive.
profile_table table(double mem_bw = 10) {
  profile_table t;
  t.machine = {4, 4, mem_bw};
  // Each model: SLA 50 ms at p99; qps[workers - 1][ways - 1]; bandwidth per worker count.
  auto model = [](std::vector<std::vector<double>> qps, std::vector<double> mem_bw_gbps) {
    return model_profile{50, 0.99, std::move(qps), std::move(mem_bw_gbps), "test"};
  };
  t.models["D"] =
      model({{80, 90, 95, 100}, {150, 170, 180, 190}, {170, 185, 195, 200}, {175, 190, 200, 205}},
            {3, 6, 7, 7.5});
  t.models["N"] =
      model({{50, 80, 95, 100}, {100, 160, 190, 200}, {150, 240, 285, 300}, {200, 320, 380, 400}},
            {0.5, 1, 1.5, 2});
  t.models["W"] = model(
      {{100, 100, 100, 100}, {200, 200, 200, 200}, {300, 300, 300, 300}, {400, 400, 400, 400}},
      {1, 2, 3, 4});
  return t;
}

TEST(hera_test, worker_scalability_is_the_slope_of_the_upper_half) {
  const auto t = table();
  // D: (205 - 190) / 190 = 0.079 < 0.6; N: (400 - 200) / 200 = 1.0.
  EXPECT_EQ(worker_scalability(t.models.at("D"), 4), scalability::low);
  EXPECT_EQ(worker_scalability(t.models.at("N"), 4), scalability::high);
  // A profile that stops at 2 workers (memory capacity) is low whatever its slope.
  model_profile capped = t.models.at("W");
  capped.qps.resize(2);
  capped.mem_bw_gbps.resize(2);
  EXPECT_EQ(worker_scalability(capped, 4), scalability::low);
  // Saturating at 3 of 4 workers: gain (3 - 2) / 2 = 0.5, low by default, high at 0.5.
  model_profile sat = t.models.at("W");
  sat.qps[3] = sat.qps[2];
  EXPECT_EQ(worker_scalability(sat, 4), scalability::low);
  EXPECT_EQ(worker_scalability(sat, 4, 0.5), scalability::high);
}

TEST(hera_test, algorithm_1_affinity_on_a_hand_made_table) {
  const auto t = table();
  // D-N at 2 workers each: i=1: (150/190 + 190/200)/2 = 0.8697 (best);
  // i=2: (170/190 + 160/200)/2 = 0.8474; i=3: (180/190 + 80/200)/2 = 0.6737.
  // DRAM: min(10 / (6 + 1), 1) = 1.
  auto dn = co_location_affinity(t.models.at("D"), t.models.at("N"), t.machine);
  EXPECT_NEAR(dn.llc, (150.0 / 190 + 190.0 / 200) / 2, 1e-12);
  EXPECT_EQ(dn.ways_a, 1);
  EXPECT_EQ(dn.ways_b, 3);
  EXPECT_DOUBLE_EQ(dn.dram, 1.0);
  EXPECT_DOUBLE_EQ(dn.system, dn.llc);
  // D-W: W does not care about ways, so D takes 3: (180/190 + 1)/2 = 0.9737.
  auto dw = co_location_affinity(t.models.at("D"), t.models.at("W"), t.machine);
  EXPECT_NEAR(dw.system, (180.0 / 190 + 1) / 2, 1e-12);
  EXPECT_EQ(dw.ways_a, 3);
  // At 4 GB/s the bandwidth term decides: D-W min(4/8, 1) = 0.5, D-N 4/7.
  const auto slow = table(4);
  EXPECT_DOUBLE_EQ(
      co_location_affinity(slow.models.at("D"), slow.models.at("W"), slow.machine).system, 0.5);
  EXPECT_NEAR(co_location_affinity(slow.models.at("D"), slow.models.at("N"), slow.machine).system,
              4.0 / 7, 1e-12);
  // One way (no resctrl): the LLC cannot be split, so only DRAM counts.
  profile_table one;
  one.machine = {4, 1, 10};
  for (const auto& [n, m] : t.models) {
    model_profile p = m;
    for (auto& row : p.qps) row = {row.back()};
    one.models[n] = p;
  }
  auto f = co_location_affinity(one.models.at("D"), one.models.at("N"), one.machine);
  EXPECT_DOUBLE_EQ(f.llc, 1.0);
  EXPECT_EQ(f.ways_a, 1);
}

TEST(hera_test, algorithm_2_plans_the_by_hand_answer) {
  const auto t = table();
  // D (low) goes beside W (affinity 0.974 > 0.870): each (D, W) server gives
  // D at(2, 3) = 180 and W at(2, 1) = 200. D needs 500: three servers
  // (540), and W gets 600 >= 100 on the way. N (high) alone: 400 >= 300, one
  // server. EMU of a (D, W) server: 180/205 + 200/400 = 1.378.
  auto plan = plan_cluster(t, {{"D", 500}, {"N", 300}, {"W", 100}});
  ASSERT_TRUE(plan.has_value()) << plan.error().message();
  ASSERT_EQ(plan->servers.size(), 4u);
  for (int s = 0; s < 3; ++s) {
    EXPECT_EQ(plan->servers[s].models, (std::vector<std::string>{"D", "W"}));
    EXPECT_EQ(plan->servers[s].qps, (std::vector<double>{180, 200}));
    EXPECT_NEAR(plan->servers[s].emu, 180.0 / 205 + 0.5, 1e-12);
  }
  EXPECT_EQ(plan->servers[3].models, std::vector<std::string>{"N"});
  EXPECT_DOUBLE_EQ(plan->servers[3].emu, 1.0);
  EXPECT_DOUBLE_EQ(plan->serviced.at("D"), 540);
  EXPECT_DOUBLE_EQ(plan->serviced.at("W"), 600);
  EXPECT_EQ(plan->classes.at("D"), scalability::low);
  // At 4 GB/s D pairs with N instead (4/7 > 1/2), each scaled by 4/7.
  auto slow = plan_cluster(table(4), {{"D", 100}, {"N", 10}, {"W", 10}});
  ASSERT_TRUE(slow.has_value());
  EXPECT_EQ(slow->servers[0].models, (std::vector<std::string>{"D", "N"}));
  EXPECT_NEAR(slow->servers[0].qps[0], 150.0 * 4 / 7, 1e-9);
  // Errors name the model.
  EXPECT_NE(plan_cluster(t, {{"X", 1}}).error().message().find("'X'"), std::string::npos);
}

TEST(hera_test, algorithm_3_sizes_pools_from_the_profile) {
  const auto t = table();
  const auto& n = t.models.at("N");  // SLA 50 ms; QPS at 4 ways: 100, 200, 300, 400
  EXPECT_EQ(find_number_of_workers(n, 250, 4, 4), 3);
  EXPECT_EQ(find_number_of_workers(n, 1000, 4, 4), 4);  // short: the most QPS
  EXPECT_EQ(find_number_of_workers(n, 250, 4, 2), 2);   // capped by the cores given
  EXPECT_EQ(adjust_workers(n, 45, 150, 7, 4, 4), 7);    // slack 0.9: inside the band
  EXPECT_EQ(adjust_workers(n, 75, 150, 2, 4, 4), 3);    // slack 1.5: 1.5 x 150 = 225 -> 3
  EXPECT_EQ(adjust_workers(n, 25, 150, 4, 4, 4), 2);    // slack 0.5: 150 -> 2 (shrink)
  EXPECT_EQ(adjust_workers(n, 45, 150, 3, 4, 4, {0.95, 1.0}), 2);  // a tighter band
  // D at 2 workers + N at 2: i=1: 150+190 = 340 (best), i=2: 330, i=3: 260.
  EXPECT_EQ(best_llc_partition(t.models.at("D"), 2, n, 2, 4), (std::pair{1, 3}));
  EXPECT_EQ(best_llc_partition(t.models.at("D"), 2, n, 2, 1), (std::pair{1, 1}));
}

TEST(hera_test, profile_files_round_trip_and_name_their_faults) {
  const auto t = table();
  auto back = parse_profile_table(to_json(t), "p.json");
  ASSERT_TRUE(back.has_value()) << back.error().message();
  EXPECT_EQ(back->models.at("D").qps, t.models.at("D").qps);
  EXPECT_EQ(back->machine.llc_ways, 4);
  auto bad = t;
  bad.models["D"].qps[2].pop_back();
  auto e = parse_profile_table(to_json(bad), "p.json");
  ASSERT_FALSE(e.has_value());
  EXPECT_EQ(e.error().message(),
            "p.json: models.D.qps[2] has 3 way columns, machine.llc_ways is 4");
  EXPECT_NE(parse_profile_table("{}", "p.json").error().message().find("p.json: expected"),
            std::string::npos);
}

// The SLA search on an M/M/1-like curve: tail = 1000 / (1000 - rate) ms meets a
// 10 ms SLA up to rate 900.
TEST(hera_test, the_max_qps_search_finds_the_sla_edge) {
  int calls = 0;
  auto measure = [&](double rate) {
    ++calls;
    load_result r{rate, rate, rate < 1000 ? 1000 / (1000 - rate) : 1e9, 1};
    return r;
  };
  const double q = max_qps_meeting_sla(measure, 10, 2000, 12);
  EXPECT_NEAR(q, 900, 2000.0 / 4096 + 1e-9);
  EXPECT_LE(q, 900);
  EXPECT_EQ(calls, 13);
  EXPECT_DOUBLE_EQ(max_qps_meeting_sla(measure, 10, 500, 12), 500);  // upper already meets
  // A pool falling behind shows as a tail past the SLA at every rate.
  auto behind = [](double rate) { return load_result{rate, rate * 0.5, 1e6, 1}; };
  EXPECT_DOUBLE_EQ(max_qps_meeting_sla(behind, 10, 100, 5), 0);
  // A window with no query is no evidence.
  auto empty = [](double rate) { return load_result{rate, 0, 0, 0}; };
  EXPECT_DOUBLE_EQ(max_qps_meeting_sla(empty, 10, 100, 5), 0);
}

// Hera's pools are resized live: growing and shrinking under load loses no query.
TEST(hera_test, a_worker_pool_resized_under_load_loses_no_query) {
  std::atomic<int> ran{0};
  {
    serving::worker_pool pool(2, "test-pool");
    for (int i = 0; i < 2000; ++i) {
      pool.submit([&] {
        std::this_thread::sleep_for(std::chrono::microseconds(20));
        ++ran;
      });
      if (i == 500) pool.resize(4);
      if (i == 1000) pool.resize(1);
      if (i == 1500) pool.resize(3);
    }
    EXPECT_EQ(pool.workers(), 3u);
  }  // the destructor runs what is queued
  EXPECT_EQ(ran.load(), 2000);
  serving::worker_pool p(1, "test-pool");
  std::atomic<int> busy{0}, most{0};
  for (int i = 0; i < 64; ++i)
    p.submit([&] {
      const int now = ++busy;
      most = std::max(most.load(), now);
      std::this_thread::sleep_for(std::chrono::milliseconds(2));
      --busy;
    });
  p.resize(4);
  while (p.queued() > 0) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  EXPECT_GT(most.load(), 1);  // the new workers took queries
}

// Algorithm 3 jumps to the profiled worker count; the PARTIES-style baseline
// steps one worker per period on the same windows.
TEST(hera_test, the_node_manager_sizes_from_the_profile_and_parties_steps) {
  const auto t = table();
  const auto& n = t.models.at("N");  // 100, 200, 300, 400 QPS at 1..4 workers
  manager_settings s{50, {}, 4};
  // A spike: tail 100 ms (slack 2) at 180 QPS -> urgency 2 x 180 = 360 -> 4 workers.
  model_window spike{100, 180, 1, 50};
  EXPECT_EQ(decide_workers(manager_policy::hera, &n, s, spike), 4);
  EXPECT_EQ(decide_workers(manager_policy::parties, nullptr, s, spike), 2);
  // Idle: tail 5 ms (slack 0.1) at 90 QPS -> 1 worker; PARTIES gives back one.
  model_window idle{5, 90, 4, 50};
  EXPECT_EQ(decide_workers(manager_policy::hera, &n, s, idle), 1);
  EXPECT_EQ(decide_workers(manager_policy::parties, nullptr, s, idle), 3);
  // Inside the band, or with no answers in the window: no change.
  EXPECT_EQ(decide_workers(manager_policy::hera, &n, s, {45, 500, 2, 50}), 2);
  EXPECT_EQ(decide_workers(manager_policy::hera, &n, s, {500, 500, 2, 0}), 2);
  // Bounded by the cores given.
  EXPECT_EQ(decide_workers(manager_policy::parties, nullptr, {50, {}, 2}, {100, 1, 2, 5}), 2);
  EXPECT_FALSE(parse_manager_policy("static").has_value());
}

// The simulator on the hand table, 30 isolated servers' worth of an even mix:
// isolation needs exactly 30 at EMU 1; Hera needs 12 (D + W) + 4 W + 10 N = 26
// with mean EMU (12 x 1.378 + 14) / 26.
TEST(hera_test, the_simulator_counts_servers_and_emu_per_policy) {
  const auto t = table();
  const auto targets = targets_for(t, {{"D", 1}, {"N", 1}, {"W", 1}}, 30);
  EXPECT_DOUBLE_EQ(targets.at("D"), 10 * 205.0);
  auto iso = simulate(t, targets, selection::isolation);
  ASSERT_TRUE(iso.has_value());
  EXPECT_EQ(iso->servers, 30u);
  EXPECT_DOUBLE_EQ(iso->mean_emu, 1.0);
  auto hera = simulate(t, targets, selection::hera);
  ASSERT_TRUE(hera.has_value());
  EXPECT_EQ(hera->servers, 26u);
  EXPECT_NEAR(hera->mean_emu, (12 * (180.0 / 205 + 0.5) + 14) / 26, 1e-9);
  // Random policies are reproducible by seed and serve the targets too.
  for (auto p : {selection::hera_random, selection::random}) {
    auto a = simulate(t, targets, p, 7), b = simulate(t, targets, p, 7);
    ASSERT_TRUE(a.has_value() && b.has_value());
    EXPECT_EQ(a->servers, b->servers);
    EXPECT_GT(a->servers, 0u);
    EXPECT_GT(a->mean_emu, 0.5);
  }
  // Hera-Random has one high partner to choose from per low model here: W or N.
  auto hr = simulate(t, targets, selection::hera_random, 3);
  EXPECT_GE(hr->servers, hera->servers);
}

// Dynamic batching: two calls stack into one batch with each table's offsets
// shifted past the bags before them, and the scores split back in order.
TEST(hera_test, recommendation_calls_merge_and_split) {
  const std::vector<float> d1 = {1, 2}, d2 = {3, 4, 5, 6};
  const std::vector<nn::sparse_input> s1 = {{{7}, {0, 1}}}, s2 = {{{8, 9, 10}, {0, 2, 3}}};
  const std::vector<serving::rec_batch_view> parts = {{1, d1, s1}, {2, d2, s2}};
  const auto m = serving::merge_rec_batches(parts);
  EXPECT_EQ(m.batch, 3);
  EXPECT_EQ(m.dense, (std::vector<float>{1, 2, 3, 4, 5, 6}));
  EXPECT_EQ(m.sparse[0].indices, (std::vector<std::int64_t>{7, 8, 9, 10}));
  EXPECT_EQ(m.sparse[0].offsets, (std::vector<std::int64_t>{0, 1, 3, 4}));
  const std::vector<float> scores = {0.1f, 0.2f, 0.3f};
  const std::vector<std::int64_t> sizes = {1, 2};
  const auto split = serving::split_scores(scores, sizes);
  EXPECT_EQ(split[0], std::vector<float>{0.1f});
  EXPECT_EQ(split[1], (std::vector<float>{0.2f, 0.3f}));
  // Intra-call parallelism: a slice of the merged batch is a batch of its own
  // (offsets rebased), and the slices merge back into the same batch.
  const serving::rec_batch_view whole{m.batch, m.dense, m.sparse};
  const auto a = serving::slice_rec_batch(whole, 0, 1), b = serving::slice_rec_batch(whole, 1, 3);
  EXPECT_EQ(b.batch, 2);
  EXPECT_EQ(b.dense, (std::vector<float>{3, 4, 5, 6}));
  EXPECT_EQ(b.sparse[0].indices, (std::vector<std::int64_t>{8, 9, 10}));
  EXPECT_EQ(b.sparse[0].offsets, (std::vector<std::int64_t>{0, 2, 3}));
  const std::vector<serving::rec_batch_view> back = {{a.batch, a.dense, a.sparse},
                                            {b.batch, b.dense, b.sparse}};
  const auto again = serving::merge_rec_batches(back);
  EXPECT_EQ(again.dense, m.dense);
  EXPECT_EQ(again.sparse[0].indices, m.sparse[0].indices);
  EXPECT_EQ(again.sparse[0].offsets, m.sparse[0].offsets);
}

}  // namespace
}  // namespace spindle::colocation::hera
