/* SPDX-License-Identifier: BSD-3-Clause */
/* reorder.c - MPI's matching order while receives race arriving messages.
 * Rank 1 sends N small messages back to back (tag i % 3, payload i); rank 0
 * posts receives four at a time (MPI_ANY_TAG, or one tag), then waits for
 * the four.  With one sender the outcome does not depend on timing: in post
 * order, each receive gets the lowest-numbered message not yet taken that
 * it matches (MPI's non-overtaking rule); rank 0 computes that and checks
 * every payload.  The receive buffers are large (64 KiB), so the provider
 * posts them into Portals.  Over myrinet offload those posts do not wait
 * for the NIC, and one racing an unexpected arrival is refused by the NIC
 * and posted again (mpi-adapter/ptl3_repost.c): the order must hold all the
 * same.  Usage: reorder [N] (default 3000).  Exit 0: every payload right. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define BATCH 4
#define RBUF  65536

/* The message receive j of a batch gets: the lowest one not taken that
 * matches tag (MPI_ANY_TAG: any). */
static int expect_next(const unsigned char *taken, int n, int tag)
{
	for (int i = 0; i < n; i++)
		if (!taken[i] && (tag == MPI_ANY_TAG || i % 3 == tag))
			return i;
	return -1;
}

static int receiver(int n)
{
	unsigned char *taken = calloc((size_t)n, 1);
	char *buf[BATCH];
	int errors = 0, got = 0, round = 0;
	for (int b = 0; b < BATCH; b++)
		buf[b] = malloc(RBUF);
	while (got < n) {
		MPI_Request req[BATCH];
		int want[BATCH], k = 0;
		for (; k < BATCH && got + k < n; k++) {
			/* a tag every third receive, when a message of it is left */
			int idx = round * BATCH + k;
			int tag = idx % 3 == 0 ? (idx / 3) % 3 : MPI_ANY_TAG;
			if (tag != MPI_ANY_TAG && expect_next(taken, n, tag) < 0)
				tag = MPI_ANY_TAG;
			want[k] = expect_next(taken, n, tag);
			taken[want[k]] = 1;
			MPI_Irecv(buf[k], RBUF, MPI_CHAR, 1, tag, MPI_COMM_WORLD, &req[k]);
		}
		MPI_Status st[BATCH];
		MPI_Waitall(k, req, st);
		for (int j = 0; j < k; j++) {
			int v;
			memcpy(&v, buf[j], sizeof(v));
			if (v != want[j] && errors++ < 10)
				fprintf(stderr, "reorder: receive %d got message %d, expected %d\n",
				        got + j, v, want[j]);
		}
		got += k;
		round++;
	}
	free(taken);
	for (int b = 0; b < BATCH; b++)
		free(buf[b]);
	return errors;
}

int main(int argc, char **argv)
{
	int rank, size, n = argc > 1 ? atoi(argv[1]) : 3000, errors = 0;
	MPI_Init(&argc, &argv);
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	MPI_Comm_size(MPI_COMM_WORLD, &size);
	if (size != 2 || n < 1) {
		if (!rank)
			fprintf(stderr, "reorder: needs 2 ranks and N >= 1\n");
		MPI_Abort(MPI_COMM_WORLD, 2);
	}
	if (rank == 1) {
		for (int i = 0; i < n; i++) {
			int v = i;
			MPI_Send(&v, 1, MPI_INT, 0, i % 3, MPI_COMM_WORLD);
		}
	} else {
		errors = receiver(n);
	}
	MPI_Allreduce(MPI_IN_PLACE, &errors, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
	if (!rank)
		printf("reorder: %d messages, %s (%d wrong)\n", n, errors ? "FAILED" : "OK", errors);
	MPI_Finalize();
	return errors ? 1 : 0;
}
