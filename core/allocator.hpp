// Which malloc this process runs on. Spindle's programs link jemalloc (CMake
// option SPINDLE_MALLOC, docs/architecture.md says why); this piece asks the
// running process which library its `malloc` resolves to, rather than trusting
// the build, so `spindle devices` and the tests see what a server really got
// (an LD_PRELOADed allocator included), and memory is handed back to that one.
#pragma once

#include <string>

namespace spindle {

/// "jemalloc <version>" or "glibc <version>" by the library that serves this
/// process's malloc; another allocator by its library's file name (for
/// example "libtcmalloc_minimal.so.4").
std::string allocator_in_use();

/// Hands the heap's freed memory back to the system through the malloc in use:
/// jemalloc purges every arena's unused pages, glibc trims (malloc_trim).
/// False, doing nothing, under another allocator or when jemalloc refused the
/// purge. Costs milliseconds: for after a flood, not for a call's path.
bool return_free_heap_memory();

}  // namespace spindle
