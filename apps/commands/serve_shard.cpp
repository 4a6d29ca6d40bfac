// `spindle serve-shard`: holds one feature shard in UCX-allocated memory and
// serves one-sided gets until SIGINT/SIGTERM. Prints "descriptor <hex>" (what a
// reader attaches with) and "ready" on stdout. A cluster rank publishes its shard
// the same way (runtime/rank_shard); this command is the data plane alone, for tests,
// benchmarks and debugging.
#include <signal.h>

#include <cstdio>
#include <optional>

#include "apps/commands/command.hpp"
#include "core/log.hpp"
#include "core/npy.hpp"
#include "core/signals.hpp"
#include "features/dataset_placement.hpp"
#include "features/feature_shard.hpp"
#include "runtime/graph_updates.hpp"
#include "transport/ucx/net_devices.hpp"
#include "transport/ucx/progress_loop.hpp"

namespace spindle::apps {
namespace {

struct shard_args {
  std::string dir, topology, policy = "fap", rows_file;
  std::string host = "127.0.0.1";  // the interface UCX may listen on
  int shard = -1;
  bool no_progress = false;
};

expected<std::vector<std::uint64_t>> rows_to_serve(const shard_args& a, const graph::dataset& ds) {
  if (!a.rows_file.empty()) {
    SPINDLE_ASSIGN_OR_RETURN(auto arr, npy_array::open(a.rows_file));
    auto ids = arr.as<std::int64_t>();
    if (!ids || arr.shape().size() != 1)
      return make_error(errc::invalid_argument, "{}: expected a 1-D int64 array of node ids",
                        a.rows_file);
    return std::vector<std::uint64_t>(ids->begin(), ids->end());
  }
  if (a.topology.empty() || a.shard < 0)
    return make_error(errc::invalid_argument,
                      "serve-shard: give --rows FILE, or --topology and --shard");
  SPINDLE_ASSIGN_OR_RETURN(auto topo, config::load_topology(a.topology));
  SPINDLE_ASSIGN_OR_RETURN(auto plan, features::place_dataset(ds, topo, a.policy));
  if (std::size_t(a.shard) >= plan.shards.size())
    return make_error(errc::invalid_argument, "--shard {}: the plan has {} shards", a.shard,
                      plan.shards.size());
  return plan.lookup.shard_rows(features::shard_index(a.shard));
}

// Blocks SIGINT/SIGTERM in every thread (before any is started) and waits for one.
int wait_for_stop_signal(sigset_t& set) {
  int sig = 0;
  sigwait(&set, &sig);
  return sig;
}

status run_serve_shard(const shard_args& a) {
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGINT);
  sigaddset(&set, SIGTERM);
  wait_for_signals_here(set);
  SPINDLE_ASSIGN_OR_RETURN(auto ds, graph::dataset::open(a.dir));
  SPINDLE_TRY(runtime::refuse_unapplied_updates(ds, "feature shards"));
  if (ds.features().empty())
    return make_error(errc::invalid_argument, "{}: dataset has no features", a.dir);
  SPINDLE_ASSIGN_OR_RETURN(auto rows, rows_to_serve(a, ds));
  if (rows.empty())
    return make_error(errc::invalid_argument, "serve-shard: the shard holds no rows");
  const auto dim = std::uint32_t(ds.feature_dim());
  SPINDLE_TRY(transport::ucx::restrict_to_host(a.host));
  SPINDLE_ASSIGN_OR_RETURN(auto ctx, transport::ucx::context::create());
  SPINDLE_ASSIGN_OR_RETURN(auto worker, transport::ucx::worker::create(ctx));
  SPINDLE_ASSIGN_OR_RETURN(auto mem, transport::ucx::mapped_memory::allocate(
                                         ctx, features::shard_bytes(rows.size(), dim)));
  SPINDLE_TRY(features::fill_rows(rows, ds.features(), dim, {mem.data(), mem.size()}));
  SPINDLE_ASSIGN_OR_RETURN(auto desc, transport::ucx::describe(worker, mem));
  fmt::print("rows {}\ndescriptor {}\nready\n", rows.size(), desc.encode());
  std::fflush(stdout);
  // Emulated gets (tcp) need the owner's worker; --no-progress leaves it idle
  // (shared-memory gets still complete: that is what it demonstrates).
  std::optional<transport::ucx::progress_loop> loop;
  if (!a.no_progress) loop.emplace(worker);
  int sig = wait_for_stop_signal(set);
  log::info("serve-shard: stopping on signal {}", sig);
  return status::ok();
}

}  // namespace

void register_serve_shard(CLI::App& app, global_options&) {
  auto [cmd, a] =
      add_command<shard_args>(app, "serve-shard",
                              "Hold one feature shard in UCX memory and serve one-sided gets until "
                              "SIGINT/SIGTERM; prints the descriptor readers attach with");
  cmd->add_option("dataset", a->dir, "Prepared dataset directory (with features)")->required();
  cmd->add_option("--topology", a->topology,
                  "Topology TOML; with --shard, serve that shard of the plan");
  cmd->add_option("--policy", a->policy, "Placement policy for --topology")->capture_default_str();
  cmd->add_option("--shard", a->shard, "Shard index in the plan (see `spindle place`)");
  cmd->add_option("--host", a->host,
                  "Address whose interface UCX may listen on (0.0.0.0: every interface)")
      ->capture_default_str();
  cmd->add_option("--rows", a->rows_file,
                  "Serve exactly these node ids (1-D int64 .npy), in order");
  cmd->add_flag("--no-progress", a->no_progress,
                "Never progress the UCX worker (shows shared-memory gets are one-sided)");
  on_run(cmd, [a] { return run_serve_shard(*a); });
}

}  // namespace spindle::apps
