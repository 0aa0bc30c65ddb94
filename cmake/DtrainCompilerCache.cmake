# ccache for C++ and CUDA. The sloppiness settings let ccache cache
# translation units that use precompiled headers (see the ccache manual,
# "Precompiled headers"); BASEDIR and NOHASHDIR let a fresh clone in another
# folder (as CI makes) hit what an earlier clone compiled.
if(NOT DTRAIN_USE_CCACHE)
  return()
endif()
find_program(DTRAIN_CCACHE_PROGRAM ccache)
if(NOT DTRAIN_CCACHE_PROGRAM)
  message(STATUS "dtrain: ccache not found, compiling without it")
  return()
endif()
# One cache for every build of dtrain on the machine, whether started by
# scripts/ or by hand, next to the LibTorch venv (DTRAIN_HOME).
if(DEFINED ENV{CCACHE_DIR})
  set(DTRAIN_CCACHE_DIR "$ENV{CCACHE_DIR}")
else()
  include(DtrainHome)
  dtrain_home(_dtrain_home)
  set(DTRAIN_CCACHE_DIR "${_dtrain_home}/ccache")
endif()
set(_dtrain_launcher
  "${CMAKE_COMMAND}" -E env
  "CCACHE_DIR=${DTRAIN_CCACHE_DIR}"
  "CCACHE_SLOPPINESS=pch_defines,time_macros,include_file_mtime,include_file_ctime"
  "CCACHE_BASEDIR=${CMAKE_SOURCE_DIR}"
  "CCACHE_NOHASHDIR=true"
  "${DTRAIN_CCACHE_PROGRAM}")
set(CMAKE_CXX_COMPILER_LAUNCHER ${_dtrain_launcher})
set(CMAKE_CUDA_COMPILER_LAUNCHER ${_dtrain_launcher})
message(STATUS "dtrain: compiling through ${DTRAIN_CCACHE_PROGRAM}")
