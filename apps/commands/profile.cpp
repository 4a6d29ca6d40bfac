// `spindle profile`: Hera's per-model profile (Hera §V-B, Figs. 5-7). For each
// recommendation model alone: the max QPS meeting its SLA (the --percentile
// tail under Poisson arrivals) with 1..W workers, the memory bandwidth it
// draws there, and its worker scalability; one LLC-way column unless the
// kernel exposes resctrl. Writes the profile table the colocate planner and
// the node manager read, prints a table, and plots QPS against workers.
#include <linux/perf_event.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <optional>
#include <random>
#include <thread>

#include "apps/commands/command.hpp"
#include "colocation/hera/colocation.hpp"
#include "colocation/hera/profiler.hpp"
#include "core/gnuplot.hpp"
#include "core/log.hpp"
#include "nn/model.hpp"

namespace spindle::apps {
namespace {

namespace hera = colocation::hera;

struct profile_args {
  std::vector<std::string> models;  // NAME=DIR
  int workers = 0;                  // 0: 2 x cores
  int batch = 64, lookups = 1, steps = 5;
  double sla_ms = 0, percentile = 0.99, seconds = 0.5;
  std::string out = "profile.json", plot;
};

// One model's queries: `count` batches of random dense rows and keys, reused in turn.
struct query_set {
  nn::heap_allocator weights;
  std::optional<nn::model> model;
  std::vector<std::vector<float>> dense;
  std::vector<std::vector<nn::sparse_input>> sparse;
  std::atomic<std::size_t> next{0};
  double bytes_per_query = 0;  // embedding bytes one query gathers

  std::int64_t batch = 0;

  void run() {
    const std::size_t i = next.fetch_add(1, std::memory_order_relaxed) % dense.size();
    nn::heap_allocator a;
    auto x = nn::tensor::borrow(dense[i].data(), {batch, model->desc().dense_in});
    (void)model->forward_rec(a, x, sparse[i]);
  }
};

expected<std::unique_ptr<query_set>> make_queries(const std::string& dir, const profile_args& a) {
  auto q = std::make_unique<query_set>();
  SPINDLE_ASSIGN_OR_RETURN(auto m, nn::model::load(dir, q->weights));
  if (!m.desc().is_rec())
    return make_error(errc::invalid_argument, "{}: not a recommendation model (arch {})", dir,
                      config::to_string(m.desc().arch));
  q->model.emplace(std::move(m));
  q->batch = a.batch;
  const auto& d = q->model->desc();
  std::mt19937_64 rng(1);
  std::uniform_real_distribution<float> u(0, 1);
  for (int n = 0; n < 32; ++n) {
    std::vector<float> dense(std::size_t(a.batch * d.dense_in));
    for (auto& x : dense) x = u(rng);
    std::vector<nn::sparse_input> bags;
    for (auto rows : d.table_rows) {
      std::uniform_int_distribution<std::int64_t> key(0, rows - 1);
      nn::sparse_input s;
      for (int b = 0; b < a.batch; ++b) {
        s.offsets.push_back(std::int64_t(s.indices.size()));
        for (int l = 0; l < a.lookups; ++l) s.indices.push_back(key(rng));
      }
      s.offsets.push_back(std::int64_t(s.indices.size()));
      bags.push_back(std::move(s));
    }
    q->dense.push_back(std::move(dense));
    q->sparse.push_back(std::move(bags));
  }
  q->bytes_per_query =
      double(a.batch) * a.lookups * double(d.table_rows.size()) * d.embedding_dim * sizeof(float);
  return q;
}

// This machine's streaming copy bandwidth (read + write), the socket figure
// CoAff_DRAM divides by.
double copy_bandwidth_gbps() {
  const std::size_t n = std::size_t(64) << 20;
  std::vector<char> src(n, 1), dst(n, 0);
  double best = 0;
  for (int rep = 0; rep < 5; ++rep) {
    const auto t0 = std::chrono::steady_clock::now();
    std::memcpy(dst.data(), src.data(), n);
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    best = std::max(best, 2.0 * double(n) / s / 1e9);
  }
  return best;
}

// Whether a hardware cache-miss counter can be read here; the reason when not.
std::string hardware_counter_missing() {
  perf_event_attr attr{};
  attr.size = sizeof attr;
  attr.type = PERF_TYPE_HARDWARE;
  attr.config = PERF_COUNT_HW_CACHE_MISSES;
  attr.exclude_kernel = 1;
  const int fd = int(syscall(SYS_perf_event_open, &attr, 0, -1, -1, 0));
  if (fd >= 0) {
    ::close(fd);
    return "";
  }
  return std::strerror(errno);
}

status plot_profile(const hera::profile_table& t, const std::string& png) {
  const std::string data = png + ".csv";
  {
    std::ofstream out(data);
    if (!out) return make_error(errc::io_error, "--plot {}: cannot write {}", png, data);
    for (const auto& [name, m] : t.models) {
      for (int w = 1; w <= m.max_workers(); ++w) out << w << ',' << m.at(w, m.ways()) << '\n';
      out << "\n\n";
    }
  }
  std::string plot = "plot ";
  int i = 0;
  for (const auto& [name, m] : t.models)
    plot += fmt::format("{}data index {} u 1:2 w lp lw 2 pt 7 t '{}'", i ? ", " : "", i, name), ++i;
  const std::string script =
      "set terminal png size 900,550\nset output out\nset datafile separator ','\n"
      "set xlabel 'workers'\nset ylabel 'max QPS meeting the SLA'\nset grid\nset key left top\n"
      "set title 'spindle profile: worker scalability (Hera Fig. 6)'\n" +
      plot + "\n";
  return run_gnuplot(script, png, {{"data", data}});
}

status run_profile(const profile_args& a) {
  const int cores = int(std::max(1u, std::thread::hardware_concurrency()));
  const int max_workers = a.workers > 0 ? a.workers : 2 * cores;
  hera::profile_table t;
  t.machine.cores = cores;
  t.machine.llc_ways = 1;
  if (!std::filesystem::exists("/sys/fs/resctrl/schemata"))
    log::info("profile: no resctrl (Intel CAT / AMD L3 QoS) here: one LLC-way column");
  t.machine.mem_bw_gbps = copy_bandwidth_gbps();
  const std::string no_counter = hardware_counter_missing();
  if (!no_counter.empty())
    log::info(
        "profile: no hardware cache-miss counter ({}): memory bandwidth = embedding bytes "
        "gathered per query x QPS",
        no_counter);
  for (const auto& item : a.models) {
    const auto eq = item.find('=');
    const std::string name = eq == std::string::npos
                                 ? std::filesystem::path(item).filename().string()
                                 : item.substr(0, eq);
    const std::string dir = eq == std::string::npos ? item : item.substr(eq + 1);
    SPINDLE_ASSIGN_OR_RETURN(auto q, make_queries(dir, a));
    hera::model_profile p;
    p.sla_ms = a.sla_ms > 0 ? a.sla_ms : q->model->desc().slo_ms > 0 ? q->model->desc().slo_ms : 20;
    p.percentile = a.percentile;
    p.mem_bw_source =
        no_counter.empty() ? "bytes x qps (counter present, not yet used)" : "bytes x qps";
    auto query = [&q] { q->run(); };
    for (int w = 1; w <= max_workers; ++w) {
      serving::worker_pool pool(std::size_t(w), "profile-w");
      const double upper = 1.2 * hera::closed_loop_qps(query, w, a.seconds / 2);
      std::uint64_t seed = 1;
      const double best = hera::max_qps_meeting_sla(
          [&](double rate) {
            return hera::run_poisson(pool, query, rate, a.seconds, a.percentile, seed++);
          },
          p.sla_ms, upper, a.steps);
      p.qps.push_back({best});
      p.mem_bw_gbps.push_back(best * q->bytes_per_query / 1e9);
      fmt::print(stderr, "profile {}: {} workers: {:.0f} QPS at p{:g} <= {:g} ms\n", name, w, best,
                 a.percentile * 100, p.sla_ms);
    }
    t.models[name] = std::move(p);
  }
  SPINDLE_TRY(hera::validate(t, a.out));
  {
    std::ofstream out(a.out);
    if (!(out << hera::to_json(t) << '\n'))
      return make_error(errc::io_error, "--out {}: cannot write", a.out);
  }
  fmt::print("{} cores, memory copy {:.1f} GB/s, {} LLC-way column(s); SLA tail p{:g}\n", cores,
             t.machine.mem_bw_gbps, t.machine.llc_ways, a.percentile * 100);
  fmt::print("{:<14} {:>7} {:>10} {:>10} {:>12}\n", "model", "workers", "max QPS", "GB/s",
             "scalability");
  for (const auto& [name, m] : t.models)
    for (int w = 1; w <= m.max_workers(); ++w)
      fmt::print("{:<14} {:>7} {:>10.0f} {:>10.3f} {:>12}\n", w == 1 ? name : "", w, m.at(w, 1),
                 m.mem_bw_gbps[std::size_t(w - 1)],
                 w == 1 ? hera::to_string(hera::worker_scalability(m, cores)) : "");
  fmt::print("profile table written to {}\n", a.out);
  if (!a.plot.empty()) SPINDLE_TRY(plot_profile(t, a.plot));
  return status::ok();
}

}  // namespace

void register_profile(CLI::App& app, global_options&) {
  auto [cmd, a] = add_command<profile_args>(
      app, "profile",
      "Hera's profile of recommendation models: max QPS meeting the SLA for 1..W workers, "
      "memory bandwidth and worker scalability, as a table the colocate planner reads");
  cmd->add_option("--model", a->models, "NAME=MODEL_DIR of a recommendation model (repeat)")
      ->required();
  add_bounded(*cmd, "--workers", a->workers, "Profile 1..W workers (0: 2 x the cores)", 0, 1024);
  add_bounded(*cmd, "--batch", a->batch, "Samples per query", 1, 65536);
  add_bounded(*cmd, "--lookups", a->lookups, "Keys per table per sample", 1, 4096);
  cmd->add_option("--sla-ms", a->sla_ms, "SLA (0: model.toml's slo_ms, else 20 ms)")
      ->check(CLI::Range(0.0, 600000.0));
  add_bounded(*cmd, "--percentile", a->percentile, "Tail the SLA is on (0.95 or 0.99)", 0.5,
              0.9999);
  add_bounded(*cmd, "--seconds", a->seconds, "Seconds of Poisson load per measured rate", 0.05,
              600.0);
  add_bounded(*cmd, "--steps", a->steps, "Bisection steps of the max-QPS search", 1, 30);
  cmd->add_option("--out", a->out, "Profile table (JSON)")->capture_default_str();
  cmd->add_option("--plot", a->plot, "PNG of max QPS against workers (Hera Fig. 6)");
  on_run(cmd, [a] { return run_profile(*a); });
}

}  // namespace spindle::apps
