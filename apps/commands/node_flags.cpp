#include "apps/commands/node_flags.hpp"

#include "apps/commands/command.hpp"
#include "colocation/gnnsched.hpp"

namespace spindle::apps {

// Each rank says how many pipelines it runs when ready (the coordinator keeps a
// stand-in per pipeline); `launch` passes these to all.
void add_pipeline_options(CLI::App& cmd, runtime::node_pipelines& p) {
  add_bounded(cmd, "--pipelines", p.pipelines,
              "Pipelines on this node, sharing its pool (ranks of a cluster may run different "
              "numbers: rank 0's queue feeds each rank's own)",
              1, 64);
  add_bounded(cmd, "--max-batch", p.batch.max_batch,
              "Requests per batch at this node's door (live: tunable max_batch)", 1, 65536);
  cmd.add_option_function<int>(
         "--split-min", [&p](int n) { p.batch.split_min = std::size_t(n); },
         "A batch closing while two or more of the queue's pipelines are idle is dealt out to "
         "them, parts of at least this many calls (0: never split; live: tunable split_min; "
         "default 16)")
      ->check(CLI::Range(0, 65536));
  cmd.add_option_function<int>(
         "--batch-deadline-us", [&p](int us) { p.batch.deadline = std::chrono::microseconds(us); },
         "How long a batch waits to fill at this node's door (live: tunable batch_deadline_us; "
         "default 2000)")
      ->check(CLI::Range(0, 10'000'000));
  cmd.add_option_function<std::string>(
         "--gnnsched",
         [&p](const std::string& v) {
           auto g = colocation::parse_grouping_policy(v);
           if (!g) throw CLI::ValidationError("--gnnsched", g.error().message());
           p.gnnsched = *g;
         },
         "GNNSched on this node: its pipelines' forward passes grouped by this policy on one "
         "shared pool: fifo | sqtf | bqt (live: tunable gnnsched_policy)");
  cmd.add_option_function<std::size_t>(
         "--gnnsched-memory-mb", [&p](std::size_t mb) { p.gnnsched_bytes = mb << 20; },
         "With --gnnsched: the memory pool the groups share (default 256)")
      ->check(CLI::Range(1, 1 << 20));
  cmd.add_flag("--calibrate", p.calibrate,
               "Time PSGS routing at start over the cluster's shards (other ranks' rows read as "
               "served) and route this node's door by it, instead of a one-process --calibration");
  add_bounded(cmd, "--calibrate-batches", p.calibrate_batches,
              "With --calibrate: batches per executor", 1, 100000);
  cmd.add_option("--calibration-out", p.calibration_out,
                 "With --calibrate: also write the calibration there (`--calibration` reads it)");
}

}  // namespace spindle::apps
