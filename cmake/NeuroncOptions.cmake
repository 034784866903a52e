# Compiler flags shared by every neuronc target: warnings, sanitizers, fuzzing.
add_library(neuronc_build_flags INTERFACE)
add_library(neuronc::build_flags ALIAS neuronc_build_flags)
target_compile_options(neuronc_build_flags INTERFACE -Wall -Wextra)
if(NEURONC_WERROR)
  target_compile_options(neuronc_build_flags INTERFACE -Werror)
endif()
if(CMAKE_CXX_COMPILER_ID STREQUAL "GNU" AND CMAKE_CXX_COMPILER_VERSION VERSION_LESS 13)
  # GCC 12 reports -Wrestrict inside libstdc++'s std::string at -O3 for code that is correct
  # (GCC bug 105329); the warning stays on for other compilers.
  target_compile_options(neuronc_build_flags INTERFACE -Wno-restrict)
endif()

if(NEURONC_SANITIZE)
  # Compare the whole string: IN_LIST would split "address;undefined" at the semicolon.
  if(NOT (NEURONC_SANITIZE STREQUAL "address;undefined" OR NEURONC_SANITIZE STREQUAL "address"
          OR NEURONC_SANITIZE STREQUAL "undefined" OR NEURONC_SANITIZE STREQUAL "thread"))
    message(FATAL_ERROR "NEURONC_SANITIZE is '${NEURONC_SANITIZE}'; expected 'address;undefined', 'address', 'undefined' or 'thread'")
  endif()
  string(REPLACE ";" "," _san "${NEURONC_SANITIZE}")
  add_compile_options(-fsanitize=${_san} -fno-omit-frame-pointer -fno-sanitize-recover=all)
  add_link_options(-fsanitize=${_san})
  message(STATUS "neuronc: sanitizers ${_san}")
endif()

if(NEURONC_FUZZ)
  if(NOT CMAKE_CXX_COMPILER_ID MATCHES "Clang")
    message(FATAL_ERROR "NEURONC_FUZZ=ON needs clang (libFuzzer); the C++ compiler is ${CMAKE_CXX_COMPILER_ID}. Configure with -DCMAKE_CXX_COMPILER=clang++ -DCMAKE_C_COMPILER=clang")
  endif()
  # Instrument everything for coverage; the fuzz executables add -fsanitize=fuzzer themselves.
  add_compile_options(-fsanitize=fuzzer-no-link)
endif()

# neuronc_add_library(NAME SOURCES ... [PUBLIC_DEPS ...] [PRIVATE_DEPS ...])
# Defines static library neuronc_<NAME> with alias neuronc::<NAME>; the include root is the
# repository root so code includes "ir/graph.h", "device/target.h", ...
function(neuronc_add_library name)
  cmake_parse_arguments(ARG "" "" "SOURCES;PUBLIC_DEPS;PRIVATE_DEPS" ${ARGN})
  add_library(neuronc_${name} STATIC ${ARG_SOURCES})
  add_library(neuronc::${name} ALIAS neuronc_${name})
  target_include_directories(neuronc_${name} PUBLIC
    $<BUILD_INTERFACE:${PROJECT_SOURCE_DIR}> $<BUILD_INTERFACE:${PROJECT_BINARY_DIR}>)
  target_link_libraries(neuronc_${name} PUBLIC neuronc::kernels ${ARG_PUBLIC_DEPS}
    PRIVATE neuronc::build_flags ${ARG_PRIVATE_DEPS})
endfunction()
