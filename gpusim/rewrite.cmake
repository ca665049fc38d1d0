# Rewrites one ops/cuda source for the simulator (cmake -P gpusim/rewrite.cmake -DIN=.. -DOUT=..):
#   k<<<grid, block, smem, stream>>>(args)  ->  ::gpusim::launch(::gpusim::LaunchConfig(grid, block, smem, stream),
#                                                 "k", __FILE__, __LINE__, [&](auto&... a) { k(a...); })(args)
#   __shared__ T a[N], b[M];                ->  auto& a = *::gpusim::shared_alloc<T[N]>([]{}); auto& b = ...;
#   extern __shared__ T s[];                ->  T* s = ::gpusim::dynamic_shared<T>();
#   namespace opscope::cuda, Device::cuda   ->  opscope::gpusim_cuda, Device::sim (the same kernels, registered for sim)
#   #include "ops/cuda/x.cuh"               ->  #include "x.cuh" (the rewritten copy next to it)
# Every line stays on its line (a #line directive first names the original file), so errors,
# __LINE__ and the debug line tables point at the source the student reads. The nvcc build
# compiles the originals, untouched.
cmake_minimum_required(VERSION 3.24)
if(NOT IN OR NOT OUT)
  message(FATAL_ERROR "usage: cmake -DIN=file.cu -DOUT=file.cpp -P rewrite.cmake")
endif()
file(READ "${IN}" text)
# CMake lists split on ';': protect them while the text is handled.
string(REPLACE ";" "@GPUSIM_SEMI@" text "${text}")

# Launches: a name with optional template arguments (one level of nesting), then <<<...>>>(.
# clang-format may break a long launch before its <<<: that line break is kept in front of the
# call, so every line stays where it was.
set(name "([A-Za-z_][A-Za-z0-9_:]*(<[^<>\n]*(<[^<>\n]*>[^<>\n]*)*>)?)")
string(REGEX MATCHALL "${name}[ \n]*<<<[^\n]*>>>\\(" launches "${text}")
list(LENGTH launches n_launches)
string(REGEX REPLACE "${name}([ \n]*)<<<([^\n]*)>>>\\("
       "\\4::gpusim::launch(::gpusim::LaunchConfig(\\5), \"\\1\", __FILE__, __LINE__, [@GPUSIM_AMP@](auto@GPUSIM_AMP@... gpusim_a) { \\1(gpusim_a...)@GPUSIM_SEMI@ })("
       text "${text}")

# Dynamic shared memory.
string(REGEX REPLACE "extern __shared__ ([A-Za-z_][A-Za-z0-9_: ]*[A-Za-z0-9_]) ([A-Za-z_][A-Za-z0-9_]*)\\[\\]@GPUSIM_SEMI@"
       "\\1* \\2 = ::gpusim::dynamic_shared<\\1>()@GPUSIM_SEMI@" text "${text}")

# Static __shared__ declarations, one statement at a time (several declarators allowed).
set(out "")
while(TRUE)
  string(FIND "${text}" "__shared__ " at)
  if(at EQUAL -1)
    break()
  endif()
  string(SUBSTRING "${text}" 0 ${at} before)
  string(SUBSTRING "${text}" ${at} -1 rest)
  string(FIND "${rest}" "@GPUSIM_SEMI@" semi)
  string(SUBSTRING "${rest}" 11 ${semi} decl)   # after "__shared__ "
  math(EXPR decl_len "${semi} - 11")
  string(SUBSTRING "${rest}" 11 ${decl_len} decl)
  math(EXPR after_at "${semi} + 13")
  string(SUBSTRING "${rest}" ${after_at} -1 rest)
  set(align "")
  if(decl MATCHES "^__align__\\(([0-9]+)\\) (.*)$")
    set(align ", ${CMAKE_MATCH_1}")
    set(decl "${CMAKE_MATCH_2}")
  endif()
  if(NOT decl MATCHES "^([^\\[]*[^ ]) ([A-Za-z_][A-Za-z0-9_]*\\[.*)$")
    message(FATAL_ERROR "${IN}: cannot rewrite the __shared__ declaration '${decl}'")
  endif()
  set(type "${CMAKE_MATCH_1}")
  string(REPLACE ", " "@GPUSIM_COMMA@" declarators "${CMAKE_MATCH_2}")
  string(REPLACE "@GPUSIM_COMMA@" ";" declarators "${declarators}")
  set(stmt "")
  foreach(d IN LISTS declarators)
    if(NOT d MATCHES "^([A-Za-z_][A-Za-z0-9_]*)(\\[.*\\])$")
      message(FATAL_ERROR "${IN}: cannot rewrite the __shared__ declarator '${d}'")
    endif()
    string(APPEND stmt "auto& ${CMAKE_MATCH_1} = *::gpusim::shared_alloc<${type} ${CMAKE_MATCH_2}${align}>([] {})@GPUSIM_SEMI@ ")
  endforeach()
  string(STRIP "${stmt}" stmt)
  string(APPEND out "${before}${stmt}")
  set(text "${rest}")
endwhile()
set(text "${out}${text}")

string(REPLACE "namespace opscope::cuda" "namespace opscope::gpusim_cuda" text "${text}")
string(REPLACE "::opscope::cuda::" "::opscope::gpusim_cuda::" text "${text}")
string(REPLACE "Device::cuda" "Device::sim" text "${text}")
string(REGEX REPLACE "#include \"ops/cuda/([A-Za-z0-9_]+\\.cuh)\"" "#include \"\\1\"" text "${text}")

string(REPLACE "@GPUSIM_SEMI@" ";" text "${text}")
string(REPLACE "@GPUSIM_AMP@" "&" text "${text}")
file(WRITE "${OUT}.tmp" "#line 1 \"${IN}\"\n${text}")
file(RENAME "${OUT}.tmp" "${OUT}")
