# The installed package: CMake targets tabq::tabq, tabq::sdk and tabq::sqlbuild with a config and
# a version file, and pkg-config files tabq.pc and tabq-sdk.pc. Every path in them is relative to
# where they are installed, so the whole prefix can be moved.
include(CMakePackageConfigHelpers)

set(TABQ_CMAKE_DIR ${CMAKE_INSTALL_LIBDIR}/cmake/tabq)
install(EXPORT tabqTargets NAMESPACE tabq:: DESTINATION ${TABQ_CMAKE_DIR})
configure_package_config_file(${CMAKE_CURRENT_LIST_DIR}/tabqConfig.cmake.in
  ${PROJECT_BINARY_DIR}/tabqConfig.cmake INSTALL_DESTINATION ${TABQ_CMAKE_DIR}
  PATH_VARS CMAKE_INSTALL_INCLUDEDIR CMAKE_INSTALL_LIBDIR)
# 0.x minors may change the API, so a request for 0.2 takes 0.2.y only; from 1.0 on, any 1.y.
if(PROJECT_VERSION_MAJOR EQUAL 0)
  set(TABQ_COMPATIBILITY SameMinorVersion)
else()
  set(TABQ_COMPATIBILITY SameMajorVersion)
endif()
write_basic_package_version_file(${PROJECT_BINARY_DIR}/tabqConfigVersion.cmake
  VERSION ${PROJECT_VERSION} COMPATIBILITY ${TABQ_COMPATIBILITY})
install(FILES ${PROJECT_BINARY_DIR}/tabqConfig.cmake ${PROJECT_BINARY_DIR}/tabqConfigVersion.cmake
  ${CMAKE_CURRENT_LIST_DIR}/tabq_add_dialect.cmake DESTINATION ${TABQ_CMAKE_DIR})

# From <libdir>/pkgconfig back to the prefix ("../.." for lib, "../../.." for lib/<triplet>).
file(RELATIVE_PATH TABQ_PC_TO_PREFIX /prefix/${CMAKE_INSTALL_LIBDIR}/pkgconfig /prefix)
foreach(pc tabq tabq-sdk)
  configure_file(${CMAKE_CURRENT_LIST_DIR}/${pc}.pc.in ${PROJECT_BINARY_DIR}/${pc}.pc @ONLY)
  install(FILES ${PROJECT_BINARY_DIR}/${pc}.pc DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig)
endforeach()
