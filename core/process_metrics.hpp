// The standard Prometheus process_* series for this process (CPU seconds,
// resident and virtual memory, open and allowed descriptors, start time), read
// from /proc, in the text exposition format, so a scrape of any Spindle server
// shows what it costs the machine next to what it serves.
#pragma once

#include <string>

namespace spindle {

/// `# HELP` / `# TYPE` lines and one sample per series; empty where /proc is absent.
std::string process_metrics_text();

}  // namespace spindle
