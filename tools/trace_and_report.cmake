# `neuronc bench`, `neuronc profile`, `neuronc compile --report` (issue 9) and `neuronc compare`
# (issue 20), with the HTML page frame their reports share. Their sources join
# neuronc_cli so tests can call them; the Perfetto trace subset (trace_perfetto.proto) is
# compiled with protoc into its own library (generated code is not held to our warning flags);
# the instance price table (data/instance_prices.json) is embedded into the binary.
file(MAKE_DIRECTORY ${CMAKE_CURRENT_BINARY_DIR}/generated/tools)
add_library(neuronc_perfetto_proto STATIC)
protobuf_generate(TARGET neuronc_perfetto_proto LANGUAGE cpp
  PROTOS ${CMAKE_CURRENT_SOURCE_DIR}/trace_perfetto.proto
  IMPORT_DIRS ${CMAKE_CURRENT_SOURCE_DIR}
  PROTOC_OUT_DIR ${CMAKE_CURRENT_BINARY_DIR}/generated/tools)
target_include_directories(neuronc_perfetto_proto PUBLIC ${CMAKE_CURRENT_BINARY_DIR}/generated)
target_link_libraries(neuronc_perfetto_proto PUBLIC protobuf::libprotobuf)

file(READ ${CMAKE_CURRENT_SOURCE_DIR}/data/instance_prices.json NEURONC_PRICE_TABLE_JSON)
set_property(DIRECTORY APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS ${CMAKE_CURRENT_SOURCE_DIR}/data/instance_prices.json)
configure_file(${CMAKE_CURRENT_SOURCE_DIR}/data/instance_prices.cpp.in
  ${CMAKE_CURRENT_BINARY_DIR}/generated/tools/instance_prices_data.cpp @ONLY)

target_sources(neuronc_cli PRIVATE
  bench_command.cpp
  compare_command.cpp
  compare_report.cpp
  html_page.cpp
  profile_command.cpp
  report_html.cpp
  trace_export.cpp
  trace_timeline.cpp
  ${CMAKE_CURRENT_BINARY_DIR}/generated/tools/instance_prices_data.cpp)
target_link_libraries(neuronc_cli PUBLIC neuronc_perfetto_proto nlohmann_json::nlohmann_json PRIVATE CLI11::CLI11)
