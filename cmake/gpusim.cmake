# gpusim/: the simulated CUDA device `sim`. The kernels of ops/cuda/*.cu, rewritten at build time
# (gpusim/rewrite.cmake: launches and __shared__ declarations become calls, every line kept),
# compiled by the C++ compiler against gpusim/include's stand-in CUDA headers and registered for
# Device::sim. The nvcc build of the same files is untouched. Native builds only for now (the
# browser build is a later step); not under the sanitizers, whose runtime owns the __asan_* names
# the simulator's access hooks use.
set(OPSCOPE_GPUSIM_ENABLED OFF)
if(EMSCRIPTEN OR OPSCOPE_SANITIZE OR OPSCOPE_FUZZ)
  message(STATUS "opscope: simulated GPU (sim) not built in this configuration")
  return()
endif()
find_package(boost_context 1.74 CONFIG QUIET)
execute_process(COMMAND ${CMAKE_CXX_COMPILER} -print-file-name=libbacktrace.a
                OUTPUT_VARIABLE GPUSIM_BACKTRACE OUTPUT_STRIP_TRAILING_WHITESPACE)
if(NOT boost_context_FOUND OR NOT CMAKE_CXX_COMPILER_ID STREQUAL "GNU" OR NOT IS_ABSOLUTE "${GPUSIM_BACKTRACE}")
  message(STATUS "opscope: simulated GPU (sim) needs GCC, its libbacktrace and Boost.Context (libboost-context-dev)")
  return()
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

# The kernels: every load and store instrumented (GCC's kernel-address mode calls
# __asan_{load,store}N_noabort, gpusim/access.cpp; no shadow memory: stack and globals not
# instrumented), -O1 without vectorisation so the calls are the source's accesses one for one
# (and without scalar replacement of aggregates, which splits a float4 load into four floats),
# line tables (-g1) so a site is named file:line.
add_library(opscope_gpusim_kernels OBJECT ${_gpusim_generated} gpusim/cublas_api.cpp)
target_include_directories(opscope_gpusim_kernels BEFORE PRIVATE ${CMAKE_CURRENT_SOURCE_DIR}/gpusim/include ${_gpusim_gen})
target_link_libraries(opscope_gpusim_kernels PRIVATE opscope_core)
target_compile_definitions(opscope_gpusim_kernels PRIVATE __CUDACC__ __CUDA_ARCH__=900)
set(_gpusim_kernel_options
  "-O1;-g1;-fno-tree-vectorize;-fno-tree-slp-vectorize;-fno-tree-sra;-fsanitize=kernel-address;--param;asan-instrumentation-with-call-threshold=0;--param;asan-stack=0;--param;asan-globals=0;-Wno-unused-parameter;-Wno-unused-variable"
  CACHE INTERNAL "")
set_source_files_properties(${_gpusim_generated} PROPERTIES COMPILE_OPTIONS "${_gpusim_kernel_options}")

# The machine: lanes as fibers, memory, counters, checks, the runtime calls and cuBLAS stand-ins.
add_library(opscope_gpusim_runtime OBJECT gpusim/lanes.cpp gpusim/access.cpp gpusim/races.cpp gpusim/counters.cpp
            gpusim/memory.cpp gpusim/cublas_reference.cpp gpusim/reporter.cpp gpusim/trace.cpp)
target_include_directories(opscope_gpusim_runtime PRIVATE ${CMAKE_CURRENT_SOURCE_DIR}/gpusim
                           ${CMAKE_CURRENT_SOURCE_DIR}/gpusim/include)
target_link_libraries(opscope_gpusim_runtime PRIVATE opscope_core Boost::context)

# Linked as object files into everything that links the ops (static registrars included).
target_link_libraries(opscope_ops PUBLIC $<TARGET_OBJECTS:opscope_gpusim_kernels> $<TARGET_OBJECTS:opscope_gpusim_runtime>
                      Boost::context ${GPUSIM_BACKTRACE})

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
