/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * fuzz_lib.c - libFuzzer target: the offload mode's LIB commands
 * (mcpd_offload.c: the arguments of every lib_op parsed out of the command's
 * hdr[], the MD runs, the calls into LIB compiled into the NIC), driven like
 * the NIC drives them, on one endpoint per input.
 *
 * Input: records of 1 + sizeof(struct myri_cmd) bytes; the first is the
 * LIB_OPEN command's arguments.  The record's first byte % 4 says what it is:
 *   0  a MYRI_CMD_LIB command (the bytes as the entry; mcpd_cmd_check first,
 *      as the NIC does)
 *   1  a registration entry: {u32 index, u32 key, u32 offset, u32 len,
 *      u32 valid} at the front of the bytes
 *   2  the wire completes every send in flight (status from the next byte)
 *   3  a message arrives: hdr[] as its wire Portals header (addressed to
 *      this endpoint), len % 8192 payload bytes, then rx_done
 * Host addresses: registrations and MD starts below SANDBOX_LEN are offsets
 * into a sandbox of host memory with guard pages around it (the fuzzer cannot
 * know where it lies).  The NIC's DMA is replaced by a copy that aborts when
 * a transfer leaves the sandbox -- the property: whatever the commands say,
 * the NIC moves bytes only inside registered host memory.  LIB's own writes
 * (EQ rings in the arena, its buffers) are checked by ASan.
 */
#include "../mcpd.h"

#include "lib.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#define SANDBOX_LEN (64u * 1024u)
#define MAX_TX      256
#define REC_LEN     (1 + sizeof(struct myri_cmd))

static uint8_t *sandbox;
static void *tx_cookie[MAX_TX];
static int ntx;

/* ---- what mcpd_offload.c calls outside itself ----------------------------- */

void mcpd_count(struct mcpd_ep *ep, enum myri_counter c, uint64_t n)
{
	atomic_fetch_add_explicit(&ep->seg->counters[c], n, memory_order_relaxed);
}

void mcpd_post_event(struct mcpd_ep *ep, const struct myri_evt *evt)
{
	(void)ep;
	if (evt->type != MYRI_EVT_LIB_REPLY)
		abort(); /* the LIB side answers only with LIB_REPLY */
}

static int in_sandbox(const struct iovec *v)
{
	uintptr_t a = (uintptr_t)v->iov_base, s = (uintptr_t)sandbox;
	return a >= s && a - s <= SANDBOX_LEN && v->iov_len <= SANDBOX_LEN - (a - s);
}

int mcpd_dma(struct mcpd_ep *ep, int write, void *local, uint64_t len, const struct iovec *remote,
             size_t nremote)
{
	uint64_t done = 0;
	(void)ep;
	for (size_t i = 0; i < nremote && done < len; i++) {
		if (!in_sandbox(&remote[i]))
			abort(); /* the NIC would touch memory nobody registered */
		uint64_t n = remote[i].iov_len < len - done ? remote[i].iov_len : len - done;
		if (write)
			memmove(remote[i].iov_base, (char *)local + done, n);
		else
			memmove((char *)local + done, remote[i].iov_base, n);
		done += n;
	}
	return done == len ? 0 : -EFAULT;
}

int mcpd_wire_addr(struct mcpd_ep *ep, uint32_t nid, uint32_t pid, struct rmpp_addr *out)
{
	(void)ep;
	if (pid > 0xffff)
		return -EHOSTUNREACH;
	rmpp_addr_udp(out, nid, (uint16_t)pid, (uint16_t)pid);
	return 0;
}

int rmpp_send(struct rmpp_ep *ep, const struct rmpp_addr *peer, const void *hdr, size_t hdr_len,
              const struct iovec *iov, size_t niov, uint64_t offset, uint64_t len, void *cookie)
{
	(void)ep, (void)peer, (void)hdr, (void)iov, (void)niov, (void)offset;
	if (hdr_len != MYRI_HDR_LEN || len > UINT32_MAX)
		abort();
	if (ntx == MAX_TX)
		return -ENOMEM;
	tx_cookie[ntx++] = cookie;
	return 0;
}

int rmpp_send_flags(struct rmpp_ep *ep, const struct rmpp_addr *peer, const void *hdr,
                    size_t hdr_len, const struct iovec *iov, size_t niov, uint64_t offset,
                    uint64_t len, void *cookie, size_t carry_len, unsigned flags)
{
	(void)carry_len, (void)flags;
	return rmpp_send(ep, peer, hdr, hdr_len, iov, niov, offset, len, cookie);
}

void rmpp_ep_destroy(struct rmpp_ep *ep)
{
	(void)ep; /* the endpoint never has a wire here */
}

/* no peer ever fails here: nothing to watch (mcpd_await.c) */
void mcpd_await_add(struct mcpd_ep *ep, const struct rmpp_addr *peer, const uint8_t *hdr,
                    const void *cookie)
{
	(void)ep, (void)peer, (void)hdr, (void)cookie;
}

void mcpd_await_sent(struct mcpd_ep *ep, const void *cookie, int status)
{
	(void)ep, (void)cookie, (void)status;
}

/* ---- the harness ----------------------------------------------------------- */

static void *host_addr(uint64_t v)
{
	return v < SANDBOX_LEN ? (void *)(sandbox + v) : (void *)(uintptr_t)v;
}

/* MD starts given as sandbox offsets become host addresses. */
static void shape_md(struct myri_cmd *c)
{
	size_t at;
	if (c->lib_op == MYRI_LIB_ME_MD_POST)
		at = offsetof(struct myri_lib_me, md);
	else if (c->lib_op == MYRI_LIB_MD_ATTACH || c->lib_op == MYRI_LIB_MD_UPDATE)
		at = offsetof(struct myri_lib_md, md);
	else
		return;
	uint64_t start;
	memcpy(&start, c->hdr + at, sizeof(start));
	start = (uint64_t)(uintptr_t)host_addr(start);
	memcpy(c->hdr + at, &start, sizeof(start));
}

static void do_cmd(struct mcpd_ep *ep, const uint8_t *b)
{
	struct myri_cmd c;
	memcpy(&c, b, sizeof(c));
	c.op = MYRI_CMD_LIB;
	shape_md(&c);
	if (mcpd_cmd_check(&c) == 0)
		(void)mcpd_off_cmd(ep, &c);
}

static void do_reg(struct mcpd_ep *ep, const uint8_t *b)
{
	uint32_t f[5];
	memcpy(f, b, sizeof(f));
	struct myri_reg *r = &ep->seg->reg[f[0] % MYRI_NREG];
	uint32_t off = f[2] % SANDBOX_LEN;
	r->addr = (uint64_t)(uintptr_t)(sandbox + off);
	r->len = f[3] % (SANDBOX_LEN - off + 1);
	r->key = f[1];
	r->valid = f[4] & 1;
}

static int status_of(uint8_t b)
{
	static const int st[] = {0, -ETIMEDOUT, -ECONNRESET, -ECANCELED};
	return st[b % 4];
}

static void do_tx_done(struct mcpd_ep *ep, const uint8_t *b)
{
	int n = ntx;
	ntx = 0;
	for (int i = 0; i < n; i++) /* completions may post new sends */
		mcpd_off_tx_done(ep, tx_cookie[i], status_of(b[0]));
}

static void do_rx(struct mcpd_ep *ep, const uint8_t *b)
{
	struct myri_cmd c;
	memcpy(&c, b, sizeof(c));
	uint8_t hdr[MYRI_HDR_LEN];
	memcpy(hdr, c.hdr, sizeof(hdr));
	for (int i = 0; i < 4; i++) { /* addressed to us (network byte order) */
		hdr[12 + i] = (uint8_t)(ep->nid >> (24 - 8 * i));
		hdr[16 + i] = (uint8_t)(ep->pid >> (24 - 8 * i));
	}
	uint64_t len = c.len % 8192;
	struct rmpp_addr src;
	rmpp_addr_udp(&src, c.dst_nid, 1, 1);
	struct rmpp_rx_accept acc;
	if (mcpd_off_rx_hdr(ep, &src, hdr, sizeof(hdr), len, &acc) != RMPP_RX_ACCEPT || !acc.cookie)
		return;
	uint64_t skip = acc.offset, left = acc.accepted < len ? acc.accepted : len;
	for (size_t i = 0; i < acc.niov && left; i++) { /* the payload: a pattern */
		if (skip >= acc.iov[i].iov_len) {
			skip -= acc.iov[i].iov_len;
			continue;
		}
		uint64_t n = acc.iov[i].iov_len - skip < left ? acc.iov[i].iov_len - skip : left;
		memset((char *)acc.iov[i].iov_base + skip, 0x5a, n);
		left -= n;
		skip = 0;
	}
	mcpd_off_rx_done(ep, acc.cookie, status_of(b[1]));
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct myri_seg *seg;
	static uint8_t *arena;
	if (!sandbox) {
		long pg = sysconf(_SC_PAGESIZE);
		uint8_t *m = mmap(NULL, SANDBOX_LEN + 2 * (size_t)pg, PROT_NONE,
		                  MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		if (m == MAP_FAILED || mprotect(m + pg, SANDBOX_LEN, PROT_READ | PROT_WRITE) != 0)
			abort();
		sandbox = m + pg;
		seg = calloc(1, sizeof(*seg));
		arena = calloc(1, MYRI_ARENA_LEN);
		if (!seg || !arena)
			abort();
	}
	if (size < REC_LEN)
		return 0;
	static struct mcpd nic;
	struct mcpd_ep ep;
	memset(&ep, 0, sizeof(ep));
	memset(seg->reg, 0, sizeof(seg->reg));
	ep.nic = &nic;
	ep.seg = seg;
	ep.arena = arena;
	ep.intr_fd = -1;
	ep.nid = 0x7f000001u;
	ep.pid = 7;
	ep.ospid = getpid();
	struct myri_cmd open;
	memcpy(&open, data + 1, sizeof(open));
	open.op = MYRI_CMD_LIB;
	open.lib_op = MYRI_LIB_OPEN;
	open.nreg = 0;
	if (mcpd_off_cmd(&ep, &open) != 0 || !ep.off)
		return 0;
	for (size_t at = REC_LEN; at + REC_LEN <= size; at += REC_LEN) {
		const uint8_t *b = data + at + 1;
		switch (data[at] % 4) {
		case 0:
			do_cmd(&ep, b);
			break;
		case 1:
			do_reg(&ep, b);
			break;
		case 2:
			do_tx_done(&ep, b);
			break;
		default:
			do_rx(&ep, b);
			break;
		}
	}
	/* the endpoint goes: the wire fails its sends first (as rmpp_ep_destroy
	 * does through the upcalls), then LIB closes */
	static const uint8_t cancel = 3;
	for (int round = 0; ntx && round < 16; round++)
		do_tx_done(&ep, &cancel);
	mcpd_off_destroy(&ep);
	ntx = 0;
	return 0;
}
