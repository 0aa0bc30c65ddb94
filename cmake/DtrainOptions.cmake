# User-facing build options. Each is documented in README.md ("Build options").
set(DTRAIN_CUDA "AUTO" CACHE STRING "Build CUDA kernels: AUTO (when nvcc is found), ON, OFF")
set_property(CACHE DTRAIN_CUDA PROPERTY STRINGS AUTO ON OFF)
set(DTRAIN_CUDA_ARCHITECTURES "80;90" CACHE STRING "CUDA architectures to compile for (sm_80 A100, sm_90 H100/H200)")
set(DTRAIN_MPI "AUTO" CACHE STRING "Build the MPI backend: AUTO (when OpenMPI is found), ON, OFF")
set_property(CACHE DTRAIN_MPI PROPERTY STRINGS AUTO ON OFF)
set(DTRAIN_HDF5 "ON" CACHE STRING "Require HDF5 (C, C++) for the HDF5 dataset readers: ON, AUTO (when found), OFF")
set_property(CACHE DTRAIN_HDF5 PROPERTY STRINGS ON AUTO OFF)
option(DTRAIN_BUILD_TESTS "Build the test suite" ON)
option(DTRAIN_BUILD_BENCHMARKS "Build the benchmarks" ON)
option(DTRAIN_USE_CCACHE "Compile through ccache when it is installed" ON)
option(DTRAIN_USE_PCH "Precompile the LibTorch headers" ON)
option(DTRAIN_UNITY_TESTS "Compile each test program's sources in batches (unity build)" ON)
set(DTRAIN_PYTHON "" CACHE FILEPATH "Python with the same torch wheel (tests that compare against PyTorch)")
set(DTRAIN_DEBUG_INFO "lines" CACHE STRING "Debug information in RelWithDebInfo builds: lines (-g1: functions, files and lines, enough for backtraces), full (-g: variables and types too), none")
set_property(CACHE DTRAIN_DEBUG_INFO PROPERTY STRINGS lines full none)

# Why lines by default: full debug information of LibTorch's templates is
# most of what the C++ compiler writes, and cut a C++ file's compile time by
# 15-35% when dropped (cold CI compiles about 300 files on 2 cores). Line
# tables keep backtraces, sanitizer and valgrind reports readable. The
# Debug build keeps its full -g whatever this says. Appended after CMake's
# "-O2 -g": with GCC and Clang the last -g option wins.
set(_dtrain_debug_info_flag_lines "-g1")
set(_dtrain_debug_info_flag_full "-g")
set(_dtrain_debug_info_flag_none "-g0")
if(NOT DEFINED _dtrain_debug_info_flag_${DTRAIN_DEBUG_INFO})
  message(FATAL_ERROR "DTRAIN_DEBUG_INFO=${DTRAIN_DEBUG_INFO}: expected lines, full or none")
endif()
add_compile_options(
  "$<$<AND:$<CONFIG:RelWithDebInfo>,$<COMPILE_LANGUAGE:C,CXX>>:${_dtrain_debug_info_flag_${DTRAIN_DEBUG_INFO}}>")

# DTRAIN_SANITIZE: a comma-separated list of GCC sanitizers (address,
# undefined) for every C and C++ file and every link, in a build folder of
# its own (scripts/sanitize.sh). LibTorch and the Debian libraries stay
# uninstrumented: ASan checks dtrain's own memory accesses and UBSan its own
# arithmetic. CUDA device code is left as it is. Errors end the process
# (-fno-sanitize-recover), so a test that hits one fails.
set(DTRAIN_SANITIZE "" CACHE STRING "Sanitizers for C/C++ (comma-separated: address, undefined); empty for none")
if(DTRAIN_SANITIZE)
  string(REPLACE "," ";" _dtrain_sanitizers "${DTRAIN_SANITIZE}")
  foreach(_dtrain_sanitizer IN LISTS _dtrain_sanitizers)
    if(NOT _dtrain_sanitizer MATCHES "^(address|undefined)$")
      message(FATAL_ERROR "DTRAIN_SANITIZE=${DTRAIN_SANITIZE}: '${_dtrain_sanitizer}' is not one of address, undefined")
    endif()
  endforeach()
  set(_dtrain_sanitize_flags "-fsanitize=${DTRAIN_SANITIZE}" "-fno-sanitize-recover=all"
                             "-fno-omit-frame-pointer")
  add_compile_options("$<$<COMPILE_LANGUAGE:C,CXX>:${_dtrain_sanitize_flags}>")
  add_link_options("$<$<LINK_LANGUAGE:C,CXX>:-fsanitize=${DTRAIN_SANITIZE}>")
endif()
