# CLI11 (header-only) from the carried Debian headers; tests/gpu/prepare_gpu_deps.sh
# puts this file in .gpu-deps/lib/cmake/CLI11/.
get_filename_component(_dtrain_deps "${CMAKE_CURRENT_LIST_DIR}/../../.." ABSOLUTE)
if(NOT TARGET CLI11::CLI11)
  add_library(CLI11::CLI11 INTERFACE IMPORTED)
  set_target_properties(CLI11::CLI11 PROPERTIES
    INTERFACE_INCLUDE_DIRECTORIES "${_dtrain_deps}/include")
endif()
message(STATUS "dtrain: carried CLI11 from ${_dtrain_deps}/include")
