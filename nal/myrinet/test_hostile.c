/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * test_hostile.c - a hostile host against a running NIC (mcpd): this
 * program speaks the device interface itself (no libportals3) and checks
 * that the NIC rejects and counts what it must, never writes outside a
 * registered region (guard pages), keeps serving other endpoints, and holds
 * events back (counted) rather than losing them when the host does not
 * drain its event queue.
 *
 * Usage: test_hostile (P3_MYRI_NIC names the NIC; test_hostile.sh starts one).
 */
#include "eq_ring.h"
#include "handle.h"
#include "myri_dev.h"

#include "hdr.c" /* p3_hdr_pack: a Portals request header, as a host's LIB builds it */

#include <portals3.h>

#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

static int failures;
#define CHECK(cond, ...)                                                                           \
	do {                                                                                       \
		if (cond) {                                                                        \
			printf("ok: " __VA_ARGS__);                                                \
		} else {                                                                           \
			printf("FAIL (%s:%d): ", __FILE__, __LINE__);                              \
			printf(__VA_ARGS__);                                                       \
			failures++;                                                                \
		}                                                                                  \
		printf("\n");                                                                      \
	} while (0)

struct ep {
	int sock, db, intr;
	struct myri_seg *seg;
	uint8_t *arena; /* offload endpoints only */
	uint32_t nid, pid;
	pid_t nic; /* the NIC's process (attach reply) */
};

/* arena: a segment with the EQ-ring arena (offload) or without. */
static int ep_attach_seg(struct ep *e, uint32_t pid, int arena)
{
	const char *tag = getenv("P3_MYRI_NIC");
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	int n = snprintf(sa.sun_path + 1, sizeof(sa.sun_path) - 1, MYRI_SOCK_FMT,
	                 (unsigned)getuid(), tag && *tag ? "-" : "", tag && *tag ? tag : "");
	int memfd = memfd_create("hostile", MFD_CLOEXEC);
	if (memfd < 0 ||
	    ftruncate(memfd, arena ? (off_t)MYRI_SEG_BYTES : (off_t)sizeof(struct myri_seg)) != 0)
		return -errno;
	e->seg = mmap(NULL, sizeof(struct myri_seg), PROT_READ | PROT_WRITE, MAP_SHARED, memfd, 0);
	e->arena = arena ? mmap(NULL, MYRI_ARENA_LEN, PROT_READ | PROT_WRITE, MAP_SHARED, memfd,
	                        MYRI_ARENA_OFFSET)
	                 : NULL;
	if (e->arena == MAP_FAILED)
		return -errno;
	e->db = eventfd(0, EFD_NONBLOCK);
	e->intr = eventfd(0, EFD_NONBLOCK);
	e->sock = socket(AF_UNIX, SOCK_SEQPACKET, 0);
	if (e->seg == MAP_FAILED ||
	    connect(e->sock, (struct sockaddr *)&sa,
	            (socklen_t)(offsetof(struct sockaddr_un, sun_path) + 1 + (size_t)n)) != 0)
		return -errno;
	struct myri_attach_req req = {.magic = MYRI_MAGIC,
	                              .version = MYRI_VERSION,
	                              .op = MYRI_CTL_ATTACH,
	                              .nid = 0x7f000001u,
	                              .pid = pid,
	                              .seg_size = sizeof(struct myri_seg)};
	int fds[3] = {memfd, e->db, e->intr};
	char cbuf[CMSG_SPACE(sizeof(fds))];
	struct iovec iov = {&req, sizeof(req)};
	struct msghdr mh = {
	    .msg_iov = &iov, .msg_iovlen = 1, .msg_control = cbuf, .msg_controllen = sizeof(cbuf)};
	struct cmsghdr *c = CMSG_FIRSTHDR(&mh);
	c->cmsg_level = SOL_SOCKET;
	c->cmsg_type = SCM_RIGHTS;
	c->cmsg_len = CMSG_LEN(sizeof(fds));
	memcpy(CMSG_DATA(c), fds, sizeof(fds));
	struct myri_attach_rep rep;
	if (sendmsg(e->sock, &mh, 0) < 0 || recv(e->sock, &rep, sizeof(rep), 0) != sizeof(rep))
		return -EPROTO;
	close(memfd);
	if (rep.status)
		return rep.status;
	prctl(PR_SET_PTRACER, (unsigned long)rep.nic_ospid, 0, 0, 0);
	e->nid = rep.nid;
	e->pid = rep.pid;
	e->nic = (pid_t)rep.nic_ospid;
	return 0;
}

static int ep_attach(struct ep *e, uint32_t pid)
{
	return ep_attach_seg(e, pid, 0);
}

static void push(struct ep *e, const struct myri_cmd *c)
{
	uint64_t t = atomic_load(&e->seg->cmdq.tail);
	e->seg->cmd[t % MYRI_CMDQ_LEN] = *c;
	atomic_store(&e->seg->cmdq.tail, t + 1);
	uint64_t one = 1;
	if (write(e->db, &one, sizeof(one)) < 0)
		perror("doorbell");
}

/* The next event, waiting up to 5 s. */
static int next_event(struct ep *e, struct myri_evt *out)
{
	for (int i = 0; i < 5000; i++) {
		uint64_t h = atomic_load(&e->seg->evtq.head);
		if (h != atomic_load(&e->seg->evtq.tail)) {
			*out = e->seg->evt[h % MYRI_EVTQ_LEN];
			atomic_store(&e->seg->evtq.head, h + 1);
			return 0;
		}
		struct timespec d = {0, 1000000};
		nanosleep(&d, NULL);
	}
	return -ETIMEDOUT;
}

static void reg(struct ep *e, uint32_t i, void *addr, uint64_t len, uint32_t key)
{
	e->seg->reg[i] = (struct myri_reg){(uint64_t)(uintptr_t)addr, len, key, 1};
}

static struct myri_cmd send_cmd(struct ep *to, uint64_t token, uint32_t first, uint32_t key,
                                uint64_t off, uint64_t len)
{
	struct myri_cmd c = {.op = MYRI_CMD_SEND,
	                     .nreg = 1,
	                     .reg_first = first,
	                     .key = key,
	                     .dst_nid = to->nid,
	                     .dst_pid = to->pid,
	                     .token = token,
	                     .offset = off,
	                     .len = len};
	c.hdr[0] = 1; /* the NIC does not read the Portals header */
	return c;
}

static void expect(struct ep *e, uint16_t type, uint64_t token, int status, const char *what)
{
	struct myri_evt ev;
	int rc = next_event(e, &ev);
	CHECK(rc == 0 && ev.type == type && ev.token == token && ev.status == status,
	      "%s: event type %u token %llu status %d (want %u %llu %d)", what, rc ? 0 : ev.type,
	      rc ? 0ull : (unsigned long long)ev.token, rc ? rc : ev.status, type,
	      (unsigned long long)token, status);
}

/* A host that posts a command and hangs up at once (its last ACK, a final
 * put its peer waits for): the NIC runs what was queued before it drops the
 * endpoint.  The NIC is held (SIGSTOP) while it sleeps, so that it finds the
 * doorbell and the hang-up in one wake-up; before, it dropped the endpoint
 * at once and the send never happened. */
static void test_hangup_runs_queued(struct ep *to)
{
	struct ep h;
	if (ep_attach(&h, UINT32_MAX) != 0) {
		CHECK(0, "attach the endpoint that hangs up");
		return;
	}
	struct timespec ms = {0, 1000000};
	for (int i = 0; i < 2000 && !atomic_load(&h.seg->nic_sleeping); i++)
		nanosleep(&ms, NULL);
	struct timespec settle = {0, 20000000}; /* into its epoll wait */
	nanosleep(&settle, NULL);
	kill(h.nic, SIGSTOP);
	struct myri_cmd c = send_cmd(to, 90, 0, 0, 0, 0);
	c.nreg = 0;
	push(&h, &c);
	close(h.sock);
	nanosleep(&ms, NULL);
	kill(h.nic, SIGCONT);
	struct myri_evt rx;
	int rc = next_event(to, &rx);
	CHECK(rc == 0 && rx.type == MYRI_EVT_RX_HDR && rx.len == 0,
	      "a send queued just before its host hung up still goes (event %d type %u)", rc,
	      rc ? 0 : rx.type);
	if (rc == 0 && rx.type == MYRI_EVT_RX_HDR) {
		struct myri_cmd d = {.op = MYRI_CMD_DISCARD, .nic_token = rx.token, .token = 91};
		push(to, &d);
	}
}

/* A peer that dies between a request and its answer (mcpd_await.c): a put
 * that wants an ACK reaches the target endpoint, whose host then hangs up
 * without answering.  The NIC drops that endpoint (rmpp CLOSE to the
 * initiator's wire), and the initiator, after the put's TX_DONE, gets
 * ANSWER_LOST carrying the request's header (before: nothing, and its LIB
 * waited for the ACK forever). */
static void test_answer_lost(void)
{
	struct ep t, i;
	if (ep_attach(&t, UINT32_MAX) != 0 || ep_attach(&i, UINT32_MAX) != 0) {
		CHECK(0, "attach the endpoints of the lost answer");
		return;
	}
	struct p3_hdr h = {.type = P3_MSG_PUT,
	                   .src = {.nid = i.nid, .pid = i.pid},
	                   .dst = {.nid = t.nid, .pid = t.pid},
	                   .md_handle = 77,
	                   .md_offset = 5};
	struct myri_cmd c = send_cmd(&t, 95, 0, 0, 0, 0);
	c.nreg = 0;
	p3_hdr_pack(&h, c.hdr);
	push(&i, &c);
	expect(&i, MYRI_EVT_TX_DONE, 95, 0, "a put that wants an ACK went");
	struct myri_evt ev;
	int rc = next_event(&t, &ev);
	CHECK(rc == 0 && ev.type == MYRI_EVT_RX_HDR, "its target's NIC has it (event %d type %u)",
	      rc, rc ? 0 : ev.type);
	close(t.sock); /* the target's host is gone: its ACK will not come */
	rc = next_event(&i, &ev);
	CHECK(rc == 0 && ev.type == MYRI_EVT_ANSWER_LOST && ev.status == -ECONNRESET &&
	          memcmp(ev.hdr, c.hdr, MYRI_HDR_LEN) == 0,
	      "the target hung up without answering: ANSWER_LOST with the request "
	      "(event %d type %u status %d)",
	      rc, rc ? 0 : ev.type, rc ? 0 : ev.status);
	close(i.sock);
}

/* ---- offload: LIB commands from a hostile host --------------------------- */

static struct myri_cmd lib_cmd(uint32_t lib_op, uint64_t token, const void *args, size_t len)
{
	struct myri_cmd c = {.op = MYRI_CMD_LIB, .lib_op = lib_op, .token = token};
	memcpy(c.hdr, args, len);
	return c;
}

/* One LIB call: its reply (status = PTL code), or status -1 if none/rejected. */
static struct myri_evt lib_call(struct ep *e, struct myri_cmd c)
{
	struct myri_evt ev = {0};
	push(e, &c);
	if (next_event(e, &ev) != 0 || ev.token != c.token || ev.type != MYRI_EVT_LIB_REPLY)
		ev.status = -1;
	return ev;
}

static uint32_t rep32(const struct myri_evt *ev, int i)
{
	uint32_t v[2];
	memcpy(v, ev->hdr, sizeof(v));
	return v[i];
}

static struct myri_cmd md_bind_cmd(uint64_t token, void *start, uint64_t len, uint32_t eq,
                                   uint32_t first, uint32_t key)
{
	struct myri_lib_md a = {.md = {.start = (uint64_t)(uintptr_t)start,
	                               .length = len,
	                               .threshold = PTL_MD_THRESH_INF,
	                               .options = PTL_MD_OP_PUT | PTL_MD_OP_GET,
	                               .eq_handle = eq},
	                        .handle = PTL_INVALID_HANDLE,
	                        .unlink = PTL_RETAIN};
	struct myri_cmd c = lib_cmd(MYRI_LIB_MD_ATTACH, token, &a, sizeof(a));
	c.nreg = 1;
	c.reg_first = first;
	c.key = key;
	return c;
}

/* An MD over one fresh page, registered at entry first with key; its handle
 * (PTL_INVALID_HANDLE on failure). */
static uint32_t md_page(struct ep *o, char *page, uint32_t eq, uint32_t first, uint32_t key,
                        uint64_t token)
{
	long pg = sysconf(_SC_PAGESIZE);
	reg(o, first, page, (uint64_t)pg, key);
	struct myri_evt ev = lib_call(o, md_bind_cmd(token, page, (uint64_t)pg, eq, first, key));
	return ev.status == PTL_OK ? rep32(&ev, 0) : PTL_INVALID_HANDLE;
}

/* The events in ring: count[kind][0] PTL_NI_OK, [1] PTL_NI_FAIL. */
static void ring_count(struct p3_eq_ring *ring, int count[][2])
{
	ptl_event_t e;
	memset(count, 0, (PTL_EVENT_UNLINK + 1) * sizeof(count[0]));
	while (p3_eq_ring_read(ring, &e) == PTL_OK)
		if (e.type <= PTL_EVENT_UNLINK && e.ni_fail_type <= PTL_NI_FAIL)
			count[e.type][e.ni_fail_type == PTL_NI_FAIL]++;
}

/* A get and a put with ack to ourselves on an MD (pt 5, remotely managed
 * offsets) over the GetPut's unmapped page: the NIC's DMA of it fails.  The
 * get's reply must still come, saying so (before, the NIC sent none:
 * REPLY_END never came), and the put's ACK likewise (before: no ACK). */
static void test_get_put_dma_fail(struct ep *o, struct p3_eq_ring *ring, uint32_t eq, char *victim,
                                  uint32_t get_md, uint32_t put_md, const char *reply)
{
	long pg = sysconf(_SC_PAGESIZE);
	int n[PTL_EVENT_UNLINK + 1][2];
	struct myri_lib_me me = {.base = PTL_INVALID_HANDLE,
	                         .pt = 5,
	                         .match_nid = PTL_NID_ANY,
	                         .match_pid = PTL_PID_ANY,
	                         .unlink = PTL_RETAIN,
	                         .pos = PTL_INS_AFTER};
	struct myri_evt ev = lib_call(o, lib_cmd(MYRI_LIB_ME_INSERT, 68, &me, sizeof(me)));
	reg(o, 304, victim, (uint64_t)pg, 574); /* registered, not mapped */
	struct myri_lib_md at = {
	    .md = {.start = (uint64_t)(uintptr_t)victim,
	           .length = (uint64_t)pg,
	           .threshold = PTL_MD_THRESH_INF,
	           .options = PTL_MD_OP_PUT | PTL_MD_OP_GET | PTL_MD_MANAGE_REMOTE,
	           .eq_handle = eq},
	    .handle = rep32(&ev, 1),
	    .unlink = PTL_RETAIN};
	struct myri_cmd c = lib_cmd(MYRI_LIB_MD_ATTACH, 69, &at, sizeof(at));
	c.nreg = 1;
	c.reg_first = 304;
	c.key = 574;
	ev = lib_call(o, c);
	CHECK(ev.status == PTL_OK, "an MD over the unmapped page on pt 5 (%d)", ev.status);
	struct myri_lib_move mv = {
	    .md = get_md, .whole = 1, .nid = o->nid, .pid = o->pid, .pt = 5, .remote_offset = 0};
	ev = lib_call(o, lib_cmd(MYRI_LIB_GET, 66, &mv, sizeof(mv)));
	CHECK(ev.status == PTL_OK, "GET to ourselves from the unmapped MD (%d)", ev.status);
	ring_count(ring, n);
	CHECK(n[PTL_EVENT_REPLY_END][1] == 1 && n[PTL_EVENT_REPLY_END][0] == 0 &&
	          n[PTL_EVENT_GET_END][1] == 1,
	      "a get whose DMA failed: REPLY_END and GET_END say PTL_NI_FAIL (%d, %d; %d "
	      "REPLY_END ok)",
	      n[PTL_EVENT_REPLY_END][1], n[PTL_EVENT_GET_END][1], n[PTL_EVENT_REPLY_END][0]);
	CHECK(reply[0] == 0x33 && reply[pg - 1] == 0x33, "nothing landed in the get's MD (%#x)",
	      reply[0] & 0xff);
	mv = (struct myri_lib_move){
	    .md = put_md, .whole = 1, .nid = o->nid, .pid = o->pid, .pt = 5, .ack = PTL_ACK_REQ};
	ev = lib_call(o, lib_cmd(MYRI_LIB_PUT, 67, &mv, sizeof(mv)));
	CHECK(ev.status == PTL_OK, "PUT with ack to ourselves into the unmapped MD (%d)",
	      ev.status);
	ring_count(ring, n);
	CHECK(n[PTL_EVENT_ACK][1] == 1 && n[PTL_EVENT_ACK][0] == 0 && n[PTL_EVENT_PUT_END][1] == 1,
	      "a put whose DMA failed: ACK and PUT_END say PTL_NI_FAIL (%d, %d; %d ACK ok)",
	      n[PTL_EVENT_ACK][1], n[PTL_EVENT_PUT_END][1], n[PTL_EVENT_ACK][0]);
}

/* A GetPut whose target MD's memory the host unmapped after registering it:
 * the NIC's swap (two DMAs) fails, so the reply says so -- the initiator's
 * REPLY_END and the target's GETPUT_END carry PTL_NI_FAIL, and no bytes
 * (not zeros) land in the initiator's reply MD. */
static void test_getput_dma_fail(struct ep *o)
{
	long pg = sysconf(_SC_PAGESIZE);
	uint64_t count = 16;
	struct myri_evt ev = lib_call(o, lib_cmd(MYRI_LIB_EQ_ALLOC, 60, &count, sizeof(count)));
	CHECK(ev.status == PTL_OK, "EQ_ALLOC for the GetPut (%d)", ev.status);
	uint32_t eq = rep32(&ev, 0);
	struct p3_eq_ring *ring = (void *)(o->arena + rep32(&ev, 1));
	char *mem =
	    mmap(NULL, 3 * (size_t)pg, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (mem == MAP_FAILED) {
		CHECK(0, "mmap for the GetPut");
		return;
	}
	char *victim = mem, *src = mem + pg, *reply = mem + 2 * pg;
	memset(src, 0x44, (size_t)pg);
	memset(reply, 0x33, (size_t)pg);
	uint32_t put_md = md_page(o, src, eq, 301, 571, 61);
	uint32_t get_md = md_page(o, reply, eq, 302, 572, 62);
	struct myri_lib_me me = {.base = PTL_INVALID_HANDLE,
	                         .pt = 4,
	                         .match_nid = PTL_NID_ANY,
	                         .match_pid = PTL_PID_ANY,
	                         .unlink = PTL_RETAIN,
	                         .pos = PTL_INS_AFTER};
	ev = lib_call(o, lib_cmd(MYRI_LIB_ME_INSERT, 63, &me, sizeof(me)));
	uint32_t meh = rep32(&ev, 1);
	reg(o, 303, victim, (uint64_t)pg, 573);
	struct myri_lib_md at = {.md = {.start = (uint64_t)(uintptr_t)victim,
	                                .length = (uint64_t)pg,
	                                .threshold = PTL_MD_THRESH_INF,
	                                .options = PTL_MD_OP_PUT | PTL_MD_OP_GET,
	                                .eq_handle = eq},
	                         .handle = meh,
	                         .unlink = PTL_RETAIN};
	struct myri_cmd c = lib_cmd(MYRI_LIB_MD_ATTACH, 64, &at, sizeof(at));
	c.nreg = 1;
	c.reg_first = 303;
	c.key = 573;
	ev = lib_call(o, c);
	CHECK(ev.status == PTL_OK && put_md != PTL_INVALID_HANDLE && get_md != PTL_INVALID_HANDLE,
	      "GetPut set-up: target MD over a page the host then unmaps (%d)", ev.status);
	munmap(victim, (size_t)pg); /* still registered: the NIC's DMA now faults */
	struct myri_lib_move mv = {
	    .md = get_md, .md2 = put_md, .nid = o->nid, .pid = o->pid, .pt = 4, .remote_offset = 0};
	ev = lib_call(o, lib_cmd(MYRI_LIB_GETPUT, 65, &mv, sizeof(mv)));
	CHECK(ev.status == PTL_OK, "GETPUT to ourselves (%d)", ev.status);
	int reply_fail = 0, getput_fail = 0, reply_ok = 0;
	ptl_event_t e;
	while (p3_eq_ring_read(ring, &e) == PTL_OK) {
		reply_fail += e.type == PTL_EVENT_REPLY_END && e.ni_fail_type == PTL_NI_FAIL;
		reply_ok += e.type == PTL_EVENT_REPLY_END && e.ni_fail_type == PTL_NI_OK;
		getput_fail += e.type == PTL_EVENT_GETPUT_END && e.ni_fail_type == PTL_NI_FAIL;
	}
	CHECK(reply_fail == 1 && reply_ok == 0 && getput_fail == 1,
	      "a GetPut whose DMA failed: REPLY_END and GETPUT_END say PTL_NI_FAIL (%d, %d; %d "
	      "REPLY_END ok)",
	      reply_fail, getput_fail, reply_ok);
	CHECK(reply[0] == 0x33 && reply[pg - 1] == 0x33,
	      "nothing landed in the reply MD (%#x), no zeros", reply[0] & 0xff);
	test_get_put_dma_fail(o, ring, eq, victim, get_md, put_md, reply);
	munmap(mem + pg, 2 * (size_t)pg);
}

/* no_arena: an endpoint attached without the arena (version-1 size);
 * dst: a page followed by a guard page. */
/* Reserved handles (MYRI_LIB_RESERVE, the host's posted creations): a
 * creation naming a reserved handle gets exactly it; a forged or stale
 * `want` fails the call (PTL_NO_SPACE) and harms nothing; a posted call
 * that fails is answered, one that works is not. */
static int64_t mes_allocated(struct ep *o, uint64_t token)
{
	uint64_t sr = PTL_SR_MES_ALLOCATED;
	struct myri_evt ev = lib_call(o, lib_cmd(MYRI_LIB_STATUS, token, &sr, sizeof(sr)));
	int64_t v = -1;
	if (ev.status == PTL_OK)
		memcpy(&v, ev.hdr, sizeof(v));
	return v;
}

static void push_posted(struct ep *o, uint64_t token, const struct myri_lib_me *me)
{
	struct myri_cmd c = lib_cmd(MYRI_LIB_ME_INSERT, token, me, sizeof(*me));
	c.nic_token = MYRI_LIB_POSTED;
	push(o, &c);
}

/* Reserved handles (MYRI_LIB_RESERVE, the host's posted creations): a
 * creation naming a reserved handle gets exactly it; a forged or stale
 * `want` fails the call (PTL_NO_SPACE) and harms nothing; a posted call
 * that fails is answered, one that works is not. */
static void test_reserve(struct ep *o)
{
	int64_t mes0 = mes_allocated(o, 79);
	uint64_t a0 = P3_HT_ME | (uint64_t)3 << 8;
	struct myri_evt ev = lib_call(o, lib_cmd(MYRI_LIB_RESERVE, 80, &a0, sizeof(a0)));
	struct myri_lib_handles r;
	memcpy(&r, ev.hdr, sizeof(r));
	CHECK(ev.status == PTL_OK && r.n == 3 && r.h[0] >> 29 == P3_HT_ME,
	      "RESERVE 3 ME handles (%d, n %u)", ev.status, r.n);
	CHECK(mes_allocated(o, 81) == mes0, "reservations are not allocated objects");
	a0 = 7 | (uint64_t)3 << 8;
	ev = lib_call(o, lib_cmd(MYRI_LIB_RESERVE, 82, &a0, sizeof(a0)));
	CHECK(ev.status == PTL_FAIL, "RESERVE of an unknown type: %d", ev.status);
	struct myri_lib_me me = {.base = PTL_INVALID_HANDLE,
	                         .pt = 4,
	                         .match_nid = PTL_NID_ANY,
	                         .match_pid = PTL_PID_ANY,
	                         .unlink = PTL_RETAIN,
	                         .pos = PTL_INS_AFTER,
	                         .want = r.h[0]};
	ev = lib_call(o, lib_cmd(MYRI_LIB_ME_INSERT, 83, &me, sizeof(me)));
	CHECK(ev.status == PTL_OK && rep32(&ev, 1) == r.h[0], "ME_INSERT into a reserved handle");
	ev = lib_call(o, lib_cmd(MYRI_LIB_ME_INSERT, 84, &me, sizeof(me)));
	CHECK(ev.status == PTL_NO_SPACE, "a reserved handle used twice: %d", ev.status);
	me.want = r.h[1] ^ (1u << 16); /* another generation */
	ev = lib_call(o, lib_cmd(MYRI_LIB_ME_INSERT, 85, &me, sizeof(me)));
	CHECK(ev.status == PTL_NO_SPACE, "a forged reserved handle: %d", ev.status);
	me.want = 0x61234567u; /* an MD handle */
	ev = lib_call(o, lib_cmd(MYRI_LIB_ME_INSERT, 86, &me, sizeof(me)));
	CHECK(ev.status == PTL_NO_SPACE, "an MD handle as a reserved ME: %d", ev.status);
	/* posted: failing ones are answered, a good one is not */
	me.want = r.h[1];
	me.pt = 100000; /* no such portal: fails, and frees r.h[1] */
	push_posted(o, 87, &me);
	me.pt = 4; /* r.h[1] again: its reservation went with the failure */
	push_posted(o, 88, &me);
	me.want = r.h[2];
	push_posted(o, 89, &me);
	struct myri_evt e87 = {0}, e88 = {0};
	CHECK(next_event(o, &e87) == 0 && e87.token == 87 && e87.status == PTL_PT_INDEX_INVALID,
	      "posted ME_INSERT on a bad portal answered (%d)", e87.status);
	CHECK(next_event(o, &e88) == 0 && e88.token == 88 && e88.status == PTL_NO_SPACE,
	      "posted ME_INSERT into a freed reservation answered (%d)", e88.status);
	struct myri_lib_handles back = {.n = 2, .h = {r.h[2], 0x12345678u}};
	ev = lib_call(o, lib_cmd(MYRI_LIB_UNRESERVE, 90, &back, sizeof(back)));
	/* lib_call took the next event: 89 was not answered */
	CHECK(ev.status == PTL_OK,
	      "UNRESERVE (in use or forged: ignored), no answer to a posted "
	      "call that worked: %d",
	      ev.status);
	CHECK(mes_allocated(o, 91) == mes0 + 2, "two MEs more (83, 89)");
	uint64_t h = r.h[0];
	ev = lib_call(o, lib_cmd(MYRI_LIB_ME_UNLINK, 92, &h, sizeof(h)));
	CHECK(ev.status == PTL_OK, "ME_UNLINK of the reserved-handle ME: %d", ev.status);
	h = r.h[2];
	ev = lib_call(o, lib_cmd(MYRI_LIB_ME_UNLINK, 93, &h, sizeof(h)));
	CHECK(ev.status == PTL_OK, "ME_UNLINK of the posted ME: %d", ev.status);
}

static void test_offload(struct ep *no_arena, char *dst)
{
	struct myri_lib_open op = {.ni_gen = 1, .jid = PTL_JID_ANY};
	struct myri_cmd c = lib_cmd(MYRI_LIB_ME_UNLINK, 40, &op, sizeof(op));
	push(no_arena, &c);
	expect(no_arena, MYRI_EVT_REJECT, 40, -ENOTCONN, "a LIB call before LIB_OPEN");
	c = lib_cmd(MYRI_LIB_OPEN, 41, &op, sizeof(op));
	push(no_arena, &c);
	expect(no_arena, MYRI_EVT_REJECT, 41, -ENOSPC, "LIB_OPEN on a segment without an arena");

	struct ep o;
	if (ep_attach_seg(&o, UINT32_MAX, 1) != 0) {
		CHECK(0, "attach an offload endpoint");
		return;
	}
	struct myri_evt ev = lib_call(&o, lib_cmd(MYRI_LIB_OPEN, 42, &op, sizeof(op)));
	CHECK(ev.status == PTL_OK, "LIB_OPEN (%d)", ev.status);
	c = lib_cmd(MYRI_LIB_OPEN, 43, &op, sizeof(op));
	push(&o, &c);
	expect(&o, MYRI_EVT_REJECT, 43, -EALREADY, "a second LIB_OPEN");
	c = lib_cmd(99, 44, &op, sizeof(op));
	push(&o, &c);
	expect(&o, MYRI_EVT_REJECT, 44, -EOPNOTSUPP, "an unknown lib_op");

	/* forged handles are the call's own errors */
	uint64_t forged = 0x2a5b1234u;
	ev = lib_call(&o, lib_cmd(MYRI_LIB_ME_UNLINK, 45, &forged, sizeof(forged)));
	CHECK(ev.status == PTL_ME_INVALID, "ME_UNLINK of a forged handle: %d", ev.status);
	struct myri_lib_move mv = {.md = 0x61234567u, .whole = 1, .nid = o.nid, .pid = o.pid};
	ev = lib_call(&o, lib_cmd(MYRI_LIB_PUT, 46, &mv, sizeof(mv)));
	CHECK(ev.status == PTL_MD_INVALID, "PUT from a forged MD handle: %d", ev.status);

	/* MD memory must be exactly what the run registers */
	long pg = sysconf(_SC_PAGESIZE);
	reg(&o, 100, dst, (uint64_t)pg, 555);
	ev = lib_call(&o, md_bind_cmd(47, dst, (uint64_t)pg + 64, PTL_EQ_NONE, 100, 555));
	CHECK(ev.status == PTL_MD_ILLEGAL, "an MD longer than its registration: %d", ev.status);
	ev = lib_call(&o, md_bind_cmd(48, dst, (uint64_t)pg, PTL_EQ_NONE, 100, 556));
	CHECK(ev.status == PTL_MD_ILLEGAL, "an MD with a forged key: %d", ev.status);

	/* an EQ whose ring the host scribbles over: the NIC's writes stay in it */
	uint64_t count = 8;
	ev = lib_call(&o, lib_cmd(MYRI_LIB_EQ_ALLOC, 49, &count, sizeof(count)));
	CHECK(ev.status == PTL_OK && rep32(&ev, 1) < MYRI_ARENA_LEN, "EQ_ALLOC (%d)", ev.status);
	uint32_t eq = rep32(&ev, 0), ring_off = rep32(&ev, 1);
	struct {
		uint32_t magic, version, count, mask;
	} *ring = (void *)(o.arena + ring_off);
	ring->count = ring->mask = 0xffffffffu; /* would send the writer anywhere */
	size_t ring_bytes = 192 + 8 * sizeof(ptl_event_t);
	memset(o.arena + ring_off + ring_bytes, 0x77, 4096);
	/* an MD on the guarded page, with that EQ; a put to ourselves into it */
	memset(dst, 0x11, (size_t)pg);
	ev = lib_call(&o, md_bind_cmd(50, dst, (uint64_t)pg, eq, 100, 555));
	CHECK(ev.status == PTL_OK, "MD over the registered page (%d)", ev.status);
	uint32_t md = rep32(&ev, 0);
	struct myri_lib_me me = {.base = PTL_INVALID_HANDLE,
	                         .pt = 3,
	                         .match_nid = PTL_NID_ANY,
	                         .match_pid = PTL_PID_ANY,
	                         .unlink = PTL_RETAIN,
	                         .pos = PTL_INS_AFTER};
	ev = lib_call(&o, lib_cmd(MYRI_LIB_ME_INSERT, 51, &me, sizeof(me)));
	CHECK(ev.status == PTL_OK, "ME_INSERT (%d)", ev.status);
	uint32_t meh = rep32(&ev, 1);
	reg(&o, 200, dst, (uint64_t)pg, 557);
	struct myri_lib_md at = {
	    .md = {.start = (uint64_t)(uintptr_t)dst,
	           .length = (uint64_t)pg,
	           .threshold = PTL_MD_THRESH_INF,
	           .options = PTL_MD_OP_PUT | PTL_MD_TRUNCATE | PTL_MD_MANAGE_REMOTE,
	           .eq_handle = eq},
	    .handle = meh,
	    .unlink = PTL_RETAIN};
	c = lib_cmd(MYRI_LIB_MD_ATTACH, 52, &at, sizeof(at));
	c.nreg = 1;
	c.reg_first = 200;
	c.key = 557;
	ev = lib_call(&o, c);
	CHECK(ev.status == PTL_OK, "MD_ATTACH (%d)", ev.status);
	/* put the whole page onto itself at offset 100: LIB truncates to the MD,
	 * the guard page after it is never touched (no SIGSEGV in mcpd either) */
	mv = (struct myri_lib_move){.md = md,
	                            .whole = 1,
	                            .nid = o.nid,
	                            .pid = o.pid,
	                            .pt = 3,
	                            .remote_offset = 100,
	                            .ack = PTL_NOACK_REQ};
	memset(dst, 0x22, 100);
	ev = lib_call(&o, lib_cmd(MYRI_LIB_PUT, 53, &mv, sizeof(mv)));
	CHECK(ev.status == PTL_OK, "PUT to ourselves (%d)", ev.status);
	int beyond = 1;
	for (size_t i = 0; i < 4096; i++)
		beyond &= o.arena[ring_off + ring_bytes + i] == 0x77;
	CHECK(beyond, "the NIC wrote no event past the scribbled ring");
	uint64_t sr = PTL_SR_DROP_COUNT;
	ev = lib_call(&o, lib_cmd(MYRI_LIB_STATUS, 55, &sr, sizeof(sr)));
	int64_t drops = -1;
	memcpy(&drops, ev.hdr, sizeof(drops));
	CHECK(dst[100] == 0x22 && dst[pg - 1] == 0x11 && drops == 0,
	      "the put landed in the MD, truncated (%#x %#x, %lld drops)", dst[100] & 0xff,
	      dst[pg - 1] & 0xff, (long long)drops);
	test_getput_dma_fail(&o);
	test_reserve(&o);
	c = lib_cmd(MYRI_LIB_CLOSE, 54, &op, sizeof(op));
	CHECK(lib_call(&o, c).status == PTL_OK, "LIB_CLOSE");
}

int main(void)
{
	struct ep a, b;
	long pg = sysconf(_SC_PAGESIZE);
	/* page | guard | page | guard */
	char *mem =
	    mmap(NULL, 4 * (size_t)pg, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	mprotect(mem + pg, (size_t)pg, PROT_NONE);
	mprotect(mem + 3 * pg, (size_t)pg, PROT_NONE);
	char *src = mem, *dst = mem + 2 * pg;
	memset(src, 0xab, (size_t)pg);
	memset(dst, 0x11, (size_t)pg);
	if (ep_attach(&a, UINT32_MAX) || ep_attach(&b, UINT32_MAX)) {
		printf("FAIL: cannot attach to the NIC (is mcpd running? P3_MYRI_NIC?)\n");
		return 1;
	}

	/* 1. a window beyond the registered region (into the guard page) */
	reg(&a, 0, src, (uint64_t)pg, 7);
	struct myri_cmd c = send_cmd(&b, 1, 0, 7, (uint64_t)pg - 8, 64);
	push(&a, &c);
	expect(&a, MYRI_EVT_REJECT, 1, -EACCES, "send past a registered region");
	/* 2. a forged key */
	c = send_cmd(&b, 2, 0, 8, 0, 64);
	push(&a, &c);
	expect(&a, MYRI_EVT_REJECT, 2, -EACCES, "send with a forged key");
	/* 3. malformed entries */
	c = send_cmd(&b, 3, 0, 7, 0, 64);
	c.op = 99;
	push(&a, &c);
	expect(&a, MYRI_EVT_REJECT, 3, -EOPNOTSUPP, "unknown opcode");
	c = send_cmd(&b, 4, MYRI_NREG + 5, 7, 0, 64);
	push(&a, &c);
	expect(&a, MYRI_EVT_REJECT, 4, -EINVAL, "registration index out of range");
	c = send_cmd(&b, 5, 0, 7, 0, 64);
	c.nreg = MYRI_MAX_RUN + 1;
	push(&a, &c);
	expect(&a, MYRI_EVT_REJECT, 5, -EINVAL, "run longer than the limit");
	c = send_cmd(&b, 6, 0, 7, UINT64_MAX - 4, 64);
	push(&a, &c);
	expect(&a, MYRI_EVT_REJECT, 6, -EMSGSIZE, "offset + length wraps around");
	struct myri_cmd ic = {.op = MYRI_CMD_INTR_CTL, .offset = 7, .token = 61};
	push(&a, &ic);
	expect(&a, MYRI_EVT_REJECT, 61, -EINVAL, "interrupt control: unknown mode");
	ic = (struct myri_cmd){.op = MYRI_CMD_INTR_CTL, .len = 8, .token = 62};
	push(&a, &ic);
	expect(&a, MYRI_EVT_REJECT, 62, -EINVAL, "interrupt control with a payload");
	/* 4. a forged receive token */
	struct myri_cmd d = {.op = MYRI_CMD_DELIVER, .nic_token = 0x1234500000077ull, .token = 7};
	push(&a, &d);
	expect(&a, MYRI_EVT_REJECT, 7, -ENOENT, "deliver with a forged NIC token");

	/* 5. a legal send; the receiver answers with a window that would run
	 * into its guard page (rejected, nothing written), then legally */
	c = send_cmd(&b, 8, 0, 7, 0, 100);
	push(&a, &c);
	expect(&a, MYRI_EVT_TX_DONE, 8, 0, "legal send completes");
	struct myri_evt rx;
	int rc = next_event(&b, &rx);
	CHECK(rc == 0 && rx.type == MYRI_EVT_RX_HDR && rx.len == 100, "receiver gets the header");
	reg(&b, 10, dst, (uint64_t)pg, 99);
	d = (struct myri_cmd){.op = MYRI_CMD_DELIVER,
	                      .nreg = 1,
	                      .reg_first = 10,
	                      .key = 99,
	                      .nic_token = rx.token,
	                      .token = 20,
	                      .offset = (uint64_t)pg - 50,
	                      .len = 100};
	push(&b, &d);
	expect(&b, MYRI_EVT_REJECT, 20, -EACCES, "deliver into a guard page");
	int clean = 1;
	for (long i = 0; i < pg; i++)
		clean &= dst[i] == 0x11;
	CHECK(clean, "nothing written by the rejected delivery");
	d.offset = (uint64_t)pg - 100;
	d.token = 21;
	push(&b, &d);
	expect(&b, MYRI_EVT_RX_DONE, 21, 0, "legal delivery after the rejected one");
	int right = 1;
	for (long i = 0; i < pg; i++)
		right &= dst[i] == (i >= pg - 100 ? (char)0xab : 0x11);
	CHECK(right, "delivered bytes right, the rest untouched");
	d.token = 22;
	push(&b, &d);
	expect(&b, MYRI_EVT_REJECT, 22, -ENOENT, "a second answer to the same message (stale)");

	/* 6. a host that does not drain: 3000 rejected commands produce 3000
	 * events, more than the event queue holds; none is lost */
	for (int i = 0; i < 3000; i++) {
		while (atomic_load(&a.seg->cmdq.tail) - atomic_load(&a.seg->cmdq.head) >=
		       MYRI_CMDQ_LEN) {
			struct timespec t = {0, 100000};
			nanosleep(&t, NULL);
		}
		c = send_cmd(&b, 1000 + (uint64_t)i, 0, 8, 0, 8);
		push(&a, &c);
	}
	/* Drain only once the NIC has taken every command: then all 3000
	 * events exist and more than the queue holds must have been held back
	 * (draining earlier races the NIC, which under ASan may be slow enough
	 * never to fill the queue). Bounded: 10 s. */
	for (int w = 0;
	     w < 10000 && atomic_load(&a.seg->cmdq.head) != atomic_load(&a.seg->cmdq.tail); w++) {
		struct timespec t = {0, 1000000};
		nanosleep(&t, NULL);
	}
	int got = 0;
	struct myri_evt ev;
	while (got < 3000 && next_event(&a, &ev) == 0 && ev.token == 1000 + (uint64_t)got)
		got++;
	CHECK(got == 3000, "3000 events through a 2048-entry queue in order (%d)", got);
	CHECK(atomic_load(&a.seg->counters[MYRI_C_evt_backlog]) > 0,
	      "the NIC held events back (evt_backlog %llu)",
	      (unsigned long long)atomic_load(&a.seg->counters[MYRI_C_evt_backlog]));
	CHECK(atomic_load(&a.seg->counters[MYRI_C_cmds_rejected]) == 3009,
	      "rejections counted (%llu)",
	      (unsigned long long)atomic_load(&a.seg->counters[MYRI_C_cmds_rejected]));

	/* 7. a tail no producer could write: the NIC fails this endpoint only */
	atomic_store(&a.seg->cmdq.tail, atomic_load(&a.seg->cmdq.head) + 5 * MYRI_CMDQ_LEN);
	uint64_t one = 1;
	if (write(a.db, &one, sizeof(one)) < 0)
		perror("doorbell");
	struct pollfd p = {.fd = a.sock, .events = POLLIN};
	CHECK(poll(&p, 1, 5000) == 1, "endpoint with a corrupt queue dropped (hang-up)");
	CHECK(atomic_load(&a.seg->nic_state) == MYRI_NIC_FAILED, "nic_state says failed");
	struct ep c2;
	CHECK(ep_attach(&c2, UINT32_MAX) == 0, "the NIC still serves new endpoints");
	c = send_cmd(&c2, 30, 0, 7, 0, 10);
	push(&b, &c);
	/* b's registration 0 is unset: rejected; a NIC that still works says so */
	expect(&b, MYRI_EVT_REJECT, 30, -EACCES, "the NIC still serves old endpoints");
	test_hangup_runs_queued(&b);
	test_answer_lost();
	test_offload(&c2, dst);
	printf("%s: %d failure(s)\n", failures ? "FAIL" : "PASS", failures);
	return failures ? 1 : 0;
}
