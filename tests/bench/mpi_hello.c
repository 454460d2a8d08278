/* MPI_Init_thread and MPI_Finalize alone (tests/bench/mpi_launch_device.sh: the launch cost of
   Open MPI apart from almagest-cli's own). Built by tests/bench/mpi_device_libs.sh with mpicc. */
#include <mpi.h>

int main(int argc, char** argv) {
  int provided = 0;
  MPI_Init_thread(&argc, &argv, MPI_THREAD_SERIALIZED, &provided);
  MPI_Finalize();
  return provided >= MPI_THREAD_SERIALIZED ? 0 : 1;
}
