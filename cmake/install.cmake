# `cmake --install build --prefix PREFIX`: the binary, the public headers (for extensions),
# the lessons and examples it opens, and the CMake package (opscopeConfig.cmake) that builds an
# extension as a normal project. The build itself installs nothing outside the build tree.
include(CMakePackageConfigHelpers)
set_target_properties(opscope PROPERTIES INSTALL_RPATH_USE_LINK_PATH ON)  # cuBLAS outside the system folders
install(TARGETS opscope RUNTIME DESTINATION bin)
foreach(h IN LISTS OPSCOPE_PUBLIC_HEADERS)
  get_filename_component(dir ${h} DIRECTORY)
  install(FILES ${h} DESTINATION include/opscope/${dir})
endforeach()
install(DIRECTORY lessons/ DESTINATION share/opscope/lessons)
install(DIRECTORY assets/examples/ DESTINATION share/opscope/examples)
configure_file(cmake/opscopeConfig.cmake.in ${OPSCOPE_GENERATED_DIR}/opscopeConfig.cmake @ONLY)
write_basic_package_version_file(${OPSCOPE_GENERATED_DIR}/opscopeConfigVersion.cmake COMPATIBILITY ExactVersion)
install(FILES ${OPSCOPE_GENERATED_DIR}/opscopeConfig.cmake ${OPSCOPE_GENERATED_DIR}/opscopeConfigVersion.cmake
              ${OPSCOPE_GENERATED_DIR}/opscope-abi.cmake
        DESTINATION lib/cmake/opscope)
