/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * myri_intr.c - a target that computes while data arrives, over the myrinet
 * NAL (run by myri-intr.sh under ptlrun, two ranks, PTL_PROGRESS=interrupt
 * or another mode).  Rank 1 puts 1000 8-byte messages and one of
 * INTR_BIG_MB MiB to rank 0; rank 0 makes no Portals call while they land
 * (a compute loop that only looks at the last bytes of its buffers), then
 * checks every byte and every event and prints its NIC's and its driver's
 * counters:
 *
 *   intr: msgs M interrupts I hdrs H passes P handler_ns N handler_cpu_ns C
 *         app_cpu_ns A wall_ns W
 *
 * With --expect-interrupts it fails unless interrupts >= messages received
 * (M >= 1001), the handlers took H >= 1001 headers, and N, C > 0.
 */
#include "myri_dev.h"
#include "myri_util.h"

#include <string.h>
#include <time.h>

#define PT          5
#define BITS_SMALL  1
#define BITS_BIG    2
#define BITS_SYNC   3
#define SYNC_READY  1 /* header data of the sync puts */
#define SYNC_DONE   2
#define NSMALL      1000
#define LOOP_MAX_NS (60ull * 1000000000ull)

static size_t big_len;

static uint64_t clock_ns(clockid_t c)
{
	struct timespec ts;
	clock_gettime(c, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static uint64_t small_word(unsigned i)
{
	return 0x5a5a000000000000ull | ((uint64_t)i << 8) | 0x11u;
}

static unsigned char big_byte(size_t i)
{
	return (unsigned char)(i * 13u + (i >> 12) + 7u);
}

static ptl_handle_md_t attach(ptl_match_bits_t bits, void *buf, size_t len, unsigned threshold)
{
	/* remote offsets place the small puts */
	return mu_attach(PT, bits, buf, len, (int)threshold, PTL_MD_OP_PUT | PTL_MD_MANAGE_REMOTE);
}

/* Wait (bounded) until `want` PUT_END events with these match bits (and,
 * for sync puts, this header data) have come; other events pass. */
static void wait_puts(ptl_match_bits_t bits, ptl_hdr_data_t data, unsigned want)
{
	ptl_event_t ev;
	unsigned got = 0;
	for (int slices = 0; got < want && slices < 600;) {
		if (!mu_poll(&ev, 100)) {
			slices++;
			continue;
		}
		if (ev.ni_fail_type != PTL_NI_OK) {
			fprintf(stderr, "myri_intr: %s failed: %s\n", PtlEventKindStr(ev.type),
			        PtlNIFailStr(mu_ni, ev.ni_fail_type));
			exit(1);
		}
		if (ev.type == PTL_EVENT_PUT_END && ev.match_bits == bits &&
		    (bits != BITS_SYNC || ev.hdr_data == data))
			got++;
	}
	if (got < want) {
		fprintf(stderr, "myri_intr: %u of %u puts ended within 60 s\n", got, want);
		exit(1);
	}
}

static ptl_sr_value_t reg(unsigned idx)
{
	ptl_sr_value_t v = 0;
	MU_CHECK(PtlNIStatus(mu_ni, PTL_SR_NAL_BASE + idx, &v));
	return v;
}

static int target(ptl_process_id_t peer, int expect_interrupts)
{
	uint64_t *small = calloc(NSMALL, sizeof(uint64_t));
	unsigned char *big = calloc(1, big_len);
	if (!small || !big)
		return 1;
	attach(BITS_SMALL, small, NSMALL * sizeof(uint64_t), PTL_MD_THRESH_INF);
	attach(BITS_BIG, big, big_len, 1);
	mu_sync_put(peer, PT, BITS_SYNC, SYNC_READY);

	/* Compute, no Portals call, until the last bytes are there. */
	uint64_t w0 = clock_ns(CLOCK_MONOTONIC), c0 = clock_ns(CLOCK_THREAD_CPUTIME_ID);
	volatile uint64_t *last_small = &small[NSMALL - 1];
	volatile unsigned char *last_big = &big[big_len - 1];
	double x = 1.0;
	while (*last_small != small_word(NSMALL - 1) || *last_big != big_byte(big_len - 1)) {
		for (int i = 0; i < 10000; i++)
			x = x * 1.0000001 + 1e-9;
		if (clock_ns(CLOCK_MONOTONIC) - w0 > LOOP_MAX_NS) {
			fprintf(stderr, "myri_intr: the data did not land within 60 s\n");
			return 1;
		}
	}
	uint64_t wall = clock_ns(CLOCK_MONOTONIC) - w0;
	uint64_t app_cpu = clock_ns(CLOCK_THREAD_CPUTIME_ID) - c0;

	/* Now look: every event, every byte. */
	wait_puts(BITS_SMALL, 0, NSMALL);
	wait_puts(BITS_BIG, 0, 1);
	for (unsigned i = 0; i < NSMALL; i++)
		if (small[i] != small_word(i)) {
			fprintf(stderr, "myri_intr: small message %u wrong\n", i);
			return 1;
		}
	for (size_t i = 0; i < big_len; i++)
		if (big[i] != big_byte(i)) {
			fprintf(stderr, "myri_intr: byte %zu of the big message wrong\n", i);
			return 1;
		}
	ptl_sr_value_t msgs = reg(MYRI_C_rx_msgs), intrs = reg(MYRI_C_interrupts);
	ptl_sr_value_t hdrs = reg(MYRI_NCOUNTERS + MYRI_H_intr_hdrs);
	ptl_sr_value_t passes = reg(MYRI_NCOUNTERS + MYRI_H_intr_handled);
	ptl_sr_value_t hns = reg(MYRI_NCOUNTERS + MYRI_H_handler_ns);
	ptl_sr_value_t hcpu = reg(MYRI_NCOUNTERS + MYRI_NHOST_COUNTERS);
	printf("intr: msgs %llu interrupts %llu hdrs %llu passes %llu handler_ns %llu "
	       "handler_cpu_ns %llu app_cpu_ns %llu wall_ns %llu (x %.3g)\n",
	       (unsigned long long)msgs, (unsigned long long)intrs, (unsigned long long)hdrs,
	       (unsigned long long)passes, (unsigned long long)hns, (unsigned long long)hcpu,
	       (unsigned long long)app_cpu, (unsigned long long)wall, x);
	mu_sync_put(peer, PT, BITS_SYNC, SYNC_DONE);
	if (expect_interrupts &&
	    (msgs < NSMALL + 1 || intrs < msgs || hdrs < NSMALL + 1 || hns <= 0 || hcpu <= 0)) {
		fprintf(stderr, "myri_intr: not served by per-header interrupts\n");
		return 1;
	}
	free(small);
	free(big);
	return 0;
}

static int initiator(ptl_process_id_t peer)
{
	uint64_t *small = malloc(NSMALL * sizeof(uint64_t));
	unsigned char *big = malloc(big_len);
	char sync;
	if (!small || !big)
		return 1;
	for (unsigned i = 0; i < NSMALL; i++)
		small[i] = small_word(i);
	for (size_t i = 0; i < big_len; i++)
		big[i] = big_byte(i);
	attach(BITS_SYNC, &sync, 0, PTL_MD_THRESH_INF);
	wait_puts(BITS_SYNC, SYNC_READY, 1);
	ptl_handle_md_t smd = mu_bind(small, NSMALL * sizeof(uint64_t)),
	                bmd = mu_bind(big, big_len);
	for (unsigned i = 0; i < NSMALL; i++)
		MU_CHECK(PtlPutRegion(smd, i * sizeof(uint64_t), sizeof(uint64_t), PTL_NOACK_REQ,
		                      peer, PT, 0, BITS_SMALL, i * sizeof(uint64_t), 0));
	MU_CHECK(PtlPut(bmd, PTL_NOACK_REQ, peer, PT, 0, BITS_BIG, 0, 0));
	wait_puts(BITS_SYNC, SYNC_DONE, 1);
	free(small);
	free(big);
	return 0;
}

int main(int argc, char **argv)
{
	int expect = argc > 1 && strcmp(argv[1], "--expect-interrupts") == 0;
	ptl_process_id_t peer;
	const char *mb = getenv("INTR_BIG_MB");
	big_len = (size_t)(mb && *mb ? atoi(mb) : 64) << 20;
	if (big_len == 0)
		big_len = 1;
	unsigned rank = mu_init_pair("myri_intr", 8192, &peer);
	int rc = rank == 0 ? target(peer, expect) : initiator(peer);
	mu_fini();
	return rc;
}
