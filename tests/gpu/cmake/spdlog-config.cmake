# spdlog from the carried Debian headers, header-only, on the carried fmt
# (see fmt-config.cmake beside this file for why header-only). Debian's
# spdlog is configured for an external fmt (SPDLOG_FMT_EXTERNAL).
get_filename_component(_dtrain_deps "${CMAKE_CURRENT_LIST_DIR}/../../.." ABSOLUTE)
if(NOT TARGET fmt::fmt)
  include("${CMAKE_CURRENT_LIST_DIR}/../fmt/fmt-config.cmake")
endif()
if(NOT TARGET spdlog::spdlog)
  add_library(spdlog::spdlog INTERFACE IMPORTED)
  set_target_properties(spdlog::spdlog PROPERTIES
    INTERFACE_INCLUDE_DIRECTORIES "${_dtrain_deps}/include"
    INTERFACE_COMPILE_DEFINITIONS "SPDLOG_FMT_EXTERNAL"
    INTERFACE_LINK_LIBRARIES fmt::fmt)
endif()
set(spdlog_VERSION "")
foreach(_dtrain_part MAJOR MINOR PATCH)
  file(STRINGS "${_dtrain_deps}/include/spdlog/version.h" _dtrain_line REGEX "^#define SPDLOG_VER_${_dtrain_part} ")
  string(REGEX REPLACE "^#define SPDLOG_VER_${_dtrain_part} ([0-9]+).*$" "\\1" _dtrain_line "${_dtrain_line}")
  list(APPEND spdlog_VERSION "${_dtrain_line}")
endforeach()
string(JOIN "." spdlog_VERSION ${spdlog_VERSION})
message(STATUS "dtrain: carried spdlog ${spdlog_VERSION} (header-only) from ${_dtrain_deps}/include")
