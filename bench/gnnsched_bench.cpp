// GNNSched replay: Poisson arrivals of GNN inference tasks (8-layer,
// width-256 GraphSAGE/GCN/GAT/GIN and a MIX), 100 tasks per workload, on sampled
// subgraphs of real graphs, with a memory pool small enough that grouping matters.
// Compares FIFO, SQTF, BQT and "all at once" (no memory check) by QoS violation
// rate (latency > QT = 2 x solo time, failures included), latency/QT percentiles,
// mean JCT and queueing time. The solo times measured in the same run are the
// baseline every latency is divided by.
//
// usage: gnnsched_bench DATASET_DIR... (prepared, with features)
#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <map>
#include <numeric>
#include <random>
#include <thread>

#include "bench/bench_util.hpp"
#include "colocation/colocated.hpp"
#include "colocation/gnnsched.hpp"
#include "colocation/pmc_check.hpp"
#include "core/progress.hpp"
#include "graph/dataset.hpp"
#include "graph/sampler.hpp"
#include "nn/model.hpp"

using namespace spindle;
using clock_type = std::chrono::steady_clock;

namespace {

constexpr int kLayers = 8, kWidth = 256, kTasks = 100;
const std::vector<int> kFanouts(kLayers, 2);

struct loaded_model {
  std::unique_ptr<nn::heap_allocator> weights = std::make_unique<nn::heap_allocator>();
  nn::model m;
};

struct task {
  int arch = 0;
  const graph::dataset* ds = nullptr;
  graph::sampled_subgraph sub;
  std::vector<float> degree;
  std::uint64_t buffer = 0;  // activations + input, x1.1, 512-rounded
  double solo = 0, qt = 0, arrival = 0;
  std::vector<float> staged;  // host input, prepared while the previous group runs
};

// Host-side preparation of a task's input: gather its nodes' feature rows.
void prepare(task& t) {
  const std::int64_t n = t.sub.hop_end.back(), f = t.ds->feature_dim();
  t.staged.resize(std::size_t(n * f));
  for (std::int64_t i = 0; i < n; ++i)
    std::memcpy(t.staged.data() + i * f, t.ds->features().data() + t.sub.nodes[i] * f,
                std::size_t(f) * 4);
}

std::vector<nn::block> blocks_of(const graph::sampled_subgraph& sub) {
  std::vector<nn::block> out;
  for (int l = 0; l < sub.num_hops(); ++l) {
    auto b = sub.layer_block(l);
    out.push_back({b.num_dst, b.num_src, b.indptr, b.indices});
  }
  return out;
}

// The task body: the prepared input copied into the task's buffer (the host-to-
// device copy on a GPU), then the forward pass.
status run_task(const task& t, const loaded_model& lm, std::span<std::byte> buffer) {
  nn::buffer_allocator alloc(buffer);
  const std::int64_t n = t.sub.hop_end.back(), f = t.ds->feature_dim();
  SPINDLE_ASSIGN_OR_RETURN(auto x, nn::tensor::empty(alloc, {n, f}));
  std::memcpy(x.data(), t.staged.data(), std::size_t(n * f) * 4);
  auto blocks = blocks_of(t.sub);
  SPINDLE_ASSIGN_OR_RETURN(auto y, lm.m.forward(alloc, blocks, t.degree, x));
  return status::ok();
}

struct outcome {
  std::vector<double> ratio, jct, queue;
  int violations = 0, failures = 0;
  std::size_t largest_group = 0;
};

outcome replay(std::vector<task*> tasks, const std::vector<loaded_model>& models,
               colocation::colocated_runner& runner, std::uint64_t ma, int policy /* 3 = all */) {
  outcome o;
  std::vector<double> start(tasks.size()), done(tasks.size(), -1);
  std::vector<status> result(tasks.size());
  auto t0 = clock_type::now();
  std::size_t next = 0, finished = 0;
  std::vector<std::uint64_t> queue;
  while (finished < tasks.size()) {
    double now = bench::seconds_since(t0);
    while (next < tasks.size() && tasks[next]->arrival <= now) queue.push_back(next++);
    if (queue.empty()) {
      std::this_thread::sleep_for(std::chrono::duration<double>(tasks[next]->arrival - now));
      continue;
    }
    colocation::task_groups groups;
    if (policy == 3) {
      groups.emplace_back();
      for (auto i : queue) groups[0].push_back({i, tasks[i]->buffer, tasks[i]->qt});
    } else {
      std::vector<colocation::sched_task> q;
      for (auto i : queue) q.push_back({i, tasks[i]->buffer, tasks[i]->qt});
      groups = std::move(*colocation::group_tasks(q, ma, colocation::grouping_policy(policy)));
    }
    queue.clear();
    for (const auto& st : groups[0]) prepare(*tasks[st.id]);
    for (std::size_t gi = 0; gi < groups.size(); ++gi) {
      const auto& g = groups[gi];
      o.largest_group = std::max(o.largest_group, g.size());
      std::vector<colocation::colocated_job> jobs;
      double s = bench::seconds_since(t0);
      for (const auto& st : g) {
        const task* t = tasks[st.id];
        start[st.id] = s;
        jobs.push_back({t->buffer, [t, &models](gpu::pool_slot s) {
                          return run_task(*t, models[t->arch], s.memory);
                        }});
      }
      auto running = runner.start(std::move(jobs), policy != 3);
      if (gi + 1 < groups.size())  // GNNSched §3.2: prepare the next group meanwhile
        for (const auto& st : groups[gi + 1]) prepare(*tasks[st.id]);
      auto res = running.get();
      double e = bench::seconds_since(t0);
      for (std::size_t k = 0; k < g.size(); ++k)
        done[g[k].id] = e, result[g[k].id] = res[k], ++finished;
    }
  }
  for (std::size_t i = 0; i < tasks.size(); ++i) {
    double latency = done[i] - tasks[i]->arrival;
    bool failed = !result[i].is_ok();
    o.failures += failed;
    o.violations += failed || latency > tasks[i]->qt;
    o.ratio.push_back(failed ? 1e9 : latency / tasks[i]->qt);
    o.jct.push_back(latency);
    o.queue.push_back(start[i] - tasks[i]->arrival);
  }
  return o;
}

double mean(const std::vector<double>& v) {
  double s = 0;
  for (double x : v) s += x;
  return s / double(v.size());
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) return fmt::print(stderr, "usage: gnnsched_bench DATASET_DIR...\n"), 2;
  set_progress_enabled(false);
  nn::set_blas_threads(1);
  std::vector<graph::dataset> datasets;
  for (int i = 1; i < argc; ++i) {
    auto ds = graph::dataset::open(argv[i]);
    if (!ds || ds->features().empty())
      return fmt::print(stderr, "{}: needs a dataset with features\n", argv[i]), 1;
    datasets.push_back(std::move(*ds));
  }
  const std::int64_t in = datasets[0].feature_dim();
  // One model per architecture for the first dataset's feature width; datasets of
  // another width are not used (their tasks would need their own models).
  const std::vector<config::model_arch> archs = {config::model_arch::graphsage,
                                                 config::model_arch::gcn, config::model_arch::gat,
                                                 config::model_arch::gin};
  std::vector<loaded_model> models(archs.size());
  std::string tmp = (std::filesystem::temp_directory_path() / "spindle-gnnsched-bench").string();
  for (std::size_t a = 0; a < archs.size(); ++a) {
    config::model_desc d;
    d.arch = archs[a];
    d.in = int(in), d.hidden = archs[a] == config::model_arch::gat ? kWidth / 4 : kWidth;
    d.heads = 4, d.out = kWidth, d.layers = kLayers;
    std::string dir = tmp + "/" + std::string(config::to_string(archs[a]));
    if (auto st = nn::init_model(d, 1, dir); !st)
      return fmt::print(stderr, "{}\n", st.to_string()), 1;
    auto m = nn::model::load(dir, *models[a].weights);
    if (!m) return fmt::print(stderr, "{}\n", m.error().to_string()), 1;
    models[a].m = std::move(*m);
  }
  // Tasks: each architecture x 100, seeds 1/4/16 from a dataset of the model's width.
  std::mt19937_64 rng(7);
  graph::inline_executor sampler;
  std::vector<task> all;
  for (std::size_t a = 0; a < archs.size(); ++a)
    for (int i = 0; i < kTasks; ++i) {
      task t;
      t.arch = int(a);
      std::vector<const graph::dataset*> usable;
      for (auto& ds : datasets)
        if (ds.feature_dim() == in) usable.push_back(&ds);
      t.ds = usable[std::size_t(i) % usable.size()];
      std::vector<std::int64_t> seeds(std::size_t(1) << (2 * (rng() % 3)));
      for (auto& s : seeds) s = std::int64_t(rng() % std::uint64_t(t.ds->num_nodes()));
      t.sub = std::move(*sampler.sample(t.ds->graph(), seeds, {kFanouts, false, rng()}));
      t.degree = nn::gcn_degrees(t.sub.indptr, t.sub.indices, t.sub.hop_end.back());
      auto est =
          colocation::estimate_pmc(colocation::gnn_graph(models[a].m.desc(), colocation::block_sizes(t.sub)), 1.0);
      t.buffer = (std::uint64_t(double(est.peak_bytes - est.weight_bytes) * 1.1) + 511) / 512 * 512;
      all.push_back(std::move(t));
    }
  // Solo times (the baseline): each task alone, after one warm-up.
  std::uint64_t max_buffer = 0;
  std::vector<std::uint64_t> buffers;
  for (auto& t : all) max_buffer = std::max(max_buffer, t.buffer), buffers.push_back(t.buffer);
  std::sort(buffers.begin(), buffers.end());
  auto solo_pool = gpu::memory_pool::create(max_buffer);
  thread_pool workers(1, "gnnsched");
  colocation::colocated_runner solo_runner(*solo_pool, workers);
  for (auto& t : all) {
    prepare(t);
    for (int rep = 0; rep < 2; ++rep) {
      auto s = clock_type::now();
      auto r =
          solo_runner
              .start({{t.buffer,
                       [&](gpu::pool_slot s) { return run_task(t, models[t.arch], s.memory); }}})
              .get();
      if (!r[0].is_ok()) return fmt::print(stderr, "solo run failed: {}\n", r[0].to_string()), 1;
      t.solo = bench::seconds_since(s);
    }
    t.qt = 2 * t.solo;
  }
  // Pool: 2.5x the median task buffer (and at least the largest), so groups stay small.
  const std::uint64_t ma = std::max<std::uint64_t>(max_buffer, buffers[buffers.size() / 2] * 5 / 2);
  auto pool = gpu::memory_pool::create(ma);
  colocation::colocated_runner runner(*pool, workers);
  double solo_mean = 0;
  for (auto& t : all) solo_mean += t.solo;
  solo_mean /= double(all.size());
  fmt::print(
      "GNNSched replay: {} tasks per workload, {}-layer width-{} models, fanout 2 per hop, "
      "seeds 1/4/16; pool {:.1f} MiB (median task buffer {:.2f} MiB, largest {:.2f} MiB); "
      "mean solo time {:.2f} ms (baseline: QT = 2 x solo)\n",
      kTasks, kLayers, kWidth, double(ma) / 1048576, double(buffers[buffers.size() / 2]) / 1048576,
      double(max_buffer) / 1048576, solo_mean * 1e3);
  fmt::print("{:<10} {:>3} {:<8} | {:>7} {:>8} {:>8} {:>8} | {:>9} {:>9} | {:>5} {:>7}\n",
             "workload", "λ", "policy", "viol%", "p50 L/QT", "p90 L/QT", "p99 L/QT", "JCT ms",
             "queue ms", "fail", "max grp");
  const std::vector<std::string> policy_names = {"fifo", "sqtf", "bqt", "all"};
  for (int w = 0; w <= int(archs.size()); ++w) {
    std::vector<task*> pick;
    std::vector<std::size_t> order(all.size());
    std::iota(order.begin(), order.end(), std::size_t{0});
    std::shuffle(order.begin(), order.end(), std::mt19937_64(11));  // MIX: 100 of all, no repeats
    for (int i = 0; i < kTasks; ++i)
      pick.push_back(w < int(archs.size()) ? &all[std::size_t(w * kTasks + i)]
                                           : &all[order[std::size_t(i)]]);
    std::string name = w < int(archs.size()) ? std::string(config::to_string(archs[w])) : "MIX";
    for (double lambda : {1.0, 2.0}) {
      double mean_solo = 0;
      for (auto* t : pick) mean_solo += t->solo;
      mean_solo /= double(pick.size());
      // GNNSched §4.1: arrivals follow a Poisson process and the number of tasks
      // arriving together has mean 1 (low load) or 2 (high load). Ours: batch
      // instants with exponential gaps of mean 2 x mean solo time, 1 + Poisson(λ - 1) tasks each.
      std::exponential_distribution<double> gap(1.0 / (2.0 * mean_solo));
      std::poisson_distribution<int> extra(lambda - 1.0 > 0 ? lambda - 1.0 : 1e-9);
      std::mt19937_64 arrivals(3);
      double at = 0;
      for (std::size_t i = 0; i < pick.size();) {
        at += gap(arrivals);
        for (int k = 1 + extra(arrivals); k > 0 && i < pick.size(); --k) pick[i++]->arrival = at;
      }
      for (int p = 0; p < 4; ++p) {
        auto o = replay(pick, models, runner, ma, p);
        auto ratio = o.ratio;
        auto pct = [&](double q) {
          double v = bench::percentile(ratio, q);
          return v > 1e8 ? std::string("fail") : fmt::format("{:.2f}", v);
        };
        fmt::print(
            "{:<10} {:>3.0f} {:<8} | {:>6.0f}% {:>8} {:>8} {:>8} | {:>9.2f} {:>9.2f} | {:>5} "
            "{:>7}\n",
            name, lambda, policy_names[p], 100.0 * o.violations / double(pick.size()), pct(0.5),
            pct(0.9), pct(0.99), mean(o.jct) * 1e3, mean(o.queue) * 1e3, o.failures,
            o.largest_group);
      }
    }
  }
  return 0;
}
