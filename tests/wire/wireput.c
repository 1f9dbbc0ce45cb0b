/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * wireput - traffic for the wire-fault tests (the scripts of tests/wire).
 *
 * Two ranks of a runtime job (PTL_MY_RID, PTL_NIDMAP, PTL_PIDMAP, PTL_NAL...):
 *   rank 0 (target)    one ME (match bits 1) over a buffer of sum(sizes) bytes
 *                      with PTL_MD_MANAGE_REMOTE, one ME (bits 2) for the final
 *                      checksum; writes READY_FILE once both are attached.
 *   rank 1 (initiator) N puts with PTL_ACK_REQ, message i of size sizes[i]
 *                      (0, 1, ... up to 1 MiB, seeded) at its own offset,
 *                      at most WINDOW in flight; then an 8-byte put of the
 *                      FNV-1a checksum of everything it sent.
 * Checks: exact event counts and kinds on both sides (SEND_START, SEND_END,
 * ACK with mlength == size; PUT_START, PUT_END with the right offset and
 * mlength), every byte of the target buffer, the checksum, no extra event.
 * Prints the NAL registers (PTL_SR_NAL_BASE + i) as "nal[i]=v" at the end.
 *
 * usage: wireput N SEED [READY_FILE]      exit 0 = all checks passed
 * env:   WIREPUT_TIMEOUT_MS (per event, default 30000), WIREPUT_WINDOW (4),
 *        WIREPUT_MAX (largest message, default 1 MiB), WIREPUT_PROGRESS_FILE
 *        (the initiator creates it once 10 messages are acked),
 *        WIREPUT_ACCEPT=K (rmpp.md §4.15, truncating receiver: the target
 *        posts one ME per message, match bits 0x100 + i, whose MD holds only
 *        min(size, K) bytes with PTL_MD_TRUNCATE; events, acks and bytes are
 *        checked against the accepted length; both ranks print
 *        "accepted A of T bytes, wire bound B" where B is the most data the
 *        protocol may put on the wire: whole eager messages (sizes up to
 *        P3_RMPP_EAGER_LIMIT, default 16384), and for rendezvous ones the
 *        accepted bytes or the first segment (at most 1500 bytes))
 */
#include <portals3.h>
#include <p3rt/p3rt.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define PT      4
#define NALREGS 80 /* more than librmpp has counters: the loop stops at the first missing one */

static unsigned timeout_ms = 30000;
static uint64_t accept_max; /* WIREPUT_ACCEPT: 0 = the target takes everything */

static uint64_t accepted_len(uint64_t size)
{
	return accept_max && size > accept_max ? accept_max : size;
}

/* The most payload rmpp may send for a message of SIZE bytes whose receiver
 * accepts ACC of them: eager messages go whole (the sender cannot know), a
 * rendezvous sends its first segment with the RTS and then only what the CTS
 * grants. */
static uint64_t wire_bound(uint64_t size, uint64_t acc, uint64_t eager)
{
	uint64_t first = size < 1500 ? size : 1500;
	if (size <= eager)
		return size;
	return acc > first ? acc : first;
}

#include <stdarg.h>
static void die(const char *who, const char *fmt, ...) __attribute__((noreturn, format(printf, 2, 3)));
static void die(const char *who, const char *fmt, ...)
{
	va_list ap;
	fprintf(stderr, "wireput %s: FAIL: ", who);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	exit(1);
}

static uint64_t rng;
static uint64_t next_rand(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return rng;
}

static unsigned char pat(uint32_t msg, uint64_t off)
{
	uint64_t x = (off + 1) * 0x9E3779B97F4A7C15ull ^ ((uint64_t)(msg + 1) * 0xC2B2AE3D27D4EB4Full);
	x ^= x >> 29;
	return (unsigned char)(x ^ (x >> 8));
}

static uint64_t fnv(uint64_t h, const unsigned char *p, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		h ^= p[i];
		h *= 0x100000001b3ull;
	}
	return h;
}

static void check(const char *who, int rc, const char *what)
{
	if (rc != PTL_OK)
		die(who, "%s returned %d (%s)", what, rc, PtlErrorStr((unsigned)rc));
}

static void next_event(const char *who, ptl_handle_eq_t eq, ptl_event_t *ev)
{
	int which;
	int rc = PtlEQPoll(&eq, 1, timeout_ms, ev, &which);
	if (rc == PTL_EQ_EMPTY)
		die(who, "no event within %u ms", timeout_ms);
	if (rc != PTL_OK)
		die(who, "PtlEQPoll returned %d (%s)", rc, PtlErrorStr((unsigned)rc));
	if (ev->ni_fail_type != PTL_NI_OK)
		die(who, "event %s with ni_fail_type %u", PtlEventKindStr(ev->type),
		    (unsigned)ev->ni_fail_type);
}

static void print_regs(const char *who, ptl_handle_ni_t ni)
{
	printf("wireput %s: regs", who);
	for (int i = 0; i < NALREGS; i++) {
		ptl_sr_value_t v;
		if (PtlNIStatus(ni, (ptl_sr_index_t)(PTL_SR_NAL_BASE + i), &v) != PTL_OK)
			break;
		printf(" nal[%d]=%llu", i, (unsigned long long)v);
	}
	ptl_sr_value_t d = 0;
	(void)PtlNIStatus(ni, PTL_SR_DROP_COUNT, &d);
	printf(" drop=%llu\n", (unsigned long long)d);
	fflush(stdout);
}

/* Every buffer lives until after PtlFini (MDs point into them); they are
 * tracked here and freed at the end so that LeakSanitizer stays quiet. */
static void *allocs[8];
static int nallocs;
static void *zalloc(size_t count, size_t size)
{
	void *p = calloc(count ? count : 1, size ? size : 1);
	if (!p || nallocs == (int)(sizeof(allocs) / sizeof(allocs[0])))
		die("alloc", "out of memory (%zu x %zu bytes)", count, size);
	allocs[nallocs++] = p;
	return p;
}
static void free_all(void)
{
	while (nallocs > 0)
		free(allocs[--nallocs]);
}

int main(int argc, char **argv)
{
	int nmsg, max_if, window = 4;
	unsigned rank, nranks;
	uint64_t seed, *off, *size, total = 0, sum = 0xcbf29ce484222325ull;
	size_t maxsz = 1u << 20;
	ptl_handle_ni_t ni;
	ptl_process_id_t peer;
	const char *e;

	if (argc < 3)
		die("?", "usage: wireput N SEED [READY_FILE]");
	nmsg = atoi(argv[1]);
	seed = strtoull(argv[2], NULL, 0);
	if ((e = getenv("WIREPUT_TIMEOUT_MS")))
		timeout_ms = (unsigned)atoi(e);
	if ((e = getenv("WIREPUT_WINDOW")))
		window = atoi(e);
	if ((e = getenv("WIREPUT_MAX")))
		maxsz = strtoull(e, NULL, 0);
	if ((e = getenv("WIREPUT_ACCEPT")))
		accept_max = strtoull(e, NULL, 0);
	if (nmsg < 1 || window < 1)
		die("?", "bad N or window");
	rng = seed * 0x9E3779B97F4A7C15ull + 1;
	off = zalloc((size_t)nmsg, sizeof(*off));
	size = zalloc((size_t)nmsg, sizeof(*size));
	for (int i = 0; i < nmsg; i++) {
		/* fixed sizes around the boundaries first, then random ones */
		static const uint64_t fixed[] = {0, 1, 1024, 16383, 16384, 16385, 65536, 1u << 20};
		uint64_t s = i < (int)(sizeof(fixed) / sizeof(fixed[0])) ? fixed[i]
		             : (next_rand() % 4 == 0) ? next_rand() % (maxsz + 1)
		                                      : next_rand() % 20000;
		if (s > maxsz)
			s = maxsz;
		size[i] = s;
		off[i] = total;
		total += s;
	}

	if (accept_max) {
		uint64_t acc = 0, bound = 0, eager = 16384;
		if ((e = getenv("P3_RMPP_EAGER_LIMIT")))
			eager = strtoull(e, NULL, 0);
		for (int i = 0; i < nmsg; i++) {
			acc += accepted_len(size[i]);
			bound += wire_bound(size[i], accepted_len(size[i]), eager);
		}
		printf("wireput: accepted %llu of %llu bytes, wire bound %llu\n", (unsigned long long)acc,
		       (unsigned long long)total, (unsigned long long)bound);
	}
	check("init", PtlInit(&max_if), "PtlInit");
	check("init", PtlSetRank(PTL_INVALID_HANDLE, (unsigned)-1, (unsigned)-1), "PtlSetRank");
	check("init", PtlNIInit(PTL_IFACE_AUTO, PTL_PID_ANY, NULL, NULL, &ni), "PtlNIInit");
	check("init", PtlGetRank(ni, &rank, &nranks), "PtlGetRank");
	if (nranks != 2)
		die("init", "needs a job of 2 ranks, got %u", nranks);
	check("init", PtlGetRankId(ni, rank ^ 1u, &peer), "PtlGetRankId");

	if (rank == 0) {
		const char *who = "target";
		unsigned char *buf = zalloc(total, 1);
		uint64_t theirs = 0;
		ptl_handle_eq_t eq;
		ptl_handle_me_t me, me2;
		ptl_handle_md_t md, md2;
		ptl_md_t d;
		ptl_event_t ev;
		int which, starts = 0, ends = 0, got_sum = 0;
		char *seen = zalloc((size_t)nmsg, 1);

		memset(buf, 0xEE, total ? total : 1);
		check(who, PtlEQAlloc(ni, (ptl_size_t)(4 * nmsg + 64), PTL_EQ_HANDLER_NONE, &eq), "PtlEQAlloc");
		check(who, PtlMEAttach(ni, PT, peer, 1, 0, PTL_RETAIN, PTL_INS_AFTER, &me), "PtlMEAttach");
		memset(&d, 0, sizeof(d));
		d.start = buf;
		d.length = total;
		d.threshold = PTL_MD_THRESH_INF;
		d.options = PTL_MD_OP_PUT | PTL_MD_MANAGE_REMOTE;
		d.eq_handle = eq;
		check(who, PtlMDAttach(me, d, PTL_RETAIN, &md), "PtlMDAttach");
		/* truncating receiver: one ME per message taking min(size, K) bytes */
		for (int i = 0; accept_max && i < nmsg; i++) {
			ptl_handle_me_t mi;
			ptl_handle_md_t di;
			check(who, PtlMEAttach(ni, PT, peer, 0x100 + (ptl_match_bits_t)i, 0, PTL_RETAIN,
			                       PTL_INS_AFTER, &mi), "PtlMEAttach (per message)");
			d.start = buf + off[i];
			d.length = accepted_len(size[i]);
			d.options = PTL_MD_OP_PUT | PTL_MD_TRUNCATE;
			check(who, PtlMDAttach(mi, d, PTL_RETAIN, &di), "PtlMDAttach (per message)");
		}
		check(who, PtlMEAttach(ni, PT, peer, 2, 0, PTL_RETAIN, PTL_INS_AFTER, &me2), "PtlMEAttach 2");
		d.start = &theirs;
		d.length = sizeof(theirs);
		d.threshold = 1;
		d.options = PTL_MD_OP_PUT;
		check(who, PtlMDAttach(me2, d, PTL_RETAIN, &md2), "PtlMDAttach 2");
		if (argc > 3) {
			FILE *f = fopen(argv[3], "w");
			if (!f)
				die(who, "cannot write %s", argv[3]);
			fclose(f);
		}
		while (ends < nmsg || !got_sum) {
			next_event(who, eq, &ev);
			if (ev.match_bits == 2) {
				if (ev.type == PTL_EVENT_PUT_END)
					got_sum = 1;
				else if (ev.type != PTL_EVENT_PUT_START)
					die(who, "unexpected %s on the checksum ME", PtlEventKindStr(ev.type));
				continue;
			}
			/* message i: identified by its offset (sizes may be 0: hdr_data) */
			int i = (int)ev.hdr_data;
			if (i < 0 || i >= nmsg)
				die(who, "hdr_data %llu is no message index", (unsigned long long)ev.hdr_data);
			uint64_t want_off = accept_max ? 0 : off[i], acc = accepted_len(size[i]);
			if (ev.offset != want_off || ev.mlength != acc || ev.rlength != size[i])
				die(who, "message %d: offset %llu mlength %llu rlength %llu, want %llu/%llu/%llu",
				    i, (unsigned long long)ev.offset, (unsigned long long)ev.mlength,
				    (unsigned long long)ev.rlength, (unsigned long long)want_off,
				    (unsigned long long)acc, (unsigned long long)size[i]);
			if (ev.type == PTL_EVENT_PUT_START) {
				if (seen[i] != 0)
					die(who, "message %d: PUT_START twice or after PUT_END", i);
				seen[i] = 1;
				starts++;
			} else if (ev.type == PTL_EVENT_PUT_END) {
				if (seen[i] != 1)
					die(who, "message %d: PUT_END without PUT_START or twice", i);
				seen[i] = 2;
				ends++;
			} else {
				die(who, "unexpected event %s", PtlEventKindStr(ev.type));
			}
		}
		if (starts != nmsg)
			die(who, "%d PUT_START for %d messages", starts, nmsg);
		for (int i = 0; i < nmsg; i++) {
			uint64_t acc = accepted_len(size[i]);
			for (uint64_t k = 0; k < size[i]; k++) {
				unsigned char want = k < acc ? pat((uint32_t)i, k) : 0xEE;
				if (buf[off[i] + k] != want)
					die(who, "message %d (size %llu, accepted %llu): byte %llu is 0x%02x, want 0x%02x",
					    i, (unsigned long long)size[i], (unsigned long long)acc,
					    (unsigned long long)k, buf[off[i] + k], want);
			}
			sum = fnv(sum, buf + off[i], acc);
		}
		if (sum != theirs)
			die(who, "checksum %016llx, the initiator sent %016llx",
			    (unsigned long long)sum, (unsigned long long)theirs);
		/* nothing more may arrive */
		int rc = PtlEQPoll(&eq, 1, 300, &ev, &which);
		if (rc != PTL_EQ_EMPTY)
			die(who, "extra event after the last message (rc %d, %s)", rc,
			    rc == PTL_OK ? PtlEventKindStr(ev.type) : "-");
		printf("wireput target: OK %d messages, %llu bytes, checksum %016llx\n", nmsg,
		       (unsigned long long)total, (unsigned long long)sum);
		print_regs(who, ni);
		check(who, PtlMEUnlink(me), "PtlMEUnlink");
		check(who, PtlMEUnlink(me2), "PtlMEUnlink 2");
		check(who, PtlEQFree(eq), "PtlEQFree");
	} else {
		const char *who = "initiator";
		unsigned char *buf = zalloc(total, 1);
		ptl_handle_eq_t eq;
		ptl_handle_md_t *mds = zalloc((size_t)nmsg + 1, sizeof(*mds));
		int *ev_seen = zalloc((size_t)nmsg + 1, sizeof(int) * 3);
		int next = 0, done = 0, inflight = 0;
		uint64_t cs;
		ptl_event_t ev;

		for (int i = 0; i < nmsg; i++)
			for (uint64_t k = 0; k < size[i]; k++)
				buf[off[i] + k] = pat((uint32_t)i, k);
		/* the checksum covers what the target accepts (everything unless
		 * WIREPUT_ACCEPT): message by message, as the target computes it */
		for (int i = 0; i < nmsg; i++)
			sum = fnv(sum, buf + off[i], accepted_len(size[i]));
		cs = sum;
		check(who, PtlEQAlloc(ni, (ptl_size_t)(4 * window + 64), PTL_EQ_HANDLER_NONE, &eq), "PtlEQAlloc");
		while (done < nmsg + 1) {
			while (next <= nmsg && inflight < window && (next < nmsg || done == nmsg)) {
				ptl_md_t d;
				memset(&d, 0, sizeof(d));
				d.start = next < nmsg ? buf + off[next] : (void *)&cs;
				d.length = next < nmsg ? size[next] : sizeof(cs);
				d.threshold = PTL_MD_THRESH_INF;
				d.user_ptr = (void *)(intptr_t)next;
				d.eq_handle = eq;
				check(who, PtlMDBind(ni, d, PTL_RETAIN, &mds[next]), "PtlMDBind");
				ptl_match_bits_t bits = next == nmsg ? 2 : accept_max ? 0x100 + (ptl_match_bits_t)next : 1;
				check(who, PtlPut(mds[next], PTL_ACK_REQ, peer, PT, 0, bits,
				                  next < nmsg && !accept_max ? off[next] : 0, (ptl_hdr_data_t)next),
				      "PtlPut");
				next++;
				inflight++;
			}
			next_event(who, eq, &ev);
			int i = (int)(intptr_t)ev.md.user_ptr;
			uint64_t want = i < nmsg ? accepted_len(size[i]) : sizeof(cs);
			int k = ev.type == PTL_EVENT_SEND_START ? 0 : ev.type == PTL_EVENT_SEND_END ? 1
			        : ev.type == PTL_EVENT_ACK ? 2 : -1;
			if (i < 0 || i > nmsg || k < 0)
				die(who, "unexpected event %s (message %d)", PtlEventKindStr(ev.type), i);
			if (ev_seen[3 * i + k]++)
				die(who, "message %d: %s twice", i, PtlEventKindStr(ev.type));
			if (k == 2) {
				if (ev.mlength != want)
					die(who, "message %d: ACK mlength %llu, want %llu", i,
					    (unsigned long long)ev.mlength, (unsigned long long)want);
				if (!ev_seen[3 * i + 1])
					die(who, "message %d: ACK before SEND_END", i);
			}
			if (ev_seen[3 * i] && ev_seen[3 * i + 1] && ev_seen[3 * i + 2]) {
				check(who, PtlMDUnlink(mds[i]), "PtlMDUnlink");
				done++;
				inflight--;
				if (done == 10 && (e = getenv("WIREPUT_PROGRESS_FILE")) && *e) {
					FILE *f = fopen(e, "w");
					if (f)
						fclose(f);
				}
			}
		}
		int which, rc = PtlEQPoll(&eq, 1, 100, &ev, &which);
		if (rc != PTL_EQ_EMPTY)
			die(who, "extra event (rc %d)", rc);
		printf("wireput initiator: OK %d messages + checksum acked, %llu bytes, checksum %016llx\n",
		       nmsg, (unsigned long long)total, (unsigned long long)cs);
		print_regs(who, ni);
		check(who, PtlEQFree(eq), "PtlEQFree");
	}
	check("fini", PtlNIFini(ni), "PtlNIFini");
	PtlFini();
	free_all();
	return 0;
}
