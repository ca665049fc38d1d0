# The hot CPU kernels of ops/cpu/, built once per instruction set (see ops/cpu/kernels.h) and
# added to opscope_ops: the x86-64-v3 baseline always, AVX-512 (x86-64-v4) when the compiler
# can target it. Each build becomes one relocatable object whose only global symbol is its
# table's entry point, so no inline function or template of one build (Eigen's, the standard
# library's) can be picked by the linker for the other: `ld -r --force-group-allocation`
# dissolves the COMDAT groups and `objcopy --keep-global-symbol` makes everything else local.
# Also finds OpenBLAS (loaded at run time, see ops/blas.cpp).
set(OPSCOPE_CPU_KERNEL_SOURCES
  ops/cpu/table.cpp ops/cpu/gemm.cpp ops/cpu/softmax.cpp ops/cpu/norm.cpp ops/cpu/pool.cpp
  ops/cpu/im2col.cpp ops/cpu/attention.cpp)

if(EMSCRIPTEN)
  # WebAssembly: one set of kernels (128-bit SIMD), nothing to choose at run time, so the
  # kernels are ordinary sources of the ops library.
  set_source_files_properties(${OPSCOPE_CPU_KERNEL_SOURCES} PROPERTIES COMPILE_DEFINITIONS OPSCOPE_CPU_NS=baseline)
  target_sources(opscope_ops PRIVATE ${OPSCOPE_CPU_KERNEL_SOURCES} ops/cpu/dispatch.cpp ops/gemm.cpp ops/cpu/gemm_simd128.cpp)
  message(STATUS "opscope: CPU kernel set: wasm simd128")
  return()
endif()

set(OPSCOPE_CPU_ISAS baseline)
set(OPSCOPE_CPU_FLAGS_baseline "")
# OFF: the baseline set only (the language fuzzer's build, which needs no second set of kernels).
option(OPSCOPE_AVX512_KERNELS "Also build the hot kernels for AVX-512, chosen at run time (when the compiler can)" ON)
if(CMAKE_SYSTEM_PROCESSOR MATCHES "x86_64|AMD64" AND NOT OPSCOPE_NATIVE AND OPSCOPE_AVX512_KERNELS)
  include(CheckCXXCompilerFlag)
  check_cxx_compiler_flag("-march=x86-64-v4 -mprefer-vector-width=512" OPSCOPE_COMPILER_HAS_AVX512)
  if(OPSCOPE_COMPILER_HAS_AVX512)
    list(APPEND OPSCOPE_CPU_ISAS avx512)
    # GCC's x86-64-v4 still prefers 256-bit vectors for loops it vectorizes itself; Eigen's
    # packets are 512-bit either way.
    set(OPSCOPE_CPU_FLAGS_avx512 -march=x86-64-v4 -mprefer-vector-width=512
      $<$<CXX_COMPILER_ID:GNU>:-Wno-maybe-uninitialized>)  # GCC 12: false positives in avx512fintrin.h
  endif()
endif()

find_program(OPSCOPE_OBJCOPY NAMES objcopy ${CMAKE_OBJCOPY})
# GNU ld: --force-group-allocation (lld, the linker of a clang build, lacks it).
find_program(OPSCOPE_LD_BFD NAMES ld.bfd ld)
set(OPSCOPE_CPU_KERNEL_OBJECTS "")
foreach(isa IN LISTS OPSCOPE_CPU_ISAS)
  add_library(opscope_cpu_${isa}_objs OBJECT ${OPSCOPE_CPU_KERNEL_SOURCES})
  # -fno-gnu-unique: static locals of inline functions (Eigen's cache sizes) become ordinary
  # weak symbols, which objcopy can make local like the rest.
  target_compile_options(opscope_cpu_${isa}_objs PRIVATE ${OPSCOPE_CPU_FLAGS_${isa}} $<$<CXX_COMPILER_ID:GNU>:-fno-gnu-unique>)
  target_compile_definitions(opscope_cpu_${isa}_objs PRIVATE OPSCOPE_CPU_NS=${isa})
  target_include_directories(opscope_cpu_${isa}_objs PRIVATE ${CMAKE_CURRENT_SOURCE_DIR})
  target_link_libraries(opscope_cpu_${isa}_objs PRIVATE Eigen3::Eigen)
  set_target_properties(opscope_cpu_${isa}_objs PROPERTIES POSITION_INDEPENDENT_CODE ON)
  set(out ${CMAKE_CURRENT_BINARY_DIR}/opscope_cpu_${isa}.o)
  add_custom_command(OUTPUT ${out}
    COMMAND ${OPSCOPE_LD_BFD} -r --force-group-allocation -o ${out}.partial $<TARGET_OBJECTS:opscope_cpu_${isa}_objs>
    COMMAND ${OPSCOPE_OBJCOPY} --keep-global-symbol=opscope_cpu_kernels_${isa} ${out}.partial ${out}
    DEPENDS opscope_cpu_${isa}_objs $<TARGET_OBJECTS:opscope_cpu_${isa}_objs>
    COMMAND_EXPAND_LISTS VERBATIM
    COMMENT "Linking the ${isa} CPU kernels into one object with a single global symbol")
  set_source_files_properties(${out} PROPERTIES EXTERNAL_OBJECT TRUE GENERATED TRUE)
  list(APPEND OPSCOPE_CPU_KERNEL_OBJECTS ${out})
endforeach()
# An object library cannot carry prebuilt objects to its users: a static library of them can.
add_library(opscope_cpu_kernels STATIC ${OPSCOPE_CPU_KERNEL_OBJECTS})
set_target_properties(opscope_cpu_kernels PROPERTIES LINKER_LANGUAGE CXX)
target_link_libraries(opscope_ops PUBLIC opscope_cpu_kernels)
target_sources(opscope_ops PRIVATE ops/cpu/dispatch.cpp)
if("avx512" IN_LIST OPSCOPE_CPU_ISAS)
  target_compile_definitions(opscope_ops PRIVATE OPSCOPE_HAVE_AVX512_KERNELS=1)
endif()
message(STATUS "opscope: CPU kernel sets: ${OPSCOPE_CPU_ISAS}")

# OpenBLAS, the pthread build: found here for its header and path, loaded with dlopen on first
# use (ops/gemm.cpp) so that opscope can choose its kernels first (OPENBLAS_CORETYPE).
find_package(OpenBLAS CONFIG QUIET)
if(OpenBLAS_FOUND AND OpenBLAS_LIBRARIES)
  list(GET OpenBLAS_LIBRARIES 0 OPSCOPE_OPENBLAS_DEV_LIBRARY)
  get_filename_component(OPSCOPE_OPENBLAS_DIR ${OPSCOPE_OPENBLAS_DEV_LIBRARY} DIRECTORY)
  set(OPSCOPE_OPENBLAS_LIBRARY ${OPSCOPE_OPENBLAS_DIR}/libopenblas.so.0)
  set_source_files_properties(ops/gemm.cpp PROPERTIES
    INCLUDE_DIRECTORIES "${OpenBLAS_INCLUDE_DIRS}"
    COMPILE_DEFINITIONS "OPSCOPE_HAVE_OPENBLAS=1;OPSCOPE_OPENBLAS_LIBRARY=\"${OPSCOPE_OPENBLAS_LIBRARY}\"")
  message(STATUS "opscope: OpenBLAS ${OpenBLAS_VERSION} (loaded at run time from ${OPSCOPE_OPENBLAS_LIBRARY})")
else()
  message(STATUS "opscope: OpenBLAS not found: the `blas` algorithm will run Eigen's GEMM")
endif()
target_sources(opscope_ops PRIVATE ops/gemm.cpp)
target_link_libraries(opscope_ops PUBLIC ${CMAKE_DL_LIBS})
