// Which malloc this process runs on. Spindle's programs link jemalloc (CMake
// option SPINDLE_MALLOC, docs/architecture.md says why); this piece asks the
// running process rather than trusting the build, so `spindle devices` and the
// tests see what a user's server really got.
#pragma once

#include <string>

namespace spindle {

/// "jemalloc <version>" when jemalloc serves this process's malloc (found by
/// its `mallctl` entry point at run time), else "glibc <version>".
std::string allocator_in_use();

/// Hands the heap's freed memory back to the system, whichever malloc runs:
/// jemalloc purges every arena's unused pages, glibc trims (malloc_trim).
/// Costs milliseconds: for after a flood, not for a call's path.
void return_free_heap_memory();

}  // namespace spindle
