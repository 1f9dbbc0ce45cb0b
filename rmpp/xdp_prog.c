/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * xdp_prog.c - the XDP program of the "xdp" link: open the object embedded at
 * build time (xdp/rmpp_xdp.bpf.c, see xdp_obj.c), attach it through libxdp
 * (native mode, generic if the driver refuses), register an AF_XDP socket in
 * its maps, detach it.
 *
 * A process killed while its endpoint was open leaves its program attached
 * (nothing detaches it).  Before attaching, the link removes rmpp programs
 * whose map still names the queue it now holds: the AF_XDP bind succeeded, so
 * their socket is gone (a queue has at most one socket).
 */
#include "xdp_link.h"

#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <linux/if_link.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <xdp/libxdp.h>

#define XDP_PROG_NAME "rmpp_xdp_steer"
#define XDP_MAP_XSKS  "rmpp_xsks"
#define XDP_MAP_EPS   "rmpp_ep_ids"

/* The object file, embedded by xdp_obj.c. */
extern const unsigned char rmpp_xdp_obj[];
extern const unsigned char rmpp_xdp_obj_end[];

static int silent_print(enum libbpf_print_level level, const char *fmt, va_list ap)
{
	(void)level;
	(void)fmt;
	(void)ap;
	return 0;
}

static int verbose_print(enum libbpf_print_level level, const char *fmt, va_list ap)
{
	if (level == LIBBPF_DEBUG)
		return 0;
	return vfprintf(stderr, fmt, ap);
}

static int xdp_silent_print(enum libxdp_print_level level, const char *fmt, va_list ap)
{
	(void)level;
	(void)fmt;
	(void)ap;
	return 0;
}

static int xdp_verbose_print(enum libxdp_print_level level, const char *fmt, va_list ap)
{
	if (level == LIBXDP_DEBUG)
		return 0;
	return vfprintf(stderr, fmt, ap);
}

/* libbpf and libxdp print their own diagnostics; shown at LOG >= 3 (the link
 * logs what failed itself). */
static void quiet_libs(int log_level)
{
	libbpf_set_print(log_level >= 3 ? verbose_print : silent_print);
	libxdp_set_print(log_level >= 3 ? xdp_verbose_print : xdp_silent_print);
}

/* The fd of the map called `name` that the attached program `prog_fd` uses
 * (-1 if none). */
static int prog_map_fd(int prog_fd, const char *name)
{
	uint32_t ids[8];
	struct bpf_prog_info info;
	memset(&info, 0, sizeof(info));
	info.nr_map_ids = 8;
	info.map_ids = (uint64_t)(uintptr_t)ids;
	uint32_t len = sizeof(info);
	if (bpf_obj_get_info_by_fd(prog_fd, &info, &len) != 0)
		return -1;
	for (uint32_t i = 0; i < info.nr_map_ids && i < 8; i++) {
		int fd = bpf_map_get_fd_by_id(ids[i]);
		if (fd < 0)
			continue;
		struct bpf_map_info mi;
		memset(&mi, 0, sizeof(mi));
		uint32_t mlen = sizeof(mi);
		if (bpf_obj_get_info_by_fd(fd, &mi, &mlen) == 0 && !strcmp(mi.name, name))
			return fd;
		close(fd);
	}
	return -1;
}

/* An rmpp program whose endpoint map has an entry for `queue`. */
static bool is_stale(struct xdp_program *prog, unsigned queue)
{
	const char *name = xdp_program__name(prog);
	if (!name || strcmp(name, XDP_PROG_NAME) != 0)
		return false;
	int fd = prog_map_fd(xdp_program__fd(prog), XDP_MAP_EPS);
	if (fd < 0)
		return false;
	uint32_t key = queue, val = 0;
	bool stale = bpf_map_lookup_elem(fd, &key, &val) == 0 && val != 0;
	close(fd);
	return stale;
}

static void detach_stale(struct rmpp_link *l, struct xdp_state *x)
{
	struct xdp_multiprog *mp = xdp_multiprog__get_from_ifindex(x->ifindex);
	if (!mp || libxdp_get_error(mp))
		return;
	enum xdp_attach_mode mode = xdp_multiprog__attach_mode(mp);
	if (xdp_multiprog__is_legacy(mp)) {
		struct xdp_program *main = xdp_multiprog__main_prog(mp);
		if (main && is_stale(main, x->queue)) {
			rmpp_log(l->ep, RMPP_LOG_INFO, NULL,
			         "xdp: removing a stale rmpp program from ifindex %d", x->ifindex);
			xdp_multiprog__detach(mp);
		}
		xdp_multiprog__close(mp);
		return;
	}
	struct xdp_program *stale[16];
	unsigned n = 0;
	for (struct xdp_program *p = xdp_multiprog__next_prog(NULL, mp); p && n < 16;
	     p = xdp_multiprog__next_prog(p, mp))
		if (is_stale(p, x->queue))
			stale[n++] = p;
	for (unsigned i = 0; i < n; i++) {
		rmpp_log(l->ep, RMPP_LOG_INFO, NULL,
		         "xdp: removing a stale rmpp program from ifindex %d", x->ifindex);
		xdp_program__detach(stale[i], x->ifindex, mode, 0);
	}
	xdp_multiprog__close(mp);
}

static void attach_failed(struct rmpp_link *l, const struct xdp_state *x, int err)
{
	char msg[128];
	libxdp_strerror(err, msg, sizeof(msg));
	const char *what = "check `ip link show` for another XDP program, or use --nal ether";
	if (err == -EPERM || err == -EACCES)
		what = "loading XDP programs needs CAP_BPF and CAP_NET_ADMIN: run as root, or "
		       "use --nal ether / udp";
	else if (err == -EOPNOTSUPP || err == -ENOSYS || err == -EINVAL)
		what = "the kernel or driver does not run XDP here (kernel >= 5.9 with "
		       "CONFIG_XDP_SOCKETS and CONFIG_BPF_SYSCALL needed): use --nal ether";
	rmpp_log(l->ep, RMPP_LOG_ERR, NULL,
	         "xdp: xdp_program__attach on %s (ifindex %d, native and generic mode) failed: "
	         "%s; %s",
	         x->ifname, x->ifindex, msg, what);
}

int rmpp_xdp_prog_attach(struct rmpp_link *l, struct xdp_state *x, bool skb_only)
{
	quiet_libs(l->ep->log_level);
	LIBBPF_OPTS(bpf_object_open_opts, oo, .object_name = "rmpp_xdp");
	x->obj = bpf_object__open_mem(rmpp_xdp_obj, (size_t)(rmpp_xdp_obj_end - rmpp_xdp_obj), &oo);
	long err = libbpf_get_error(x->obj);
	if (err) {
		x->obj = NULL;
		rmpp_log(l->ep, RMPP_LOG_ERR, NULL,
		         "xdp: bpf_object__open_mem of the embedded XDP object failed: %s",
		         strerror((int)-err));
		return (int)err;
	}
	x->prog = xdp_program__from_bpf_obj(x->obj, "xdp");
	err = libxdp_get_error(x->prog);
	if (err) {
		x->prog = NULL;
		rmpp_log(l->ep, RMPP_LOG_ERR, NULL, "xdp: xdp_program__from_bpf_obj failed: %s",
		         strerror((int)-err));
		return (int)err;
	}
	detach_stale(l, x);
	/* Multi-buffer frames (jumbo MTU): veth refuses a program without frags
	 * support in native mode once the MTU exceeds a page. */
	if (x->frags && xdp_program__set_xdp_frags_support(x->prog, true) != 0)
		x->frags = false;
	int rc = -EOPNOTSUPP;
	if (!skb_only) {
		rc = xdp_program__attach(x->prog, x->ifindex, XDP_MODE_NATIVE, 0);
		if (rc == 0)
			x->mode = XDP_MODE_NATIVE;
		else
			rmpp_log(l->ep, RMPP_LOG_INFO, NULL,
			         "xdp: native attach on %s refused (%s): trying generic mode",
			         x->ifname, strerror(-rc));
	}
	if (rc != 0 && rc != -EPERM) {
		rc = xdp_program__attach(x->prog, x->ifindex, XDP_MODE_SKB, 0);
		if (rc == 0)
			x->mode = XDP_MODE_SKB;
	}
	if (rc != 0) {
		attach_failed(l, x, rc);
		return rc;
	}
	x->attached = true;
	return 0;
}

int rmpp_xdp_prog_register(struct rmpp_link *l, struct xdp_state *x, struct xsk_socket *xsk,
                           uint16_t ep_id)
{
	struct bpf_map *xsks = bpf_object__find_map_by_name(x->obj, XDP_MAP_XSKS);
	struct bpf_map *eps = bpf_object__find_map_by_name(x->obj, XDP_MAP_EPS);
	if (!xsks || !eps)
		return -ENOENT;
	int rc = xsk_socket__update_xskmap(xsk, bpf_map__fd(xsks));
	if (rc) {
		rmpp_log(l->ep, RMPP_LOG_ERR, NULL, "xdp: xsk_socket__update_xskmap: %s",
		         strerror(-rc));
		return rc;
	}
	uint32_t key = x->queue, val = (uint32_t)ep_id + 1;
	if (bpf_map_update_elem(bpf_map__fd(eps), &key, &val, BPF_ANY) != 0) {
		rc = -errno;
		rmpp_log(l->ep, RMPP_LOG_ERR, NULL, "xdp: endpoint map update: %s",
		         strerror(errno));
		return rc;
	}
	x->eps_fd = bpf_map__fd(eps);
	return 0;
}

void rmpp_xdp_prog_detach(struct xdp_state *x)
{
	if (x->eps_fd >= 0) {
		uint32_t key = x->queue, val = 0;
		bpf_map_update_elem(x->eps_fd, &key, &val, BPF_ANY);
		x->eps_fd = -1;
	}
	if (x->prog && x->attached)
		xdp_program__detach(x->prog, x->ifindex, x->mode, 0);
	x->attached = false;
	if (x->prog)
		xdp_program__close(x->prog);
	x->prog = NULL;
	if (x->obj)
		bpf_object__close(x->obj);
	x->obj = NULL;
}
