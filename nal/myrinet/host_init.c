/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * host_init.c - the "myrinet" NAL: the host driver of the emulated Myrinet
 * NIC (mcpd).  Attach (segment, doorbell, interrupt line handed to the NIC
 * over its control socket), init/stop/destroy, dist(), status() and the ops
 * table.  With PTL_PROGRESS=app or thread the NIC is a reliable datagram
 * device and LIB runs here.  See README.md.
 *
 * Runtime parameters:
 *   P3_MYRI_NIC   the NIC's name (default none: the node's only NIC)
 *   P3_MYRI_ADDR  this node's IPv4 address when no runtime nid map is given
 *                 (default: P3_MYRI_IFNAME's address if that is set -- a PMI
 *                 launch on namespace hosts, p3mpirun --netns -- else 127.0.0.1)
 */
#include "myri_host.h"
#include "rmpp.h" /* rmpp_iface_ipv4 */

#include <arpa/inet.h>
#include <errno.h>
#include <poll.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#define MYRI_ATTACH_TIMEOUT_MS 5000
#define MYRI_STOP_FLUSH_MS     2000 /* at detach: the NIC takes the queued commands */

static int nic_connect(struct myri_host *h)
{
	const char *tag = getenv("P3_MYRI_NIC");
	struct sockaddr_un sa;
	memset(&sa, 0, sizeof(sa));
	sa.sun_family = AF_UNIX;
	int n = snprintf(sa.sun_path + 1, sizeof(sa.sun_path) - 1, MYRI_SOCK_FMT,
	                 (unsigned)getuid(), tag && *tag ? "-" : "", tag && *tag ? tag : "");
	socklen_t sl = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + 1 + (size_t)n);
	h->sock = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
	if (h->sock < 0)
		return -errno;
	if (connect(h->sock, (struct sockaddr *)&sa, sl) != 0) {
		int rc = -errno;
		p3_lib_log(h->lib, 0,
		           "myrinet: no NIC at @%s (%s): start one with `mcpd &` (mcpd(8)) or run "
		           "the job with `ptlrun --nal myrinet`",
		           sa.sun_path + 1, strerror(-rc));
		return rc == -ECONNREFUSED ? -ENODEV : rc;
	}
	return 0;
}

static int nic_attach(struct myri_host *h, int memfd, uint32_t nid, uint32_t pid)
{
	struct myri_attach_req req = {.magic = MYRI_MAGIC,
	                              .version = MYRI_VERSION,
	                              .op = MYRI_CTL_ATTACH,
	                              .nid = nid,
	                              .pid = pid,
	                              .seg_size = sizeof(struct myri_seg)};
	int fds[3] = {memfd, h->doorbell_fd, h->intr_fd};
	char cbuf[CMSG_SPACE(sizeof(fds))];
	struct iovec iov = {&req, sizeof(req)};
	struct msghdr mh = {
	    .msg_iov = &iov, .msg_iovlen = 1, .msg_control = cbuf, .msg_controllen = sizeof(cbuf)};
	memset(cbuf, 0, sizeof(cbuf));
	struct cmsghdr *c = CMSG_FIRSTHDR(&mh);
	c->cmsg_level = SOL_SOCKET;
	c->cmsg_type = SCM_RIGHTS;
	c->cmsg_len = CMSG_LEN(sizeof(fds));
	memcpy(CMSG_DATA(c), fds, sizeof(fds));
	if (sendmsg(h->sock, &mh, MSG_NOSIGNAL) != (ssize_t)sizeof(req))
		return -errno;
	struct myri_attach_rep rep;
	struct pollfd p = {.fd = h->sock, .events = POLLIN};
	if (poll(&p, 1, MYRI_ATTACH_TIMEOUT_MS) != 1 ||
	    recv(h->sock, &rep, sizeof(rep), 0) != (ssize_t)sizeof(rep) || rep.magic != MYRI_MAGIC)
		return -EPROTO;
	if (rep.status)
		return rep.status;
	h->id.nid = rep.nid;
	h->id.pid = rep.pid;
	h->nic_ospid = rep.nic_ospid;
	/* The NIC's DMA is process_vm_readv/writev against this process: allow
	 * it where Yama restricts ptrace to ancestors (fails harmlessly elsewhere). */
	prctl(PR_SET_PTRACER, (unsigned long)rep.nic_ospid, 0, 0, 0);
	return 0;
}

static int seg_create(struct myri_host *h)
{
	int fd = memfd_create("p3-myri-seg", MFD_CLOEXEC);
	if (fd < 0)
		return -errno;
	if (ftruncate(fd, (off_t)MYRI_SEG_BYTES) !=
	    0) { /* sparse: the arena costs nothing unused */
		close(fd);
		return -errno;
	}
	h->seg = mmap(NULL, sizeof(struct myri_seg), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (h->seg == MAP_FAILED) {
		h->seg = NULL;
		close(fd);
		return -errno;
	}
	h->arena =
	    mmap(NULL, MYRI_ARENA_LEN, PROT_READ | PROT_WRITE, MAP_SHARED, fd, MYRI_ARENA_OFFSET);
	if (h->arena == MAP_FAILED) {
		h->arena = NULL;
		close(fd);
		return -errno;
	}
	h->seg->magic = MYRI_MAGIC;
	h->seg->version = MYRI_VERSION;
	h->seg->size = sizeof(struct myri_seg);
	return fd;
}

void myri_host_free(struct myri_host *h)
{
	if (h->arena)
		munmap(h->arena, MYRI_ARENA_LEN);
	if (h->seg)
		munmap(h->seg, sizeof(struct myri_seg));
	if (h->sock >= 0)
		close(h->sock);
	if (h->doorbell_fd >= 0)
		close(h->doorbell_fd);
	if (h->intr_fd >= 0)
		close(h->intr_fd);
	pthread_mutex_destroy(&h->cmd_lock);
	pthread_mutex_destroy(&h->evt_lock);
	free(h);
}

static uint32_t my_nid(struct p3_lib *lib, const struct p3_nal_init_args *args, int *err)
{
	const char *s = getenv("P3_MYRI_ADDR");
	struct in_addr in;
	*err = 0;
	if (args->rank >= 0 && args->nidmap)
		return args->nidmap[args->rank];
	const char *ifname = getenv("P3_MYRI_IFNAME");
	uint32_t ip;
	if ((!s || !*s) && ifname && *ifname && rmpp_iface_ipv4(ifname, &ip) == 0)
		return ip; /* a PMI launch on a namespace host: its interface's address */
	if (!s || !*s)
		return 0x7f000001u;
	if (inet_pton(AF_INET, s, &in) != 1) {
		p3_lib_log(lib, 0, "myrinet: P3_MYRI_ADDR=%s is not an IPv4 address", s);
		*err = -EINVAL;
	}
	return ntohl(in.s_addr);
}

/* Create the segment and the two eventfds and attach them to the NIC as
 * endpoint (nid, pid) (UINT32_MAX: any).  On failure h keeps what must be
 * freed (host_free). */
int myri_host_attach(struct myri_host *h, uint32_t nid, uint32_t pid)
{
	int memfd = seg_create(h);
	h->doorbell_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	h->intr_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	int rc = memfd < 0 ? memfd : h->doorbell_fd < 0 || h->intr_fd < 0 ? -errno : nic_connect(h);
	if (rc == 0)
		rc = nic_attach(h, memfd, nid, pid);
	if (memfd >= 0)
		close(memfd); /* unnamed: gone when both sides unmapped it */
	if (rc && rc != -ENODEV && rc != -ENOENT)
		p3_lib_log(h->lib, 0, "myrinet: attach to the NIC failed: %s", strerror(-rc));
	return rc;
}

struct myri_host *myri_host_new(struct p3_lib *lib)
{
	struct myri_host *h = calloc(1, sizeof(*h));
	if (!h)
		return NULL;
	h->lib = lib;
	h->sock = h->doorbell_fd = h->intr_fd = -1;
	pthread_mutex_init(&h->cmd_lock, NULL);
	pthread_mutex_init(&h->evt_lock, NULL);
	return h;
}

/* This endpoint's (nid, pid) request from the runtime's maps or the
 * environment; 0 or -EINVAL (P3_MYRI_ADDR malformed). */
int myri_host_addr(struct p3_lib *lib, const struct p3_nal_init_args *args, uint32_t *nid,
                   uint32_t *pid)
{
	int rc;
	*nid = my_nid(lib, args, &rc);
	*pid = args->requested_pid == PTL_PID_ANY ? UINT32_MAX : args->requested_pid;
	if (*pid == UINT32_MAX && args->rank >= 0 && args->pidmap)
		*pid = args->pidmap[args->rank];
	return rc;
}

static void myri_stop(void *priv);

static int myri_init(struct p3_lib *lib, const struct p3_nal_init_args *args,
                     struct p3_nal_info *info, void **privp)
{
	struct myri_host *h = myri_host_new(lib);
	if (!h)
		return -ENOMEM;
	uint32_t nid, pid;
	int rc = myri_host_addr(lib, args, &nid, &pid);
	if (rc == 0)
		rc = myri_host_attach(h, nid, pid);
	if (rc) {
		myri_host_free(h);
		return rc;
	}
	memset(info, 0, sizeof(*info));
	info->id = h->id;
	info->limits.max_md_iovecs = MYRI_MAX_RUN;
	info->max_msg_size = UINT32_MAX;
	info->transfer_mode = "emulated Myrinet NIC (mcpd): reliable datagrams, LIB on the host";
	rc = myri_intr_init(h, args, info);
	if (rc) {
		myri_stop(h);
		myri_host_free(h);
		return rc;
	}
	*privp = h;
	return 0;
}

static int myri_dist(void *priv, ptl_process_id_t id, unsigned long *distance)
{
	struct myri_host *h = priv;
	if (id.nid == h->id.nid)
		*distance = id.pid == h->id.pid ? 0 : 1;
	else
		*distance = 2;
	return 0;
}

/* PTL_SR_NAL_BASE + i: the NIC's i-th counter of this endpoint (README.md). */
static int myri_status(void *priv, ptl_sr_index_t reg, ptl_sr_value_t *value)
{
	struct myri_host *h = priv;
	if (reg < PTL_SR_NAL_BASE)
		return -ENOENT;
	if (reg - PTL_SR_NAL_BASE >= MYRI_NCOUNTERS) /* the driver's own */
		return myri_intr_status(h, (unsigned)(reg - PTL_SR_NAL_BASE - MYRI_NCOUNTERS),
		                        value);
	*value = (ptl_sr_value_t)atomic_load(&h->seg->counters[reg - PTL_SR_NAL_BASE]);
	return 0;
}

/* Detach: the NIC takes the commands already queued (an ACK LIB owes a
 * peer), then sees the hang-up and drops the endpoint; what is still in
 * flight here fails as unlinked. */
static void myri_stop(void *priv)
{
	struct myri_host *h = priv;
	if (h->stopped)
		return;
	pthread_mutex_lock(&h->evt_lock);
	h->stopped = 1;
	pthread_mutex_unlock(&h->evt_lock);
	if (h->sock >= 0 && h->seg)
		myri_io_flush_cmds(h, MYRI_STOP_FLUSH_MS); /* what LIB posted last must go */
	if (h->sock >= 0) {
		close(h->sock);
		h->sock = -1;
	}
	myri_fail_all(h, PTL_NI_UNLINKED);
}

static void myri_destroy(void *priv)
{
	struct myri_host *h = priv;
	myri_stop(h);
	myri_host_free(h);
}

const struct p3_nal_ops p3_nal_myrinet_ops = {
    .size = sizeof(struct p3_nal_ops),
    .name = "myrinet",
    .iface = PTL_IFACE_MYRINET,
    .init = myri_init,
    .send = myri_send,
    .recv = myri_recv,
    .progress = myri_progress,
    .wakeup = myri_wakeup,
    .dist = myri_dist,
    .status = myri_status,
    .stop = myri_stop,
    .destroy = myri_destroy,
};
