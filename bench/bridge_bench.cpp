// The cost of one batch message and its result between two actor systems
// (docs/architecture.md "Planes"): through the UCX bridge (active messages, CAF's binary
// serializer) versus CAF's middleman (BASP over loopback TCP), with an
// in-process CAF request as the same-run baseline (actors/bridge_probe). The
// payload is a batch of `batch` single-seed requests and a reply of `batch` x
// `out` floats, as a batcher sends to a pipeline in another process.
//   bridge_bench [iterations=20000] [batch=16] [out=7]
#include <cstdio>
#include <string>

#include "actors/bridge_probe.hpp"

int main(int argc, char** argv) {
  const int iterations = argc > 1 ? std::stoi(argv[1]) : 20000;
  const int batch = argc > 2 ? std::stoi(argv[2]) : 16;
  const int out = argc > 3 ? std::stoi(argv[3]) : 7;
  auto r = spindle::actors::probe_bridge(iterations, batch, out);
  if (!r) return std::fprintf(stderr, "%s\n", r.error().to_string().c_str()), 1;
  std::printf("batch of %d requests, reply %d x %d floats\n", batch, batch, out);
  std::printf("%-34s %8s %8s %9s %14s %8s\n", "path", "p50 us", "p99 us", "1-at-a-time",
              "16 in flight/s", "vs CAF");
  auto row = [&](const char* name, const spindle::actors::round_trip& f) {
    std::printf("%-34s %8.1f %8.1f %9.0f %14.0f %7.2fx\n", name, f.p50_us, f.p99_us, f.per_s,
                f.in_flight_per_s, f.in_flight_per_s / r->middleman.in_flight_per_s);
  };
  row("in-process CAF request (baseline)", r->in_process);
  row("UCX bridge (active messages)", r->bridge);
  row("CAF middleman (BASP over TCP)", r->middleman);
  return 0;
}
