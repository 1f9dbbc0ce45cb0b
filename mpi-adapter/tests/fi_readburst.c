/* SPDX-License-Identifier: BSD-3-Clause */
/* fi_readburst.c - a burst of fi_read without a CQ read at a target that
 * stalls and then catches up (MPICH's rma/manyget on a loaded machine).
 *
 * Two processes over the ptl3 provider: the child exposes a window and does
 * not call the provider for --stall ms, then progresses flat out; the parent
 * issues reads without reading its CQ for --seconds (at least 3 event queues'
 * worth).  While the child catches up, every Portals call of the parent's
 * reads gives the NAL a pass that takes up to 64 replies: the provider must
 * drain the Portals EQ often enough that it never overflows (it aborts on
 * overflow rather than lose a completion).  Exit 0 when every read completed
 * without error with the window's data.
 * Run with FI_PROVIDER_PATH=<dir of libptl3-fi.so>. */
#include <errno.h>
#include <poll.h>
#include <rdma/fabric.h>
#include <rdma/fi_cm.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_errno.h>
#include <rdma/fi_rma.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define WIN_KEY  0x51
#define WIN_LEN  4096
#define READ_LEN 8

#define TRY(call)                                                                                  \
	do {                                                                                       \
		int rc_ = (int)(call);                                                             \
		if (rc_ < 0) {                                                                     \
			fprintf(stderr, "fi_readburst: %s:%d: %s: %s\n", __FILE__, __LINE__,       \
			        #call, fi_strerror(-rc_));                                         \
			exit(1);                                                                   \
		}                                                                                  \
	} while (0)

struct rank {
	struct fi_info *info;
	struct fid_fabric *fabric;
	struct fid_domain *domain;
	struct fid_av *av;
	struct fid_cq *cq;
	struct fid_cntr *cntr;
	struct fid_ep *ep;
};

static double now_s(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static void rank_open(struct rank *r)
{
	struct fi_info *hints = fi_allocinfo();
	hints->caps = FI_MSG | FI_TAGGED | FI_RMA | FI_READ | FI_REMOTE_READ;
	hints->ep_attr->type = FI_EP_RDM;
	hints->domain_attr->threading = FI_THREAD_DOMAIN;
	hints->domain_attr->av_type = FI_AV_TABLE;
	hints->domain_attr->mr_mode = 0;
	hints->fabric_attr->prov_name = strdup("ptl3");
	TRY(fi_getinfo(FI_VERSION(1, 11), NULL, NULL, 0, hints, &r->info));
	fi_freeinfo(hints);
	TRY(fi_fabric(r->info->fabric_attr, &r->fabric, NULL));
	TRY(fi_domain(r->fabric, r->info, &r->domain, NULL));
	struct fi_av_attr ava = {.type = FI_AV_TABLE};
	TRY(fi_av_open(r->domain, &ava, &r->av, NULL));
	struct fi_cq_attr cqa = {.format = FI_CQ_FORMAT_TAGGED};
	TRY(fi_cq_open(r->domain, &cqa, &r->cq, NULL));
	struct fi_cntr_attr ca = {.events = FI_CNTR_EVENTS_COMP, .wait_obj = FI_WAIT_UNSPEC};
	TRY(fi_cntr_open(r->domain, &ca, &r->cntr, NULL));
	TRY(fi_endpoint(r->domain, r->info, &r->ep, NULL));
	TRY(fi_ep_bind(r->ep, &r->av->fid, 0));
	TRY(fi_ep_bind(r->ep, &r->cq->fid, FI_SEND | FI_RECV | FI_SELECTIVE_COMPLETION));
	TRY(fi_ep_bind(r->ep, &r->cntr->fid, FI_READ));
	TRY(fi_enable(r->ep));
}

static void rank_close(struct rank *r)
{
	TRY(fi_close(&r->ep->fid));
	TRY(fi_close(&r->cntr->fid));
	TRY(fi_close(&r->cq->fid));
	TRY(fi_close(&r->av->fid));
	TRY(fi_close(&r->domain->fid));
	TRY(fi_close(&r->fabric->fid));
	fi_freeinfo(r->info);
}

/* The target: expose the window, send our name, stall, then progress until
 * the parent closes the pipe (bounded: 120 s). */
static int run_target(int name_fd, int stop_fd, int stall_ms)
{
	struct rank r;
	rank_open(&r);
	static char win[WIN_LEN];
	for (int i = 0; i < WIN_LEN; i++)
		win[i] = (char)(i * 7 + 3);
	struct fid_mr *mr;
	TRY(fi_mr_reg(r.domain, win, WIN_LEN, FI_REMOTE_READ, 0, WIN_KEY, 0, &mr, NULL));
	char name[64];
	size_t namelen = sizeof(name);
	TRY(fi_getname(&r.ep->fid, name, &namelen));
	if (write(name_fd, name, namelen) != (ssize_t)namelen)
		return 1;
	close(name_fd);
	usleep((useconds_t)stall_ms * 1000);
	struct pollfd pfd = {.fd = stop_fd, .events = POLLIN};
	double deadline = now_s() + 120;
	for (unsigned long n = 0;; n++) {
		struct fi_cq_tagged_entry e;
		fi_cq_read(r.cq, &e, 1); /* drives the provider: nothing completes here */
		if ((n & 255) == 0 && (poll(&pfd, 1, 0) > 0 || now_s() > deadline))
			break;
	}
	TRY(fi_close(&mr->fid));
	rank_close(&r);
	return 0;
}

/* The initiator: reads without a CQ read for `seconds` and at least `min`
 * of them, then waits for all; returns the number of failures. */
static int run_initiator(int name_fd, int stop_fd, double seconds, long min)
{
	struct rank r;
	rank_open(&r);
	char name[64];
	ssize_t namelen = read(name_fd, name, sizeof(name));
	if (namelen <= 0) {
		fprintf(stderr, "fi_readburst: the target sent no address\n");
		return 1;
	}
	fi_addr_t target;
	if (fi_av_insert(r.av, name, 1, &target, 0, NULL) != 1) {
		fprintf(stderr, "fi_readburst: fi_av_insert of the target failed\n");
		return 1;
	}
	static char rb[64][READ_LEN];
	long issued = 0, eagain = 0;
	double t0 = now_s();
	while (issued < min || now_s() - t0 < seconds) {
		uint64_t off = (uint64_t)(issued % (WIN_LEN / READ_LEN)) * READ_LEN;
		ssize_t rc =
		    fi_read(r.ep, rb[issued % 64], READ_LEN, NULL, target, off, WIN_KEY, NULL);
		if (rc == -FI_EAGAIN) { /* the provider may push back: allowed */
			struct fi_cq_tagged_entry e;
			fi_cq_read(r.cq, &e, 1);
			eagain++;
			continue;
		}
		TRY(rc);
		issued++;
	}
	double t1 = now_s();
	int bad = 0;
	if (fi_cntr_wait(r.cntr, (uint64_t)issued, 60000) != 0) {
		fprintf(stderr, "fi_readburst: %llu of %ld reads completed in 60 s\n",
		        (unsigned long long)fi_cntr_read(r.cntr), issued);
		bad++;
	}
	if (fi_cntr_readerr(r.cntr) != 0) {
		fprintf(stderr, "fi_readburst: %llu reads failed\n",
		        (unsigned long long)fi_cntr_readerr(r.cntr));
		bad++;
	}
	for (long i = 0; i < 64 && i < issued; i++) {
		/* the last read into each buffer decides its contents */
		long last = i + ((issued - 1 - i) / 64) * 64;
		long off = (last % (WIN_LEN / READ_LEN)) * READ_LEN;
		for (int k = 0; k < READ_LEN; k++)
			if (rb[i][k] != (char)((off + k) * 7 + 3)) {
				fprintf(stderr, "fi_readburst: read %ld returned wrong data\n",
				        last);
				bad++;
				break;
			}
	}
	printf("fi_readburst: %ld reads issued in %.2f s without a CQ read (%ld -FI_EAGAIN), "
	       "all completed: %s\n",
	       issued, t1 - t0, eagain, bad ? "no" : "yes");
	close(stop_fd);
	rank_close(&r);
	return bad;
}

static void usage(void)
{
	puts("usage: fi_readburst [--stall MS] [--seconds S] [--min N]\n"
	     "  --stall MS    the target does not call the provider for MS ms (default 300)\n"
	     "  --seconds S   the initiator issues reads for S s (default 1.5)\n"
	     "  --min N       and at least N reads (default 3 * FI_PTL3_EQ_SIZE, or 98304)");
}

int main(int argc, char **argv)
{
	int stall_ms = 300;
	double seconds = 1.5;
	const char *eqs = getenv("FI_PTL3_EQ_SIZE");
	long min = 3 * (eqs ? atol(eqs) : 32768);
	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--stall") && i + 1 < argc)
			stall_ms = atoi(argv[++i]);
		else if (!strcmp(argv[i], "--seconds") && i + 1 < argc)
			seconds = atof(argv[++i]);
		else if (!strcmp(argv[i], "--min") && i + 1 < argc)
			min = atol(argv[++i]);
		else {
			usage();
			return strcmp(argv[i], "--help") ? 2 : 0;
		}
	}
	int name_pipe[2], stop_pipe[2];
	if (pipe(name_pipe) || pipe(stop_pipe)) {
		perror("fi_readburst: pipe");
		return 1;
	}
	pid_t child = fork();
	if (child < 0) {
		perror("fi_readburst: fork");
		return 1;
	}
	if (child == 0) {
		close(name_pipe[0]);
		close(stop_pipe[1]);
		_exit(run_target(name_pipe[1], stop_pipe[0], stall_ms));
	}
	close(name_pipe[1]);
	close(stop_pipe[0]);
	int bad = run_initiator(name_pipe[0], stop_pipe[1], seconds, min);
	int status = 0;
	if (waitpid(child, &status, 0) != child || !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
		fprintf(stderr, "fi_readburst: the target process failed (status %#x)\n", status);
		bad++;
	}
	return bad ? 1 : 0;
}
