/* osu_latency_mt: multi-threaded latency with the OSU 3.6 method.
 *
 * Rank 0 ping-pongs from one sending thread.  Rank 1 runs OSU_MT_THREADS
 * receiving threads that live for the whole run and share the iterations of
 * every size (thread k answers iterations k, k + THREADS, ...), all using the
 * same two message buffers.  Before each size the receivers meet at a
 * mutex/condition rendezvous; the last one to arrive enters the MPI_Barrier
 * that pairs with rank 0's, then releases the others.
 *
 * As in 3.6, every receiving thread blocks inside MPI_Recv, which MPICH
 * implements by busy polling.  With two cores (rank 0 plus two polling
 * threads on rank 1) the threads mostly wait for the scheduler and the test
 * runs for minutes (hundreds of microseconds per small message); this is the
 * genuine program's behaviour and is kept on purpose (see README.md). */
#include "osu_util.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#define OSU_MT_THREADS 2

/* Shared by the threads of one process. */
struct mt_run {
	const struct osu_opts *o;
	char *sbuf, *rbuf;
	pthread_mutex_t lock;
	pthread_cond_t next_size;
	int arrived;    /* receivers waiting at the rendezvous of this size */
	unsigned round; /* rendezvous generation, guards spurious wake-ups  */
};

struct mt_thread {
	pthread_t tid;
	int id;
	struct mt_run *run;
};

/* Receivers meet before each size; the last one synchronises with rank 0. */
static void receivers_rendezvous(struct mt_run *r)
{
	pthread_mutex_lock(&r->lock);
	if (++r->arrived == OSU_MT_THREADS) {
		MPI_Barrier(MPI_COMM_WORLD);
		r->arrived = 0;
		r->round++;
		pthread_cond_broadcast(&r->next_size);
	} else {
		unsigned round = r->round;
		while (round == r->round)
			pthread_cond_wait(&r->next_size, &r->lock);
	}
	pthread_mutex_unlock(&r->lock);
}

static void *receiver(void *arg)
{
	struct mt_thread *t = arg;
	struct mt_run *r = t->run;
	int loop, skip;
	for (size_t size = osu_first_size(r->o); size <= r->o->max_size;
	     size = osu_next_size(size)) {
		receivers_rendezvous(r);
		osu_iters(r->o, size, &loop, &skip);
		osu_touch(r->sbuf, r->rbuf, size);
		for (int i = t->id; i < loop + skip; i += OSU_MT_THREADS) {
			MPI_Recv(r->rbuf, (int)size, MPI_CHAR, 0, 1, MPI_COMM_WORLD,
			         MPI_STATUS_IGNORE);
			MPI_Send(r->sbuf, (int)size, MPI_CHAR, 0, 2, MPI_COMM_WORLD);
		}
	}
	return NULL;
}

static void *sender(void *arg)
{
	struct mt_thread *t = arg;
	struct mt_run *r = t->run;
	int loop, skip;
	for (size_t size = osu_first_size(r->o); size <= r->o->max_size;
	     size = osu_next_size(size)) {
		MPI_Barrier(MPI_COMM_WORLD);
		osu_iters(r->o, size, &loop, &skip);
		osu_touch(r->sbuf, r->rbuf, size);
		double t_start = 0.0;
		for (int i = 0; i < loop + skip; i++) {
			if (i == skip)
				t_start = MPI_Wtime();
			MPI_Send(r->sbuf, (int)size, MPI_CHAR, 1, 1, MPI_COMM_WORLD);
			MPI_Recv(r->rbuf, (int)size, MPI_CHAR, 1, 2, MPI_COMM_WORLD,
			         MPI_STATUS_IGNORE);
		}
		osu_print_row(size, (MPI_Wtime() - t_start) * 1e6 / (2.0 * loop));
	}
	return NULL;
}

int main(int argc, char **argv)
{
	struct osu_opts o;
	int rank, np;
	osu_defaults(&o, OSU_PT2PT, "OSU MPI Multi-threaded Latency Test", "Latency (us)");
	int rc = osu_init(&argc, &argv, &o, MPI_THREAD_MULTIPLE, &rank, &np);
	if (rc)
		return rc;
	struct mt_run run = {.o = &o, .arrived = 0, .round = 0};
	osu_pt2pt_buffers(o.max_size, 64, &run.sbuf, &run.rbuf);
	pthread_mutex_init(&run.lock, NULL);
	pthread_cond_init(&run.next_size, NULL);
	struct mt_thread thr[OSU_MT_THREADS];
	int nthreads = rank == 0 ? 1 : OSU_MT_THREADS;
	if (rank == 0) {
		osu_print_header(&o);
		osu_print_colhdr(o.label);
	}
	for (int k = 0; k < nthreads; k++) {
		thr[k].id = k;
		thr[k].run = &run;
		if (pthread_create(&thr[k].tid, NULL, rank == 0 ? sender : receiver, &thr[k]) !=
		    0) {
			fprintf(stderr, "pthread_create failed\n");
			MPI_Abort(MPI_COMM_WORLD, 1);
		}
	}
	for (int k = 0; k < nthreads; k++)
		pthread_join(thr[k].tid, NULL);
	pthread_cond_destroy(&run.next_size);
	pthread_mutex_destroy(&run.lock);
	osu_pt2pt_buffers_free(run.sbuf, run.rbuf);
	return osu_finish();
}
