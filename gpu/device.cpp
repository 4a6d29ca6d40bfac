#include "gpu/device.hpp"

#include <unistd.h>

#include <fstream>
#include <mutex>

#include "core/log.hpp"
#include "gpu/detail/cuda_query.hpp"

namespace spindle::gpu {
namespace {

std::string cpu_model() {
  std::ifstream in("/proc/cpuinfo");
  std::string line;
  while (std::getline(in, line))
    if (line.rfind("model name", 0) == 0) return line.substr(line.find(':') + 2);
  return "host CPU";
}

device_report build_report() {
  device_report r;
  r.cuda_built = detail::cuda_backend_built();
  auto cuda = detail::query_cuda_devices(r.cuda_status);
  if (!cuda.empty()) {
    r.devices = std::move(cuda);
    return r;
  }
  r.devices.push_back(host_device());
  log::info("no CUDA device, using host ({})", r.cuda_status);
  return r;
}

}  // namespace

std::string_view to_string(device_kind k) { return k == device_kind::cuda ? "cuda" : "host"; }

device_info host_device() {
  device_info d;
  d.kind = device_kind::host;
  d.name = cpu_model();
  long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGE_SIZE);
  d.memory_bytes = pages > 0 && page > 0
                       ? static_cast<std::uint64_t>(pages) * static_cast<std::uint64_t>(page)
                       : 0;
  return d;
}

const device_report& query_devices() {
  static const device_report report = build_report();  // thread-safe init, logged once
  return report;
}

expected<device_kind> resolve_device(std::string_view flag) {
  const auto& r = query_devices();
  const bool cuda = !r.devices.empty() && r.devices.front().kind == device_kind::cuda;
  if (flag == "host") return device_kind::host;
  if (flag == "auto") return cuda ? device_kind::cuda : device_kind::host;
  if (flag == "cuda") {
    if (cuda) return device_kind::cuda;
    return make_error(errc::unavailable, "--device cuda: {}", r.cuda_status);
  }
  return make_error(errc::invalid_argument, "--device '{}': expected auto, host or cuda", flag);
}

}  // namespace spindle::gpu
