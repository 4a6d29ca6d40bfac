// `spindle info`: the summary of a dataset directory (table or JSON).
#include "apps/commands/command.hpp"
#include "apps/commands/metrics_flags.hpp"
#include "core/progress.hpp"

namespace spindle::apps {

void register_info(CLI::App& app, global_options&) {
  auto* cmd =
      app.add_subcommand("info",
                         "Validate a dataset directory and print its summary: sizes, degree "
                         "percentiles, PSGS p50/p99/max, FAP concentration");
  struct args {
    std::string dir;
    bool json = false, verify = false;
  };
  auto a = std::make_shared<args>();
  cmd->add_option("dir", a->dir, "Dataset directory")->required();
  cmd->add_flag("--json", a->json, "Print one JSON object (for scripts)");
  cmd->add_flag("--verify", a->verify, "Also verify every array's checksum (reads all bytes)");
  on_run(cmd, [a] {
    if (a->json) set_progress_enabled(false);
    return print_summary(a->dir, a->json, a->verify);
  });
}

}  // namespace spindle::apps
