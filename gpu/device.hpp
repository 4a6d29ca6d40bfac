// Runtime device detection: the CUDA devices a driver answers for, or the host
// device when there is none (logged once, with the reason). Thread-safe; the
// query runs once per process and is cached.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.hpp"

namespace spindle::gpu {

enum class device_kind { host, cuda };
std::string_view to_string(device_kind k);

struct device_info {
  device_kind kind = device_kind::host;
  int index = 0;
  std::string name;
  std::uint64_t memory_bytes = 0;
};

struct device_report {
  bool cuda_built = false;           // this binary has the CUDA backend
  std::string cuda_status;           // "2 CUDA devices", or why none is usable
  std::vector<device_info> devices;  // CUDA devices, or the single host device
};

/// The usable devices; logs "no CUDA device, using host (<reason>)" once.
const device_report& query_devices();

/// `--device` as a user gives it: host, cuda (errors naming why there is no
/// usable CUDA device) or auto (cuda when one is usable, else host).
expected<device_kind> resolve_device(std::string_view flag);

/// The host device: CPU model name and physical memory.
device_info host_device();

}  // namespace spindle::gpu
