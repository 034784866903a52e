# Every third-party dependency, found from Debian 12 packages (see .ci/install-deps).
find_package(Threads REQUIRED)
find_package(FlatBuffers CONFIG REQUIRED)   # flatbuffers::flatbuffers, flatbuffers::flatc
find_package(zstd CONFIG REQUIRED)          # zstd::libzstd_shared
find_package(TBB CONFIG REQUIRED)           # TBB::tbb
find_package(Protobuf REQUIRED)             # protobuf::libprotobuf, protobuf::protoc
find_package(nlohmann_json CONFIG REQUIRED) # nlohmann_json::nlohmann_json
find_package(CLI11 CONFIG REQUIRED)         # CLI11::CLI11
if(NEURONC_BUILD_TESTS)
  find_package(GTest CONFIG REQUIRED)       # GTest::gtest_main, GTest::gmock
endif()
if(NEURONC_BUILD_BENCH)
  find_package(benchmark CONFIG REQUIRED)   # benchmark::benchmark
endif()

# libtorch 1.13 (Debian libtorch-dev) is optional and used only by the TorchScript reader.
set(NEURONC_HAVE_TORCH OFF)
if(NOT NEURONC_WITH_TORCH STREQUAL "OFF")
  if(NEURONC_WITH_TORCH STREQUAL "ON")
    find_package(Torch CONFIG REQUIRED)
  else()
    find_package(Torch CONFIG QUIET)
  endif()
  if(Torch_FOUND)
    set(NEURONC_HAVE_TORCH ON)
  endif()
endif()
if(NEURONC_HAVE_TORCH)
  message(STATUS "neuronc: TorchScript reader ON (libtorch ${Torch_VERSION})")
else()
  message(STATUS "neuronc: TorchScript reader OFF (libtorch not found or NEURONC_WITH_TORCH=OFF; install libtorch-dev to read .pt files)")
endif()
