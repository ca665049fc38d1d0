# gpusim/: the simulated CUDA device `sim`. The kernels of ops/cuda/*.cu, rewritten at build time
# (gpusim/rewrite.cmake: launches and __shared__ declarations become calls, every line kept),
# compiled by the C++ compiler against gpusim/include's stand-in CUDA headers and registered for
# Device::sim. The nvcc build of the same files is untouched. The desktop (GCC) and the browser
# (emcc) differ in three files each: the lanes' fibers, the access hooks with their sites, and
# the device's address range (gpusim/*_desktop.cpp, platform/web/gpusim_*_web.cpp). Not under the
# sanitizers, whose runtime owns the __asan_* names the desktop's access hooks use.
set(OPSCOPE_GPUSIM_ENABLED OFF)
if(OPSCOPE_SANITIZE OR OPSCOPE_FUZZ)
  message(STATUS "opscope: simulated GPU (sim) not built in this configuration")
  return()
endif()
if(EMSCRIPTEN)
  set(_gpusim_platform_sources platform/web/gpusim_fibers_web.cpp platform/web/gpusim_host_web.cpp)
else()
  find_package(boost_context 1.74 CONFIG QUIET)
  execute_process(COMMAND ${CMAKE_CXX_COMPILER} -print-file-name=libbacktrace.a
                  OUTPUT_VARIABLE GPUSIM_BACKTRACE OUTPUT_STRIP_TRAILING_WHITESPACE)
  if(NOT boost_context_FOUND OR NOT CMAKE_CXX_COMPILER_ID STREQUAL "GNU" OR NOT IS_ABSOLUTE "${GPUSIM_BACKTRACE}")
    message(STATUS "opscope: simulated GPU (sim) needs GCC, its libbacktrace and Boost.Context (libboost-context-dev)")
    return()
  endif()
  set(_gpusim_platform_sources gpusim/fibers_desktop.cpp gpusim/host_desktop.cpp)
endif()
set(OPSCOPE_GPUSIM_ENABLED ON)
message(STATUS "opscope: simulated GPU (sim) ON")

set(_gpusim_gen ${CMAKE_BINARY_DIR}/gpusim_src/ops/cuda)
set(_gpusim_kernels backend elementwise reduce matmul softmax norm nn attention conv pool loss resize optimizer fused
    group_norm scatter scan einsum)
set(_gpusim_generated "")
foreach(_h cuda_util.cuh cublas_loader.cuh)
  add_custom_command(OUTPUT ${_gpusim_gen}/${_h}
    COMMAND ${CMAKE_COMMAND} -DIN=${CMAKE_CURRENT_SOURCE_DIR}/ops/cuda/${_h} -DOUT=${_gpusim_gen}/${_h}
            -P ${CMAKE_CURRENT_SOURCE_DIR}/gpusim/rewrite.cmake
    DEPENDS ops/cuda/${_h} gpusim/rewrite.cmake VERBATIM)
  list(APPEND _gpusim_generated ${_gpusim_gen}/${_h})
endforeach()
foreach(_k IN LISTS _gpusim_kernels)
  add_custom_command(OUTPUT ${_gpusim_gen}/${_k}.cu.cpp
    COMMAND ${CMAKE_COMMAND} -DIN=${CMAKE_CURRENT_SOURCE_DIR}/ops/cuda/${_k}.cu -DOUT=${_gpusim_gen}/${_k}.cu.cpp
            -P ${CMAKE_CURRENT_SOURCE_DIR}/gpusim/rewrite.cmake
    DEPENDS ops/cuda/${_k}.cu gpusim/rewrite.cmake VERBATIM)
  list(APPEND _gpusim_generated ${_gpusim_gen}/${_k}.cu.cpp)
endforeach()

# The kernels: every load and store instrumented, at -O1 without vectorisation so the hooks'
# calls are the source's accesses one for one, with line tables so a site is named file:line.
set(_gpusim_kernel_defs __CUDACC__ __CUDA_ARCH__=900)
if(EMSCRIPTEN)
  # clang's sanitizer coverage calls __sanitizer_cov_{load,store}N before each access (`func`:
  # clang instruments nothing without a coverage level; it adds no call of its own); the IR is
  # then rewritten to give each call its site (gpusim/sancov_sites.py) and compiled to an object.
  # No loop unrolling: one site per source access, as on the desktop.
  set(_gpusim_ir_options -std=c++20 -fexceptions -msimd128 -O1 -gline-tables-only -fno-vectorize -fno-slp-vectorize
      -fno-unroll-loops -fsanitize-coverage=func,trace-loads,trace-stores -w)
  set(_gpusim_ir_dir ${CMAKE_BINARY_DIR}/gpusim_ir)
  file(MAKE_DIRECTORY ${_gpusim_ir_dir})
  set(_gpusim_web_objects "")
  foreach(_src IN LISTS _gpusim_generated)
    if(NOT _src MATCHES "\\.cu\\.cpp$")
      continue()
    endif()
    get_filename_component(_name ${_src} NAME)
    set(_ll ${_gpusim_ir_dir}/${_name}.ll)
    set(_obj ${_gpusim_ir_dir}/${_name}.o)
    add_custom_command(OUTPUT ${_ll}
      COMMAND ${CMAKE_CXX_COMPILER_LAUNCHER} ${CMAKE_CXX_COMPILER} ${_gpusim_ir_options}
              "-D$<JOIN:${_gpusim_kernel_defs},;-D>"
              -I${CMAKE_CURRENT_SOURCE_DIR}/gpusim/include -I${_gpusim_gen}
              "-I$<JOIN:$<TARGET_PROPERTY:opscope_core,INTERFACE_INCLUDE_DIRECTORIES>,;-I>"
              -MD -MF ${_ll}.d -S -emit-llvm ${_src} -o ${_ll}
      DEPENDS ${_src} ${_gpusim_gen}/cuda_util.cuh ${_gpusim_gen}/cublas_loader.cuh
      DEPFILE ${_ll}.d
      COMMENT "gpusim: ${_name} to LLVM IR with every access instrumented"
      COMMAND_EXPAND_LISTS VERBATIM)
    add_custom_command(OUTPUT ${_obj}
      COMMAND python3 ${CMAKE_CURRENT_SOURCE_DIR}/gpusim/sancov_sites.py ${_ll} ${_ll}.sites.ll
      COMMAND ${CMAKE_CXX_COMPILER} -c -O1 -fexceptions -msimd128 ${_ll}.sites.ll -o ${_obj}
      DEPENDS ${_ll} ${CMAKE_CURRENT_SOURCE_DIR}/gpusim/sancov_sites.py
      COMMENT "gpusim: ${_name}'s memory instructions named, compiled"
      VERBATIM)
    list(APPEND _gpusim_web_objects ${_obj})
  endforeach()
  add_custom_target(opscope_gpusim_web_kernels DEPENDS ${_gpusim_web_objects})
  # The cuBLAS stand-in's table (host code, not instrumented).
  add_library(opscope_gpusim_kernels OBJECT gpusim/cublas_api.cpp)
  target_include_directories(opscope_gpusim_kernels BEFORE PRIVATE ${CMAKE_CURRENT_SOURCE_DIR}/gpusim/include ${_gpusim_gen})
  target_link_libraries(opscope_gpusim_kernels PRIVATE opscope_core)
  target_compile_definitions(opscope_gpusim_kernels PRIVATE ${_gpusim_kernel_defs})
  set_source_files_properties(gpusim/cublas_api.cpp PROPERTIES OBJECT_DEPENDS "${_gpusim_gen}/cublas_loader.cuh;${_gpusim_gen}/cuda_util.cuh")
  add_dependencies(opscope_gpusim_kernels opscope_gpusim_web_kernels)
else()
  # GCC's kernel-address mode calls __asan_{load,store}N_noabort (gpusim/host_desktop.cpp; no
  # shadow memory: stack and globals not instrumented); no scalar replacement of aggregates,
  # which splits a float4 load into four floats.
  add_library(opscope_gpusim_kernels OBJECT ${_gpusim_generated} gpusim/cublas_api.cpp)
  target_include_directories(opscope_gpusim_kernels BEFORE PRIVATE ${CMAKE_CURRENT_SOURCE_DIR}/gpusim/include ${_gpusim_gen})
  target_link_libraries(opscope_gpusim_kernels PRIVATE opscope_core)
  target_compile_definitions(opscope_gpusim_kernels PRIVATE ${_gpusim_kernel_defs})
  set(_gpusim_kernel_options
    "-O1;-g1;-fno-tree-vectorize;-fno-tree-slp-vectorize;-fno-tree-sra;-fsanitize=kernel-address;--param;asan-instrumentation-with-call-threshold=0;--param;asan-stack=0;--param;asan-globals=0;-Wno-unused-parameter;-Wno-unused-variable"
    CACHE INTERNAL "")
  set_source_files_properties(${_gpusim_generated} PROPERTIES COMPILE_OPTIONS "${_gpusim_kernel_options}")
endif()

# The machine: lanes as fibers, memory, counters, checks, the runtime calls and cuBLAS stand-ins.
add_library(opscope_gpusim_runtime OBJECT gpusim/lanes.cpp gpusim/access.cpp gpusim/races.cpp gpusim/counters.cpp
            gpusim/sites.cpp gpusim/memory.cpp gpusim/cublas_reference.cpp gpusim/reporter.cpp ${_gpusim_platform_sources})
target_include_directories(opscope_gpusim_runtime PRIVATE ${CMAKE_CURRENT_SOURCE_DIR}/gpusim
                           ${CMAKE_CURRENT_SOURCE_DIR}/gpusim/include)
target_link_libraries(opscope_gpusim_runtime PRIVATE opscope_core)

# Linked as object files into everything that links the ops (static registrars included).
target_link_libraries(opscope_ops PUBLIC $<TARGET_OBJECTS:opscope_gpusim_kernels> $<TARGET_OBJECTS:opscope_gpusim_runtime>)
if(EMSCRIPTEN)
  target_link_libraries(opscope_ops PUBLIC ${_gpusim_web_objects})
  add_dependencies(opscope_ops opscope_gpusim_web_kernels)
else()
  target_link_libraries(opscope_gpusim_runtime PRIVATE Boost::context)
  target_link_libraries(opscope_ops PUBLIC Boost::context ${GPUSIM_BACKTRACE})
endif()

# The simulator's own tests: tests/test_gpusim.cpp and the kernels with one defect each
# (tests/gpusim/defects.cu), rewritten and instrumented as ops/cuda's are.
function(opscope_gpusim_tests target)
  set(gen ${CMAKE_BINARY_DIR}/gpusim_src/tests)
  add_custom_command(OUTPUT ${gen}/defects.cu.cpp
    COMMAND ${CMAKE_COMMAND} -DIN=${CMAKE_CURRENT_SOURCE_DIR}/tests/gpusim/defects.cu -DOUT=${gen}/defects.cu.cpp
            -P ${CMAKE_CURRENT_SOURCE_DIR}/gpusim/rewrite.cmake
    DEPENDS tests/gpusim/defects.cu gpusim/rewrite.cmake VERBATIM)
  add_library(opscope_gpusim_test_kernels OBJECT ${gen}/defects.cu.cpp)
  target_include_directories(opscope_gpusim_test_kernels BEFORE PRIVATE ${CMAKE_CURRENT_SOURCE_DIR}/gpusim/include)
  target_link_libraries(opscope_gpusim_test_kernels PRIVATE opscope_core)
  target_compile_definitions(opscope_gpusim_test_kernels PRIVATE __CUDACC__ __CUDA_ARCH__=900)
  set_source_files_properties(${gen}/defects.cu.cpp PROPERTIES COMPILE_OPTIONS "${_gpusim_kernel_options}")
  target_sources(${target} PRIVATE tests/test_gpusim.cpp $<TARGET_OBJECTS:opscope_gpusim_test_kernels>)
endfunction()
