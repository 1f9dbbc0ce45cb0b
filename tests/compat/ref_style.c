/*
 * ref_style.c - a two-rank exchange written the way the Sandia Portals 3.3
 * reference programs are written, compiled against the *installed* headers
 * and library (tests/compat/run-compat.sh).  It must compile unchanged
 * against the reference implementation's headers as well: only reference
 * API, reference headers, reference spellings.
 *
 * Rank 0 and rank 1 each:
 *   - post a receive buffer (PtlMEAttach + PtlMDAttach, threshold 0) and
 *     activate it with PtlMDUpdate,
 *   - PtlPutRegion a patterned half of their send buffer to the peer,
 *   - wait for the PUT_END (PtlEQWait) and the ACK, check the data,
 *   - then rank 1 swaps a word on rank 0 with PtlGetPut and checks the old
 *     value it got back.
 * Exit status 0 on success.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <portals3.h>
#include <p3rt/p3rt.h>
#include <p3api/debug.h>
#include <p3nal_shmem.h>

#define PTL_INDEX   4
#define BUFSIZE     8192
#define MATCH_DATA  0x1000
#define MATCH_SWAP  0x2000
#define MATCH_HELLO 0x3000

static int check(int rc, const char *what)
{
	if (rc != PTL_OK) {
		fprintf(stderr, "ref_style: %s failed: %s\n", what, PtlErrorStr(rc));
		exit(1);
	}
	return rc;
}

static unsigned char pattern(unsigned int rank, unsigned int i)
{
	return (unsigned char)((rank * 131u + i * 7u) ^ (i >> 8));
}

static void wait_event(ptl_handle_eq_t eq, ptl_event_kind_t kind, ptl_event_t *ev)
{
	for (;;) {
		int rc = PtlEQWait(eq, ev);
		if (rc != PTL_OK && rc != PTL_EQ_DROPPED)
			check(rc, "PtlEQWait");
		if (ev->ni_fail_type != PTL_NI_OK) {
			fprintf(stderr, "ref_style: %s failed: %s\n", PtlEventKindStr(ev->type),
			        PtlNIFailStr(PTL_INVALID_HANDLE, ev->ni_fail_type));
			exit(1);
		}
		if (ev->type == kind)
			return;
	}
}

int main(int argc, char **argv)
{
	ptl_handle_ni_t ni;
	ptl_handle_eq_t eq, hello_eq;
	ptl_handle_me_t hello_me;
	ptl_handle_md_t hello_md, hello_src;
	ptl_handle_me_t me, swap_me;
	ptl_handle_md_t rmd, smd, swap_md, get_md, put_md;
	ptl_md_t md, old;
	ptl_process_id_t my_id, peer_id, any_id;
	ptl_event_t ev;
	unsigned int rank, size, peer, i;
	int num_if;
	static unsigned char rbuf[BUFSIZE], sbuf[BUFSIZE];
	unsigned long long swap_word = 0, new_word, old_word = 0;

	(void)argc;
	(void)argv;
	check(PtlInit(&num_if), "PtlInit");
	check(PtlSetRank(PTL_INVALID_HANDLE, -1, -1), "PtlSetRank");
	check(PtlNIInit(PTL_IFACE_DEFAULT, PTL_PID_ANY, NULL, NULL, &ni), "PtlNIInit");
	PtlNIDebug(ni, PTL_DBG_NONE);
	check(PtlGetRank(ni, &rank, &size), "PtlGetRank");
	if (size != 2) {
		fprintf(stderr, "ref_style: needs 2 ranks, got %u\n", size);
		return 1;
	}
	peer = 1 - rank;
	check(PtlGetRankId(ni, peer, &peer_id), "PtlGetRankId");
	check(PtlGetId(ni, &my_id), "PtlGetId");
	any_id.nid = PTL_NID_ANY;
	any_id.pid = PTL_PID_ANY;

	check(PtlEQAlloc(ni, 64, PTL_EQ_HANDLER_NONE, &eq), "PtlEQAlloc");

	/* receive buffer: attach inactive, then activate with PtlMDUpdate */
	check(PtlMEAttach(ni, PTL_INDEX, peer_id, MATCH_DATA, 0, PTL_UNLINK, PTL_INS_AFTER, &me),
	      "PtlMEAttach");
	memset(&md, 0, sizeof(md));
	md.start = rbuf;
	md.length = BUFSIZE;
	md.threshold = 0;
	md.options = PTL_MD_OP_PUT | PTL_MD_MANAGE_REMOTE;
	md.user_ptr = NULL;
	md.eq_handle = eq;
	check(PtlMDAttach(me, md, PTL_UNLINK, &rmd), "PtlMDAttach");
	md.threshold = 1;
	check(PtlMDUpdate(rmd, &old, &md, eq), "PtlMDUpdate");
	if (old.threshold != 0) {
		fprintf(stderr, "ref_style: PtlMDUpdate old threshold %d\n", old.threshold);
		return 1;
	}

	/* rank 0 also exposes a word for PtlGetPut */
	if (rank == 0) {
		swap_word = 0x1122334455667788ull;
		check(PtlMEAttach(ni, PTL_INDEX, any_id, MATCH_SWAP, 0, PTL_UNLINK, PTL_INS_AFTER,
		                  &swap_me),
		      "PtlMEAttach(swap)");
		md.start = &swap_word;
		md.length = sizeof(swap_word);
		md.threshold = 1;
		md.options = PTL_MD_OP_PUT | PTL_MD_OP_GET;
		md.eq_handle = eq;
		check(PtlMDAttach(swap_me, md, PTL_UNLINK, &swap_md), "PtlMDAttach(swap)");
	}

	for (i = 0; i < BUFSIZE; i++)
		sbuf[i] = pattern(rank, i);
	md.start = sbuf;
	md.length = BUFSIZE;
	md.threshold = 2; /* the send and the ack */
	md.options = 0;
	md.eq_handle = eq;
	check(PtlMDBind(ni, md, PTL_UNLINK, &smd), "PtlMDBind");

	/* handshake: the peer's hello ME is posted last, so an ACK to a hello
	 * means all its buffers are in place; retry until one comes back */
	check(PtlEQAlloc(ni, 16, PTL_EQ_HANDLER_NONE, &hello_eq), "PtlEQAlloc(hello)");
	check(PtlMEAttach(ni, PTL_INDEX, any_id, MATCH_HELLO, 0, PTL_RETAIN, PTL_INS_AFTER,
	                  &hello_me),
	      "PtlMEAttach(hello)");
	md.start = NULL;
	md.length = 0;
	md.threshold = PTL_MD_THRESH_INF;
	md.options = PTL_MD_OP_PUT;
	md.eq_handle = PTL_EQ_NONE;
	check(PtlMDAttach(hello_me, md, PTL_RETAIN, &hello_md), "PtlMDAttach(hello)");
	md.eq_handle = hello_eq;
	md.options = 0;
	check(PtlMDBind(ni, md, PTL_RETAIN, &hello_src), "PtlMDBind(hello)");
	for (;;) {
		int which, rc, acked = 0;
		check(PtlPut(hello_src, PTL_ACK_REQ, peer_id, PTL_INDEX, 0, MATCH_HELLO, 0, 0),
		      "PtlPut(hello)");
		while ((rc = PtlEQPoll(&hello_eq, 1, 100, &ev, &which)) == PTL_OK)
			if (ev.type == PTL_EVENT_ACK)
				acked = 1;
		if (rc != PTL_EQ_EMPTY)
			check(rc, "PtlEQPoll(hello)");
		if (acked)
			break;
	}

	check(PtlPutRegion(smd, BUFSIZE / 2, BUFSIZE / 2, PTL_ACK_REQ, peer_id, PTL_INDEX, 0,
	                   MATCH_DATA, 128, 0xC0FFEEull + rank),
	      "PtlPutRegion");

	{
		int got_put = 0, got_ack = 0;
		while (!got_put || !got_ack) {
			int rc = PtlEQWait(eq, &ev);
			if (rc != PTL_OK)
				check(rc, "PtlEQWait");
			if (ev.type == PTL_EVENT_PUT_END) {
				if (ev.mlength != BUFSIZE / 2 || ev.offset != 128 ||
				    ev.hdr_data != 0xC0FFEEull + peer) {
					fprintf(
					    stderr,
					    "ref_style: bad PUT_END (mlength %llu offset %llu)\n",
					    (unsigned long long)ev.mlength,
					    (unsigned long long)ev.offset);
					return 1;
				}
				got_put = 1;
			} else if (ev.type == PTL_EVENT_ACK) {
				if (ev.mlength != BUFSIZE / 2) {
					fprintf(stderr, "ref_style: ACK mlength %llu\n",
					        (unsigned long long)ev.mlength);
					return 1;
				}
				got_ack = 1;
			}
		}
	}
	for (i = 0; i < BUFSIZE / 2; i++)
		if (rbuf[128 + i] != pattern(peer, BUFSIZE / 2 + i)) {
			fprintf(stderr, "ref_style: rank %u: byte %u wrong\n", rank, i);
			return 1;
		}

	if (rank == 1) {
		new_word = 0xA5A5A5A5A5A5A5A5ull;
		md.start = &old_word;
		md.length = sizeof(old_word);
		md.threshold = 1;
		md.options = 0;
		md.eq_handle = eq;
		check(PtlMDBind(ni, md, PTL_UNLINK, &get_md), "PtlMDBind(get)");
		md.start = &new_word;
		md.length = sizeof(new_word);
		check(PtlMDBind(ni, md, PTL_UNLINK, &put_md), "PtlMDBind(put)");
		check(PtlGetPut(get_md, put_md, peer_id, PTL_INDEX, 0, MATCH_SWAP, 0, 0),
		      "PtlGetPut");
		wait_event(eq, PTL_EVENT_REPLY_END, &ev);
		if (old_word != 0x1122334455667788ull) {
			fprintf(stderr, "ref_style: PtlGetPut returned 0x%llx\n", old_word);
			return 1;
		}
	} else {
		wait_event(eq, PTL_EVENT_GETPUT_END, &ev);
		if (swap_word != 0xA5A5A5A5A5A5A5A5ull) {
			fprintf(stderr, "ref_style: swap word is 0x%llx\n", swap_word);
			return 1;
		}
	}

	printf("ref_style: rank %u of %u (nid %u pid %u): ok\n", rank, size, my_id.nid, my_id.pid);
	PtlNIFini(ni);
	PtlFini();
	return 0;
}
