// `spindle devices`: which devices this process will compute on.
#include <fmt/format.h>

#include "apps/commands/command.hpp"
#include "gpu/device.hpp"

namespace spindle::apps {

void register_devices(CLI::App& app, global_options&) {
  auto* cmd = app.add_subcommand(
      "devices", "List compute devices (CUDA devices, or the host when none answers)");
  cmd->callback([] {
    const auto& r = gpu::query_devices();
    fmt::print("CUDA backend: {} ({})\n", r.cuda_built ? "built" : "not built", r.cuda_status);
    for (const auto& d : r.devices)
      fmt::print("  {}:{} {} ({:.1f} GiB)\n", gpu::to_string(d.kind), d.index, d.name,
                 static_cast<double>(d.memory_bytes) / (1u << 30));
  });
}

}  // namespace spindle::apps
