# Helpers that give every dtrain target the same shape: one shared library
# per area, an alias dtrain::<area>, public headers under <area>/include,
# warnings, and the shared precompiled LibTorch header.

set(DTRAIN_WARNINGS -Wall -Wextra -Wno-unused-parameter)

# One precompiled header for every C++ target that uses LibTorch. Targets
# reuse it (REUSE_FROM), so the expensive LibTorch headers are parsed once
# per build instead of once per target.
function(dtrain_setup_torch_pch)
  if(NOT DTRAIN_USE_PCH)
    return()
  endif()
  file(GENERATE OUTPUT "${CMAKE_BINARY_DIR}/dtrain_pch_anchor.cpp" CONTENT "// anchor for the shared PCH\n")
  add_library(dtrain_torch_pch OBJECT "${CMAKE_BINARY_DIR}/dtrain_pch_anchor.cpp")
  target_link_libraries(dtrain_torch_pch PUBLIC ${TORCH_LIBRARIES})
  target_compile_options(dtrain_torch_pch PRIVATE ${DTRAIN_WARNINGS})
  # By name on the include path, not by absolute path: CMake writes the
  # name into the generated cmake_pch.hxx, so the header's bytes, and every
  # object built on it, are the same in every clone, and ccache serves a
  # clone in another folder too (CCACHE_BASEDIR rewrites the command lines).
  target_include_directories(dtrain_torch_pch PRIVATE "${PROJECT_SOURCE_DIR}/cmake/pch")
  target_precompile_headers(dtrain_torch_pch PRIVATE "<dtrain_pch.h>")
endfunction()

# Gives a C++ target that links LibTorch the shared precompiled header. The
# include directory is there for GCC to fall back on the header's text
# should it ever refuse the precompiled one (-Winvalid-pch says so).
function(dtrain_use_torch_pch target)
  if(DTRAIN_USE_PCH AND TARGET dtrain_torch_pch)
    target_include_directories(${target} PRIVATE "${PROJECT_SOURCE_DIR}/cmake/pch")
    target_precompile_headers(${target} REUSE_FROM dtrain_torch_pch)
  endif()
endfunction()

# dtrain_add_library(<area> SOURCES ... [LINK ...] [NOT_INSTALLED])
#   Builds the shared library dtrain_<area> with alias dtrain::<area>.
#   NOT_INSTALLED: for the build tree's tests and benchmarks only (neither
#   the library nor its headers are installed or exported).
function(dtrain_add_library area)
  cmake_parse_arguments(ARG "NOT_INSTALLED" "" "SOURCES;LINK" ${ARGN})
  set(target dtrain_${area})
  add_library(${target} SHARED ${ARG_SOURCES})
  add_library(dtrain::${area} ALIAS ${target})
  target_include_directories(${target} PUBLIC
    $<BUILD_INTERFACE:${CMAKE_CURRENT_SOURCE_DIR}/include>
    $<BUILD_INTERFACE:${PROJECT_BINARY_DIR}/include>
    $<INSTALL_INTERFACE:${CMAKE_INSTALL_INCLUDEDIR}>)
  target_link_libraries(${target} PUBLIC ${ARG_LINK})
  target_compile_options(${target} PRIVATE $<$<COMPILE_LANGUAGE:CXX>:${DTRAIN_WARNINGS}>)
  # Same macros in every target, so the shared PCH stays valid.
  set_target_properties(${target} PROPERTIES
    EXPORT_NAME ${area}
    DEFINE_SYMBOL ""
    OUTPUT_NAME dtrain_${area}
    VERSION ${PROJECT_VERSION}
    SOVERSION ${PROJECT_VERSION_MAJOR})
  dtrain_use_torch_pch(${target})
  if(NOT ARG_NOT_INSTALLED)
    install(DIRECTORY include/ DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
    set_property(GLOBAL APPEND PROPERTY DTRAIN_EXPORTED_TARGETS ${target})
  endif()
endfunction()

# dtrain_add_executable(<name> SOURCES ... [LINK ...] [INSTALL])
function(dtrain_add_executable name)
  cmake_parse_arguments(ARG "INSTALL" "" "SOURCES;LINK" ${ARGN})
  add_executable(${name} ${ARG_SOURCES})
  target_link_libraries(${name} PRIVATE ${ARG_LINK})
  # -fPIC like the libraries instead of the default -fPIE: GCC only accepts
  # a precompiled header built with the same setting.
  set_target_properties(${name} PROPERTIES POSITION_INDEPENDENT_CODE OFF)
  target_compile_options(${name} PRIVATE ${DTRAIN_WARNINGS} -fPIC)
  dtrain_use_torch_pch(${name})
  if(ARG_INSTALL)
    install(TARGETS ${name} RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
  endif()
endfunction()

dtrain_setup_torch_pch()

# Build-wide facts that code needs at compile time live in one generated
# header rather than -D flags (which would differ per target and spoil the PCH).
configure_file("${PROJECT_SOURCE_DIR}/cmake/config.h.in" "${PROJECT_BINARY_DIR}/include/dtrain/config.h" @ONLY)
install(FILES "${PROJECT_BINARY_DIR}/include/dtrain/config.h" DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/dtrain)
