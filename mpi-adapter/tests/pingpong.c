/* SPDX-License-Identifier: BSD-3-Clause */
/* pingpong.c - a small MPI ping-pong used by the mpi-adapter tests: checks the
 * payload of every exchange, covers eager and long (pulled) sizes, tagged
 * receives posted before and after the message arrives, MPI_ANY_SOURCE,
 * MPI_Probe, and a few collectives; prints the half round-trip latency.
 * Usage: pingpong [iterations] [max_bytes]   (2 or more ranks) */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static void fill(unsigned char *b, size_t n, unsigned seed)
{
	for (size_t i = 0; i < n; i++)
		b[i] = (unsigned char)(seed * 31u + i * 7u);
}

static int check(const unsigned char *b, size_t n, unsigned seed)
{
	for (size_t i = 0; i < n; i++)
		if (b[i] != (unsigned char)(seed * 31u + i * 7u))
			return (int)i + 1;
	return 0;
}

int main(int argc, char **argv)
{
	int rank, size, iters = argc > 1 ? atoi(argv[1]) : 1000;
	size_t maxb = argc > 2 ? (size_t)atol(argv[2]) : 1u << 20;
	MPI_Init(&argc, &argv);
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	MPI_Comm_size(MPI_COMM_WORLD, &size);
	if (size < 2) {
		if (!rank)
			fprintf(stderr, "pingpong: needs 2 ranks\n");
		MPI_Abort(MPI_COMM_WORLD, 2);
	}
	unsigned char *sb = malloc(maxb + 1), *rb = malloc(maxb + 1);
	int errors = 0;
	int peer = rank == 0 ? 1 : 0;
	/* correctness over sizes (powers of two and odd ones) */
	for (size_t n = 0; n <= maxb; n = n ? n * 2 : 1) {
		for (int v = 0; v < 2; v++) {
			size_t len = v ? (n > 3 ? n - 3 : n) : n;
			if (rank < 2) {
				MPI_Status st;
				fill(sb, len, (unsigned)len + (unsigned)rank);
				memset(rb, 0, len);
				if (rank == 0) {
					MPI_Send(sb, (int)len, MPI_BYTE, peer, 7, MPI_COMM_WORLD);
					MPI_Recv(rb, (int)len, MPI_BYTE, MPI_ANY_SOURCE, 8, MPI_COMM_WORLD, &st);
				} else {
					MPI_Recv(rb, (int)len, MPI_BYTE, peer, 7, MPI_COMM_WORLD, &st);
					MPI_Send(sb, (int)len, MPI_BYTE, peer, 8, MPI_COMM_WORLD);
				}
				int cnt;
				MPI_Get_count(&st, MPI_BYTE, &cnt);
				if ((size_t)cnt != len || check(rb, len, (unsigned)len + (unsigned)peer)) {
					fprintf(stderr, "rank %d: bad data at %zu bytes (count %d)\n", rank, len,
						cnt);
					errors++;
				}
			}
		}
	}
	/* unexpected messages: send first, receive after a barrier */
	if (rank < 2) {
		size_t sizes[3] = {8, 20000, maxb};
		for (int k = 0; k < 3; k++) {
			size_t len = sizes[k] <= maxb ? sizes[k] : maxb;
			MPI_Request rq;
			fill(sb, len, 100u + (unsigned)k + (unsigned)rank);
			MPI_Isend(sb, (int)len, MPI_BYTE, peer, 20 + k, MPI_COMM_WORLD, &rq);
			MPI_Status st;
			MPI_Probe(peer, 20 + k, MPI_COMM_WORLD, &st);
			memset(rb, 0, len);
			MPI_Recv(rb, (int)len, MPI_BYTE, peer, 20 + k, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
			MPI_Wait(&rq, MPI_STATUS_IGNORE);
			if (check(rb, len, 100u + (unsigned)k + (unsigned)peer)) {
				fprintf(stderr, "rank %d: bad unexpected data (%zu bytes)\n", rank, len);
				errors++;
			}
		}
	}
	/* collectives */
	int one = 1, sum = 0;
	MPI_Allreduce(&one, &sum, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
	if (sum != size) {
		fprintf(stderr, "rank %d: allreduce %d != %d\n", rank, sum, size);
		errors++;
	}
	MPI_Barrier(MPI_COMM_WORLD);
	/* latency */
	double t0 = MPI_Wtime();
	for (int i = 0; i < iters && rank < 2; i++) {
		if (rank == 0) {
			MPI_Send(sb, 1, MPI_BYTE, 1, 1, MPI_COMM_WORLD);
			MPI_Recv(rb, 1, MPI_BYTE, 1, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
		} else {
			MPI_Recv(rb, 1, MPI_BYTE, 0, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
			MPI_Send(sb, 1, MPI_BYTE, 0, 1, MPI_COMM_WORLD);
		}
	}
	double t1 = MPI_Wtime();
	int tot = 0;
	MPI_Reduce(&errors, &tot, 1, MPI_INT, MPI_SUM, 0, MPI_COMM_WORLD);
	if (rank == 0) {
		printf("pingpong: %d ranks, %d iterations, 1-byte half round trip %.2f us\n", size,
		       iters, iters ? (t1 - t0) * 1e6 / (2.0 * iters) : 0.0);
		printf("pingpong: %s (%d errors)\n", tot ? "FAILED" : "OK", tot);
	}
	if (getenv("PINGPONG_MAPS_DIR")) {
		char src[64], dst[512];
		snprintf(src, sizeof(src), "/proc/%d/maps", (int)getpid());
		snprintf(dst, sizeof(dst), "%s/maps.%d", getenv("PINGPONG_MAPS_DIR"), rank);
		FILE *in = fopen(src, "r"), *out = fopen(dst, "w");
		char line[1024];
		while (in && out && fgets(line, sizeof(line), in))
			fputs(line, out);
		if (in)
			fclose(in);
		if (out)
			fclose(out);
	}
	free(sb);
	free(rb);
	MPI_Finalize();
	return tot ? 1 : 0;
}
