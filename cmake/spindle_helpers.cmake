# Helpers every folder's CMakeLists.txt uses, so modules are declared alike.

# Public graphs the tests and benchmarks read when present (Cora, CiteSeer, ...):
# the folder the environment variable SPINDLE_TEST_DATA_DIR names when the build
# is configured (or -DSPINDLE_TEST_DATA_DIR=...). The repository names no folder
# outside itself: without one, the tests that need real graphs skip, saying so,
# and the product never reads it.
set(SPINDLE_TEST_DATA_DIR "$ENV{SPINDLE_TEST_DATA_DIR}" CACHE PATH
    "Folder of public graphs for tests and benchmarks (optional)")

# -Wno-subobject-linkage: in a unity build a file's pimpl struct holding types of
# its anonymous namespace is no longer in the "main file", which GCC then warns
# about though each such struct is still defined in exactly one unit.
set(SPINDLE_WARNINGS -Wall -Wextra -Wpedantic -Wno-missing-field-initializers
    $<$<CXX_COMPILER_ID:GNU>:-Wno-subobject-linkage>)

# The malloc Spindle's programs (the spindle binary and the benchmarks) link:
# "jemalloc" (Debian's libjemalloc-dev, the default) or "glibc". A served call
# makes about a hundred small allocations on the door's thread alone (Cap'n
# Proto's promises and RPC tables), and a burst of calls outlives glibc's
# per-thread cache of 7 blocks a size; jemalloc's thread caches cut the server's
# CPU per GNN call by a tenth (docs/architecture.md). Libraries and test
# binaries keep the C library's malloc.
set(SPINDLE_MALLOC jemalloc CACHE STRING "malloc of Spindle's programs: jemalloc or glibc")
set_property(CACHE SPINDLE_MALLOC PROPERTY STRINGS jemalloc glibc)
if(SPINDLE_MALLOC STREQUAL "jemalloc")
  find_library(SPINDLE_JEMALLOC_LIB jemalloc)
  if(NOT SPINDLE_JEMALLOC_LIB)
    message(FATAL_ERROR "SPINDLE_MALLOC=jemalloc, but no libjemalloc was found: install "
                        "libjemalloc-dev (make deps does) or configure with -DSPINDLE_MALLOC=glibc")
  endif()
elseif(NOT SPINDLE_MALLOC STREQUAL "glibc")
  message(FATAL_ERROR "SPINDLE_MALLOC=${SPINDLE_MALLOC}: expected jemalloc or glibc")
endif()

# spindle_link_malloc(TARGET): an executable gets the malloc SPINDLE_MALLOC names.
function(spindle_link_malloc target)
  if(SPINDLE_MALLOC STREQUAL "jemalloc")
    target_link_libraries(${target} PRIVATE ${SPINDLE_JEMALLOC_LIB})
  endif()
endfunction()

# spindle_module(NAME SOURCES ... DEPS ...): static library spindle_<NAME>,
# include root at the repository top so headers read "core/status.hpp".
function(spindle_module name)
  cmake_parse_arguments(ARG "" "" "SOURCES;DEPS" ${ARGN})
  add_library(spindle_${name} STATIC ${ARG_SOURCES})
  target_include_directories(spindle_${name} PUBLIC ${PROJECT_SOURCE_DIR})
  target_compile_options(spindle_${name} PRIVATE
    $<$<COMPILE_LANGUAGE:CXX>:${SPINDLE_WARNINGS}>)
  target_link_libraries(spindle_${name} PUBLIC ${ARG_DEPS})
endfunction()

# spindle_test(NAME LABEL SOURCES ... DEPS ...): one gtest binary per module,
# registered with ctest under LABEL (unit or integration).
function(spindle_test name)
  cmake_parse_arguments(ARG "" "LABEL;TIMEOUT" "SOURCES;DEPS" ${ARGN})
  add_executable(${name} ${ARG_SOURCES})
  target_compile_options(${name} PRIVATE ${SPINDLE_WARNINGS})
  target_link_libraries(${name} PRIVATE ${ARG_DEPS} GTest::gtest spindle_test_main)
  # A test binary's files compile as a few combined units (gtest, CAF and
  # CLI11 code generated once per unit): a clean build is minutes shorter.
  set_target_properties(${name} PROPERTIES UNITY_BUILD ON UNITY_BUILD_BATCH_SIZE 8)
  target_compile_definitions(${name} PRIVATE
    SPINDLE_SOURCE_DIR="${PROJECT_SOURCE_DIR}"
    SPINDLE_SHARED_DATA_DIR="${SPINDLE_TEST_DATA_DIR}"
    SPINDLE_BINARY="$<TARGET_FILE:spindle>")
  if(NOT ARG_TIMEOUT)
    set(ARG_TIMEOUT 300)
  endif()
  add_test(NAME ${name} COMMAND ${name})
  # Cluster tokens without a token_file go to the state folder: the build's, not ~.
  set_tests_properties(${name} PROPERTIES LABELS ${ARG_LABEL} TIMEOUT ${ARG_TIMEOUT}
                       ENVIRONMENT "SPINDLE_STATE_DIR=${PROJECT_BINARY_DIR}/test-state")
endfunction()

# spindle_bench(NAME SOURCES ... DEPS ...): a benchmark binary run by `make bench`.
function(spindle_bench name)
  cmake_parse_arguments(ARG "" "" "SOURCES;DEPS" ${ARGN})
  add_executable(${name} ${ARG_SOURCES})
  target_compile_options(${name} PRIVATE ${SPINDLE_WARNINGS})
  target_link_libraries(${name} PRIVATE ${ARG_DEPS})
  spindle_link_malloc(${name})
endfunction()
