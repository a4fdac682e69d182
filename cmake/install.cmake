# `cmake --install BUILD --prefix P`: libsprout.so (versioned) and
# libsprout.a, sprout.h and its parts (sprout/*.h), sprout.pc and the CMake package `sprout`
# (find_package(sprout) gives sprout::sprout, the shared library, and
# sprout::sprout_static). Every file is relocatable: the prefix given at
# install time, not the configured one, is where they look.
include(GNUInstallDirs)
include(CMakePackageConfigHelpers)

install(TARGETS sprout_shared sprout EXPORT sproutTargets
  LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
  ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
  INCLUDES DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
install(FILES ${CMAKE_SOURCE_DIR}/include/sprout.h DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
install(DIRECTORY ${CMAKE_SOURCE_DIR}/include/sprout DESTINATION ${CMAKE_INSTALL_INCLUDEDIR} FILES_MATCHING PATTERN "*.h")

set(SPROUT_CMAKE_DIR ${CMAKE_INSTALL_LIBDIR}/cmake/sprout)
install(EXPORT sproutTargets NAMESPACE sprout:: DESTINATION ${SPROUT_CMAKE_DIR})
configure_package_config_file(${CMAKE_CURRENT_LIST_DIR}/sproutConfig.cmake.in
  ${CMAKE_CURRENT_BINARY_DIR}/sproutConfig.cmake INSTALL_DESTINATION ${SPROUT_CMAKE_DIR})
# 0.x releases promise nothing across minor versions
write_basic_package_version_file(${CMAKE_CURRENT_BINARY_DIR}/sproutConfigVersion.cmake
  COMPATIBILITY SameMinorVersion)
install(FILES ${CMAKE_CURRENT_BINARY_DIR}/sproutConfig.cmake ${CMAKE_CURRENT_BINARY_DIR}/sproutConfigVersion.cmake
  DESTINATION ${SPROUT_CMAKE_DIR})

# pkg-config: the prefix is found from the .pc file's own place (pkgconf and
# pkg-config both define ${pcfiledir}).
file(RELATIVE_PATH SPROUT_PC_TO_PREFIX /prefix/${CMAKE_INSTALL_LIBDIR}/pkgconfig /prefix)
set(SPROUT_PC_LIBS_PRIVATE "-lm -pthread")
configure_file(${CMAKE_CURRENT_LIST_DIR}/sprout.pc.in ${CMAKE_CURRENT_BINARY_DIR}/sprout.pc @ONLY)
install(FILES ${CMAKE_CURRENT_BINARY_DIR}/sprout.pc DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig)
