# ONNX interop (optional, like the GUI): import, export and the conformance runner, built on
# Debian's libonnx-dev (the protobuf classes, the checker) and libprotobuf-dev. Sets
# OPSCOPE_HAVE_ONNX and always defines the target opscope_onnx: without ONNX it holds the
# functions that say "built without ONNX", so every front end links and explains.
set(OPSCOPE_ONNX AUTO CACHE STRING "Build ONNX import/export: ON, OFF or AUTO (when libonnx-dev is found)")
set_property(CACHE OPSCOPE_ONNX PROPERTY STRINGS AUTO ON OFF)
set(OPSCOPE_HAVE_ONNX OFF)
if(NOT OPSCOPE_ONNX STREQUAL "OFF")
  find_package(Protobuf QUIET)
  if(Protobuf_FOUND)
    find_package(ONNX CONFIG QUIET)
  endif()
  if(Protobuf_FOUND AND ONNX_FOUND AND TARGET onnx AND TARGET onnx_proto)
    set(OPSCOPE_HAVE_ONNX ON)
  elseif(OPSCOPE_ONNX STREQUAL "ON")
    message(FATAL_ERROR "OPSCOPE_ONNX=ON needs libonnx-dev and libprotobuf-dev (tools/setup.sh installs them)")
  endif()
endif()
message(STATUS "opscope: ONNX ${OPSCOPE_HAVE_ONNX}")

if(OPSCOPE_HAVE_ONNX)
  add_library(opscope_onnx STATIC
    app/onnx/onnx_model.cpp app/onnx/onnx_tensor.cpp app/onnx/onnx_import.cpp
    app/onnx/map_context.cpp app/onnx/map_math.cpp app/onnx/map_nn.cpp app/onnx/map_shape.cpp
    app/onnx/onnx_export.cpp app/onnx/export_ops.cpp app/onnx/conformance.cpp)
  # The checker (libonnx) validates what export writes; its schemas register lazily (no start-up cost).
  target_link_libraries(opscope_onnx PUBLIC opscope_core PRIVATE onnx onnx_proto protobuf::libprotobuf)
  target_compile_definitions(opscope_onnx PUBLIC OPSCOPE_HAVE_ONNX=1 PRIVATE OPSCOPE_EXPORT_VERSION="${PROJECT_VERSION}")
else()
  add_library(opscope_onnx STATIC app/onnx/unavailable.cpp)
  target_link_libraries(opscope_onnx PUBLIC opscope_core)
endif()
