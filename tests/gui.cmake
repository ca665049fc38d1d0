# GUI tests: real frames of `opscope gui` under xvfb-run (Mesa software GL), checked through
# the state dump and the screenshot's pixels. Included by tests/CMakeLists.txt with the GUI and
# xvfb-run (XVFB_RUN).
add_executable(opscope_gui_tests tests/test_gui.cpp)
target_link_libraries(opscope_gui_tests PRIVATE opscope_catch_main nlohmann_json::nlohmann_json)
target_include_directories(opscope_gui_tests PRIVATE /usr/include)
target_compile_definitions(opscope_gui_tests PRIVATE OPSCOPE_BIN="$<TARGET_FILE:opscope>"
  OPSCOPE_SOURCE_DIR="${CMAKE_CURRENT_SOURCE_DIR}" OPSCOPE_TEST_OUT="${CMAKE_CURRENT_BINARY_DIR}")
add_dependencies(opscope_gui_tests opscope)
add_test(NAME gui_xvfb COMMAND ${XVFB_RUN} -a -s "-screen 0 1600x1000x24" $<TARGET_FILE:opscope_gui_tests>)
set_tests_properties(gui_xvfb PROPERTIES LABELS viz TIMEOUT 300 ENVIRONMENT "LIBGL_ALWAYS_SOFTWARE=1;ASAN_OPTIONS=detect_leaks=0")  # Mesa and fontconfig keep their caches
# The GUI opens a lesson, runs it to the end ("lesson all" fails unless it gets there) and
# screenshots it, under xvfb-run with Mesa's software GL.
add_test(NAME gui_lesson COMMAND ${XVFB_RUN} -a -s "-screen 0 1600x1000x24" $<TARGET_FILE:opscope> gui --lesson 4
         --frames 6 --actions "lesson all" --screenshot ${CMAKE_CURRENT_BINARY_DIR}/gui_lesson.png)
set_tests_properties(gui_lesson PROPERTIES LABELS viz TIMEOUT 300 ENVIRONMENT
  "LIBGL_ALWAYS_SOFTWARE=1;OPSCOPE_LESSONS=${CMAKE_CURRENT_SOURCE_DIR}/lessons;XDG_CONFIG_HOME=${CMAKE_CURRENT_BINARY_DIR}/lesson-config")
# An exercise in the lesson panel: a failed attempt's feedback and a hint, presented at 150 %.
add_test(NAME gui_exercise COMMAND sh ${CMAKE_CURRENT_SOURCE_DIR}/tests/cli/gui_exercise.sh ${XVFB_RUN}
         $<TARGET_FILE:opscope> ${CMAKE_CURRENT_SOURCE_DIR}/lessons ${CMAKE_CURRENT_BINARY_DIR}/gui_exercise.png)
set_tests_properties(gui_exercise PROPERTIES LABELS viz TIMEOUT 300 PASS_REGULAR_EXPRESSION "gui exercise: ok")
