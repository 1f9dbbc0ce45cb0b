/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * soak_mpi.c - the MPI part of tools/soak: MPI traffic through MPICH and
 * the ptl3 adapter for SECONDS, every byte checked.  Each round, from the
 * seed alone (every rank computes the same schedule): a shift k, a size of
 * 0 .. MAX bytes; rank r sends to r+k and receives from r-k (Isend/Irecv),
 * the contents derived from (seed, source, round, offset); every 8th round
 * an Allreduce of per-rank values and an Alltoall of small blocks, checked.
 * Rank 0 decides when time is up (Bcast).  Prints rounds, bytes and errors;
 * exit 0 only with 0 errors.
 *
 * usage: soak_mpi SECONDS SEED [MAX_BYTES]   (built by tools/soak with mpicc)
 */
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../include/p3num.h" /* by path: tools/soak builds this with mpicc alone */

static uint64_t mix(uint64_t x)
{
	x += 0x9E3779B97F4A7C15ull;
	x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
	x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
	return x ^ (x >> 31);
}

static unsigned char byte_of(uint64_t seed, int src, uint64_t round, size_t off)
{
	return (unsigned char)(mix(seed ^ ((uint64_t)src << 40) ^ (round << 8) ^ (off >> 3) << 20) >>
	                       (8 * (off & 7)));
}

int main(int argc, char **argv)
{
	int rank, n, go = 1;
	double seconds, t0;
	uint64_t seed, round = 0, bytes = 0, errors = 0;
	size_t max;

	MPI_Init(&argc, &argv);
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	MPI_Comm_size(MPI_COMM_WORLD, &n);
	if (argc < 3 || n < 2) {
		if (!rank)
			fprintf(stderr, "usage: soak_mpi SECONDS SEED [MAX_BYTES] (2 ranks or more)\n");
		MPI_Abort(MPI_COMM_WORLD, 2);
	}
	seconds = p3num_arg_dbl("soak_mpi", "SECONDS", argv[1], 0, 1e7);
	seed = p3num_arg_u64("soak_mpi", "SEED", argv[2], 0, UINT64_MAX, P3NUM_BASE0);
	max = argc > 3 ? p3num_arg_u64("soak_mpi", "MAX_BYTES", argv[3], 0, 1u << 30, P3NUM_BASE0)
	               : 262144;
	unsigned char *sb = malloc(max + 1), *rb = malloc(max + 1);
	int *a2a_s = malloc(sizeof(int) * (size_t)n * 4), *a2a_r = malloc(sizeof(int) * (size_t)n * 4);
	if (!sb || !rb || !a2a_s || !a2a_r)
		MPI_Abort(MPI_COMM_WORLD, 3);
	t0 = MPI_Wtime();
	while (go) {
		uint64_t r = mix(seed * 7 + round);
		int k = 1 + (int)(r % (uint64_t)(n - 1));
		size_t len = (r >> 16) % 4 == 0 ? (size_t)((r >> 20) % (max + 1)) : (size_t)((r >> 20) % 4097);
		int to = (rank + k) % n, from = (rank - k + n) % n;
		MPI_Request req[2];

		for (size_t i = 0; i < len; i++)
			sb[i] = byte_of(seed, rank, round, i);
		memset(rb, 0xA5, len);
		MPI_Irecv(rb, (int)len, MPI_BYTE, from, (int)(round & 0x7fff), MPI_COMM_WORLD, &req[0]);
		MPI_Isend(sb, (int)len, MPI_BYTE, to, (int)(round & 0x7fff), MPI_COMM_WORLD, &req[1]);
		MPI_Waitall(2, req, MPI_STATUSES_IGNORE);
		for (size_t i = 0; i < len; i++)
			if (rb[i] != byte_of(seed, from, round, i)) {
				if (errors < 5)
					fprintf(stderr, "soak_mpi rank %d: round %llu from %d: byte %zu wrong\n", rank,
					        (unsigned long long)round, from, i);
				errors++;
				break;
			}
		bytes += len;
		if (round % 8 == 0) {
			long mine = (long)(mix(seed + (uint64_t)rank + round) % 1000), sum = 0, want = 0;
			MPI_Allreduce(&mine, &sum, 1, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
			for (int q = 0; q < n; q++)
				want += (long)(mix(seed + (uint64_t)q + round) % 1000);
			if (sum != want)
				errors++;
			for (int q = 0; q < n * 4; q++)
				a2a_s[q] = (int)(mix(seed ^ ((uint64_t)rank << 32) ^ (uint64_t)q ^ round) & 0x7fffffff);
			MPI_Alltoall(a2a_s, 4, MPI_INT, a2a_r, 4, MPI_INT, MPI_COMM_WORLD);
			for (int q = 0; q < n; q++)
				for (int j = 0; j < 4; j++)
					if (a2a_r[q * 4 + j] !=
					    (int)(mix(seed ^ ((uint64_t)q << 32) ^ (uint64_t)(rank * 4 + j) ^ round) & 0x7fffffff))
						errors++;
		}
		round++;
		if (rank == 0)
			go = MPI_Wtime() - t0 < seconds;
		MPI_Bcast(&go, 1, MPI_INT, 0, MPI_COMM_WORLD);
	}
	uint64_t tot[2] = {bytes, errors}, all[2] = {0, 0};
	MPI_Reduce(tot, all, 2, MPI_UINT64_T, MPI_SUM, 0, MPI_COMM_WORLD);
	if (rank == 0)
		printf("soak_mpi: %d ranks, %llu rounds, %llu bytes checked, %llu errors\n", n,
		       (unsigned long long)round, (unsigned long long)all[0], (unsigned long long)all[1]);
	free(sb);
	free(rb);
	free(a2a_s);
	free(a2a_r);
	MPI_Finalize();
	return all[1] != 0 && rank == 0;
}
