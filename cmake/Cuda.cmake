# CUDA backend setup (included by the top-level CMakeLists.txt when BRISK_CUDA=ON).
# CMake 3.25 does not know nvcc's C++20 flag, so it is spelled out before asking for the standard.
set(CMAKE_CUDA20_STANDARD_COMPILE_OPTION "-std=c++20")
set(CMAKE_CUDA20_EXTENSION_COMPILE_OPTION "-std=c++20")
if(NOT DEFINED CMAKE_CUDA_ARCHITECTURES)
  set(CMAKE_CUDA_ARCHITECTURES 90a)  # Hopper; wgmma and setmaxnreg need the "a" target
endif()
enable_language(CUDA)
set(CMAKE_CUDA_STANDARD 20)
set(CMAKE_CUDA_STANDARD_REQUIRED ON)
set(CMAKE_CUDA_EXTENSIONS OFF)
# Static cudart: the GPU machine has the driver and cuBLAS but not Debian's libraries.
set(CMAKE_CUDA_RUNTIME_LIBRARY Static)

find_package(CUDAToolkit REQUIRED)

# Flags for brisk's .cu files: no fast-math (parity with the CPU reference matters more than the
# last percent), line info for ncu / compute-sanitizer.
set(BRISK_CUDA_FLAGS -O3 --expt-relaxed-constexpr -lineinfo -Xcompiler=-Wall,-Wextra,-Wno-unused-parameter)

# The top-level add_compile_options() passes g++ warning flags to every language; nvcc rejects
# them. This keeps the directory's options for C++ sources only and gives .cu files the CUDA
# flags (their host code still gets the warnings through -Xcompiler).
function(brisk_cuda_compile_options target)
  get_target_property(options ${target} COMPILE_OPTIONS)
  set(cxx_only "")
  if(options)
    foreach(option IN LISTS options)
      list(APPEND cxx_only "$<$<COMPILE_LANGUAGE:CXX>:${option}>")
    endforeach()
  endif()
  set_property(TARGET ${target} PROPERTY COMPILE_OPTIONS ${cxx_only})
  target_compile_options(${target} PRIVATE $<$<COMPILE_LANGUAGE:CUDA>:${BRISK_CUDA_FLAGS}>)
endfunction()

# NCCL (tensor parallelism over GPUs) has no CMake target: the CUDA toolkit's, else PyPI's
# nvidia-nccl-cu13 (headers and library) in scripts/python's environment. Linked dynamically: the
# GPU machine has libnccl.so.2 in its Python environment (scripts/gpu-check puts it on the path).
execute_process(COMMAND ${PROJECT_SOURCE_DIR}/scripts/python -c
                "import nvidia.nccl; print(list(nvidia.nccl.__path__)[0])"
                OUTPUT_VARIABLE BRISK_PIP_NCCL OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET)
find_path(NCCL_INCLUDE_DIR nccl.h HINTS ${CUDAToolkit_INCLUDE_DIRS} ${BRISK_PIP_NCCL}/include)
find_library(NCCL_LIBRARY NAMES nccl libnccl.so.2 HINTS ${CUDAToolkit_LIBRARY_DIR} ${BRISK_PIP_NCCL}/lib)
if(NOT NCCL_INCLUDE_DIR OR NOT NCCL_LIBRARY)
  message(FATAL_ERROR "NCCL not found (nccl.h and libnccl in the CUDA toolkit, or pip's nvidia-nccl-cu13)")
endif()
add_library(brisk_nccl INTERFACE IMPORTED)
target_include_directories(brisk_nccl INTERFACE ${NCCL_INCLUDE_DIR})
target_link_libraries(brisk_nccl INTERFACE ${NCCL_LIBRARY})
