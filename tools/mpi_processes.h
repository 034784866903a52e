// The MPI ranks of `mpirun -np K neuronc generate ...` (OpenMPI from Debian: libopenmpi-dev,
// openmpi-bin), as the loader's ProcessGroup: the processes a tensor-parallel model's
// NeuronCores are split over. Each rank loads the model and makes the same Session calls; each
// computes its share of the cores and the ranks swap the HBM bytes their cores wrote at every
// collective (neuronc::ProcessGroup), so each ends with one process's tokens and timing. Rank 0
// alone prints and writes files.
#pragma once

#include <neuronc/session.h>

namespace neuronc::tools {

// This process's place in the launch that started it, from the launcher's environment
// (OpenMPI's OMPI_COMM_WORLD_RANK / _SIZE, MPICH's PMI_RANK / PMI_SIZE): {0, 1} outside one.
struct MpiLaunch {
  int rank = 0;
  int size = 1;
};
MpiLaunch mpi_launch();

// The ranks of this launch, MPI initialised on first call and finalised at exit; null when
// the launch has one process. On ranks other than 0, stdout goes to /dev/null from then on.
// Throws CommandExit when launched with several processes by a neuronc built without MPI.
neuronc::ProcessGroup* mpi_processes();

// Ends the whole launch after an error on this rank (MPI_Abort), so no rank waits for it in an
// all-gather; returns when MPI is not in use.
void abort_mpi_launch(int code);

}  // namespace neuronc::tools
