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
set(_dtrain_launcher
  "${CMAKE_COMMAND}" -E env
  "CCACHE_SLOPPINESS=pch_defines,time_macros,include_file_mtime,include_file_ctime"
  "CCACHE_BASEDIR=${CMAKE_SOURCE_DIR}"
  "CCACHE_NOHASHDIR=true"
  "${DTRAIN_CCACHE_PROGRAM}")
set(CMAKE_CXX_COMPILER_LAUNCHER ${_dtrain_launcher})
set(CMAKE_CUDA_COMPILER_LAUNCHER ${_dtrain_launcher})
message(STATUS "dtrain: compiling through ${DTRAIN_CCACHE_PROGRAM}")
