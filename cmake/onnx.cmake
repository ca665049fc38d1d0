# ONNX interop (optional, like the GUI): import, export and the conformance runner, built on
# Debian's libonnx-dev (the protobuf classes, the checker) and libprotobuf-dev. Sets
# OPSCOPE_HAVE_ONNX and always defines the target opscope_onnx: without ONNX it holds the
# functions that say "built without ONNX", so every front end links and explains.
set(OPSCOPE_ONNX AUTO CACHE STRING "Build ONNX import/export: ON, OFF or AUTO (when libonnx-dev is found)")
set_property(CACHE OPSCOPE_ONNX PROPERTY STRINGS AUTO ON OFF)
set(OPSCOPE_HAVE_ONNX OFF)
# The importer, the names and the entry points (no protobuf), and what touches protobuf (and, on
# the desktop, libonnx): the same sources in both builds.
set(OPSCOPE_ONNX_IMPORTER_SOURCES
  app/onnx/onnx_model.cpp app/onnx/onnx_import.cpp app/onnx/onnx_export_outputs.cpp app/onnx/conformance_report.cpp
  app/onnx/map_context.cpp app/onnx/map_math.cpp app/onnx/map_nn.cpp app/onnx/map_shape.cpp
  app/onnx/map_vision.cpp app/onnx/map_index.cpp app/onnx/map_rnn.cpp app/onnx/onnx_fold.cpp
  app/onnx/proto_module.cpp)
set(OPSCOPE_ONNX_PROTO_SOURCES
  app/onnx/onnx_parse.cpp app/onnx/onnx_tensor.cpp app/onnx/onnx_export.cpp app/onnx/export_ops.cpp app/onnx/export_layers.cpp
  app/onnx/conformance.cpp app/onnx/proto_module_entry.cpp)
if(EMSCRIPTEN AND NOT OPSCOPE_ONNX STREQUAL "OFF")
  # The browser: protobuf and ONNX's classes built from source (cmake/web_deps.cmake), the
  # module linked into the one program, no libonnx (onnx_schema_unavailable.cpp).
  set(OPSCOPE_HAVE_ONNX ON)
  add_library(opscope_onnx STATIC ${OPSCOPE_ONNX_IMPORTER_SOURCES})
  target_link_libraries(opscope_onnx PUBLIC opscope_layers opscope_core)
  target_compile_definitions(opscope_onnx PUBLIC OPSCOPE_HAVE_ONNX=1)
  add_library(opscope_onnx_proto STATIC ${OPSCOPE_ONNX_PROTO_SOURCES} app/onnx/onnx_schema_unavailable.cpp)
  target_link_libraries(opscope_onnx_proto PUBLIC web_onnx_proto opscope_core)
  target_compile_definitions(opscope_onnx_proto PRIVATE OPSCOPE_EXPORT_VERSION="${PROJECT_VERSION}")
  foreach(t opscope_onnx opscope_onnx_proto)
    target_include_directories(${t} PRIVATE ${OPSCOPE_GENERATED_DIR})
    add_dependencies(${t} opscope_extension)
  endforeach()
  set_source_files_properties(app/onnx/proto_module.cpp PROPERTIES COMPILE_DEFINITIONS "OPSCOPE_ONNX_BUILT_MODULE=\"\"")
  message(STATUS "opscope: ONNX ON (protobuf-lite built from source; no libonnx: no schema checks)")
  return()
endif()
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
  # The importer, the names and the entry points: no protobuf, linked into opscope.
  add_library(opscope_onnx STATIC ${OPSCOPE_ONNX_IMPORTER_SOURCES})
  target_link_libraries(opscope_onnx PUBLIC opscope_layers opscope_core ${CMAKE_DL_LIBS})
  target_compile_definitions(opscope_onnx PUBLIC OPSCOPE_HAVE_ONNX=1)
  # What touches libonnx and libprotobuf: a module opened on the first ONNX call (proto_module.h),
  # since loading those two libraries cost 2–6 ms of every start-up. Built hidden, like an
  # extension, and linked against no opscope library: its calls into the engine bind to the
  # executable that opens it (which exports opscope's symbols).
  add_library(opscope_onnx_proto MODULE ${OPSCOPE_ONNX_PROTO_SOURCES} app/onnx/onnx_schema_libonnx.cpp)
  target_include_directories(opscope_onnx_proto PRIVATE ${CMAKE_CURRENT_SOURCE_DIR})
  target_link_libraries(opscope_onnx_proto PRIVATE onnx onnx_proto protobuf::libprotobuf)
  target_compile_definitions(opscope_onnx_proto PRIVATE OPSCOPE_EXPORT_VERSION="${PROJECT_VERSION}")
  set_target_properties(opscope_onnx_proto PROPERTIES CXX_VISIBILITY_PRESET hidden VISIBILITY_INLINES_HIDDEN ON
                        LIBRARY_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR})  # beside the executables, where opscope looks first
  # Both sides check the engine's ABI id (cmake/extension.cmake generates it).
  foreach(t opscope_onnx opscope_onnx_proto)
    target_include_directories(${t} PRIVATE ${OPSCOPE_GENERATED_DIR})
    add_dependencies(${t} opscope_extension)
  endforeach()
  set(_opscope_onnx_module ${CMAKE_BINARY_DIR}/${CMAKE_SHARED_MODULE_PREFIX}opscope_onnx_proto${CMAKE_SHARED_MODULE_SUFFIX})
  set_source_files_properties(app/onnx/proto_module.cpp PROPERTIES COMPILE_DEFINITIONS "OPSCOPE_ONNX_BUILT_MODULE=\"${_opscope_onnx_module}\"")
  add_dependencies(opscope_onnx opscope_onnx_proto)  # every program that links the importer finds the module built
  # ... and exports opscope's symbols for it to bind to (as for extensions).
  target_link_options(opscope_onnx INTERFACE -Wl,--dynamic-list=${PROJECT_SOURCE_DIR}/cmake/extension_exports.txt)
  install(TARGETS opscope_onnx_proto LIBRARY DESTINATION lib/opscope)
else()
  add_library(opscope_onnx STATIC app/onnx/unavailable.cpp)
  target_link_libraries(opscope_onnx PUBLIC opscope_core)
endif()
