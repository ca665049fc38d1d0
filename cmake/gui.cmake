# Graphviz (layout in memory, SVG/PNG export) and the GUI (Dear ImGui + GLFW + OpenGL 3).
# Sets OPSCOPE_HAVE_GRAPHVIZ and OPSCOPE_HAVE_GUI. Everything else builds without them.
set(OPSCOPE_HAVE_GRAPHVIZ OFF)
set(OPSCOPE_HAVE_GUI OFF)
if(OPSCOPE_GUI STREQUAL "OFF")
  return()
endif()
if(EMSCRIPTEN)  # built from Debian's sources (cmake/web_deps.cmake)
  set(GVC_FOUND ON)
  set(IMGUI_FOUND ON)
  set(GLFW_FOUND ON)
  set(OpenGL_FOUND ON)
else()
  find_package(PkgConfig)
endif()
if(PkgConfig_FOUND AND NOT EMSCRIPTEN)
  pkg_check_modules(GVC IMPORTED_TARGET libgvc)
  pkg_check_modules(IMGUI IMPORTED_TARGET imgui)
  pkg_check_modules(GLFW IMPORTED_TARGET glfw3)
endif()
if(NOT EMSCRIPTEN)
  set(OpenGL_GL_PREFERENCE GLVND)
  find_package(OpenGL)
endif()

# The layout and renderer plugins are linked directly (no plugin discovery through config6a).
if(GVC_FOUND)
  find_library(GV_DOT_LAYOUT gvplugin_dot_layout PATHS ${GVC_LIBDIR}/graphviz NO_DEFAULT_PATH)
  find_library(GV_NEATO_LAYOUT gvplugin_neato_layout PATHS ${GVC_LIBDIR}/graphviz NO_DEFAULT_PATH)
  find_library(GV_CORE gvplugin_core PATHS ${GVC_LIBDIR}/graphviz NO_DEFAULT_PATH)
  find_library(GV_PANGO gvplugin_pango PATHS ${GVC_LIBDIR}/graphviz NO_DEFAULT_PATH)
endif()
if(EMSCRIPTEN OR (GVC_FOUND AND GV_DOT_LAYOUT AND GV_NEATO_LAYOUT AND GV_CORE AND GV_PANGO))
  set(OPSCOPE_HAVE_GRAPHVIZ ON)
  add_library(opscope_graphviz STATIC viz/palette.cpp viz/graphviz.cpp viz/graph_layout.cpp viz/layout_plan.cpp viz/scope_layout.cpp viz/scope_tree.cpp viz/layout_lanes.cpp viz/layout_wrap.cpp viz/layout_job.cpp viz/layout_queue.cpp viz/graph_figure.cpp viz/layout_metrics.cpp viz/edge_router.cpp viz/figure_export.cpp viz/concept_map_layout.cpp)
  # The pango renderer is opened on first use (viz/graphviz.cpp): not linked, it keeps its ~30
  # libraries out of every start of opscope.
  target_link_libraries(opscope_graphviz PUBLIC opscope_viz opscope_core PkgConfig::GVC ${GV_DOT_LAYOUT} ${GV_NEATO_LAYOUT} ${GV_CORE} ${CMAKE_DL_LIBS})
  if(GV_PANGO)  # PNG: Graphviz's cairo renderer; the browser draws PNGs from the SVG itself
    get_filename_component(OPSCOPE_GV_PANGO_REAL ${GV_PANGO} REALPATH)
    set_source_files_properties(viz/graphviz.cpp PROPERTIES COMPILE_DEFINITIONS "OPSCOPE_GV_PANGO_LIBRARY=\"${OPSCOPE_GV_PANGO_REAL}\"")
  endif()
  # One program in the browser: the figures' module is linked in (cmake/web.cmake).
  if(NOT EMSCRIPTEN)
    # The same code as a shared library for the opscope command, libopscope_figures.so
    # (viz/figure_module.h): the archive whole with Graphviz's libraries, none of opscope's engine
    # (the executable's). The window module links it; `export --svg` opens it.
    set_target_properties(opscope_graphviz PROPERTIES POSITION_INDEPENDENT_CODE ON)
    add_library(opscope_figures SHARED viz/figure_module_entry.cpp)
    target_include_directories(opscope_figures PRIVATE ${CMAKE_CURRENT_SOURCE_DIR} ${OPSCOPE_GENERATED_DIR})
    target_link_libraries(opscope_figures PRIVATE -Wl,--whole-archive $<TARGET_FILE:opscope_graphviz> -Wl,--no-whole-archive
                          PkgConfig::GVC ${GV_DOT_LAYOUT} ${GV_NEATO_LAYOUT} ${GV_CORE} ${CMAKE_DL_LIBS})
    add_dependencies(opscope_figures opscope_graphviz opscope_extension)
    set_target_properties(opscope_figures PROPERTIES LIBRARY_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR}
                          LINK_DEPENDS $<TARGET_FILE:opscope_graphviz>)
    install(TARGETS opscope_figures LIBRARY DESTINATION lib/opscope)
  endif()
endif()

if(OPSCOPE_HAVE_GRAPHVIZ AND IMGUI_FOUND AND GLFW_FOUND AND OpenGL_FOUND)
  set(OPSCOPE_HAVE_GUI ON)
  # viz: the panels (ImGui draw lists); they read the graph and step events, never app/.
  add_library(opscope_viz_gui STATIC viz/theme.cpp viz/graph_view.cpp viz/inspector.cpp viz/memory_panel.cpp viz/step_log.cpp
    viz/metrics_panel.cpp viz/concept_map.cpp viz/words.cpp
    viz/kernel_lab_chart.cpp viz/warp_view.cpp)
  target_link_libraries(opscope_viz_gui PUBLIC opscope_graphviz opscope_viz opscope_core PkgConfig::IMGUI)
  # platform: the window's side of the seam (platform/window.h).
  if(EMSCRIPTEN)
    add_library(opscope_platform_window STATIC platform/web/window_web.cpp)
  else()
    add_library(opscope_platform_window STATIC platform/desktop/window_desktop.cpp)
  endif()
  target_link_libraries(opscope_platform_window PUBLIC opscope_platform PkgConfig::GLFW)
  # app: the window, main loop, console, step controls and headless driving.
  add_library(opscope_gui STATIC app/gui/gui_app.cpp app/gui/layout_driver.cpp app/gui/panels.cpp app/gui/actions.cpp app/gui/recompute_compare.cpp app/gui/open_model.cpp app/gui/workspace_journal.cpp app/gui/widget_rects.cpp app/gui/key_hold.cpp
    app/gui/kernel_lab_state.cpp app/gui/kernel_lab_panel.cpp)
  target_link_libraries(opscope_gui PUBLIC opscope_viz_gui opscope_app opscope_platform_window PkgConfig::GLFW OpenGL::GL ${CMAKE_DL_LIBS})
  # The warp view shows each access's source line: where the kernels' .cu files are shipped.
  set_source_files_properties(app/gui/kernel_lab_state.cpp PROPERTIES COMPILE_DEFINITIONS OPSCOPE_KERNELS_DIR="${OPSCOPE_SHIPPED_DIR}/ops/cuda")
  if(EMSCRIPTEN)  # GLFW's header includes WebGL2's GLES 3 headers
    target_compile_definitions(opscope_gui PRIVATE GLFW_INCLUDE_ES3)
  endif()
elseif(OPSCOPE_GUI STREQUAL "ON")
  message(FATAL_ERROR "OPSCOPE_GUI=ON needs libimgui-dev, libglfw3-dev, libgraphviz-dev and OpenGL (tools/setup.sh installs them)")
endif()
message(STATUS "opscope: Graphviz ${OPSCOPE_HAVE_GRAPHVIZ}, GUI ${OPSCOPE_HAVE_GUI}")
