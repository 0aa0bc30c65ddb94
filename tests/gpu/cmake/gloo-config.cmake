# Debian's libgloo, carried: headers, libgloo.so.0, and in lib/gloo-runtime
# the libraries it needs that the GPU machine's image may lack (hiredis,
# ibverbs, libnl). Only dtrain's dlopen'd module libdtrain_gloo.so links it.
# Debian's own GlooConfig.cmake names /usr/lib/libgloo.so.0.5.0 by absolute
# path, so it cannot be carried; tests/gpu/prepare_gpu_deps.sh puts this
# file in .gpu-deps/lib/cmake/Gloo/ instead.
get_filename_component(_dtrain_deps "${CMAKE_CURRENT_LIST_DIR}/../../.." ABSOLUTE)
if(NOT TARGET gloo)
  add_library(gloo SHARED IMPORTED)
  set_target_properties(gloo PROPERTIES
    IMPORTED_LOCATION "${_dtrain_deps}/lib/libgloo.so.0"
    IMPORTED_SONAME "libgloo.so.0"
    INTERFACE_INCLUDE_DIRECTORIES "${_dtrain_deps}/include"
    # Lets the linker see libgloo's own dependencies (no warnings about them).
    INTERFACE_LINK_OPTIONS "LINKER:-rpath-link,${_dtrain_deps}/lib/gloo-runtime")
endif()
set(GLOO_INCLUDE_DIRS "${_dtrain_deps}/include")
set(GLOO_LIBRARIES gloo)
message(STATUS "dtrain: carried Gloo from ${_dtrain_deps}/lib/libgloo.so.0")
