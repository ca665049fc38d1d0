# The browser build's tests (tests/web/web_tests.py): ctest first builds the site with
# Emscripten (tools/web_build.sh, into BUILD/web; ~14 minutes on two cores from nothing, seconds
# when nothing changed), then runs it in headless Chromium. Registered where emcc and chromium
# are (tools/setup.sh installs both): tests/CMakeLists.txt includes this file there.
set(OPSCOPE_WEB_BUILD_DIR ${CMAKE_CURRENT_BINARY_DIR}/web CACHE PATH "Where ctest builds the browser version (tools/web_build.sh)")
set(_web_build ${OPSCOPE_WEB_BUILD_DIR})
add_test(NAME web_site_build COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/tools/web_build.sh ${_web_build})
# COST: a clean run (CI) starts the site's build first, so the native tests fill the cores
# around its single-threaded link instead of waiting for it at the end.
set_tests_properties(web_site_build PROPERTIES FIXTURES_SETUP web_site TIMEOUT 3600 LABELS web COST 100000)
# The site's packed files hold no exercise's solution (tools/strip_solutions.py withholds them).
add_test(NAME web_site_has_no_solutions
         COMMAND python3 ${CMAKE_CURRENT_SOURCE_DIR}/tools/strip_solutions.py --check ${CMAKE_CURRENT_SOURCE_DIR}/lessons
                 ${_web_build}/site/opscope.data)
set_tests_properties(web_site_has_no_solutions PROPERTIES FIXTURES_REQUIRED web_site LABELS web)
foreach(t script_matches_desktop onnx_backward lesson_1_en lesson_5_zh lesson_7_zh interrupt op_gradcheck matmul_kernels files
          reload_keeps_progress opened_file_survives_reload export_keeps_labels sim_counters gpu_exercise)
  add_test(NAME web_${t} COMMAND python3 ${CMAKE_CURRENT_SOURCE_DIR}/tests/web/web_tests.py ${t}
           --build-dir ${_web_build} --opscope $<TARGET_FILE:opscope>)
  set_tests_properties(web_${t} PROPERTIES FIXTURES_REQUIRED web_site TIMEOUT 600 LABELS web
                       PASS_REGULAR_EXPRESSION "${t}: passed")
endforeach()
# A student on the site the class server serves (`class serve --site`), by a person's input: joins,
# fails then passes an exercise, one attempt queued while the server is down and sent once after
# its restart; the teacher's page shows both (tests/class/class_web_student.py, about 1-2 minutes).
if(OPSCOPE_HAVE_CLASS)
  add_test(NAME class_web_student COMMAND python3 ${CMAKE_CURRENT_SOURCE_DIR}/tests/class/class_web_student.py
           $<TARGET_FILE:opscope> ${_web_build}/site ${CMAKE_CURRENT_BINARY_DIR}/class-web-student)
  set_tests_properties(class_web_student PROPERTIES FIXTURES_REQUIRED web_site TIMEOUT 400 LABELS "web;human"
                       RESOURCE_LOCK human_web PASS_REGULAR_EXPRESSION "class web student: ok"
                       ENVIRONMENT "OPSCOPE_LESSONS=${CMAKE_CURRENT_SOURCE_DIR}/lessons;XDG_CONFIG_HOME=${CMAKE_CURRENT_BINARY_DIR}/class-config")
endif()
