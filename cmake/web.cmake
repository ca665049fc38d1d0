# The browser's program and its site (included by app/CMakeLists.txt in the Emscripten build):
# the same opscope executable, with the window, Graphviz's figures and the lesson panel linked
# in (the desktop opens them as modules), and build-web/site/ around it: index.html, the
# program (.js + .wasm), the files it ships packed into one .data file, and a service worker
# that keeps the page working offline once it has been loaded. Copy site/ to any static web
# server (or run tools/serve_web.sh) and open index.html.

# --- what the desktop's window module holds, linked into the one program ------------------------
target_sources(opscope PRIVATE app/gui/window_module.cpp app/gui/window_module_entry.cpp viz/figure_module_entry.cpp)
set_source_files_properties(app/gui/window_module.cpp PROPERTIES COMPILE_DEFINITIONS "OPSCOPE_WINDOW_BUILT_MODULE=\"\"")
target_compile_definitions(opscope PRIVATE OPSCOPE_HAVE_GUI=1)
target_link_libraries(opscope PRIVATE opscope_lesson_gui opscope_gui opscope_viz_gui opscope_platform_window opscope_graphviz)
# The window's side of the seam hands the browser's clipboard, wheel and input methods to ImGui
# (platform/web/window_web.cpp), as ImGui's own GLFW backend does on the desktop.
target_link_libraries(opscope_platform_window PRIVATE PkgConfig::IMGUI)
if(OPSCOPE_HAVE_ONNX)  # the ONNX module's protobuf side, linked in
  target_link_libraries(opscope PRIVATE opscope_onnx_proto)
endif()

# --- the files the program reads, packed at the paths it reads them from --------------------------
set(OPSCOPE_SITE_DIR ${CMAKE_BINARY_DIR}/site)
set(_packed ${CMAKE_BINARY_DIR}/packed)
# Fashion-MNIST: the test set whole and the first 10,000 training images (Debian's files), so
# that fashion_mnist("train") works in the page; File > Open takes the full files.
set(_fashion /usr/share/datasets/fashion-mnist)
set(_fashion_out ${_packed}/fashion-mnist)
add_custom_command(
  OUTPUT ${_fashion_out}/train-images-idx3-ubyte.gz ${_fashion_out}/train-labels-idx1-ubyte.gz
         ${_fashion_out}/t10k-images-idx3-ubyte.gz ${_fashion_out}/t10k-labels-idx1-ubyte.gz
  COMMAND python3 ${CMAKE_SOURCE_DIR}/tools/idx_subset.py ${_fashion} ${_fashion_out} --train 10000
  DEPENDS ${CMAKE_SOURCE_DIR}/tools/idx_subset.py
  COMMENT "Fashion-MNIST for the site: the test set and 10,000 training images"
  VERBATIM)
add_custom_target(web_fashion_subset DEPENDS ${_fashion_out}/train-images-idx3-ubyte.gz)
add_dependencies(opscope web_fashion_subset)
# The lessons without their exercises' solutions (a site's files are anyone's to read; the
# desktop app's lessons and the class server keep them): tools/strip_solutions.py.
file(GLOB_RECURSE _lesson_files CONFIGURE_DEPENDS ${CMAKE_SOURCE_DIR}/lessons/*)
set(_lessons_out ${_packed}/lessons)
add_custom_command(
  OUTPUT ${_lessons_out}/README.md
  COMMAND python3 ${CMAKE_SOURCE_DIR}/tools/strip_solutions.py ${CMAKE_SOURCE_DIR}/lessons ${_lessons_out}
  DEPENDS ${CMAKE_SOURCE_DIR}/tools/strip_solutions.py ${_lesson_files}
  COMMENT "The lessons for the site, their solutions withheld"
  VERBATIM)
add_custom_target(web_lessons_stripped DEPENDS ${_lessons_out}/README.md)
add_dependencies(opscope web_lessons_stripped)
set(_fonts /usr/share/fonts/truetype)
set(_preload
  ${_lessons_out}@${OPSCOPE_SHIPPED_DIR}/lessons
  ${CMAKE_SOURCE_DIR}/assets@${OPSCOPE_SHIPPED_DIR}/assets
  ${CMAKE_SOURCE_DIR}/ops/cuda@${OPSCOPE_SHIPPED_DIR}/ops/cuda  # the warp view shows a kernel's source lines
  ${_fonts}/dejavu/DejaVuSans.ttf@${_fonts}/dejavu/DejaVuSans.ttf
  ${_fonts}/dejavu/DejaVuSansMono.ttf@${_fonts}/dejavu/DejaVuSansMono.ttf
  ${_fonts}/wqy/wqy-microhei.ttc@${_fonts}/wqy/wqy-microhei.ttc
  ${_fashion_out}@${_fashion})
foreach(p IN LISTS _preload)
  target_link_options(opscope PRIVATE "SHELL:--preload-file ${p}")
endforeach()
# The packed files change without the program's sources changing: relink then.
file(GLOB_RECURSE _shipped CONFIGURE_DEPENDS ${CMAKE_SOURCE_DIR}/lessons/* ${CMAKE_SOURCE_DIR}/assets/*)
set_property(TARGET opscope APPEND PROPERTY LINK_DEPENDS ${_shipped})

# --- the program -------------------------------------------------------------------------------
# Asyncify: a long statement draws frames between its steps (platform/web/window_web.cpp), so
# the call stack from main() to the frame is suspended and resumed; its saved stack must hold
# the interpreter's deepest recursion. JavaScript-based C++ exceptions (Asyncify cannot yet
# suspend through WebAssembly's own). One thread: see platform_web.cpp.
target_link_options(opscope PRIVATE
  -sASYNCIFY=1 -sASYNCIFY_STACK_SIZE=1048576
  -sALLOW_MEMORY_GROWTH=1 -sINITIAL_MEMORY=134217728 -sMAXIMUM_MEMORY=4294967296 -sTOTAL_STACK=16777216
  -sDISABLE_EXCEPTION_CATCHING=0 -sFORCE_FILESYSTEM=1 -lidbfs.js
  "SHELL:-sEXPORTED_RUNTIME_METHODS=['FS','IDBFS','ENV','UTF8ToString','stringToNewUTF8']"
  -sENVIRONMENT=web -sEXIT_RUNTIME=0)
# Asyncify instruments every function that may reach an indirect call, then all their callers.
# operator new's is to the new-handler, which opscope never sets: it cannot suspend, and neither
# can the many functions that were instrumented only because they allocate (ASYNCIFY_ADVISE=1
# lists each instrumented function with its reason).
target_link_options(opscope PRIVATE "-sASYNCIFY_REMOVE=@${CMAKE_SOURCE_DIR}/platform/web/asyncify_remove.txt")
set_property(TARGET opscope APPEND PROPERTY LINK_DEPENDS ${CMAKE_SOURCE_DIR}/platform/web/asyncify_remove.txt)
# Cheaper calls between the program and JavaScript: Emscripten's exception trampolines call
# the table directly, Asyncify's export wrappers step aside for nested calls (fast_calls.js).
target_link_options(opscope PRIVATE "SHELL:--post-js ${CMAKE_SOURCE_DIR}/platform/web/fast_calls.js")
set_property(TARGET opscope APPEND PROPERTY LINK_DEPENDS ${CMAKE_SOURCE_DIR}/platform/web/fast_calls.js)
# The function map (index: name) that bench/bench_web.py --profile names Chromium's samples by
# (the shipped .wasm has no names section); written beside site/, not in it.
target_link_options(opscope PRIVATE --emit-symbol-map)
set_target_properties(opscope PROPERTIES SUFFIX ".js" RUNTIME_OUTPUT_DIRECTORY ${OPSCOPE_SITE_DIR})

# --- the page around it --------------------------------------------------------------------------
set(_site_sources index.html site.js class_client.js site.css)
foreach(f IN LISTS _site_sources)
  configure_file(${CMAKE_SOURCE_DIR}/platform/web/${f} ${OPSCOPE_SITE_DIR}/${f} COPYONLY)
endforeach()
# The service worker names its cache after what it caches, so a new build replaces the old:
# written again when any of them changes (site.js alone too, which relinks nothing).
list(TRANSFORM _site_sources PREPEND ${CMAKE_SOURCE_DIR}/platform/web/ OUTPUT_VARIABLE _site_source_paths)
add_custom_command(OUTPUT ${OPSCOPE_SITE_DIR}/sw.js
  COMMAND ${CMAKE_COMMAND} -DSITE=${OPSCOPE_SITE_DIR} -DTEMPLATE=${CMAKE_SOURCE_DIR}/platform/web/sw.js
          -P ${CMAKE_SOURCE_DIR}/cmake/web_site.cmake
  DEPENDS opscope ${_site_source_paths} ${CMAKE_SOURCE_DIR}/platform/web/sw.js ${CMAKE_SOURCE_DIR}/cmake/web_site.cmake
  COMMENT "The site's service worker, versioned by the files it caches"
  VERBATIM)
add_custom_target(web_service_worker ALL DEPENDS ${OPSCOPE_SITE_DIR}/sw.js)
# The big files compressed beside themselves (opscope.wasm.gz, .br where Debian's brotli is
# installed): a server that serves such copies (tools/serve_web.sh, nginx's gzip_static) sends
# about half the bytes (the .data file holds fonts and already-compressed Fashion-MNIST).
# brotli -q 9: a tenth of -q 11's minute for 15 % more bytes of WebAssembly.
find_program(OPSCOPE_GZIP gzip REQUIRED)
find_program(OPSCOPE_BROTLI brotli)
set(_compressed opscope.wasm opscope.data opscope.js)
set(_compress COMMAND ${OPSCOPE_GZIP} -9 -n -k -f ${_compressed})
if(OPSCOPE_BROTLI)
  list(APPEND _compress COMMAND ${OPSCOPE_BROTLI} -q 9 -k -f ${_compressed})
else()
  message(STATUS "opscope: no brotli (Debian's package): the site's files are compressed with gzip only")
endif()
add_custom_command(TARGET opscope POST_BUILD ${_compress}
  COMMAND ${CMAKE_COMMAND} -E rename opscope.js.symbols ${CMAKE_BINARY_DIR}/opscope.symbols
  WORKING_DIRECTORY ${OPSCOPE_SITE_DIR}
  COMMENT "The site's big files, compressed beside themselves"
  VERBATIM)
message(STATUS "opscope: the browser build's site: ${OPSCOPE_SITE_DIR}")
