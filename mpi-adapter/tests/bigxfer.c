/* SPDX-License-Identifier: BSD-3-Clause */
/* bigxfer.c - rank 0 sends TOTAL bytes to rank 1 in messages of MSG bytes
 * (MPI_Send of MPI_BYTE); rank 1 checks every byte and returns its error
 * count.  Used by mpi-udp-capture.sh to put a known amount of MPI payload on
 * the wire.  Usage: bigxfer [total_bytes] [msg_bytes]   (exactly 2 ranks) */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static unsigned char pattern(size_t msg, size_t i)
{
	return (unsigned char)(msg * 131u + i * 7u + (i >> 12));
}

int main(int argc, char **argv)
{
	int rank, size;
	MPI_Init(&argc, &argv);
	size_t total = argc > 1 ? strtoull(argv[1], NULL, 0) : 104857600u;
	size_t msg = argc > 2 ? strtoull(argv[2], NULL, 0) : 4194304u;
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	MPI_Comm_size(MPI_COMM_WORLD, &size);
	if (size != 2 || msg == 0 || msg > (size_t)1 << 30) {
		if (!rank)
			fprintf(stderr, "bigxfer: needs 2 ranks and 0 < msg_bytes <= 1 GiB\n");
		MPI_Abort(MPI_COMM_WORLD, 2);
	}
	unsigned char *buf = malloc(msg);
	if (!buf)
		MPI_Abort(MPI_COMM_WORLD, 2);
	long errors = 0;
	size_t nmsg = (total + msg - 1) / msg, sent = 0;
	double t0 = MPI_Wtime();
	for (size_t k = 0; k < nmsg; k++) {
		size_t len = total - sent < msg ? total - sent : msg;
		if (rank == 0) {
			for (size_t i = 0; i < len; i++)
				buf[i] = pattern(k, i);
			MPI_Send(buf, (int)len, MPI_BYTE, 1, 5, MPI_COMM_WORLD);
		} else {
			MPI_Status st;
			int cnt;
			memset(buf, 0, len);
			MPI_Recv(buf, (int)len, MPI_BYTE, 0, 5, MPI_COMM_WORLD, &st);
			MPI_Get_count(&st, MPI_BYTE, &cnt);
			if ((size_t)cnt != len)
				errors++;
			for (size_t i = 0; i < len; i++)
				if (buf[i] != pattern(k, i)) {
					errors++;
					break;
				}
		}
		sent += len;
	}
	if (rank == 1)
		MPI_Send(&errors, 1, MPI_LONG, 0, 6, MPI_COMM_WORLD);
	else
		MPI_Recv(&errors, 1, MPI_LONG, 1, 6, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
	double t1 = MPI_Wtime();
	if (rank == 0) {
		printf("bigxfer: %zu bytes in %zu messages of up to %zu bytes, %.1f MB/s\n", total,
		       nmsg, msg, t1 > t0 ? (double)total / (t1 - t0) / 1e6 : 0.0);
		printf("bigxfer: %s (%ld errors)\n", errors ? "FAILED" : "OK", errors);
	}
	free(buf);
	MPI_Finalize();
	return errors ? 1 : 0;
}
