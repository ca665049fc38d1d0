# oneDNN (Debian libdnnl-dev): conv2d's `onednn` algorithm. The code that calls oneDNN is a
# module of its own, libopscope_onednn.so, opened with dlopen on the first onednn call
# (ops/onednn_conv.cpp): linking oneDNN (39 MB, OpenMP, OpenCL) into opscope would cost every
# start-up, including the many that never convolve. Without oneDNN the algorithm is still
# listed and says how to get it.
# Header and library, not find_package(dnnl): Debian's dnnl-config.cmake requires OpenCL's
# development files (its GPU runtime), which the CPU primitives used here never need.
find_path(OPSCOPE_DNNL_INCLUDE_DIR dnnl.hpp)
find_library(OPSCOPE_DNNL_LIBRARY NAMES dnnl)
find_package(OpenMP QUIET COMPONENTS CXX)
target_sources(opscope_ops PRIVATE ops/onednn_conv.cpp)
if(OPSCOPE_DNNL_INCLUDE_DIR AND OPSCOPE_DNNL_LIBRARY AND OpenMP_CXX_FOUND)
  add_library(opscope_onednn MODULE ops/onednn/onednn_module.cpp)
  target_include_directories(opscope_onednn PRIVATE ${CMAKE_CURRENT_SOURCE_DIR} ${OPSCOPE_DNNL_INCLUDE_DIR})
  target_link_libraries(opscope_onednn PRIVATE ${OPSCOPE_DNNL_LIBRARY} OpenMP::OpenMP_CXX)
  # Beside the executables of the build tree, where opscope looks first.
  set_target_properties(opscope_onednn PROPERTIES CXX_VISIBILITY_PRESET hidden LIBRARY_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR})
  set(OPSCOPE_ONEDNN_MODULE_PATH ${CMAKE_BINARY_DIR}/${CMAKE_SHARED_MODULE_PREFIX}opscope_onednn${CMAKE_SHARED_MODULE_SUFFIX})
  set_source_files_properties(ops/onednn_conv.cpp PROPERTIES COMPILE_DEFINITIONS "OPSCOPE_ONEDNN_BUILT_MODULE=\"${OPSCOPE_ONEDNN_MODULE_PATH}\"")
  add_dependencies(opscope_ops opscope_onednn)  # every program that links the ops finds it built
  install(TARGETS opscope_onednn LIBRARY DESTINATION lib/opscope)
  set(OPSCOPE_HAVE_ONEDNN ON)
  message(STATUS "opscope: oneDNN ${OPSCOPE_DNNL_LIBRARY} (conv2d algo=\"onednn\", module opened at run time)")
else()
  set(OPSCOPE_HAVE_ONEDNN OFF)
  message(STATUS "opscope: oneDNN not found (libdnnl-dev): conv2d's `onednn` algorithm will say how to get it")
endif()
