# Install rules and the package config, so research code can
#   find_package(dtrain REQUIRED)
#   target_link_libraries(my_app PRIVATE dtrain::dtrain)
include(CMakePackageConfigHelpers)

get_property(_dtrain_targets GLOBAL PROPERTY DTRAIN_EXPORTED_TARGETS)
install(TARGETS ${_dtrain_targets} dtrain
  EXPORT dtrainTargets
  LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
  ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
  RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR}
  INCLUDES DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})

set(DTRAIN_CMAKE_INSTALL_DIR ${CMAKE_INSTALL_LIBDIR}/cmake/dtrain)
install(EXPORT dtrainTargets NAMESPACE dtrain:: DESTINATION ${DTRAIN_CMAKE_INSTALL_DIR})

configure_package_config_file(
  "${PROJECT_SOURCE_DIR}/cmake/dtrainConfig.cmake.in"
  "${PROJECT_BINARY_DIR}/dtrainConfig.cmake"
  INSTALL_DESTINATION ${DTRAIN_CMAKE_INSTALL_DIR})
write_basic_package_version_file(
  "${PROJECT_BINARY_DIR}/dtrainConfigVersion.cmake"
  COMPATIBILITY SameMinorVersion)
install(FILES
  "${PROJECT_BINARY_DIR}/dtrainConfig.cmake"
  "${PROJECT_BINARY_DIR}/dtrainConfigVersion.cmake"
  "${PROJECT_SOURCE_DIR}/cmake/DtrainTorchIncludes.cmake"
  "${PROJECT_SOURCE_DIR}/cmake/DtrainWheelCuda.cmake"
  "${PROJECT_SOURCE_DIR}/cmake/DtrainHome.cmake"
  DESTINATION ${DTRAIN_CMAKE_INSTALL_DIR})
