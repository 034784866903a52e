# Fuzz target for artifact loading (include()d from tests/fuzz/CMakeLists.txt when
# NEURONC_FUZZ=ON, clang only). `artifact_fuzz CORPUS_DIR` fuzzes; the ctest entry replays the
# malformed-artifact corpus in tests/corpus/artifact as a regression.
add_executable(artifact_fuzz ${CMAKE_CURRENT_LIST_DIR}/artifact_fuzz.cpp)
target_link_libraries(artifact_fuzz PRIVATE neuronc::loader neuronc::build_flags)
target_compile_options(artifact_fuzz PRIVATE -fsanitize=fuzzer)
target_link_options(artifact_fuzz PRIVATE -fsanitize=fuzzer)
add_test(NAME artifact_fuzz_corpus
  COMMAND artifact_fuzz -runs=0 ${PROJECT_SOURCE_DIR}/tests/corpus/artifact)
set_tests_properties(artifact_fuzz_corpus PROPERTIES LABELS "artifact;fuzz")
