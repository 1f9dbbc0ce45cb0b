/* SPDX-License-Identifier: BSD-3-Clause */
/* myri_util.c - see myri_util.h. */
#include "myri_util.h"

#include <p3rt/p3rt.h>
#include <time.h>

ptl_handle_ni_t mu_ni;
ptl_handle_eq_t mu_eq;
const char *mu_prog = "myri test";

unsigned mu_init_pair(const char *prog, unsigned eq_len, ptl_process_id_t *peer)
{
	int max_ifs;
	unsigned rank, size;
	mu_prog = prog;
	setvbuf(stdout, NULL, _IOLBF, 0);
	MU_CHECK(PtlInit(&max_ifs));
	MU_CHECK(PtlSetRank(PTL_INVALID_HANDLE, -1, -1));
	MU_CHECK(PtlNIInit(PTL_IFACE_DEFAULT, PTL_PID_ANY, NULL, NULL, &mu_ni));
	MU_CHECK(PtlGetRank(mu_ni, &rank, &size));
	if (size != 2) {
		fprintf(stderr, "%s: run with 2 ranks\n", prog);
		exit(1);
	}
	MU_CHECK(PtlGetRankId(mu_ni, 1 - rank, peer));
	MU_CHECK(PtlEQAlloc(mu_ni, eq_len, PTL_EQ_HANDLER_NONE, &mu_eq));
	return rank;
}

void mu_init_ni(const char *prog, ptl_interface_t iface, ptl_pid_t pid, unsigned eq_len)
{
	int max_ifs;
	mu_prog = prog;
	setvbuf(stdout, NULL, _IOLBF, 0);
	MU_CHECK(PtlInit(&max_ifs));
	MU_CHECK(PtlNIInit(iface, pid, NULL, NULL, &mu_ni));
	MU_CHECK(PtlEQAlloc(mu_ni, eq_len, PTL_EQ_HANDLER_NONE, &mu_eq));
}

void mu_fini(void)
{
	MU_CHECK(PtlNIFini(mu_ni));
	PtlFini();
}

ptl_handle_md_t mu_attach(ptl_pt_index_t pt, ptl_match_bits_t bits, void *buf, size_t len,
                          int threshold, unsigned options)
{
	ptl_process_id_t any = {.nid = PTL_NID_ANY, .pid = PTL_PID_ANY};
	ptl_handle_me_t me;
	ptl_handle_md_t mdh;
	ptl_md_t md = {.start = buf,
	               .length = len,
	               .threshold = threshold,
	               .options = options,
	               .user_ptr = NULL,
	               .eq_handle = mu_eq};
	MU_CHECK(PtlMEAttach(mu_ni, pt, any, bits, 0, PTL_RETAIN, PTL_INS_AFTER, &me));
	MU_CHECK(PtlMDAttach(me, md, PTL_RETAIN, &mdh));
	return mdh;
}

ptl_handle_md_t mu_bind(void *buf, size_t len)
{
	ptl_handle_md_t mdh;
	ptl_md_t md = {.start = buf,
	               .length = len,
	               .threshold = PTL_MD_THRESH_INF,
	               .options = 0,
	               .user_ptr = NULL,
	               .eq_handle = mu_eq};
	MU_CHECK(PtlMDBind(mu_ni, md, PTL_RETAIN, &mdh));
	return mdh;
}

int mu_poll(ptl_event_t *ev, int ms)
{
	int which, rc = PtlEQPoll(&mu_eq, 1, ms, ev, &which);
	if (rc == PTL_EQ_EMPTY)
		return 0;
	MU_CHECK(rc == PTL_EQ_DROPPED ? PTL_FAIL : rc);
	return 1;
}

/* Waits in 100 ms slices: an event that passes does not restart the clock. */
static int wait_for(ptl_event_kind_t kind, uint64_t bits, uint64_t hdr_data, ptl_event_t *ev,
                    int ms)
{
	for (int slices = 0; slices < (ms + 99) / 100;) {
		if (!mu_poll(ev, 100)) {
			slices++;
			continue;
		}
		if (ev->type == kind && (bits == MU_ANY || ev->match_bits == bits) &&
		    (hdr_data == MU_ANY || ev->hdr_data == hdr_data))
			return 1;
	}
	return 0;
}

int mu_wait_event(ptl_event_kind_t kind, uint64_t bits, ptl_event_t *ev, int ms)
{
	return wait_for(kind, bits, MU_ANY, ev, ms);
}

int mu_wait_put(uint64_t bits, uint64_t hdr_data, int ms)
{
	ptl_event_t ev;
	return wait_for(PTL_EVENT_PUT_END, bits, hdr_data, &ev, ms);
}

void mu_sync_put(ptl_process_id_t peer, ptl_pt_index_t pt, ptl_match_bits_t bits,
                 ptl_hdr_data_t hdr_data)
{
	static char none;
	ptl_handle_md_t md = mu_bind(&none, 0);
	for (int tries = 0; tries < 100; tries++) {
		ptl_event_t ev;
		MU_CHECK(PtlPutRegion(md, 0, 0, PTL_ACK_REQ, peer, pt, 0, bits, 0, hdr_data));
		while (mu_poll(&ev, 200))
			if (ev.type == PTL_EVENT_ACK && ev.ni_fail_type == PTL_NI_OK) {
				MU_CHECK(PtlMDUnlink(md));
				return;
			}
	}
	fprintf(stderr, "%s: the peer never acknowledged a sync put\n", mu_prog);
	exit(1);
}

static uint64_t ms_of(clockid_t c)
{
	struct timespec ts;
	clock_gettime(c, &ts);
	return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

uint64_t mu_wall_ms(void)
{
	return ms_of(CLOCK_REALTIME);
}

uint64_t mu_mono_ms(void)
{
	return ms_of(CLOCK_MONOTONIC);
}
