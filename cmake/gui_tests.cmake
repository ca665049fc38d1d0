# GUI tests: real frames of `opscope gui` under xvfb-run (Mesa software GL), checked through
# the state dump and the screenshot's pixels. Only with the GUI and xvfb-run.
if(NOT OPSCOPE_HAVE_GUI)
  return()
endif()
# The window is a module (libopscope_window.so): without it `opscope gui` says what is missing.
add_test(NAME gui_window_module_missing COMMAND sh -c "OPSCOPE_WINDOW_MODULE=/nonexistent/libopscope_window.so $<TARGET_FILE:opscope> gui --frames 1 2>&1")
set_tests_properties(gui_window_module_missing PROPERTIES
  PASS_REGULAR_EXPRESSION "cannot open the window: libopscope_window.so not found.*hint: rebuild opscope")
find_program(XVFB_RUN xvfb-run)
if(NOT XVFB_RUN)
  message(STATUS "opscope: xvfb-run not found, the GUI tests are not registered")
  return()
endif()
add_executable(opscope_gui_tests tests/main.cpp tests/test_gui.cpp)
target_link_libraries(opscope_gui_tests PRIVATE Catch2::Catch2 nlohmann_json::nlohmann_json)
target_include_directories(opscope_gui_tests PRIVATE /usr/include)
target_compile_definitions(opscope_gui_tests PRIVATE OPSCOPE_BIN="$<TARGET_FILE:opscope>"
  OPSCOPE_SOURCE_DIR="${CMAKE_CURRENT_SOURCE_DIR}" OPSCOPE_TEST_OUT="${CMAKE_CURRENT_BINARY_DIR}")
add_dependencies(opscope_gui_tests opscope)
add_test(NAME gui_xvfb COMMAND ${XVFB_RUN} -a -s "-screen 0 1600x1000x24" $<TARGET_FILE:opscope_gui_tests>)
set_tests_properties(gui_xvfb PROPERTIES LABELS viz TIMEOUT 300 ENVIRONMENT "LIBGL_ALWAYS_SOFTWARE=1;ASAN_OPTIONS=detect_leaks=0")  # Mesa and fontconfig keep their caches
