# Note [LibTorch's bundled fmt]
# The torch wheel puts its own fmt (12.x) headers in its include root, so
# `-isystem <torch>/include` makes every <fmt/...> include find them ahead
# of Debian's fmt 9, which Debian's spdlog is built against: spdlog then
# fails to compile (or, worse, links against a different fmt ABI). dtrain
# logs through spdlog in code that also uses LibTorch, so we point the
# LibTorch targets at a mirror of the include root without `fmt`. LibTorch
# headers dtrain includes do not use fmt (only profiler and c10d internals do).
#
# Used by dtrain's own build and by dtrainConfig.cmake for consumers.
function(dtrain_hide_torch_fmt)
  if(NOT TORCH_INSTALL_PREFIX)
    message(FATAL_ERROR "dtrain_hide_torch_fmt: call after find_package(Torch)")
  endif()
  set(torch_include "${TORCH_INSTALL_PREFIX}/include")
  set(mirror "${CMAKE_BINARY_DIR}/dtrain-torch-include")
  file(MAKE_DIRECTORY "${mirror}")
  file(GLOB entries RELATIVE "${torch_include}" "${torch_include}/*")
  foreach(entry IN LISTS entries)
    if(NOT entry STREQUAL "fmt" AND NOT EXISTS "${mirror}/${entry}")
      file(CREATE_LINK "${torch_include}/${entry}" "${mirror}/${entry}" SYMBOLIC)
    endif()
  endforeach()
  foreach(target IN ITEMS headeronly c10 c10_cuda torch_cpu torch_cuda torch)
    if(NOT TARGET ${target})
      continue()
    endif()
    get_target_property(dirs ${target} INTERFACE_INCLUDE_DIRECTORIES)
    if(dirs)
      list(TRANSFORM dirs REPLACE "^${torch_include}$" "${mirror}")
      set_target_properties(${target} PROPERTIES INTERFACE_INCLUDE_DIRECTORIES "${dirs}")
    endif()
  endforeach()
  set(TORCH_INCLUDE_DIRS "${mirror};${mirror}/torch/csrc/api/include" PARENT_SCOPE)
endfunction()

# Note [LibTorch's std::filesystem]
# The torch wheel's libtorch.so exports its own copies of std::filesystem
# functions (remove_all, create_directory, ...) whose internal references
# are left unresolved; a program that links libtorch.so before libstdc++
# binds std::filesystem calls to those copies and crashes in remove_all.
# Making libstdc++ the first library every dtrain program needs puts the
# real definitions first in the dynamic linker's search order. The option
# travels with the `torch` target, so consumers of dtrain get it too.
function(dtrain_put_libstdcxx_first)
  if(TARGET torch AND CMAKE_CXX_COMPILER_ID STREQUAL "GNU")
    set_property(TARGET torch APPEND PROPERTY INTERFACE_LINK_OPTIONS
      "$<$<STREQUAL:$<TARGET_PROPERTY:TYPE>,EXECUTABLE>:LINKER:--no-as-needed;-lstdc++>")
  endif()
endfunction()
