/* SPDX-License-Identifier: BSD-3-Clause */
/* killrank.c - rank 1 kills itself with SIGKILL while rank 0 waits for it in
 * MPI_Recv: the job must fail (not hang). */
#include <mpi.h>
#include <signal.h>
#include <stdio.h>
#include <unistd.h>

int main(int argc, char **argv)
{
	int rank, x = 0;
	MPI_Init(&argc, &argv);
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	MPI_Barrier(MPI_COMM_WORLD);
	if (rank == 1) {
		usleep(200000);
		kill(getpid(), SIGKILL);
	}
	if (rank == 0)
		MPI_Recv(&x, 1, MPI_INT, 1, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
	printf("rank %d: not reached\n", rank);
	MPI_Finalize();
	return 0;
}
