# The browser build's libraries (emcmake cmake -S . -B build-web): the libraries the desktop
# takes from Debian's binary packages are built here with emcc from Debian's *source* packages,
# which tools/setup.sh downloads (apt-get source) into OPSCOPE_DEBIAN_SOURCES. Nothing of their
# code is in the tree; each is unpacked into the build tree and built there. Header-only
# libraries (Eigen, nlohmann-json, CLI11, stb) are used from their Debian packages.
#
# Defines the same targets the desktop build finds with pkg-config/find_package, so that the
# rest of CMakeLists.txt reads the same: Eigen3::Eigen, nlohmann_json::nlohmann_json,
# CLI11::CLI11, PkgConfig::MD4C, PkgConfig::IMGUI, PkgConfig::GVC (+ its plugins), ZLIB::ZLIB.

# What a browser has not: CUDA, the test and benchmark programs (the browser's tests drive the
# site, tools/web_run.sh), mimalloc (Emscripten's own allocator).
set(OPSCOPE_CUDA OFF CACHE STRING "" FORCE)
set(OPSCOPE_TESTS OFF CACHE BOOL "" FORCE)
set(OPSCOPE_BENCH OFF CACHE BOOL "" FORCE)
set(OPSCOPE_MIMALLOC OFF CACHE BOOL "" FORCE)
set(OPSCOPE_SHIPPED_DIR /opscope)  # where the site's packed files are (cmake/web.cmake)
# C++ exceptions are how every error reaches the student: caught, not aborted. 128-bit SIMD:
# every browser that runs WebGL2 and WebAssembly runs it.
add_compile_options(-fexceptions -msimd128)
add_link_options(-fexceptions)
# One thread (platform/web/platform_web.cpp): nothing may pass -pthread.
add_library(Threads::Threads INTERFACE IMPORTED)

enable_language(C)  # zlib, md4c and Graphviz are C
set(OPSCOPE_DEBIAN_SOURCES /usr/local/src/opscope-debian CACHE PATH
    "Where tools/setup.sh put Debian's source packages (apt-get source) for the browser build")
set(_deps ${CMAKE_BINARY_DIR}/_deps)
file(MAKE_DIRECTORY ${_deps})

# Unpacks Debian's upstream tarball of PACKAGE (PACKAGE_VERSION.orig.tar.*) once; sets
# OUT_DIR to the folder it holds.
function(opscope_debian_source package out_var)
  file(GLOB tarballs "${OPSCOPE_DEBIAN_SOURCES}/${package}_*.orig.tar.*")
  if(NOT tarballs)
    message(FATAL_ERROR "The browser build needs Debian's source package '${package}' in ${OPSCOPE_DEBIAN_SOURCES}: "
                        "run tools/setup.sh (it runs apt-get source), or set OPSCOPE_DEBIAN_SOURCES")
  endif()
  list(GET tarballs 0 tarball)
  get_filename_component(name ${tarball} NAME)
  set(stamp ${_deps}/${name}.unpacked)
  if(NOT EXISTS ${stamp})
    file(REMOVE_RECURSE ${_deps}/${package})
    file(ARCHIVE_EXTRACT INPUT ${tarball} DESTINATION ${_deps}/${package})
    file(TOUCH ${stamp})
  endif()
  file(GLOB top LIST_DIRECTORIES true "${_deps}/${package}/*")
  list(LENGTH top n)
  if(NOT n EQUAL 1)
    message(FATAL_ERROR "unexpected layout of ${tarball}")
  endif()
  set(${out_var} ${top} PARENT_SCOPE)
endfunction()

# Header-only libraries: their Debian folders, each behind a folder of its own so that the
# system's /usr/include (glibc's headers) never comes before Emscripten's.
set(_hdr ${_deps}/include)
file(MAKE_DIRECTORY ${_hdr})
foreach(dir nlohmann CLI stb)
  if(NOT EXISTS ${_hdr}/${dir})
    file(CREATE_LINK /usr/include/${dir} ${_hdr}/${dir} SYMBOLIC)
  endif()
endforeach()
add_library(Eigen3::Eigen INTERFACE IMPORTED)
target_include_directories(Eigen3::Eigen SYSTEM INTERFACE /usr/include/eigen3)
add_library(nlohmann_json::nlohmann_json INTERFACE IMPORTED)
target_include_directories(nlohmann_json::nlohmann_json SYSTEM INTERFACE ${_hdr})
add_library(CLI11::CLI11 INTERFACE IMPORTED)
target_include_directories(CLI11::CLI11 SYSTEM INTERFACE ${_hdr})

# Third-party code is built quietly: its warnings are not ours to fix.
set(_third_party_flags -w)

# --- zlib: gzip-compressed IDX files (Fashion-MNIST as Debian ships it) ----------------------
opscope_debian_source(zlib _zlib)
file(GLOB _zlib_sources ${_zlib}/*.c)
list(FILTER _zlib_sources EXCLUDE REGEX "/example\\.c$|/minigzip\\.c$")
add_library(web_zlib STATIC ${_zlib_sources})
target_include_directories(web_zlib SYSTEM PUBLIC ${_zlib})
target_compile_options(web_zlib PRIVATE ${_third_party_flags})
target_compile_definitions(web_zlib PRIVATE HAVE_UNISTD_H)
add_library(ZLIB::ZLIB ALIAS web_zlib)

# --- md4c: the lessons' Markdown --------------------------------------------------------------
opscope_debian_source(md4c _md4c)
add_library(web_md4c STATIC ${_md4c}/src/md4c.c ${_md4c}/src/entity.c)
target_include_directories(web_md4c SYSTEM PUBLIC ${_md4c}/src)
target_compile_options(web_md4c PRIVATE ${_third_party_flags})
add_library(PkgConfig::MD4C ALIAS web_md4c)

# --- Dear ImGui 1.86 (the desktop's version) with its GLFW and OpenGL 3 backends on WebGL2 -----
opscope_debian_source(imgui _imgui)
# The desktop's include layout: <imgui.h> and <backends/imgui_impl_glfw.h>.
add_library(web_imgui STATIC ${_imgui}/imgui.cpp ${_imgui}/imgui_draw.cpp ${_imgui}/imgui_tables.cpp
            ${_imgui}/imgui_widgets.cpp ${_imgui}/misc/cpp/imgui_stdlib.cpp
            ${_imgui}/backends/imgui_impl_glfw.cpp ${_imgui}/backends/imgui_impl_opengl3.cpp)
target_include_directories(web_imgui SYSTEM PUBLIC ${_imgui} ${_imgui}/misc/cpp)
target_compile_definitions(web_imgui PUBLIC IMGUI_IMPL_OPENGL_ES3)
target_compile_options(web_imgui PRIVATE ${_third_party_flags} -sUSE_GLFW=3)
target_link_options(web_imgui INTERFACE -sUSE_GLFW=3 -sUSE_WEBGL2=1 -sMIN_WEBGL_VERSION=2 -sMAX_WEBGL_VERSION=2)
add_library(PkgConfig::IMGUI ALIAS web_imgui)
add_library(PkgConfig::GLFW INTERFACE IMPORTED)  # Emscripten's own GLFW 3 (library_glfw.js)
add_library(OpenGL::GL INTERFACE IMPORTED)       # WebGL2 through Emscripten's GLES 3

# --- expat: Graphviz reads the figures' HTML-like labels with it ------------------------------
# Without it Graphviz cannot read a label written as <...> (a box's "#33 mul" over its shapes)
# and writes the node's name instead (n33): what File > Export figure wrote in the browser.
# expat's own CMake build, cross-compiled.
include(ExternalProject)
opscope_debian_source(expat _expat)
set(_expat_build ${_deps}/expat-build)
ExternalProject_Add(web_expat_build
  SOURCE_DIR ${_expat}/expat
  BINARY_DIR ${_expat_build}
  CMAKE_ARGS -DCMAKE_TOOLCHAIN_FILE=${CMAKE_TOOLCHAIN_FILE} -DCMAKE_BUILD_TYPE=Release -DCMAKE_C_FLAGS=-w
             -DEXPAT_BUILD_TOOLS=OFF -DEXPAT_BUILD_EXAMPLES=OFF -DEXPAT_BUILD_TESTS=OFF -DEXPAT_BUILD_DOCS=OFF
             -DEXPAT_BUILD_FUZZERS=OFF -DEXPAT_SHARED_LIBS=OFF -DEXPAT_BUILD_PKGCONFIG=OFF -DEXPAT_ENABLE_INSTALL=OFF
  INSTALL_COMMAND ""
  BUILD_BYPRODUCTS ${_expat_build}/libexpat.a)

# --- Graphviz 2.42: the dot layout, and the core plugin's SVG writer with nop2 for figures -----
# Graphviz's own CMake build, cross-compiled with this toolchain; only the libraries opscope
# links are built (about 1 minute on two cores). No plugin loading (ltdl), no zlib output.
opscope_debian_source(graphviz _graphviz)
set(_gv_build ${_deps}/graphviz-build)
set(_gv_libs
  lib/gvc/libgvc.a lib/common/libcommon.a lib/cgraph/libcgraph.a lib/cdt/libcdt.a lib/pathplan/libpathplan.a
  lib/xdot/libxdot.a lib/label/liblabel.a lib/pack/libpack.a lib/dotgen/libdotgen.a
  lib/neatogen/libneatogen.a lib/circogen/libcircogen.a lib/fdpgen/libfdpgen.a lib/osage/libosage.a
  lib/patchwork/libpatchwork.a lib/twopigen/libtwopigen.a lib/sparse/libsparse.a lib/rbtree/librbtree.a
  plugin/dot_layout/libgvplugin_dot_layout.a plugin/neato_layout/libgvplugin_neato_layout.a
  plugin/core/libgvplugin_core.a)
list(TRANSFORM _gv_libs PREPEND ${_gv_build}/ OUTPUT_VARIABLE _gv_lib_paths)
ExternalProject_Add(web_graphviz_build
  SOURCE_DIR ${_graphviz}
  BINARY_DIR ${_gv_build}
  CMAKE_ARGS -DCMAKE_TOOLCHAIN_FILE=${CMAKE_TOOLCHAIN_FILE} -DCMAKE_BUILD_TYPE=Release
             "-DCMAKE_C_FLAGS=-w -I${_expat}/expat/lib" -Denable_ltdl=OFF -DLTDL_INCLUDE_DIR=${_deps} -DLTDL_LIBRARY=c -DZLIB_LIBRARY=c
             -Dwith_digcola=OFF -Dwith_ortho=OFF -Dwith_sfdp=OFF -Dwith_smyrna=OFF
             -DEXPAT_INCLUDE_DIR=${_expat}/expat/lib -DEXPAT_LIBRARY=${_expat_build}/libexpat.a
  DEPENDS web_expat_build
  BUILD_COMMAND ${CMAKE_COMMAND} --build ${_gv_build} --target gvc gvplugin_dot_layout gvplugin_neato_layout gvplugin_core
  INSTALL_COMMAND ""
  BUILD_BYPRODUCTS ${_gv_lib_paths})
# Graphviz's public headers as the desktop includes them (<graphviz/gvc.h>): the source folders
# that hold them, and the build folder's generated config.
set(_gv_inc ${_deps}/graphviz-include/graphviz)
file(MAKE_DIRECTORY ${_gv_inc})
foreach(h pack/pack.h gvc/gvc.h gvc/gvcext.h gvc/gvplugin.h gvc/gvplugin_layout.h gvc/gvplugin_render.h gvc/gvplugin_device.h
          gvc/gvplugin_textlayout.h gvc/gvplugin_loadimage.h gvc/gvcjob.h gvc/gvcommon.h gvc/gvconfig.h
          common/types.h common/geom.h common/color.h common/textspan.h common/usershape.h common/arith.h
          cgraph/cgraph.h cdt/cdt.h pathplan/pathgeom.h pathplan/pathplan.h xdot/xdot.h)
  get_filename_component(n ${h} NAME)
  if(NOT EXISTS ${_gv_inc}/${n})
    file(CREATE_LINK ${_graphviz}/lib/${h} ${_gv_inc}/${n} SYMBOLIC)
  endif()
endforeach()
add_library(web_graphviz INTERFACE)
add_dependencies(web_graphviz web_graphviz_build)
target_include_directories(web_graphviz SYSTEM INTERFACE ${_gv_inc} ${_deps}/graphviz-include)
target_link_libraries(web_graphviz INTERFACE -Wl,--start-group ${_gv_lib_paths} -Wl,--end-group ${_expat_build}/libexpat.a)
add_library(PkgConfig::GVC ALIAS web_graphviz)
set(GV_DOT_LAYOUT "")
set(GV_NEATO_LAYOUT "")
set(GV_CORE "")

# --- protobuf (lite) and ONNX's protobuf classes: reading and writing .onnx models ----------
# protobuf's own list of its lite runtime's sources (its cmake/libprotobuf-lite.cmake), built
# here; the classes generated from libonnx-dev's onnx.proto by protoc (protobuf-compiler, the
# same 3.21 release). libonnx itself (operator schemas, the checker) has no source package here:
# app/onnx/onnx_schema_unavailable.cpp stands in for it.
opscope_debian_source(protobuf _protobuf)
set(protobuf_SOURCE_DIR ${_protobuf})
set(protobuf_SHARED_OR_STATIC STATIC)
set(protobuf_VERSION 3.21.12)
include(${_protobuf}/cmake/libprotobuf-lite.cmake)
target_compile_options(libprotobuf-lite PRIVATE ${_third_party_flags})
target_include_directories(libprotobuf-lite SYSTEM PUBLIC ${_protobuf}/src)
find_program(OPSCOPE_PROTOC protoc REQUIRED)
set(_onnx_gen ${_deps}/onnx-generated)
file(MAKE_DIRECTORY ${_onnx_gen}/onnx)
add_custom_command(
  OUTPUT ${_onnx_gen}/onnx/onnx.pb.cc ${_onnx_gen}/onnx/onnx.pb.h
  COMMAND ${CMAKE_COMMAND} -E copy /usr/include/onnx/onnx.proto ${_onnx_gen}/onnx/onnx.proto
  COMMAND ${OPSCOPE_PROTOC} --proto_path=${_onnx_gen} --cpp_out=${_onnx_gen} ${_onnx_gen}/onnx/onnx.proto
  DEPENDS /usr/include/onnx/onnx.proto
  COMMENT "ONNX's protobuf classes from libonnx-dev's onnx.proto"
  VERBATIM)
# <onnx/onnx_pb.h>, as the desktop includes it, naming the classes generated here.
file(WRITE ${_onnx_gen}/onnx/onnx_pb.h "// Generated by cmake/web_deps.cmake: ONNX's classes for the browser build.\n#pragma once\n#include \"onnx/onnx.pb.h\"\n")
add_library(web_onnx_proto STATIC ${_onnx_gen}/onnx/onnx.pb.cc)
target_include_directories(web_onnx_proto SYSTEM PUBLIC ${_onnx_gen})
target_compile_options(web_onnx_proto PRIVATE ${_third_party_flags})
target_link_libraries(web_onnx_proto PUBLIC libprotobuf-lite)
