/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * ptldump - decode rmpp and Portals headers from a pcap file or a live
 * capture (libpcap): one line per frame and a protocol summary.
 *
 *   ptldump [-r FILE | -i IFACE [-c COUNT] [-t SECONDS]] [-p PORT[-PORT]]
 *           [-F] [-q] [-a]
 *
 * Frames are rmpp over raw Ethernet (EtherType 0x88B5, optionally behind one
 * 802.1Q tag) or over UDP/IPv4 (any port, or the -p range).  Decoding uses
 * the library's own parsers (rmpp_pkt_parse, p3_hdr_unpack), so ptldump
 * shows exactly what the stack would accept; malformed frames are printed
 * with the parser's reason.  -F prints one "name=value" record per frame in
 * the field order of the Wireshark dissector (tools/wireshark/p3stack.lua),
 * for field-by-field comparison with tshark.
 *
 * The summary totals the payload carried by DATA frames from the headers'
 * length fields, so a capture with a small snap length (tcpdump -s 256:
 * headers only) is enough: such frames are decoded from the captured bytes
 * (their CRC32C cannot be checked) and counted as "snapped".
 *
 * A UDP GSO send (rmpp's GSO=1: a run of frames to one peer, all as long as
 * the first but the last) is captured on lo and veth as one datagram, before
 * the kernel cuts it: its frames lie back to back, and ptldump decodes them
 * one by one (same pcap frame number).  With a short snap length the later
 * frames' headers are not in the capture: they are counted apart ("GSO
 * frames not captured"), their bytes in no payload total.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <pcap/pcap.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "nal.h"
#include "p3num.h"
#include "rmpp_wire.h"

#define PD_ETHERTYPE_RMPP 0x88B5
#define PD_MAX_FLOWS 256
#define PD_PSN_TRACK 8192 /* per flow: first-transmission times of recent PSNs */

struct pd_flow {
	char key[96];             /* "src>dst ep a>b" */
	uint32_t psn_seen[PD_PSN_TRACK]; /* psn + 1 (0 = empty) */
	double psn_time[PD_PSN_TRACK];
	unsigned long data_pkts, retx, repair_samples;
	double repair_min, repair_max, repair_sum;
	unsigned zero_credit;
	unsigned min_credit;
};

struct pd_summary {
	unsigned long frames, rmpp, malformed, other;
	unsigned long by_type[RMPP_PKT_MAX + 1];
	unsigned long by_mop[RMPP_MOP_MAX + 1];
	unsigned long retx_flag, sack_blocks, dsack, crc_frames, ptl_by_type[6];
	unsigned long malformed_by_err[16];
	/* DATA frames: data bytes (after the Portals header), of which carried
	 * by frames with the RETX flag; Portals header bytes; frames cut by the
	 * snap length (decoded from their headers only) */
	uint64_t data_bytes, data_bytes_retx, ptlhdr_bytes;
	unsigned long data_frames, snapped, snapped_short;
	/* UDP GSO sends: datagrams holding several frames, the frames in them,
	 * and those of them whose header the snap length cut off */
	unsigned long gso_sends, gso_frames, gso_hidden;
	uint64_t gso_hidden_bytes;
	size_t max_len[RMPP_PKT_MAX + 1]; /* largest frame per type, padding included */
	struct pd_flow *flows[PD_MAX_FLOWS];
	int nflows;
};

static struct pd_summary pd_sum;

/* Portals message type names, from nal.h's list. */
static const char *pd_ptl_type_name(unsigned type)
{
	switch (type) {
#define PD_PTL_NAME(name, v)                                                                      \
	case v:                                                                                  \
		return #name;
		P3_MSG_TYPES(PD_PTL_NAME)
#undef PD_PTL_NAME
	}
	return "?";
}
static int pd_fields_mode, pd_quiet, pd_all;
static int pd_port_lo = -1, pd_port_hi = -1;
static pcap_t *pd_pcap;

static void pd_on_signal(int sig)
{
	(void)sig;
	if (pd_pcap)
		pcap_breakloop(pd_pcap);
}

static struct pd_flow *pd_flow_get(const char *key)
{
	for (int i = 0; i < pd_sum.nflows; i++)
		if (!strcmp(pd_sum.flows[i]->key, key))
			return pd_sum.flows[i];
	if (pd_sum.nflows == PD_MAX_FLOWS)
		return NULL;
	struct pd_flow *f = calloc(1, sizeof(*f));
	if (!f)
		return NULL;
	snprintf(f->key, sizeof(f->key), "%s", key);
	f->min_credit = UINT32_MAX;
	pd_sum.flows[pd_sum.nflows++] = f;
	return f;
}

/* Track first transmissions per PSN so a retransmission's repair delay
 * (time since the original) can be reported: a fast retransmit shows up as
 * about one RTT, an RTO-driven one as >= the RTO. */
static void pd_flow_data(struct pd_flow *f, const struct rmpp_pkt *p, double t)
{
	uint32_t slot = p->psn % PD_PSN_TRACK;
	f->data_pkts++;
	if (f->psn_seen[slot] == p->psn + 1) {
		double d = t - f->psn_time[slot];
		f->retx++;
		if (!f->repair_samples || d < f->repair_min)
			f->repair_min = d;
		if (d > f->repair_max)
			f->repair_max = d;
		f->repair_sum += d;
		f->repair_samples++;
	} else {
		f->psn_seen[slot] = p->psn + 1;
		f->psn_time[slot] = t;
	}
}

static void pd_flags_str(unsigned flags, char *buf, size_t len)
{
	size_t n = 0;
	buf[0] = 0;
#define PD_FLAG(name, v)                                                                          \
	if ((flags & (v)) && n < len)                                                            \
		n += (size_t)snprintf(buf + n, len - n, "%s%s", n ? "|" : "", #name);
	RMPP_PKT_FLAGS(PD_FLAG)
#undef PD_FLAG
	if (!n)
		snprintf(buf, len, "-");
}

/* The field list shared with tools/wireshark/p3stack.lua (same names, same
 * order, decimal values) so a capture can be compared field by field. */
static void pd_print_fields(unsigned long frame, const struct rmpp_pkt *p, const struct p3_hdr *hs,
			    int nh)
{
	printf("frame=%lu version=%u type=%u flags=%u payload_len=%u dst_ep=%u src_ep=%u "
	       "src_epoch=%u dst_epoch=%u psn=%u ack_psn=%u credit=%u ext_words=%u sack_n=%u "
	       "tsval=%u tsecr=%u crc=%u",
	       frame, p->version, p->type, p->flags, p->payload_len, p->dst_ep, p->src_ep,
	       p->src_epoch, p->dst_epoch, p->psn, p->ack_psn, p->credit, p->ext_words, p->sack_n,
	       p->tsval, p->tsecr, p->crc);
	for (unsigned i = 0; i < p->sack_n; i++)
		printf(" sack_start=%u sack_end=%u", p->sack[i].start, p->sack[i].end);
	if (p->flags & RMPP_F_MSG)
		printf(" msn=%u mop=%u mflags=%u ptlhdr_len=%u msg_len=%u offset=%u arg=%u handle=%u",
		       p->m.msn, p->m.mop, p->m.mflags, p->m.ptlhdr_len, p->m.msg_len, p->m.offset,
		       p->m.arg, p->m.handle);
	if (p->type == RMPP_PKT_HELLO || p->type == RMPP_PKT_HELLO_ACK)
		printf(" hello_magic=%u hello_mtu=%u hello_flags=%u", p->hello.magic, p->hello.mtu,
		       p->hello.hflags);
	for (const struct p3_hdr *h = hs; h < hs + nh; h++)
		printf(" ptl_type=%u ptl_src_nid=%u ptl_src_pid=%u ptl_dst_nid=%u ptl_dst_pid=%u "
		       "ptl_uid=%u ptl_jid=%u ptl_pt=%u ptl_ac=%u ptl_md=%u ptl_match_bits=%" PRIu64
		       " ptl_hdr_data=%" PRIu64 " ptl_remote_offset=%" PRIu64 " ptl_rlength=%" PRIu64
		       " ptl_mlength=%" PRIu64 " ptl_payload_len=%" PRIu64 " ptl_md_offset=%" PRIu64,
		       h->type, h->src.nid, h->src.pid, h->dst.nid, h->dst.pid, h->src_uid, h->src_jid,
		       h->pt_index, h->ac_index, h->md_handle, (uint64_t)h->match_bits,
		       (uint64_t)h->hdr_data, h->remote_offset, h->rlength, h->mlength,
		       h->payload_len, h->md_offset);
	printf(" data_len=%u\n", p->data_len);
}

static void pd_print_line(unsigned long frame, double t, const char *link, const char *addrs,
			  const struct rmpp_pkt *p, const struct p3_hdr *hs, int nh)
{
	char fl[96];
	pd_flags_str(p->flags, fl, sizeof(fl));
	printf("%6lu %11.6f %-5s %s %-9s %s ep %u>%u epoch %08x>%08x psn %u ack %u cr %u len %u",
	       frame, t, link, addrs, rmpp_pkt_type_name(p->type), fl, p->src_ep, p->dst_ep,
	       p->src_epoch, p->dst_epoch, p->psn, p->ack_psn, p->credit, p->payload_len);
	for (unsigned i = 0; i < p->sack_n; i++)
		printf(" sack[%u,%u)", p->sack[i].start, p->sack[i].end);
	if (p->flags & RMPP_F_MSG)
		printf(" | msn %u %s off %u/%u arg %u h %u", p->m.msn, rmpp_mop_name(p->m.mop),
		       p->m.offset, p->m.msg_len, p->m.arg, p->m.handle);
	if (p->type == RMPP_PKT_HELLO || p->type == RMPP_PKT_HELLO_ACK)
		printf(" | mtu %u flags %#x", p->hello.mtu, p->hello.hflags);
	/* headers after the first: ACKs carried along (nal/rmpp, rmpp_send_carry) */
	for (const struct p3_hdr *h = hs; h < hs + nh; h++)
		printf(" %s %s %u:%u>%u:%u pt %u ac %u mb %#" PRIx64 " rlen %" PRIu64 " mlen %" PRIu64
		       " roff %" PRIu64 " hdata %#" PRIx64,
		       h == hs ? "|" : "+carried", pd_ptl_type_name(h->type), h->src.nid, h->src.pid,
		       h->dst.nid, h->dst.pid,
		       h->pt_index, h->ac_index, (uint64_t)h->match_bits, h->rlength, h->mlength,
		       h->remote_offset, (uint64_t)h->hdr_data);
	printf("\n");
}

/* buf[0..len) was captured of a frame of wire_len bytes (wire_len > len: cut
 * by the snap length).  A snapped frame is parsed from a copy padded with
 * zeros to its wire length, without the CRC check; its headers must have
 * been captured.  Returns the bytes the rmpp header covers, 0 if not
 * decoded or if it may be padded (a HELLO: path-MTU probes are). */
static size_t pd_rmpp(unsigned long frame, double t, const char *link, const char *addrs,
                      const uint8_t *buf, size_t len, size_t wire_len)
{
	static uint8_t padded[65536];
	struct rmpp_pkt p;
	int snapped = 0, err;
	if (wire_len > len && wire_len <= sizeof(padded)) {
		memcpy(padded, buf, len);
		memset(padded + len, 0, wire_len - len);
		err = rmpp_pkt_parse(padded, wire_len, 0, &p);
		if (!err && len < RMPP_HDR_LEN + 4u * p.ext_words) {
			pd_sum.snapped_short++;
			if (!pd_fields_mode && !pd_quiet)
				printf("%6lu %11.6f %-5s %s SNAPPED (rmpp header not captured: %zu of %zu "
				       "bytes)\n",
				       frame, t, link, addrs, len, wire_len);
			return 0;
		}
		snapped = 1;
	} else {
		err = rmpp_pkt_parse(buf, len, RMPP_PARSE_VERIFY_CRC, &p);
	}
	if (err) {
		pd_sum.malformed++;
		if (-err < 16)
			pd_sum.malformed_by_err[-err]++;
		if (!pd_fields_mode && !pd_quiet)
			printf("%6lu %11.6f %-5s %s MALFORMED (%s) %zu bytes\n", frame, t, link, addrs,
			       rmpp_parse_err_str(err), len);
		return 0;
	}
	pd_sum.rmpp++;
	pd_sum.snapped += (unsigned long)snapped;
	if (p.type == RMPP_PKT_DATA) {
		pd_sum.data_frames++;
		pd_sum.data_bytes += p.data_len;
		pd_sum.ptlhdr_bytes += p.m.ptlhdr_len;
		if (p.flags & RMPP_F_RETX)
			pd_sum.data_bytes_retx += p.data_len;
	}
	if (p.type <= RMPP_PKT_MAX) {
		pd_sum.by_type[p.type]++;
		size_t flen = snapped ? wire_len : len; /* a snapped frame's wire length */
		if (strcmp(link, "udp") == 0 && flen > p.frame_len && p.type != RMPP_PKT_HELLO &&
		    p.type != RMPP_PKT_HELLO_ACK)
			flen = p.frame_len; /* UDP pads nothing: the rest is a GSO send's */
		if (flen > pd_sum.max_len[p.type])
			pd_sum.max_len[p.type] = flen;
	}
	if (p.flags & RMPP_F_RETX)
		pd_sum.retx_flag++;
	if (p.flags & RMPP_F_DSACK)
		pd_sum.dsack++;
	if (p.flags & RMPP_F_CRC)
		pd_sum.crc_frames++;
	pd_sum.sack_blocks += p.sack_n;
	/* the Portals header, then any ACK headers carried along (all 104 bytes) */
	struct p3_hdr hs[RMPP_WIRE_MAX_PTLHDR / P3_HDR_WIRE_LEN];
	int nh = 0;
	if (p.flags & RMPP_F_MSG) {
		if (p.m.mop <= RMPP_MOP_MAX)
			pd_sum.by_mop[p.m.mop]++;
		size_t hlen = RMPP_HDR_LEN + 4u * p.ext_words;
		if (p.m.ptlhdr_len && p.m.ptlhdr_len % P3_HDR_WIRE_LEN == 0 &&
		    hlen + p.m.ptlhdr_len <= len)
			while (nh < p.m.ptlhdr_len / P3_HDR_WIRE_LEN &&
			       p3_hdr_unpack(p.ptlhdr + (size_t)nh * P3_HDR_WIRE_LEN,
					     P3_HDR_WIRE_LEN, &hs[nh]) == 0) {
				if (hs[nh].type < 6)
					pd_sum.ptl_by_type[hs[nh].type]++;
				nh++;
			}
	}
	char key[96];
	snprintf(key, sizeof(key), "%s ep %u>%u", addrs, p.src_ep, p.dst_ep);
	struct pd_flow *f = pd_flow_get(key);
	if (f) {
		if (p.type == RMPP_PKT_DATA)
			pd_flow_data(f, &p, t);
		if (p.flags & RMPP_F_ACK_VALID) {
			if (p.credit < f->min_credit)
				f->min_credit = p.credit;
			if (p.credit == 0)
				f->zero_credit++;
		}
	}
	if (pd_fields_mode)
		pd_print_fields(frame, &p, hs, nh);
	else if (!pd_quiet)
		pd_print_line(frame, t, link, addrs, &p, hs, nh);
	return p.type == RMPP_PKT_HELLO || p.type == RMPP_PKT_HELLO_ACK ? 0 : p.frame_len;
}

/* The rest of a UDP datagram longer than its first frame (seg bytes): a GSO
 * send, cut by the kernel after the capture point into frames of seg bytes
 * (the last shorter).  buf[0..len) captured of wire bytes. */
static void pd_udp_gso(unsigned long frame, double t, const char *addrs, const uint8_t *buf,
                       size_t len, size_t wire, size_t seg)
{
	pd_sum.gso_sends++;
	pd_sum.gso_frames++; /* the first, decoded by the caller */
	for (size_t off = seg; off < wire; off += seg) {
		size_t flen = wire - off < seg ? wire - off : seg;
		size_t cap = len > off ? (len - off < flen ? len - off : flen) : 0;
		pd_sum.gso_frames++;
		if (cap < RMPP_HDR_LEN) {
			pd_sum.gso_hidden++;
			pd_sum.gso_hidden_bytes += flen;
			continue;
		}
		pd_rmpp(frame, t, "udp", addrs, buf + off, cap, flen);
	}
}

static void pd_packet(u_char *user, const struct pcap_pkthdr *ph, const u_char *d)
{
	static double t0 = -1;
	(void)user;
	double t = (double)ph->ts.tv_sec + (double)ph->ts.tv_usec / 1e6;
	if (t0 < 0)
		t0 = t;
	unsigned long frame = ++pd_sum.frames;
	size_t len = ph->caplen;
	if (len < 14) {
		pd_sum.other++;
		return;
	}
	unsigned type = (unsigned)(d[12] << 8 | d[13]);
	size_t off = 14;
	if (type == 0x8100 && len >= 18) {
		type = (unsigned)(d[16] << 8 | d[17]);
		off = 18;
	}
	char addrs[80];
	if (type == PD_ETHERTYPE_RMPP) {
		snprintf(addrs, sizeof(addrs), "%02x:%02x:%02x:%02x:%02x:%02x>%02x:%02x:%02x:%02x:%02x:%02x",
			 d[6], d[7], d[8], d[9], d[10], d[11], d[0], d[1], d[2], d[3], d[4], d[5]);
		size_t wire = ph->len > off ? ph->len - off : 0;
		pd_rmpp(frame, t - t0, "ether", addrs, d + off, len - off, wire > len - off ? wire : len - off);
		return;
	}
	if (type == 0x0800 && len >= off + 20) {
		const u_char *ip = d + off;
		size_t ihl = (size_t)(ip[0] & 0x0f) * 4;
		unsigned ip_total = (unsigned)(ip[2] << 8 | ip[3]);
		if (ip[9] == 17 && ihl >= 20 && len >= off + ihl + 8) {
			const u_char *udp = ip + ihl;
			unsigned sport = (unsigned)(udp[0] << 8 | udp[1]);
			unsigned dport = (unsigned)(udp[2] << 8 | udp[3]);
			unsigned ulen = (unsigned)(udp[4] << 8 | udp[5]);
			int in_range = pd_port_lo < 0 ||
				       ((int)sport >= pd_port_lo && (int)sport <= pd_port_hi) ||
				       ((int)dport >= pd_port_lo && (int)dport <= pd_port_hi);
			size_t plen = len - off - ihl - 8;
			/* the datagram's length on the wire (from the UDP, else IP
			 * header), and what of it was captured */
			size_t wire = plen;
			if (ulen >= 8)
				wire = ulen - 8;
			else if (ip_total && ip_total >= ihl + 8)
				wire = ip_total - ihl - 8;
			if (wire < plen)
				plen = wire;
			/* Without -p, only what looks like rmpp (version nibble 1). */
			if (in_range && (pd_port_lo >= 0 || (plen > 0 && (udp[8] >> 4) == RMPP_WIRE_VERSION))) {
				snprintf(addrs, sizeof(addrs), "%u.%u.%u.%u:%u>%u.%u.%u.%u:%u", ip[12], ip[13],
					 ip[14], ip[15], sport, ip[16], ip[17], ip[18], ip[19], dport);
				size_t seg =
				    pd_rmpp(frame, t - t0, "udp", addrs, udp + 8, plen, wire);
				if (seg >= RMPP_HDR_LEN && wire > seg)
					pd_udp_gso(frame, t - t0, addrs, udp + 8, plen, wire, seg);
				return;
			}
		}
	}
	pd_sum.other++;
	if (pd_all && !pd_fields_mode && !pd_quiet)
		printf("%6lu %11.6f other ethertype %#06x %zu bytes\n", frame, t - t0, type, len);
}

static void pd_print_summary(void)
{
	FILE *o = pd_fields_mode ? stderr : stdout;
	fprintf(o, "# summary: %lu frames, %lu rmpp, %lu malformed, %lu other\n", pd_sum.frames,
		pd_sum.rmpp, pd_sum.malformed, pd_sum.other);
	fprintf(o, "# packets:");
	for (unsigned i = 1; i <= RMPP_PKT_MAX; i++)
		if (pd_sum.by_type[i])
			fprintf(o, " %s %lu", rmpp_pkt_type_name(i), pd_sum.by_type[i]);
	fprintf(o, "\n# largest frames (bytes):");
	for (unsigned i = 1; i <= RMPP_PKT_MAX; i++)
		if (pd_sum.by_type[i])
			fprintf(o, " %s %zu", rmpp_pkt_type_name(i), pd_sum.max_len[i]);
	fprintf(o, "\n# message ops:");
	for (unsigned i = 1; i <= RMPP_MOP_MAX; i++)
		if (pd_sum.by_mop[i])
			fprintf(o, " %s %lu", rmpp_mop_name(i), pd_sum.by_mop[i]);
	fprintf(o, "\n# portals:");
	for (unsigned i = 1; i < 6; i++)
		if (pd_sum.ptl_by_type[i])
			fprintf(o, " %s %lu", pd_ptl_type_name(i), pd_sum.ptl_by_type[i]);
	fprintf(o, "\n# payload: %" PRIu64 " data bytes in %lu DATA frames (%" PRIu64
		   " of them in retransmissions), %" PRIu64 " Portals header bytes\n",
		pd_sum.data_bytes, pd_sum.data_frames, pd_sum.data_bytes_retx, pd_sum.ptlhdr_bytes);
	if (pd_sum.snapped || pd_sum.snapped_short)
		fprintf(o, "# snapped: %lu frames decoded from their headers (CRC32C not checked), "
			   "%lu with the rmpp header cut\n",
			pd_sum.snapped, pd_sum.snapped_short);
	if (pd_sum.gso_sends)
		fprintf(o,
		        "# UDP GSO: %lu sends holding %lu frames; %lu frames (%" PRIu64
		        " bytes) not "
		        "captured (snap length), in no total above\n",
		        pd_sum.gso_sends, pd_sum.gso_frames, pd_sum.gso_hidden,
		        pd_sum.gso_hidden_bytes);
	fprintf(o, "# retransmissions (RETX flag) %lu, SACK blocks %lu, DSACKs %lu, CRC32C frames %lu\n",
		pd_sum.retx_flag, pd_sum.sack_blocks, pd_sum.dsack, pd_sum.crc_frames);
	for (int i = 1; i < 16; i++)
		if (pd_sum.malformed_by_err[i])
			fprintf(o, "# malformed: %lu x %s\n", pd_sum.malformed_by_err[i],
				rmpp_parse_err_str(-i));
	for (int i = 0; i < pd_sum.nflows; i++) {
		struct pd_flow *f = pd_sum.flows[i];
		fprintf(o, "# flow %s: %lu data, %lu retransmitted", f->key, f->data_pkts, f->retx);
		if (f->repair_samples)
			fprintf(o, " (repair delay min %.3f ms avg %.3f ms max %.3f ms)",
				f->repair_min * 1e3, f->repair_sum / (double)f->repair_samples * 1e3,
				f->repair_max * 1e3);
		if (f->min_credit != UINT32_MAX)
			fprintf(o, ", credit min %u, zero-credit acks %u", f->min_credit, f->zero_credit);
		fprintf(o, "\n");
	}
}

/* -p PORT or LO-HI: strict numbers, or exit 2 with the reason. */
static void pd_parse_ports(const char *s)
{
	char lo[16];
	const char *dash = strchr(s, '-');
	size_t n = dash ? (size_t)(dash - s) : strlen(s);

	if (n >= sizeof(lo)) {
		fprintf(stderr, "ptldump: -p: \"%s\" is not a port or LO-HI (expected 0-65535)\n",
		        s);
		exit(2);
	}
	snprintf(lo, sizeof(lo), "%.*s", (int)n, s);
	pd_port_lo = (int)p3num_arg_u64("ptldump", "-p", lo, 0, 65535, 0);
	pd_port_hi = dash ? (int)p3num_arg_u64("ptldump", "-p", dash + 1, 0, 65535, 0) : pd_port_lo;
	if (pd_port_hi < pd_port_lo) {
		fprintf(stderr, "ptldump: -p wants PORT or LO-HI with LO <= HI, got '%s'\n", s);
		exit(2);
	}
}

static void pd_usage(FILE *o)
{
	fprintf(o, "usage: ptldump [-r FILE | -i IFACE [-c COUNT] [-t SECONDS]] [-p PORT[-PORT]]\n"
		   "               [-F] [-q] [-a]\n"
		   "  -r FILE   read a pcap file          -i IFACE  capture live\n"
		   "  -c COUNT  stop after COUNT frames   -t SEC    stop after SEC seconds (live)\n"
		   "  -p PORTS  UDP port or range carrying rmpp (default: any UDP that parses)\n"
		   "  -F        one name=value record per frame (fields of the Wireshark dissector)\n"
		   "  -q        summary only              -a        also list non-rmpp frames\n");
}

int main(int argc, char **argv)
{
	const char *file = NULL, *iface = NULL;
	int count = -1, secs = 0, c;
	while ((c = getopt(argc, argv, "r:i:c:t:p:Fqah")) != -1) {
		switch (c) {
		case 'r': file = optarg; break;
		case 'i': iface = optarg; break;
		case 'c':
			count = (int)p3num_arg_u64("ptldump", "-c", optarg, 0, INT_MAX, 0);
			break;
		case 't':
			secs = (int)p3num_arg_u64("ptldump", "-t", optarg, 0, INT_MAX, 0);
			break;
		case 'p':
			pd_parse_ports(optarg);
			break;
		case 'F': pd_fields_mode = 1; break;
		case 'q': pd_quiet = 1; break;
		case 'a': pd_all = 1; break;
		case 'h': pd_usage(stdout); return 0;
		default: pd_usage(stderr); return 2;
		}
	}
	if (!!file == !!iface) {
		fprintf(stderr, "ptldump: give exactly one of -r FILE or -i IFACE\n");
		pd_usage(stderr);
		return 2;
	}
	char err[PCAP_ERRBUF_SIZE];
	pd_pcap = file ? pcap_open_offline(file, err) : pcap_open_live(iface, 65535, 1, 10, err);
	if (!pd_pcap) {
		fprintf(stderr, "ptldump: %s: %s\n", file ? file : iface, err);
		return 1;
	}
	if (pcap_datalink(pd_pcap) != DLT_EN10MB) {
		fprintf(stderr, "ptldump: %s: link type %s is not Ethernet (use an interface or capture "
				"with Ethernet framing; on loopback 'lo' is fine)\n",
			file ? file : iface, pcap_datalink_val_to_name(pcap_datalink(pd_pcap)));
		return 1;
	}
	signal(SIGINT, pd_on_signal);
	signal(SIGTERM, pd_on_signal);
	if (secs > 0) {
		signal(SIGALRM, pd_on_signal);
		alarm((unsigned)secs);
	}
	int rc = pcap_loop(pd_pcap, count, pd_packet, NULL);
	if (rc == PCAP_ERROR) {
		fprintf(stderr, "ptldump: %s\n", pcap_geterr(pd_pcap));
		return 1;
	}
	pd_print_summary();
	pcap_close(pd_pcap);
	return 0;
}
