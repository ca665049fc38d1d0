# The human-input scenarios (tests/human/scenarios/*.scn): real clicks, keys, wheel notches and
# pastes, played on the desktop window under its own Xvfb (xdotool's XTEST events) and on the
# site in headless Chromium (DevTools Input events), each on the platforms its `platforms:`
# line names. A failing run keeps its screenshots in BUILD/human/PLATFORM-NAME/. Included by
# tests/CMakeLists.txt with the GUI, after tests/web.cmake (web_site_build).
find_program(OPSCOPE_XVFB Xvfb)
find_program(OPSCOPE_XDOTOOL xdotool)
find_program(OPSCOPE_XCLIP xclip)
find_program(OPSCOPE_IMPORT import)  # ImageMagick: the screenshots
file(GLOB _human_scenarios CONFIGURE_DEPENDS ${CMAKE_CURRENT_SOURCE_DIR}/tests/human/scenarios/*.scn)
foreach(scenario ${_human_scenarios})
  get_filename_component(name ${scenario} NAME_WE)
  file(STRINGS ${scenario} platforms REGEX "^platforms:")
  foreach(platform desktop web)
    if(NOT platforms MATCHES " ${platform}")
      continue()
    endif()
    if(platform STREQUAL "desktop" AND (NOT OPSCOPE_XVFB OR NOT OPSCOPE_XDOTOOL OR NOT OPSCOPE_XCLIP OR NOT OPSCOPE_IMPORT))
      message(STATUS "opscope: human_desktop_${name} needs Xvfb, xdotool, xclip and ImageMagick: not registered")
      continue()
    endif()
    if(platform STREQUAL "web" AND NOT TEST web_site_build)
      continue()
    endif()
    add_test(NAME human_${platform}_${name}
             COMMAND python3 ${CMAKE_CURRENT_SOURCE_DIR}/tests/human/human.py ${scenario} --platform ${platform}
                     --opscope $<TARGET_FILE:opscope> --site ${OPSCOPE_WEB_BUILD_DIR}/site
                     --out ${CMAKE_CURRENT_BINARY_DIR}/human/${platform}-${name})
    # A person's input is timed by frames, and a frame of software GL beside a compiler on the other
    # core takes seconds: every scenario waits for the site's build (the one long compile ctest
    # runs), then one desktop and one browser scenario run side by side (a lock per platform), or
    # a scenario beside one of the short tests. Where the browser tests are not registered, the
    # desktop scenarios run alone.
    set_tests_properties(human_${platform}_${name} PROPERTIES TIMEOUT 300 LABELS "human;${platform}")
    if(TEST web_site_build)
      set_tests_properties(human_${platform}_${name} PROPERTIES FIXTURES_REQUIRED web_site RESOURCE_LOCK human_${platform})
    else()
      set_tests_properties(human_${platform}_${name} PROPERTIES RUN_SERIAL TRUE)
    endif()
  endforeach()
endforeach()
