# The Chinese the window's own code can show (string literals of the GUI, the lesson player,
# the exercise feedback), gathered at build time into program_chinese.h, so the font atlas
# bakes those characters before the first frame (viz::GlyphSet) whatever code adds them.
file(GLOB _opscope_gui_sources CONFIGURE_DEPENDS ${CMAKE_CURRENT_SOURCE_DIR}/app/gui/*.cpp ${CMAKE_CURRENT_SOURCE_DIR}/app/gui/*.h
     ${CMAKE_CURRENT_SOURCE_DIR}/app/lesson/*.cpp ${CMAKE_CURRENT_SOURCE_DIR}/viz/*.cpp)
add_custom_command(
  OUTPUT ${OPSCOPE_GENERATED_DIR}/program_chinese.h
  COMMAND python3 ${CMAKE_CURRENT_SOURCE_DIR}/tools/cjk_chars.py ${OPSCOPE_GENERATED_DIR}/program_chinese.h ${_opscope_gui_sources}
  DEPENDS ${_opscope_gui_sources} ${CMAKE_CURRENT_SOURCE_DIR}/tools/cjk_chars.py
  COMMENT "The Chinese characters of the window's own strings"
  VERBATIM)
function(opscope_program_chinese target)
  target_sources(${target} PRIVATE ${OPSCOPE_GENERATED_DIR}/program_chinese.h)
  target_include_directories(${target} PRIVATE ${OPSCOPE_GENERATED_DIR})
endfunction()
