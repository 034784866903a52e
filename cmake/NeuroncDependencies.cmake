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

# MPI (Debian's OpenMPI: libopenmpi-dev, openmpi-bin) is optional: with it, `mpirun -np K neuronc
# generate` splits a tensor-parallel model's cores over the ranks.
set(NEURONC_HAVE_MPI OFF)
if(NOT NEURONC_WITH_MPI STREQUAL "OFF")
  if(NEURONC_WITH_MPI STREQUAL "ON")
    find_package(MPI COMPONENTS C REQUIRED)
  else()
    find_package(MPI COMPONENTS C QUIET)
  endif()
  if(MPI_C_FOUND)
    set(NEURONC_HAVE_MPI ON)
  endif()
endif()
if(NEURONC_HAVE_MPI)
  message(STATUS "neuronc: MPI ranks ON (${MPI_C_LIBRARY_VERSION_STRING})")
else()
  message(STATUS "neuronc: MPI ranks OFF (MPI not found or NEURONC_WITH_MPI=OFF; install libopenmpi-dev for mpirun -np K neuronc generate)")
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
