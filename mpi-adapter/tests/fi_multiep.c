/* SPDX-License-Identifier: BSD-3-Clause */
/* fi_multiep.c - several endpoints on one ptl3 domain (one Portals NI), in
 * one process: every endpoint sends to every other one, tagged (directed
 * receives) and untagged, eager and long, receive posted before and after
 * the arrival (the long unexpected ones are pulled from the sender's entry on
 * the domain's shared PT_RDV), fi_inject from every endpoint (staged from
 * the first one only), and each message completes on its receiver's CQ and
 * nowhere else.  Then the capacity: as many endpoints as domain_attr->ep_cnt
 * enable, one more fails with -FI_EBUSY, and a closed one's place is reused.
 * Run with FI_PROVIDER_PATH=<dir of libptl3-fi.so>. */
#include <rdma/fabric.h>
#include <rdma/fi_cm.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_errno.h>
#include <rdma/fi_tagged.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "fi_test_util.h"

enum { NEP = 3, MAXC = 4096, BIG = 1 << 20 };

static struct fid_domain *domain;
static struct fid_av *av;
static struct fid_ep *ep[NEP];
static struct fid_cq *cq[NEP];
static fi_addr_t addr[NEP];

/* completions read so far, with the CQ they came from */
struct comp {
	void *ctx;
	int cq;
	size_t len;
	uint64_t tag;
	int err;
};
static struct comp seen[MAXC];
static int nseen;

static void poll_all(void)
{
	for (int i = 0; i < NEP; i++) {
		struct fi_cq_tagged_entry e;
		ssize_t r = fi_cq_read(cq[i], &e, 1);
		if (r == 1 && nseen < MAXC) {
			seen[nseen++] = (struct comp){e.op_context, i, e.len, e.tag, 0};
		} else if (r == -FI_EAVAIL) {
			struct fi_cq_err_entry ee;
			memset(&ee, 0, sizeof(ee));
			if (fi_cq_readerr(cq[i], &ee, 0) == 1 && nseen < MAXC)
				seen[nseen++] =
				    (struct comp){ee.op_context, i, ee.len, ee.tag, ee.err};
		}
	}
}

/* wait (10 s at most) for ctx's completion; returns it (removed from the list) */
static struct comp wait_for(void *ctx)
{
	struct timespec t0, t;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (;;) {
		for (int i = 0; i < nseen; i++) {
			if (seen[i].ctx == ctx) {
				struct comp c = seen[i];
				seen[i] = seen[--nseen];
				return c;
			}
		}
		poll_all();
		clock_gettime(CLOCK_MONOTONIC, &t);
		if (t.tv_sec - t0.tv_sec > 10) {
			printf("FATAL: timeout waiting for a completion\n");
			exit(1);
		}
	}
}

static void fill(char *b, size_t n, int s)
{
	for (size_t i = 0; i < n; i++)
		b[i] = (char)(i * 7 + (size_t)s * 13 + 1);
}

static int same(const char *b, size_t n, int s)
{
	for (size_t i = 0; i < n; i++)
		if (b[i] != (char)(i * 7 + (size_t)s * 13 + 1))
			return 0;
	return 1;
}

static void open_ep(struct fi_info *info, int i)
{
	struct fi_cq_attr cqa = {.format = FI_CQ_FORMAT_TAGGED};
	TRY(fi_cq_open(domain, &cqa, &cq[i], NULL));
	TRY(fi_endpoint(domain, info, &ep[i], NULL));
	TRY(fi_ep_bind(ep[i], &av->fid, 0));
	TRY(fi_ep_bind(ep[i], &cq[i]->fid, FI_SEND | FI_RECV));
	TRY(fi_enable(ep[i]));
}

/* one message src -> dst of n bytes; unexpected: sent before the receive */
static void one_message(int src, int dst, size_t n, int tagged, int unexpected, char *sb, char *rb,
                        int seed)
{
	struct fi_context sctx, rctx;
	uint64_t tag = 0x77000 + (uint64_t)seed;
	fill(sb, n, seed);
	memset(rb, 0, n);
	if (!unexpected) {
		if (tagged)
			TRY(fi_trecv(ep[dst], rb, n, NULL, addr[src], tag, 0, &rctx));
		else
			TRY(fi_recv(ep[dst], rb, n, NULL, FI_ADDR_UNSPEC, &rctx));
	}
	if (tagged)
		TRY(fi_tsend(ep[src], sb, n, NULL, addr[dst], tag, &sctx));
	else
		TRY(fi_send(ep[src], sb, n, NULL, addr[dst], &sctx));
	if (unexpected) {
		for (int i = 0; i < 200; i++)
			poll_all(); /* let it arrive unexpected */
		if (tagged)
			TRY(fi_trecv(ep[dst], rb, n, NULL, addr[src], tag, 0, &rctx));
		else
			TRY(fi_recv(ep[dst], rb, n, NULL, FI_ADDR_UNSPEC, &rctx));
	}
	struct comp r = wait_for(&rctx), s = wait_for(&sctx);
	CHECK(r.err == 0 && s.err == 0, "%d -> %d %zu B: errors %d/%d", src, dst, n, r.err, s.err);
	CHECK(r.cq == dst, "%d -> %d: receive completed on endpoint %d's CQ", src, dst, r.cq);
	CHECK(s.cq == src, "%d -> %d: send completed on endpoint %d's CQ", src, dst, s.cq);
	CHECK(r.len == n && (!tagged || r.tag == tag), "%d -> %d: len %zu tag %llx", src, dst,
	      r.len, (unsigned long long)r.tag);
	CHECK(same(rb, n, seed), "%d -> %d: payload of %zu bytes", src, dst, n);
}

/* every endpoint injects to the next one; the first endpoint's are staged */
static void injects(void)
{
	enum { N = 200, LEN = 32 };
	static char rbuf[NEP][N][LEN];
	static struct fi_context rctx[NEP][N];
	char sb[LEN];
	for (int d = 0; d < NEP; d++)
		for (int k = 0; k < N; k++)
			TRY(fi_trecv(ep[d], rbuf[d][k], LEN, NULL, FI_ADDR_UNSPEC,
			             0x9900 + (uint64_t)k, 0, &rctx[d][k]));
	for (int k = 0; k < N; k++) {
		for (int s = 0; s < NEP; s++) {
			fill(sb, LEN, s * 1000 + k);
			int rc;
			while ((rc = (int)fi_tinject(ep[s], sb, LEN, addr[(s + 1) % NEP],
			                             0x9900 + (uint64_t)k)) == -FI_EAGAIN)
				poll_all();
			TRY(rc);
		}
	}
	for (int d = 0; d < NEP; d++) {
		int s = (d + NEP - 1) % NEP;
		for (int k = 0; k < N; k++) {
			struct comp r = wait_for(&rctx[d][k]);
			CHECK(r.err == 0 && r.cq == d && r.len == LEN, "inject %d -> %d #%d", s, d,
			      k);
			CHECK(same(rbuf[d][k], LEN, s * 1000 + k), "inject %d -> %d #%d payload", s,
			      d, k);
		}
	}
}

/* as many endpoints as ep_cnt; one more fails; a closed one's place is reused */
static void capacity(struct fi_info *info, size_t open_now)
{
	size_t cnt = info->domain_attr->ep_cnt;
	struct fid_ep **more = calloc(cnt + 1, sizeof(*more));
	struct fid_cq *mcq;
	struct fi_cq_attr cqa = {.format = FI_CQ_FORMAT_TAGGED};
	TRY(fi_cq_open(domain, &cqa, &mcq, NULL));
	size_t n = 0;
	int rc = 0;
	for (; n + open_now <= cnt; n++) {
		TRY(fi_endpoint(domain, info, &more[n], NULL));
		TRY(fi_ep_bind(more[n], &av->fid, 0));
		TRY(fi_ep_bind(more[n], &mcq->fid, FI_SEND | FI_RECV));
		rc = fi_enable(more[n]);
		if (rc)
			break;
	}
	CHECK(n + open_now == cnt && rc == -FI_EBUSY,
	      "ep_cnt %zu: %zu endpoints enabled, the next one: %d (expected -FI_EBUSY)", cnt,
	      n + open_now, rc);
	if (n > 0 && rc == -FI_EBUSY) {
		TRY(fi_close(&more[0]->fid));
		rc = fi_enable(more[n]);
		CHECK(rc == 0, "a closed endpoint's place is not reused: %d", rc);
		more[0] = NULL;
	}
	for (size_t i = 0; i <= n; i++)
		if (more[i])
			CHECK(fi_close(&more[i]->fid) == 0, "close endpoint %zu", i);
	CHECK(fi_close(&mcq->fid) == 0, "close CQ");
	free(more);
}

int main(void)
{
	struct fi_info *hints = fi_allocinfo(), *info = NULL;
	hints->caps = FI_MSG | FI_TAGGED | FI_DIRECTED_RECV;
	hints->ep_attr->type = FI_EP_RDM;
	hints->domain_attr->av_type = FI_AV_TABLE;
	hints->domain_attr->mr_mode = 0;
	hints->fabric_attr->prov_name = strdup("ptl3");
	TRY(fi_getinfo(FI_VERSION(1, 11), NULL, NULL, 0, hints, &info));
	CHECK(info->domain_attr->ep_cnt >= NEP, "domain_attr->ep_cnt %zu",
	      info->domain_attr->ep_cnt);
	struct fid_fabric *fabric;
	TRY(fi_fabric(info->fabric_attr, &fabric, NULL));
	TRY(fi_domain(fabric, info, &domain, NULL));
	struct fi_av_attr ava = {.type = FI_AV_TABLE};
	TRY(fi_av_open(domain, &ava, &av, NULL));
	for (int i = 0; i < NEP; i++)
		open_ep(info, i);
	char names[NEP][64], str[NEP][128];
	for (int i = 0; i < NEP; i++) {
		size_t len = sizeof(names[i]), slen = sizeof(str[i]);
		TRY(fi_getname(&ep[i]->fid, names[i], &len));
		CHECK(fi_av_insert(av, names[i], 1, &addr[i], 0, NULL) == 1, "av_insert %d", i);
		fi_av_straddr(av, names[i], str[i], &slen);
		printf("endpoint %d: %s\n", i, str[i]);
		for (int j = 0; j < i; j++)
			CHECK(memcmp(names[i], names[j], len) != 0 && strcmp(str[i], str[j]) != 0,
			      "endpoints %d and %d have the same address", i, j);
	}
	char *sb = malloc(BIG), *rb = malloc(BIG);
	size_t sizes[] = {8, 65536, BIG};
	int seed = 0;
	for (int s = 0; s < NEP; s++)
		for (int d = 0; d < NEP; d++)
			for (size_t k = 0; k < sizeof(sizes) / sizeof(sizes[0]); k++)
				for (int mode = 0; mode < 4; mode++)
					one_message(s, d, sizes[k], mode & 1, mode >> 1, sb, rb,
					            seed++);
	injects();
	for (int i = 0; i < 100; i++)
		poll_all();
	CHECK(nseen == 0, "%d completions nobody asked for", nseen);
	capacity(info, NEP);
	for (int i = NEP - 1; i >= 0; i--) {
		CHECK(fi_close(&ep[i]->fid) == 0, "close endpoint %d", i);
		CHECK(fi_close(&cq[i]->fid) == 0, "close CQ %d", i);
	}
	CHECK(fi_close(&av->fid) == 0, "close AV");
	CHECK(fi_close(&domain->fid) == 0, "close domain");
	CHECK(fi_close(&fabric->fid) == 0, "close fabric");
	fi_freeinfo(info);
	fi_freeinfo(hints);
	free(sb);
	free(rb);
	return fi_test_report("");
}
