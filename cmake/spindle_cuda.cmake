# CUDA detection: build the gpu/ CUDA backend when /usr/local/cuda's nvcc (or
# SPINDLE_CUDA=ON with another nvcc) is present. SPINDLE_CUDA=OFF forces the
# host-only build; both paths configure, build and pass the tests.

set(SPINDLE_CUDA "AUTO" CACHE STRING "Build the CUDA backend: AUTO, ON or OFF")
set(SPINDLE_WITH_CUDA OFF)
if(NOT SPINDLE_CUDA STREQUAL "OFF")
  if(NOT CMAKE_CUDA_COMPILER AND EXISTS /usr/local/cuda/bin/nvcc)
    set(CMAKE_CUDA_COMPILER /usr/local/cuda/bin/nvcc)
  endif()
  include(CheckLanguage)
  check_language(CUDA)
  if(CMAKE_CUDA_COMPILER)
    if(NOT DEFINED CMAKE_CUDA_ARCHITECTURES)
      # No GPU to ask ("native" fails without a driver): A100 and H100 SASS.
      set(CMAKE_CUDA_ARCHITECTURES 80 90)
    endif()
    set(CMAKE_CUDA_STANDARD 17)
    set(CMAKE_CUDA_STANDARD_REQUIRED ON)
    enable_language(CUDA)
    find_package(CUDAToolkit REQUIRED)
    set(SPINDLE_WITH_CUDA ON)
  elseif(SPINDLE_CUDA STREQUAL "ON")
    message(FATAL_ERROR "SPINDLE_CUDA=ON but no CUDA compiler was found")
  endif()
endif()
message(STATUS "spindle: CUDA backend ${SPINDLE_WITH_CUDA}")
