/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * rmpp_xdp.bpf.c - the XDP program of the rmpp "xdp" link (compiled at build
 * time with clang -target bpf, embedded in librmpp by xdp_obj.c, loaded and
 * attached through libxdp by link_xdp.c).
 *
 * A frame of EtherType 0x88B5 whose rmpp dst_ep is the endpoint registered
 * for the receive queue goes to that queue's AF_XDP socket; everything else
 * (ARP, IP, rmpp frames for an AF_PACKET "ether" endpoint on the same
 * interface) passes to the kernel stack untouched.  The key of both maps is
 * the receive queue index: one AF_XDP socket per queue.
 */
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_endian.h>

#define RMPP_XDP_ETHERTYPE 0x88B5
#define RMPP_XDP_QUEUES    256

struct {
	__uint(type, BPF_MAP_TYPE_XSKMAP);
	__uint(max_entries, RMPP_XDP_QUEUES);
	__type(key, __u32);
	__type(value, __u32);
} rmpp_xsks SEC(".maps");

/* Per queue: the endpoint id of the socket in rmpp_xsks, plus 1 (0: none). */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, RMPP_XDP_QUEUES);
	__type(key, __u32);
	__type(value, __u32);
} rmpp_ep_ids SEC(".maps");

SEC("xdp")
int rmpp_xdp_steer(struct xdp_md *ctx)
{
	const unsigned char *data = (const unsigned char *)(long)ctx->data;
	const unsigned char *end = (const unsigned char *)(long)ctx->data_end;
	/* Ethernet header (14) + rmpp ver/type, flags, payload_len, dst_ep */
	if (data + 14 + 6 > end)
		return XDP_PASS;
	__u16 type = (__u16)(data[12] << 8 | data[13]);
	if (type != RMPP_XDP_ETHERTYPE)
		return XDP_PASS;
	__u32 q = ctx->rx_queue_index;
	__u32 *want = bpf_map_lookup_elem(&rmpp_ep_ids, &q);
	__u32 dst_ep = (__u32)(data[14 + 4] << 8 | data[14 + 5]);
	if (!want || *want != dst_ep + 1)
		return XDP_PASS;
	return bpf_redirect_map(&rmpp_xsks, q, XDP_PASS);
}

char _license[] SEC("license") = "Dual BSD/GPL";
