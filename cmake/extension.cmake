# Extensions: C++/CUDA files compiled at run time into a shared object and loaded into opscope
# (app/extension). Records the toolchain opscope was built with, so an extension is compiled
# with the same compiler and flags against the same headers, and the ABI id that a library
# must carry to be loaded (a hash of the public headers and the ABI-relevant flags).

# The public headers: what an extension includes, what `cmake --install` installs, what the
# ABI id covers.
file(GLOB OPSCOPE_PUBLIC_HEADERS CONFIGURE_DEPENDS RELATIVE ${CMAKE_CURRENT_SOURCE_DIR}
     core/*.h ops/*.h ops/cpu/*.h ops/cuda/*.cuh)
set(OPSCOPE_GENERATED_DIR ${CMAKE_CURRENT_BINARY_DIR}/generated)

# A CMake list as C++ string literals: "a", "b",
function(opscope_c_strings out)
  set(r "")
  foreach(x IN LISTS ARGN)
    string(REPLACE "\\" "\\\\" x "${x}")
    string(REPLACE "\"" "\\\"" x "${x}")
    string(APPEND r "\"${x}\", ")
  endforeach()
  set(${out} "${r}" PARENT_SCOPE)
endfunction()

string(TOUPPER "${CMAKE_BUILD_TYPE}" _opscope_bt)
separate_arguments(_opscope_cxx_flags UNIX_COMMAND "${CMAKE_CXX_FLAGS} ${CMAKE_CXX_FLAGS_${_opscope_bt}}")
# What changes the layout of what crosses between opscope and an extension: the language
# standard, -march (vector widths of inline code), sanitizers. Not the optimisation level.
set(OPSCOPE_ABI_OPTIONS -std=c++20 ${OPSCOPE_CXX_OPTIONS} ${OPSCOPE_INSTRUMENT_OPTIONS})
# Extensions are built hidden: their own functions never interpose on opscope's (or another
# extension's) and only what they call in opscope is looked up in the executable.
set(OPSCOPE_EXTENSION_CXX_FLAGS ${_opscope_cxx_flags} ${OPSCOPE_ABI_OPTIONS} -fPIC -fvisibility=hidden
    ${OPSCOPE_INSTRUMENT_LINK_OPTIONS})
get_target_property(_opscope_eigen_dirs Eigen3::Eigen INTERFACE_INCLUDE_DIRECTORIES)

set(_opscope_nvcc "")
set(_opscope_cuda_flags "")
if(OPSCOPE_CUDA_ENABLED)
  set(_opscope_nvcc ${CMAKE_CUDA_COMPILER})
  separate_arguments(_opscope_cuda_flags UNIX_COMMAND "${CMAKE_CUDA_FLAGS} ${CMAKE_CUDA_FLAGS_${_opscope_bt}}")
  if(CMAKE_CUDA_HOST_COMPILER)
    list(PREPEND _opscope_cuda_flags -ccbin ${CMAKE_CUDA_HOST_COMPILER})
  endif()
  # The same GPU code as opscope's own kernels: "75-real" is SASS only, "90" SASS and PTX.
  foreach(arch IN LISTS CMAKE_CUDA_ARCHITECTURES)
    if(arch MATCHES "^all")
      list(APPEND _opscope_cuda_flags -arch=${arch})
    elseif(arch MATCHES "^([0-9]+)-real$")
      list(APPEND _opscope_cuda_flags --generate-code=arch=compute_${CMAKE_MATCH_1},code=[sm_${CMAKE_MATCH_1}])
    elseif(arch MATCHES "^([0-9]+)-virtual$")
      list(APPEND _opscope_cuda_flags --generate-code=arch=compute_${CMAKE_MATCH_1},code=[compute_${CMAKE_MATCH_1}])
    elseif(arch MATCHES "^([0-9]+)$")
      list(APPEND _opscope_cuda_flags --generate-code=arch=compute_${arch},code=[compute_${arch},sm_${arch}])
    endif()
  endforeach()
  list(APPEND _opscope_cuda_flags -std=c++20 ${OPSCOPE_CUDA_OPTIONS} -Xcompiler=-fPIC,-fvisibility=hidden -cudart static)
endif()

opscope_c_strings(OPSCOPE_EXT_CXX_FLAGS_C ${OPSCOPE_EXTENSION_CXX_FLAGS})
opscope_c_strings(OPSCOPE_EXT_SYSTEM_INCLUDES_C ${_opscope_eigen_dirs})
opscope_c_strings(OPSCOPE_EXT_CUDA_FLAGS_C ${_opscope_cuda_flags})
set(OPSCOPE_EXT_CXX "${CMAKE_CXX_COMPILER}")
set(OPSCOPE_EXT_NVCC "${_opscope_nvcc}")
set(OPSCOPE_EXT_SOURCE_DIR "${CMAKE_CURRENT_SOURCE_DIR}")
configure_file(app/extension/toolchain.cpp.in ${OPSCOPE_GENERATED_DIR}/extension_toolchain.cpp @ONLY)

# The ABI id, at build time: a header edited without re-running CMake changes it too.
list(TRANSFORM OPSCOPE_PUBLIC_HEADERS PREPEND ${CMAKE_CURRENT_SOURCE_DIR}/ OUTPUT_VARIABLE _opscope_header_paths)
string(REPLACE ";" "|" _opscope_headers_arg "${OPSCOPE_PUBLIC_HEADERS}")
string(REPLACE ";" "|" _opscope_abi_options_arg "${OPSCOPE_ABI_OPTIONS}")
add_custom_command(
  OUTPUT ${OPSCOPE_GENERATED_DIR}/opscope_abi.h ${OPSCOPE_GENERATED_DIR}/opscope-abi.cmake
  COMMAND ${CMAKE_COMMAND} -DROOT=${CMAKE_CURRENT_SOURCE_DIR} -DHEADERS=${_opscope_headers_arg}
          -DOPTIONS=${_opscope_abi_options_arg} -DOUT_DIR=${OPSCOPE_GENERATED_DIR} -P ${CMAKE_CURRENT_SOURCE_DIR}/cmake/abi_id.cmake
  DEPENDS ${_opscope_header_paths} ${CMAKE_CURRENT_SOURCE_DIR}/cmake/abi_id.cmake
  COMMENT "opscope: the extension ABI id"
  VERBATIM)

add_library(opscope_extension STATIC
  app/extension/compiler.cpp app/extension/diagnostics.cpp app/extension/loader.cpp
  ${OPSCOPE_GENERATED_DIR}/extension_toolchain.cpp ${OPSCOPE_GENERATED_DIR}/opscope_abi.h)
target_include_directories(opscope_extension PRIVATE ${OPSCOPE_GENERATED_DIR})
target_link_libraries(opscope_extension PUBLIC opscope_core ${CMAKE_DL_LIBS})
target_compile_definitions(opscope_extension PRIVATE OPSCOPE_EXAMPLES_DIR="${OPSCOPE_SHIPPED_DIR}/assets/examples")

# An executable that loads extensions exports opscope's own symbols (namespace opscope only, not
# the libraries linked into it) so an extension's calls into the engine bind to it.
function(opscope_export_for_extensions target)
  target_link_options(${target} PRIVATE -Wl,--dynamic-list=${PROJECT_SOURCE_DIR}/cmake/extension_exports.txt)
  set_property(TARGET ${target} APPEND PROPERTY LINK_DEPENDS ${PROJECT_SOURCE_DIR}/cmake/extension_exports.txt)
endfunction()
