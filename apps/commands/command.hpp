// Shared pieces of the `spindle` subcommands: registration signature, the
// process-wide options (threads, log level) and error reporting to stderr.
#pragma once

#include <CLI/CLI.hpp>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "core/percentile.hpp"
#include "core/status.hpp"
#include "core/thread_pool.hpp"

namespace spindle::apps {

/// The command line the process started with (main sets it): a cluster member
/// re-executes itself with it to rejoin a restarted coordinator.
void set_process_argv(int argc, char** argv);
const std::vector<std::string>& process_argv();

struct global_options {
  int threads = 0;  // 0: one participant per available core
  std::string log_level = "info";
  /// The process's one worker pool, created on first use (workers = threads - 1,
  /// since the calling thread joins every parallel_for).
  thread_pool& pool();

 private:
  std::unique_ptr<thread_pool> pool_;
};

/// Prints "spindle: error: <message>" to stderr and returns exit code 1 (0 when ok).
int report(const status& s);

/// Makes `run` (returning a status) `cmd`'s action: a failure is reported and
/// becomes the process's exit code.
template <class Run>
void on_run(CLI::App* cmd, Run run) {
  cmd->callback([run = std::move(run)] {
    if (int rc = report(run())) throw CLI::RuntimeError(rc);
  });
}

/// Adds subcommand `name` to `parent` with the arguments its flags fill; the
/// arguments are shared so that the subcommand's action can read them later.
template <class Args>
std::pair<CLI::App*, std::shared_ptr<Args>> add_command(CLI::App& parent, std::string name,
                                                        std::string description) {
  return {parent.add_subcommand(std::move(name), std::move(description)), std::make_shared<Args>()};
}

/// An option checked to lie in [min, max], its default shown in --help.
template <class T, class Bound>
CLI::Option* add_bounded(CLI::App& cmd, std::string name, T& value, std::string description,
                         Bound min, Bound max) {
  return cmd.add_option(std::move(name), value, std::move(description))
      ->check(CLI::Range(min, max))
      ->capture_default_str();
}

void register_generate(CLI::App& app, global_options& g);
void register_prepare(CLI::App& app, global_options& g);
void register_info(CLI::App& app, global_options& g);
void register_compact(CLI::App& app, global_options& g);
void register_sample(CLI::App& app, global_options& g);
void register_devices(CLI::App& app, global_options& g);
void register_place(CLI::App& app, global_options& g);
void register_partition(CLI::App& app, global_options& g);
void register_serve_shard(CLI::App& app, global_options& g);
void register_model(CLI::App& app, global_options& g);
/// `spindle model verify` (model_verify.cpp); registered by register_model.
void register_model_verify(CLI::App& model_cmd, global_options& g);
void register_calibrate(CLI::App& app, global_options& g);
void register_serve(CLI::App& app, global_options& g);
void register_cluster(CLI::App& app, global_options& g);
/// `spindle launch` (launch.cpp); registered by register_cluster.
void register_launch(CLI::App& app);
/// `spindle cluster-status` and `spindle cluster-leave` (cluster_status.cpp);
/// registered by register_cluster.
void register_cluster_status(CLI::App& app);
void register_hps(CLI::App& app, global_options& g);
void register_serve_dlrm(CLI::App& app, global_options& g);
void register_client(CLI::App& app, global_options& g);
void register_shell(CLI::App& app, global_options& g);
void register_colocate(CLI::App& app, global_options& g);
void register_profile(CLI::App& app, global_options& g);

}  // namespace spindle::apps
