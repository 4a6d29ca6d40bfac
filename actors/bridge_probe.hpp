// The measurement behind bench/bridge_bench: two actor systems in this process,
// each with its UCX bridge and CAF's middleman, and an echo target that answers a
// batch of `batch` requests with `batch` x `out` floats. Round trips go one at a
// time (latency) and 16 in flight (throughput) through the bridge, through the
// middleman, and as an in-process request (the same-run baseline).
#pragma once

#include "core/status.hpp"

namespace spindle::actors {

struct round_trip {
  double p50_us = 0, p99_us = 0;
  double per_s = 0;            // one round trip at a time
  double in_flight_per_s = 0;  // 16 in flight
};

struct bridge_probe_result {
  round_trip in_process, bridge, middleman;
};

expected<bridge_probe_result> probe_bridge(int iterations, int batch, int out);

}  // namespace spindle::actors
