# fmt from the carried Debian headers (tests/gpu/prepare_gpu_deps.sh puts
# this file in .gpu-deps/lib/cmake/fmt/). Header-only (FMT_HEADER_ONLY): the
# GPU machine's image has no libfmt, and compiling fmt into dtrain's own
# binaries there avoids loading a library built against another libstdc++.
get_filename_component(_dtrain_deps "${CMAKE_CURRENT_LIST_DIR}/../../.." ABSOLUTE)
if(NOT TARGET fmt::fmt)
  add_library(fmt::fmt INTERFACE IMPORTED)
  set_target_properties(fmt::fmt PROPERTIES
    INTERFACE_INCLUDE_DIRECTORIES "${_dtrain_deps}/include"
    INTERFACE_COMPILE_DEFINITIONS "FMT_HEADER_ONLY=1")
endif()
file(STRINGS "${_dtrain_deps}/include/fmt/core.h" _dtrain_fmt_version REGEX "^#define FMT_VERSION ")
string(REGEX REPLACE "^#define FMT_VERSION ([0-9]+)$" "\\1" _dtrain_fmt_version "${_dtrain_fmt_version}")
math(EXPR _dtrain_fmt_major "${_dtrain_fmt_version} / 10000")
math(EXPR _dtrain_fmt_minor "${_dtrain_fmt_version} % 10000 / 100")
math(EXPR _dtrain_fmt_patch "${_dtrain_fmt_version} % 100")
set(fmt_VERSION "${_dtrain_fmt_major}.${_dtrain_fmt_minor}.${_dtrain_fmt_patch}")
message(STATUS "dtrain: carried fmt ${fmt_VERSION} (header-only) from ${_dtrain_deps}/include")
