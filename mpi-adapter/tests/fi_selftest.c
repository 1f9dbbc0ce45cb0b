/* SPDX-License-Identifier: BSD-3-Clause */
/* fi_selftest.c - provider-level checks of the ptl3 provider through the
 * public libfabric API, in one process that sends to its own address (the
 * selection facts MPICH relies on, tagged expected/unexpected/long, truncation,
 * cancel, peek/claim, remote CQ data, inject, multi-receive).  A small
 * stand-in for the fabtests Debian does not package.
 * Run with FI_PROVIDER_PATH=<dir of libptl3-fi.so>. */
#include <rdma/fabric.h>
#include <rdma/fi_cm.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_errno.h>
#include <rdma/fi_rma.h>
#include <rdma/fi_tagged.h>
#include <portals3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "fi_test_util.h"

static struct fid_cq *cq;
static struct fid_ep *ep;

static void fill(char *b, size_t n, int s)
{
	for (size_t i = 0; i < n; i++)
		b[i] = (char)(s + i * 13);
}

static int same(const char *b, size_t n, int s)
{
	for (size_t i = 0; i < n; i++)
		if (b[i] != (char)(s + i * 13))
			return 0;
	return 1;
}

/* Releases of stage slots (ptl3_release.c) that name no slot held for
 * their sender: zero-length puts to our own PT_RDV through the provider's
 * NI (a second PtlNIInit of the interface returns the same NI).  Each named
 * slot that is not held is counted in releases_bad (fi-selftest.sh checks
 * the exact count) and changes nothing.  Returns the count expected. */
static unsigned hostile_releases(void)
{
	const char *nal = getenv("FI_PTL3_NAL");
	ptl_interface_t iface = PTL_IFACE_SHMEM;
	if (nal && !strcasecmp(nal, "udp"))
		iface = PTL_IFACE_UDP;
	else if (nal && !strcasecmp(nal, "ether"))
		iface = PTL_IFACE_ETHER;
	else if (nal && !strcasecmp(nal, "lo"))
		iface = PTL_IFACE_LO;
	else if (nal && !strcasecmp(nal, "myrinet"))
		iface = PTL_IFACE_MYRINET;
	const char *pb = getenv("FI_PTL3_PT_BASE");
	ptl_pt_index_t rdv = (ptl_pt_index_t)(pb ? atoi(pb) : 8) + 2; /* PT_RDV */
	int nmax;
	ptl_handle_ni_t ni;
	ptl_process_id_t me;
	ptl_handle_md_t md;
	CHECK(PtlInit(&nmax) == PTL_OK, "PtlInit");
	if (PtlNIInit(iface, PTL_PID_ANY, NULL, NULL, &ni) != PTL_OK) {
		CHECK(0, "PtlNIInit of the provider's interface");
		return 0;
	}
	CHECK(PtlGetId(ni, &me) == PTL_OK, "PtlGetId");
	/* every slot back first: polls of an empty CQ send the pending
	 * releases (a CQ left holding completions is not idle) */
	fi_test_cq_idle(cq, 1000);
	static char zero;
	ptl_md_t d = {
	    .start = &zero, .length = 0, .threshold = PTL_MD_THRESH_INF, .eq_handle = PTL_EQ_NONE};
	CHECK(PtlMDBind(ni, d, PTL_RETAIN, &md) == PTL_OK, "PtlMDBind");
	const uint64_t rel = 1ULL << 31;
	/* a window of slots none of which is held: 64 */
	CHECK(PtlPut(md, PTL_NOACK_REQ, me, rdv, 0, rel | 0, 0, ~0ULL) == PTL_OK, "put");
	/* a window base that is not one: 1 */
	CHECK(PtlPut(md, PTL_NOACK_REQ, me, rdv, 0, rel | 30, 0, 1) == PTL_OK, "put");
	/* slots past the last one: 64 */
	CHECK(PtlPut(md, PTL_NOACK_REQ, me, rdv, 0, rel | 0xFFC0, 0, ~0ULL) == PTL_OK, "put");
	/* nothing named: 0 */
	CHECK(PtlPut(md, PTL_NOACK_REQ, me, rdv, 0, rel | 64, 0, 0) == PTL_OK, "put");
	fi_test_cq_idle(cq, 1000);
	PtlMDUnlink(md);
	PtlNIFini(ni);
	return 64 + 1 + 64;
}

int main(void)
{
	struct fi_info *hints = fi_allocinfo(), *info = NULL;
	hints->caps = FI_MSG | FI_TAGGED | FI_MULTI_RECV | FI_DIRECTED_RECV;
	if (!getenv("FI_PTL3_RMA") || atoi(getenv("FI_PTL3_RMA")) != 0)
		hints->caps |= FI_RMA | FI_READ | FI_WRITE | FI_REMOTE_READ | FI_REMOTE_WRITE;
	hints->ep_attr->type = FI_EP_RDM;
	hints->domain_attr->threading = FI_THREAD_DOMAIN;
	hints->domain_attr->av_type = FI_AV_TABLE;
	hints->domain_attr->mr_mode = 0;
	hints->tx_attr->op_flags = FI_COMPLETION;
	hints->rx_attr->op_flags = FI_COMPLETION;
	hints->fabric_attr->prov_name = strdup("ptl3");
	TRY(fi_getinfo(FI_VERSION(1, 11), NULL, NULL, 0, hints, &info));
	CHECK(info->domain_attr->threading == FI_THREAD_DOMAIN, "threading not echoed");
	CHECK(info->domain_attr->mr_mode == 0, "mr_mode %d", info->domain_attr->mr_mode);
	CHECK(info->domain_attr->mr_key_size == 8, "mr_key_size");
	CHECK(info->domain_attr->cq_data_size >= 4, "cq_data_size");
	CHECK(strncmp(info->fabric_attr->prov_name, "ofi_", 4) != 0, "ofi_ prefix");

	struct fid_fabric *fabric;
	struct fid_domain *domain;
	struct fid_av *av;
	struct fid_cntr *cntr;
	TRY(fi_fabric(info->fabric_attr, &fabric, NULL));
	TRY(fi_domain(fabric, info, &domain, NULL));
	struct fi_av_attr ava = {.type = FI_AV_TABLE, .name = "shared-av"};
	CHECK(fi_av_open(domain, &ava, &av, NULL) != 0, "named AV must fail");
	ava.name = NULL;
	TRY(fi_av_open(domain, &ava, &av, NULL));
	struct fi_cq_attr cqa = {.format = FI_CQ_FORMAT_TAGGED};
	TRY(fi_cq_open(domain, &cqa, &cq, NULL));
	struct fi_cntr_attr ca = {.events = FI_CNTR_EVENTS_COMP, .wait_obj = FI_WAIT_UNSPEC};
	TRY(fi_cntr_open(domain, &ca, &cntr, NULL));
	TRY(fi_endpoint(domain, info, &ep, NULL));
	TRY(fi_ep_bind(ep, &av->fid, 0));
	TRY(fi_ep_bind(ep, &cq->fid, FI_SEND | FI_RECV | FI_SELECTIVE_COMPLETION));
	TRY(fi_ep_bind(ep, &cntr->fid, FI_READ | FI_WRITE));
	TRY(fi_enable(ep));
	char name[64];
	size_t namelen = sizeof(name);
	TRY(fi_getname(&ep->fid, name, &namelen));
	fi_addr_t self;
	CHECK(fi_av_insert(av, name, 1, &self, 0, NULL) == 1, "av_insert");

	enum { BIG = 1 << 20 };
	char *sb = malloc(BIG), *rb = malloc(BIG);
	struct fi_context sctx, rctx, r2;
	struct fi_cq_tagged_entry e;
	struct fi_cq_err_entry ee;
	size_t sizes[] = {0, 1, 100, 4096, 16384, 16385, 65536, BIG};
	for (int order = 0; order < 2; order++) {
		for (size_t k = 0; k < sizeof(sizes) / sizeof(sizes[0]); k++) {
			size_t n = sizes[k];
			uint64_t tag = 0x1234000 + k;
			fill(sb, n, (int)k + order);
			memset(rb, 0, n);
			if (order == 0) /* expected: receive posted first */
				TRY(fi_trecv(ep, rb, n, NULL, FI_ADDR_UNSPEC, tag, 0, &rctx));
			TRY(fi_tsenddata(ep, sb, n, NULL, 0xabcd0000u + (unsigned)k, self, tag, &sctx));
			int sent = 0;
			if (order == 1) { /* unexpected: let it arrive first */
				for (int i = 0; i < 100 && !sent; i++) {
					struct fi_cq_tagged_entry x;
					sent = fi_cq_read(cq, &x, 1) == 1 && x.op_context == &sctx;
				}
				TRY(fi_trecv(ep, rb, n, NULL, self, tag, 0, &rctx));
			}
			int err = fi_test_wait(cq, &rctx, &e, NULL);
			CHECK(err == 0, "recv %zu bytes (order %d): error %d", n, order, err);
			CHECK(e.len == n && e.tag == tag, "len %zu tag %llx", e.len,
			      (unsigned long long)e.tag);
			CHECK((e.flags & FI_REMOTE_CQ_DATA) && e.data == 0xabcd0000u + (unsigned)k,
			      "cq data");
			CHECK(same(rb, n, (int)k + order), "payload %zu bytes order %d", n, order);
			/* a long unexpected send ends when the receive pulls it:
			 * wait for it too, or its completion is left over for a
			 * later wait on sctx (completions of a send and of its
			 * receive come in either order) */
			if (!sent)
				fi_test_wait(cq, &sctx, NULL, NULL);
		}
	}
	/* ignore bits and FI_ADDR_UNSPEC */
	TRY(fi_trecv(ep, rb, 64, NULL, FI_ADDR_UNSPEC, 0x5500, 0xff, &rctx));
	TRY(fi_tsend(ep, sb, 64, NULL, self, 0x55aa, &sctx));
	CHECK(fi_test_wait(cq, &rctx, &e, NULL) == 0 && e.tag == 0x55aa, "ignore bits");
	fi_test_wait(cq, &sctx, NULL, NULL);

	/* truncation, expected and unexpected, eager and long */
	size_t tsz[] = {1000, 100000};
	for (int order = 0; order < 2; order++)
		for (int k = 0; k < 2; k++) {
			if (order == 0)
				TRY(fi_trecv(ep, rb, 10, NULL, FI_ADDR_UNSPEC, 77, 0, &rctx));
			TRY(fi_tsend(ep, sb, tsz[k], NULL, self, 77, &sctx));
			if (order == 1)
				TRY(fi_trecv(ep, rb, 10, NULL, FI_ADDR_UNSPEC, 77, 0, &rctx));
			memset(&ee, 0, sizeof(ee));
			int err = fi_test_wait(cq, &rctx, NULL, &ee);
			CHECK(err == FI_ETRUNC, "truncation %zu order %d: err %d", tsz[k], order, err);
			CHECK(ee.olen == tsz[k] - 10, "olen %zu", ee.olen);
			CHECK(fi_test_wait(cq, &sctx, NULL, NULL) == 0, "truncated send completes");
		}

	/* cancel */
	TRY(fi_trecv(ep, rb, 10, NULL, FI_ADDR_UNSPEC, 999, 0, &rctx));
	CHECK(fi_cancel(&ep->fid, &rctx) == 0, "fi_cancel");
	CHECK(fi_test_wait(cq, &rctx, NULL, &ee) == FI_ECANCELED, "ECANCELED");

	/* receives the provider matches itself (small ones, ptl3_soft.c) and
	 * receives posted in Portals (large ones) keep their posting order: a
	 * large receive first moves the soft ones before it into Portals */
	{
		struct fi_context c[4];
		char *big2 = malloc(BIG);
		/* soft, then large (the soft one becomes an ME first) */
		TRY(fi_trecv(ep, rb, 64, NULL, FI_ADDR_UNSPEC, 0x900, 0, &c[0]));
		TRY(fi_trecv(ep, big2, BIG, NULL, FI_ADDR_UNSPEC, 0x900, 0, &c[1]));
		/* large (an ME), then soft */
		TRY(fi_trecv(ep, big2 + 4096, 8192, NULL, FI_ADDR_UNSPEC, 0x901, 0, &c[2]));
		TRY(fi_trecv(ep, rb + 128, 64, NULL, FI_ADDR_UNSPEC, 0x901, 0, &c[3]));
		uint64_t tags[4] = {0x900, 0x900, 0x901, 0x901};
		for (int i = 0; i < 4; i++) {
			fill(sb, 40, 50 + i);
			TRY(fi_tsend(ep, sb, 40, NULL, self, tags[i], &sctx));
			fi_test_wait(cq, &sctx, NULL, NULL);
			CHECK(fi_test_wait(cq, &c[i], &e, NULL) == 0 && e.len == 40 &&
			          e.tag == tags[i],
			      "soft/posted order: message %d to receive %d", i, i);
		}
		CHECK(same(rb, 40, 50) && same(big2, 40, 51) && same(big2 + 4096, 40, 52) &&
		          same(rb + 128, 40, 53),
		      "soft/posted order: payloads");
		/* a soft receive behind another one is cancelled; the older one
		 * still takes its message, the cancelled one's goes unexpected */
		TRY(fi_trecv(ep, rb, 64, NULL, FI_ADDR_UNSPEC, 0x902, 0, &c[0]));
		TRY(fi_trecv(ep, rb + 64, 64, NULL, FI_ADDR_UNSPEC, 0x903, 0, &c[1]));
		CHECK(fi_cancel(&ep->fid, &c[1]) == 0, "cancel a soft receive");
		CHECK(fi_test_wait(cq, &c[1], NULL, &ee) == FI_ECANCELED, "soft: ECANCELED");
		CHECK(fi_cancel(&ep->fid, &c[1]) == -FI_ENOENT, "soft: cancelled twice");
		fill(sb, 30, 60);
		TRY(fi_tsend(ep, sb, 30, NULL, self, 0x903, &sctx));
		fi_test_wait(cq, &sctx, NULL, NULL);
		fill(sb, 20, 61);
		TRY(fi_tsend(ep, sb, 20, NULL, self, 0x902, &sctx));
		fi_test_wait(cq, &sctx, NULL, NULL);
		CHECK(fi_test_wait(cq, &c[0], &e, NULL) == 0 && e.len == 20 && same(rb, 20, 61),
		      "soft: the older receive takes its message");
		TRY(fi_trecv(ep, rb + 64, 64, NULL, FI_ADDR_UNSPEC, 0x903, 0, &c[1]));
		CHECK(fi_test_wait(cq, &c[1], &e, NULL) == 0 && e.len == 30 &&
		          same(rb + 64, 30, 60),
		      "soft: the cancelled receive's message waited unexpected");
		/* a message above the eager limit into a soft receive: pulled,
		 * truncated to the receive */
		TRY(fi_trecv(ep, rb, 100, NULL, FI_ADDR_UNSPEC, 0x904, 0, &c[0]));
		fill(sb, 100000, 62);
		TRY(fi_tsend(ep, sb, 100000, NULL, self, 0x904, &sctx));
		memset(&ee, 0, sizeof(ee));
		CHECK(fi_test_wait(cq, &c[0], NULL, &ee) == FI_ETRUNC && ee.olen == 100000 - 100 &&
		          same(rb, 100, 62),
		      "soft: long message truncated (olen %zu)", ee.olen);
		CHECK(fi_test_wait(cq, &sctx, NULL, NULL) == 0, "soft: long send completes");
		free(big2);
	}

	/* peek / claim */
	struct fi_msg_tagged m;
	struct iovec iov = {rb, BIG};
	memset(&m, 0, sizeof(m));
	m.msg_iov = &iov;
	m.iov_count = 1;
	m.addr = FI_ADDR_UNSPEC;
	m.tag = 4242;
	m.context = &r2;
	TRY(fi_trecvmsg(ep, &m, FI_PEEK | FI_COMPLETION));
	CHECK(fi_test_wait(cq, &r2, NULL, &ee) == FI_ENOMSG, "peek on nothing: ENOMSG");
	fill(sb, 50000, 9);
	TRY(fi_tsenddata(ep, sb, 50000, NULL, 7, self, 4242, &sctx));
	int found = 0;
	for (int i = 0; i < 1000 && !found; i++) {
		TRY(fi_trecvmsg(ep, &m, FI_PEEK | FI_CLAIM | FI_COMPLETION));
		if (fi_test_wait(cq, &r2, &e, &ee) == 0)
			found = 1;
	}
	CHECK(found && e.len == 50000 && e.tag == 4242, "peek found");
	TRY(fi_trecvmsg(ep, &m, FI_CLAIM | FI_COMPLETION));
	CHECK(fi_test_wait(cq, &r2, &e, NULL) == 0 && e.len == 50000 && same(rb, 50000, 9),
	      "claim");
	fi_test_wait(cq, &sctx, NULL, NULL);

	/* flood: many unexpected messages (eager buffers fill, are re-posted,
	 * the overflow entry takes the rest); all arrive intact and in order */
	{
		enum { NF = 400, FL = 700 };
		struct fi_context fc[NF];
		char *fb = malloc((size_t)NF * FL);
		for (int i = 0; i < NF; i++) {
			fill(fb + (size_t)i * FL, FL, i);
			TRY(fi_tsend(ep, fb + (size_t)i * FL, FL, NULL, self, 0x777, &fc[i]));
		}
		for (int i = 0; i < 50; i++)
			fi_cq_read(cq, &e, 0);
		int bad = 0;
		for (int i = 0; i < NF; i++) {
			memset(rb, 0, FL);
			TRY(fi_trecv(ep, rb, FL, NULL, FI_ADDR_UNSPEC, 0x777, 0, &rctx));
			if (fi_test_wait(cq, &rctx, &e, NULL) != 0 || e.len != FL ||
			    !same(rb, FL, i))
				bad++;
		}
		CHECK(bad == 0, "flood: %d of %d messages wrong or out of order", bad, NF);
		for (int i = 0; i < NF; i++)
			fi_test_wait(cq, &fc[i], NULL, NULL);
		free(fb);
	}

	/* inject: no completion, buffer reusable at once */
	fill(sb, 100, 3);
	TRY(fi_tinject(ep, sb, 100, self, 31));
	memset(sb, 0, 100);
	TRY(fi_trecv(ep, rb, 100, NULL, FI_ADDR_UNSPEC, 31, 0, &rctx));
	CHECK(fi_test_wait(cq, &rctx, &e, NULL) == 0 && same(rb, 100, 3), "inject");

	/* poll set: a CQ is reported while it holds an entry (fi_poll drives
	 * progress), a counter once per change; bad members refused */
	{
		struct fid_poll *ps;
		void *ctx[4];
		int n = 0;
		cq->fid.context = &cq; /* the application's context, as fabtests sets it */
		cntr->fid.context = &cntr;
		TRY(fi_poll_open(domain, &(struct fi_poll_attr){0}, &ps));
		TRY(fi_poll_add(ps, &cq->fid, 0));
		TRY(fi_poll_add(ps, &cntr->fid, 0));
		CHECK(fi_poll_add(ps, &cq->fid, 0) == -FI_EALREADY, "poll_add twice");
		CHECK(fi_poll_add(ps, &av->fid, 0) == -FI_EINVAL, "poll_add of an AV");
		CHECK(fi_poll(ps, ctx, 4) == 0, "idle poll set reports nothing");
		fill(sb, 64, 6);
		TRY(fi_trecv(ep, rb, 64, NULL, FI_ADDR_UNSPEC, 77, 0, &rctx));
		TRY(fi_tsend(ep, sb, 64, NULL, self, 77, &sctx));
		for (int i = 0; i < 100000 && n == 0; i++)
			n = fi_poll(ps, ctx, 4);
		CHECK(n == 1 && ctx[0] == &cq, "poll: the CQ (%d contexts)", n);
		CHECK(fi_test_wait(cq, &rctx, &e, NULL) == 0 && same(rb, 64, 6), "poll: message");
		CHECK(fi_test_wait(cq, &sctx, NULL, NULL) == 0, "poll: send");
		uint64_t v0 = fi_cntr_read(cntr);
		TRY(fi_cntr_add(cntr, 1));
		n = fi_poll(ps, ctx, 4);
		CHECK(n == 1 && ctx[0] == &cntr, "poll: the counter once (%d)", n);
		CHECK(fi_poll(ps, ctx, 4) == 0, "poll: no change, nothing");
		TRY(fi_cntr_set(cntr, v0));
		TRY(fi_poll_del(ps, &cntr->fid, 0));
		CHECK(fi_poll_del(ps, &cntr->fid, 0) == -FI_ENOENT, "poll_del twice");
		TRY(fi_poll_del(ps, &cq->fid, 0));
		TRY(fi_close(&ps->fid));
		cq->fid.context = NULL;
		cntr->fid.context = NULL;
	}

	/* inject flood: every inject arrives before its receive is posted, the
	 * source buffer is overwritten at once.  Over the stage slots (and,
	 * with FI_PTL3_STAGE_SLOTS smaller than NI, past them: the general
	 * path) and, with tiny unexpected buffers (fi-selftest.sh's second
	 * run), header-only: each one pulled from the sender's stage slot */
	{
		enum { NI = 300, IL = 600 };
		int bad = 0;
		for (int i = 0; i < NI; i++) {
			fill(sb, IL, 1000 + i);
			TRY(fi_tinject(ep, sb, IL, self, 0x888));
			memset(sb, 0, IL);
		}
		for (int i = 0; i < NI; i++) {
			memset(rb, 0, IL);
			TRY(fi_trecv(ep, rb, IL, NULL, FI_ADDR_UNSPEC, 0x888, 0, &rctx));
			if (fi_test_wait(cq, &rctx, &e, NULL) != 0 || e.len != IL ||
			    !same(rb, IL, 1000 + i))
				bad++;
		}
		CHECK(bad == 0, "inject flood: %d of %d messages wrong or out of order", bad, NI);
		/* a truncated inject: the receiver releases the sender's slot */
		fill(sb, IL, 77);
		TRY(fi_tinject(ep, sb, IL, self, 0x889));
		for (int i = 0; i < 20; i++)
			fi_cq_read(cq, &e, 0);
		memset(rb, 0, IL);
		TRY(fi_trecv(ep, rb, 100, NULL, FI_ADDR_UNSPEC, 0x889, 0, &rctx));
		struct fi_cq_err_entry te;
		memset(&te, 0, sizeof(te));
		CHECK(fi_test_wait(cq, &rctx, NULL, &te) == FI_ETRUNC && te.len == 100 &&
		          te.olen == IL - 100 && same(rb, 100, 77),
		      "truncated inject: ETRUNC, 100 bytes, olen %zu", te.olen);
		/* the slots came back: a second round works the same */
		bad = 0;
		for (int i = 0; i < NI; i++) {
			fill(sb, IL, 2000 + i);
			TRY(fi_tinject(ep, sb, IL, self, 0x88A));
			memset(rb, 0, IL);
			TRY(fi_trecv(ep, rb, IL, NULL, FI_ADDR_UNSPEC, 0x88A, 0, &rctx));
			if (fi_test_wait(cq, &rctx, &e, NULL) != 0 || e.len != IL ||
			    !same(rb, IL, 2000 + i))
				bad++;
		}
		CHECK(bad == 0, "inject round 2: %d of %d messages wrong", bad, NI);
	}

	/* multi-receive */
	size_t min = 4096;
	TRY(fi_setopt(&ep->fid, FI_OPT_ENDPOINT, FI_OPT_MIN_MULTI_RECV, &min, sizeof(min)));
	char *mb = malloc(16384);
	struct iovec miov = {mb, 16384};
	struct fi_msg mm = {.msg_iov = &miov, .iov_count = 1, .addr = FI_ADDR_UNSPEC,
			    .context = &rctx};
	/* one message arrives before the buffer is posted */
	fill(sb, 3000, 1);
	TRY(fi_send(ep, sb, 3000, NULL, self, &sctx));
	for (int i = 0; i < 100; i++)
		fi_cq_read(cq, &e, 0);
	TRY(fi_recvmsg(ep, &mm, FI_MULTI_RECV | FI_COMPLETION));
	int got = 0, released = 0;
	size_t total = 0;
	for (int i = 0; i < 6; i++) {
		fill(sb + 4000 * ((i % 2) + 1), 3000, i + 2);
		TRY(fi_send(ep, sb + 4000 * ((i % 2) + 1), 3000, NULL, self, &sctx));
	}
	struct timespec t0, t;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	while (!released) {
		ssize_t r = fi_cq_read(cq, &e, 1);
		if (r == 1 && e.op_context == &rctx) {
			if (e.flags & FI_RECV) {
				got++;
				total += e.len;
				CHECK(e.buf >= (void *)mb && (char *)e.buf + e.len <= mb + 16384,
				      "multi-recv buf inside the buffer");
			}
			if (e.flags & FI_MULTI_RECV)
				released = 1;
		}
		clock_gettime(CLOCK_MONOTONIC, &t);
		if (t.tv_sec - t0.tv_sec > 10)
			break;
	}
	CHECK(released, "FI_MULTI_RECV release seen");
	CHECK(got >= 4 && total == (size_t)got * 3000, "multi-recv got %d messages", got);
	/* the rest lands in a second buffer */
	mm.context = &r2;
	TRY(fi_recvmsg(ep, &mm, FI_MULTI_RECV | FI_COMPLETION));
	int got2 = 0;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	while (got + got2 < 7) {
		ssize_t r = fi_cq_read(cq, &e, 1);
		if (r == 1 && e.op_context == &r2 && (e.flags & FI_RECV))
			got2++;
		clock_gettime(CLOCK_MONOTONIC, &t);
		if (t.tv_sec - t0.tv_sec > 10)
			break;
	}
	CHECK(got + got2 == 7, "all 7 FI_MSG messages received (%d + %d)", got, got2);
	CHECK(fi_cancel(&ep->fid, &r2) == 0, "cancel multi-recv buffer");

	/* FI_RMA (offered unless FI_PTL3_RMA=0) */
	if (info->caps & FI_RMA) {
		struct fid_mr *mr;
		char *win = calloc(1, 8192);
		TRY(fi_mr_reg(domain, win, 8192, FI_REMOTE_READ | FI_REMOTE_WRITE, 0, 0x77, 0, &mr,
			      NULL));
		CHECK(fi_mr_key(mr) == 0x77, "requested key kept");
		fill(sb, 1000, 5);
		uint64_t c0 = fi_cntr_read(cntr);
		TRY(fi_write(ep, sb, 1000, NULL, self, 100, 0x77, &sctx));
		TRY(fi_cntr_wait(cntr, c0 + 1, 10000));
		CHECK(same(win + 100, 1000, 5), "fi_write landed at offset 100");
		memset(rb, 0, 1000);
		TRY(fi_read(ep, rb, 1000, NULL, self, 100, 0x77, &r2));
		TRY(fi_cntr_wait(cntr, c0 + 2, 10000));
		CHECK(same(rb, 1000, 5), "fi_read");
		fi_test_wait(cq, &sctx, NULL, NULL);
		fi_test_wait(cq, &r2, NULL, NULL);

		/* key 0 is a key like any other (MPICH's allocator starts there) */
		struct fid_mr *mr0, *dup;
		char *win0 = calloc(1, 4096);
		TRY(fi_mr_reg(domain, win0, 4096, FI_REMOTE_READ | FI_REMOTE_WRITE, 0, 0, 0, &mr0,
		              NULL));
		CHECK(fi_mr_key(mr0) == 0, "requested key 0 kept (got %llu)",
		      (unsigned long long)fi_mr_key(mr0));
		CHECK(fi_mr_reg(domain, win0, 64, FI_REMOTE_READ, 0, 0x77, 0, &dup, NULL) ==
		          -FI_ENOKEY,
		      "a key already exposed is refused with -FI_ENOKEY");
		fill(sb, 300, 9);
		TRY(fi_write(ep, sb, 300, NULL, self, 7, 0, &sctx));
		TRY(fi_cntr_wait(cntr, c0 + 3, 10000));
		fi_test_wait(cq, &sctx, NULL, NULL);
		CHECK(same(win0 + 7, 300, 9), "fi_write through key 0 landed at offset 7");

		/* a burst of reads without a CQ read in between (MPICH's MPI_Get
		 * loop): three EQs' worth must neither overflow the Portals EQ nor
		 * lose a completion */
		const char *eqs = getenv("FI_PTL3_EQ_SIZE");
		long burst = 3 * (eqs ? atol(eqs) : 32768);
		struct iovec riov = {rb, 8};
		struct fi_rma_iov rrma = {100, 8, 0x77};
		struct fi_msg_rma rmsg = {.msg_iov = &riov,
		                          .iov_count = 1,
		                          .addr = self,
		                          .rma_iov = &rrma,
		                          .rma_iov_count = 1};
		uint64_t c1 = fi_cntr_read(cntr);
		for (long i = 0; i < burst; i++) {
			ssize_t r;
			while ((r = fi_readmsg(ep, &rmsg, 0)) == -FI_EAGAIN)
				fi_cq_read(cq, &e, 0);
			TRY(r);
		}
		TRY(fi_cntr_wait(cntr, c1 + (uint64_t)burst, 30000));
		CHECK(fi_cntr_readerr(cntr) == 0, "read burst: %llu errors",
		      (unsigned long long)fi_cntr_readerr(cntr));
		printf("fi_selftest: %ld reads without a CQ read completed\n", burst);
		TRY(fi_close(&mr0->fid));
		TRY(fi_close(&mr->fid));
		free(win0);
		free(win);
		printf("fi_selftest: FI_RMA checked\n");
	} else {
		CHECK(getenv("FI_PTL3_RMA") && atoi(getenv("FI_PTL3_RMA")) == 0,
		      "FI_RMA offered by default");
	}

	/* hostile releases, then injects still work and their slots come back */
	{
		unsigned bad = hostile_releases();
		printf("fi_selftest: hostile releases sent, expect releases_bad %u\n", bad);
		int wrong = 0;
		for (int i = 0; i < 300; i++) {
			fill(sb, 200, 3000 + i);
			TRY(fi_tinject(ep, sb, 200, self, 0x88B));
			memset(rb, 0, 200);
			TRY(fi_trecv(ep, rb, 200, NULL, FI_ADDR_UNSPEC, 0x88B, 0, &rctx));
			if (fi_test_wait(cq, &rctx, &e, NULL) != 0 || e.len != 200 ||
			    !same(rb, 200, 3000 + i))
				wrong++;
		}
		CHECK(wrong == 0, "injects after hostile releases: %d of 300 wrong", wrong);
	}

	TRY(fi_close(&ep->fid));
	TRY(fi_close(&cntr->fid));
	TRY(fi_close(&cq->fid));
	TRY(fi_close(&av->fid));
	TRY(fi_close(&domain->fid));
	TRY(fi_close(&fabric->fid));
	fi_freeinfo(info);
	fi_freeinfo(hints);
	free(sb);
	free(rb);
	free(mb);
	return fi_test_report("fi_selftest: ");
}
