cmake_minimum_required(VERSION 3.20)
# Negative control for check_includes.cmake: a planted tree whose device/ includes codegen/ (a
# back-include) and whose examples/ reach past the public API must fail with those includes
# named, and the same tree without them must pass, so the checker can both fail and pass.
# Usage: cmake -DCHECKER=<check_includes.cmake> -DRULES=<table> -DWORK=<scratch dir> -P ...
file(REMOVE_RECURSE ${WORK})
file(MAKE_DIRECTORY ${WORK}/device ${WORK}/codegen ${WORK}/loader ${WORK}/tools
  ${WORK}/examples/server)
file(WRITE ${WORK}/codegen/codegen.h "#pragma once\n#include \"device/isa.h\"\n")
file(WRITE ${WORK}/device/isa.h "#pragma once\n#include <vector>\n")
file(WRITE ${WORK}/loader/session.cpp "#include \"neuronc/session.h\"\n#include \"device/isa.h\"\n")
file(WRITE ${WORK}/tools/npy.h "#pragma once\n")
file(WRITE ${WORK}/examples/server/main.cpp
  "#include \"examples/server/batcher.h\"\n#include \"neuronc/session.h\"\n#include <vector>\n")

execute_process(COMMAND ${CMAKE_COMMAND} -DROOT=${WORK} -DRULES=${RULES} -P ${CHECKER}
  RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "the clean planted tree should pass:\n${out}${err}")
endif()

file(APPEND ${WORK}/device/isa.h "#include \"codegen/codegen.h\"\n")
file(APPEND ${WORK}/loader/session.cpp "#include \"../passes/pass.h\"\n")
# An example reaching into tools/ (outside its table) and into the loader's internals (inside
# the table, but not the public API).
file(APPEND ${WORK}/examples/server/main.cpp "#include \"tools/npy.h\"\n#include \"loader/plan_walker.h\"\n")
execute_process(COMMAND ${CMAKE_COMMAND} -DROOT=${WORK} -DRULES=${RULES} -P ${CHECKER}
  RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(rc EQUAL 0)
  message(FATAL_ERROR "the planted back-include device -> codegen was not detected:\n${out}${err}")
endif()
foreach(expected
    "device/isa.h:3: device includes \"codegen/codegen.h\" \\(device may include: kernels\\)"
    "loader/session.cpp:3: loader includes \"../passes/pass.h\" \\(relative include"
    "examples/server/main.cpp:4: examples includes \"tools/npy.h\" \\(examples may include only the public API"
    "examples/server/main.cpp:5: examples includes \"loader/plan_walker.h\" \\(examples may include only the public API")
  if(NOT err MATCHES "${expected}")
    message(FATAL_ERROR "expected a violation matching '${expected}', got:\n${out}${err}")
  endif()
endforeach()
message(STATUS "negative control: the checker fails on a planted back-include and passes without it")
