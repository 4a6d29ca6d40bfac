// The `spindle` command: one binary, one subcommand per task (generate,
// prepare, info, sample, devices; serving commands arrive with later modules).
#include <fmt/format.h>
#include <sys/resource.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <array>
#include <cctype>
#include <string_view>

#include "apps/commands/cli_errors.hpp"
#include "apps/commands/command.hpp"
#include "core/log.hpp"
#include "core/blas_kernels.hpp"
#include "nn/ops.hpp"

namespace {

// Every door holds a descriptor per connection, and a door whose accept fails
// with EMFILE stops serving until descriptors are free: take the hard limit
// (the soft one is often 1,024), so a flood on one door leaves room for the others.
void raise_descriptor_limit() {
  rlimit r{};
  if (::getrlimit(RLIMIT_NOFILE, &r) == 0 && r.rlim_cur < r.rlim_max) {
    r.rlim_cur = r.rlim_max;
    ::setrlimit(RLIMIT_NOFILE, &r);
  }
}

// Whether the subcommand runs models (and so the BLAS kernels matter): those
// restart once where OpenBLAS took the CPU for an older core; the tools that
// never multiply a matrix start once. A subcommand named in neither list
// (a new one) restarts: slower to start is better than a fifth of the GEMM rate.
bool runs_models(int argc, char** argv) {
  static constexpr std::array<std::string_view, 14> tools = {
      "generate", "prepare", "info",          "compact",       "sample", "place",    "partition",
      "serve-shard", "client", "cluster-status", "cluster-leave", "hps", "shell", "colocate"};
  for (int i = 1; i < argc; ++i) {
    const std::string_view a = argv[i];
    if (a == "--version" || a == "--help" || a == "-h") return false;
    if (a == "--log-level" || a == "--threads") {  // the global options' values
      ++i;
      continue;
    }
    if (std::find(tools.begin(), tools.end(), a) != tools.end()) return false;
    if (!a.empty() && a[0] != '-' && std::isalpha(static_cast<unsigned char>(a[0]))) return true;
  }
  return false;  // no subcommand: help or an error
}

}  // namespace

int main(int argc, char** argv) {
  using namespace spindle;
  if (runs_models(argc, argv)) ensure_blas_kernels(argv);  // may restart once, so first
  raise_descriptor_limit();
  // Spindle owns its threads: OpenBLAS runs single-threaded inside each
  // pipeline or pool thread (its own spinning threads would fight ours).
  nn::set_blas_threads(1);
  apps::set_process_argv(argc, argv);
  CLI::App app{
      "Spindle: low-latency serving for graph neural networks and embedding-heavy models.\n"
      "Datasets are directories of .npy arrays plus metadata.json (see README)."};
  app.set_version_flag("--version", "spindle " SPINDLE_VERSION);
  app.require_subcommand(1);
  apps::global_options g;
  app.add_option("--threads", g.threads,
                 "Worker threads including the caller (default: one per core)")
      ->check(CLI::Range(0, 4096));
  app.add_option("--log-level", g.log_level, "debug, info, warn, error or off")
      ->check(CLI::IsMember({"debug", "info", "warn", "error", "off"}));
  app.parse_complete_callback([&] {
    log::level l;
    if (log::parse_level(g.log_level, l)) log::set_level(l);
  });
  apps::register_generate(app, g);
  apps::register_prepare(app, g);
  apps::register_info(app, g);
  apps::register_compact(app, g);
  apps::register_sample(app, g);
  apps::register_devices(app, g);
  apps::register_place(app, g);
  apps::register_partition(app, g);
  apps::register_serve_shard(app, g);
  apps::register_model(app, g);
  apps::register_calibrate(app, g);
  apps::register_serve(app, g);
  apps::register_cluster(app, g);
  apps::register_hps(app, g);
  apps::register_serve_dlrm(app, g);
  apps::register_client(app, g);
  apps::register_shell(app, g);
  apps::register_colocate(app, g);
  apps::register_profile(app, g);
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::Success& e) {  // --version
    return app.exit(e);
  } catch (const CLI::RuntimeError& e) {  // a command's own failure, already reported
    return e.get_exit_code();
  } catch (const CLI::ParseError& e) {
    fmt::print(stderr, "spindle: error: {}\n", apps::describe_parse_error(app, e, argc, argv));
    return 1;
  }
  return 0;
}
