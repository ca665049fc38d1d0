# The class server (`opscope class`, app/class/): a module, libopscope_class.so, opened on first
# use, so that the executable maps neither cpp-httplib (Debian's is a shared library with OpenSSL,
# zlib and brotli under it) nor SQLite. Never in the browser build.
if(NOT EMSCRIPTEN)
  pkg_check_modules(HTTPLIB IMPORTED_TARGET cpp-httplib)
  pkg_check_modules(SQLITE3 IMPORTED_TARGET sqlite3)
  if(HTTPLIB_FOUND AND SQLITE3_FOUND)
    set(OPSCOPE_HAVE_CLASS ON)
    add_library(opscope_class MODULE app/class/class_module_entry.cpp app/class/server.cpp app/class/class_init.cpp
                app/class/secrets.cpp app/class/store.cpp
                app/class/grader_child.cpp app/class/grading_pool.cpp app/class/summary.cpp app/class/teacher_page.cpp)
    target_include_directories(opscope_class PRIVATE ${CMAKE_CURRENT_SOURCE_DIR} ${OPSCOPE_GENERATED_DIR})
    target_link_libraries(opscope_class PRIVATE PkgConfig::HTTPLIB PkgConfig::SQLITE3 nlohmann_json::nlohmann_json Threads::Threads)
    set_target_properties(opscope_class PROPERTIES LIBRARY_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR})
    add_dependencies(opscope_class opscope_extension)  # opscope_abi.h
    target_sources(opscope PRIVATE app/class/class_command.cpp)
    target_include_directories(opscope PRIVATE ${OPSCOPE_GENERATED_DIR})
    set_source_files_properties(app/class/class_command.cpp PROPERTIES COMPILE_DEFINITIONS
      "OPSCOPE_CLASS_BUILT_MODULE=\"${CMAKE_BINARY_DIR}/${CMAKE_SHARED_MODULE_PREFIX}opscope_class${CMAKE_SHARED_MODULE_SUFFIX}\"")
    target_compile_definitions(opscope PRIVATE OPSCOPE_HAVE_CLASS=1)
    add_dependencies(opscope opscope_class)
    install(TARGETS opscope_class LIBRARY DESTINATION lib/opscope)
  else()
    message(STATUS "opscope: no class server (install libcpp-httplib-dev and libsqlite3-dev)")
  endif()
endif()

if(OPSCOPE_HAVE_CLASS AND OPSCOPE_TESTS)
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
endif()

if(OPSCOPE_HAVE_CLASS AND OPSCOPE_TESTS)
  # The server's parts without the server (tests/test_class.cpp): a small executable of its own,
  # so that opscope_tests links no SQLite (about 1 s).
  add_executable(opscope_class_tests tests/test_class.cpp tests/main.cpp app/class/grader_child.cpp app/class/store.cpp
                 app/class/summary.cpp)
  target_include_directories(opscope_class_tests PRIVATE ${CMAKE_CURRENT_SOURCE_DIR})
  target_link_libraries(opscope_class_tests PRIVATE PkgConfig::SQLITE3 nlohmann_json::nlohmann_json Catch2::Catch2 Threads::Threads)
  add_test(NAME class_unit COMMAND opscope_class_tests "[class]")
endif()
