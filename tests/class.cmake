# The class server's tests (app/class/); included by tests/CMakeLists.txt when the server is built.
# The test contract on a free loopback port, with the real grader (about 3 s).
set(_opscope_class_env "OPSCOPE_LESSONS=${CMAKE_CURRENT_SOURCE_DIR}/lessons;XDG_CONFIG_HOME=${CMAKE_CURRENT_BINARY_DIR}/class-config")
add_test(NAME class_contract COMMAND python3 ${CMAKE_CURRENT_SOURCE_DIR}/tests/class/class_contract.py
         $<TARGET_FILE:opscope> ${CMAKE_CURRENT_SOURCE_DIR}/tests/exercises)
# 50 students × 4 attempts at once, the server killed (SIGKILL) a third of the way and restarted:
# none lost, none twice, all graded.
add_test(NAME class_kill COMMAND python3 ${CMAKE_CURRENT_SOURCE_DIR}/tests/class/class_load.py
         $<TARGET_FILE:opscope> ${CMAKE_CURRENT_SOURCE_DIR}/tests/exercises 50 4 2 --kill --grade-timeout 120)
set_tests_properties(class_contract class_kill PROPERTIES ENVIRONMENT "${_opscope_class_env}" TIMEOUT 240)
set_tests_properties(class_contract PROPERTIES PASS_REGULAR_EXPRESSION "class contract: ok")
# Without the module, `opscope class` says which file is missing and how to get it.
add_test(NAME cli_class_module_missing COMMAND sh -c "OPSCOPE_CLASS_MODULE=/nonexistent/libopscope_class.so $<TARGET_FILE:opscope> class init ${CMAKE_CURRENT_BINARY_DIR}/no-class --name x 2>&1")
set_tests_properties(cli_class_module_missing PROPERTIES
  PASS_REGULAR_EXPRESSION "cannot start the class server: libopscope_class.so not found.*hint: rebuild opscope")
set_tests_properties(class_kill PROPERTIES PASS_REGULAR_EXPRESSION "class load: ok")
find_program(OPSCOPE_CHROMIUM_FOR_CLASS NAMES chromium chromium-browser)
if(OPSCOPE_CHROMIUM_FOR_CLASS)  # the teacher's page in headless Chromium, screenshots in the build tree
  add_test(NAME class_teacher_page COMMAND python3 ${CMAKE_CURRENT_SOURCE_DIR}/tests/class/class_page.py
           $<TARGET_FILE:opscope> ${CMAKE_CURRENT_SOURCE_DIR}/tests/exercises ${CMAKE_CURRENT_BINARY_DIR}/class-page)
  set_tests_properties(class_teacher_page PROPERTIES ENVIRONMENT "${_opscope_class_env};OPSCOPE_CHROMIUM=${OPSCOPE_CHROMIUM_FOR_CLASS}"
                       TIMEOUT 240 PASS_REGULAR_EXPRESSION "class page: ok")
endif()

# The server's parts without the server (tests/test_class.cpp): a small executable of its own,
# so that opscope_tests links no SQLite (about 1 s).
add_executable(opscope_class_tests tests/test_class.cpp app/class/grader_child.cpp app/class/store.cpp
               app/class/summary.cpp)
target_include_directories(opscope_class_tests PRIVATE ${CMAKE_CURRENT_SOURCE_DIR})
target_link_libraries(opscope_class_tests PRIVATE opscope_catch_main PkgConfig::SQLITE3 nlohmann_json::nlohmann_json Threads::Threads)
add_test(NAME class_unit COMMAND opscope_class_tests "[class]")
