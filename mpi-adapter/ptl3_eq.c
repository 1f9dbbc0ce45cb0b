/* SPDX-License-Identifier: BSD-3-Clause */
/* ptl3_eq.c - event queues.  An RDM endpoint over Portals has no connection
 * events, so the provider itself posts nothing: an EQ holds what the
 * application writes (fi_eq_write, attr flag FI_WRITE) and exists because
 * applications (fabtests among them) open and bind one for every endpoint.
 * Waiting: FI_WAIT_NONE, FI_WAIT_UNSPEC (a condition variable) and
 * FI_WAIT_FD (an eventfd readable while the queue is not empty;
 * fi_control(FI_GETWAIT) hands it out). */
#include "config.h"

#include <errno.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <time.h>
#include <unistd.h>

#include "ptl3.h"

struct ptl3_eq_ent {
	uint32_t event;
	int is_err;
	size_t len;
	void *data; /* len bytes; for an error entry a struct fi_eq_err_entry */
};

struct ptl3_eq {
	struct fid_eq eq_fid;
	pthread_mutex_t lock;
	pthread_cond_t cond;
	uint64_t flags;
	enum fi_wait_obj wait_obj;
	int efd; /* FI_WAIT_FD: readable while count > 0; else -1 */
	int ref; /* endpoints bound */
	struct ptl3_eq_ent *ring;
	size_t cap, head, count;
};

#define PTL3_EQ_DEFAULT_SIZE 256

static struct ptl3_eq *eq_of(struct fid_eq *f)
{
	return container_of(f, struct ptl3_eq, eq_fid);
}

/* keep the eventfd's readability equal to "not empty" */
static void eq_fd_update_locked(struct ptl3_eq *eq)
{
	if (eq->efd < 0)
		return;
	uint64_t v;
	if (eq->count) {
		v = 1;
		/* a second write only raises the counter: still readable */
		if (write(eq->efd, &v, sizeof(v)) < 0 && errno != EAGAIN)
			PTL3_WARN(FI_LOG_EQ, "eq: eventfd write: %s\n", strerror(errno));
	} else {
		while (read(eq->efd, &v, sizeof(v)) == (ssize_t)sizeof(v))
			;
	}
}

static ssize_t eq_push_locked(struct ptl3_eq *eq, uint32_t event, const void *buf, size_t len,
                              int is_err)
{
	if (eq->count == eq->cap)
		return -FI_EAGAIN;
	void *copy = malloc(len ? len : 1);
	if (!copy)
		return -FI_ENOMEM;
	if (len)
		memcpy(copy, buf, len);
	struct ptl3_eq_ent *e = &eq->ring[(eq->head + eq->count) % eq->cap];
	e->event = event;
	e->is_err = is_err;
	e->len = len;
	e->data = copy;
	eq->count++;
	if (eq->count == 1)
		eq_fd_update_locked(eq);
	pthread_cond_broadcast(&eq->cond);
	return (ssize_t)len;
}

static void eq_pop_locked(struct ptl3_eq *eq)
{
	free(eq->ring[eq->head].data);
	eq->head = (eq->head + 1) % eq->cap;
	eq->count--;
	if (!eq->count)
		eq_fd_update_locked(eq);
}

static ssize_t eq_read_locked(struct ptl3_eq *eq, uint32_t *event, void *buf, size_t len,
                              uint64_t flags)
{
	if (!eq->count)
		return -FI_EAGAIN;
	struct ptl3_eq_ent *e = &eq->ring[eq->head];
	if (e->is_err)
		return -FI_EAVAIL;
	if (e->len > len || (e->len && !buf))
		return -FI_ETOOSMALL;
	if (event)
		*event = e->event;
	if (e->len)
		memcpy(buf, e->data, e->len);
	ssize_t n = (ssize_t)e->len;
	if (!(flags & FI_PEEK))
		eq_pop_locked(eq);
	return n;
}

static ssize_t eq_read(struct fid_eq *feq, uint32_t *event, void *buf, size_t len, uint64_t flags)
{
	if (!feq)
		return -FI_EINVAL;
	struct ptl3_eq *eq = eq_of(feq);
	pthread_mutex_lock(&eq->lock);
	ssize_t r = eq_read_locked(eq, event, buf, len, flags);
	pthread_mutex_unlock(&eq->lock);
	return r;
}

static ssize_t eq_readerr(struct fid_eq *feq, struct fi_eq_err_entry *buf, uint64_t flags)
{
	if (!feq || !buf)
		return -FI_EINVAL;
	struct ptl3_eq *eq = eq_of(feq);
	ssize_t r = -FI_EAGAIN;
	pthread_mutex_lock(&eq->lock);
	if (eq->count && eq->ring[eq->head].is_err) {
		/* the application's err_data buffer is kept: we have none */
		void *err_data = buf->err_data;
		memcpy(buf, eq->ring[eq->head].data, sizeof(*buf));
		buf->err_data = err_data;
		buf->err_data_size = 0;
		r = (ssize_t)sizeof(*buf);
		if (!(flags & FI_PEEK))
			eq_pop_locked(eq);
	}
	pthread_mutex_unlock(&eq->lock);
	return r;
}

static ssize_t eq_write(struct fid_eq *feq, uint32_t event, const void *buf, size_t len,
                        uint64_t flags)
{
	if (!feq || (len && !buf))
		return -FI_EINVAL;
	struct ptl3_eq *eq = eq_of(feq);
	/* fi_eq(3): writing needs an EQ opened with FI_WRITE */
	if (!(eq->flags & FI_WRITE))
		return -FI_EINVAL;
	pthread_mutex_lock(&eq->lock);
	ssize_t r = eq_push_locked(eq, event, buf, len, 0);
	pthread_mutex_unlock(&eq->lock);
	return r;
}

static ssize_t eq_sread(struct fid_eq *feq, uint32_t *event, void *buf, size_t len, int timeout,
                        uint64_t flags)
{
	if (!feq)
		return -FI_EINVAL;
	struct ptl3_eq *eq = eq_of(feq);
	if (eq->wait_obj == FI_WAIT_NONE)
		return -FI_EINVAL;
	struct timespec end;
	clock_gettime(CLOCK_MONOTONIC, &end);
	if (timeout >= 0) {
		end.tv_sec += timeout / 1000;
		end.tv_nsec += (long)(timeout % 1000) * 1000000L;
		if (end.tv_nsec >= 1000000000L) {
			end.tv_sec++;
			end.tv_nsec -= 1000000000L;
		}
	}
	pthread_mutex_lock(&eq->lock);
	ssize_t r;
	for (;;) {
		r = eq_read_locked(eq, event, buf, len, flags);
		if (r != -FI_EAGAIN)
			break;
		if (timeout < 0) {
			pthread_cond_wait(&eq->cond, &eq->lock);
		} else if (pthread_cond_timedwait(&eq->cond, &eq->lock, &end) == ETIMEDOUT) {
			r = eq_read_locked(eq, event, buf, len, flags);
			break;
		}
	}
	pthread_mutex_unlock(&eq->lock);
	return r;
}

static const char *eq_strerror(struct fid_eq *eq, int prov_errno, const void *err_data, char *buf,
                               size_t len)
{
	return ptl3_prov_strerror(prov_errno, buf, len);
}

static struct fi_ops_eq eq_ops = {
    .size = sizeof(struct fi_ops_eq),
    .read = eq_read,
    .readerr = eq_readerr,
    .write = eq_write,
    .sread = eq_sread,
    .strerror = eq_strerror,
};

static int eq_close(struct fid *fid)
{
	struct ptl3_eq *eq = container_of(fid, struct ptl3_eq, eq_fid.fid);
	if (eq->ref)
		return -FI_EBUSY;
	while (eq->count)
		eq_pop_locked(eq);
	if (eq->efd >= 0)
		close(eq->efd);
	pthread_cond_destroy(&eq->cond);
	pthread_mutex_destroy(&eq->lock);
	free(eq->ring);
	free(eq);
	return 0;
}

static int eq_control(struct fid *fid, int command, void *arg)
{
	struct ptl3_eq *eq = container_of(fid, struct ptl3_eq, eq_fid.fid);
	if (command != FI_GETWAIT)
		return -FI_ENOSYS;
	if (!arg)
		return -FI_EINVAL;
	if (eq->efd < 0)
		return -FI_ENODATA;
	*(int *)arg = eq->efd;
	return 0;
}

static struct fi_ops eq_fi_ops = {
    .size = sizeof(struct fi_ops),
    .close = eq_close,
    .bind = ptl3_no_bind,
    .control = eq_control,
    .ops_open = ptl3_no_ops_open,
    .tostr = ptl3_no_tostr,
    .ops_set = ptl3_no_ops_set,
};

int ptl3_eq_open(struct fid_fabric *fabric, struct fi_eq_attr *attr, struct fid_eq **feq,
                 void *context)
{
	if (!fabric || !attr || !feq)
		return -FI_EINVAL;
	if (attr->wait_obj != FI_WAIT_NONE && attr->wait_obj != FI_WAIT_UNSPEC &&
	    attr->wait_obj != FI_WAIT_FD)
		return -FI_ENOSYS;
	if (attr->flags & ~(uint64_t)FI_WRITE)
		return -FI_EBADFLAGS;
	struct ptl3_eq *eq = calloc(1, sizeof(*eq));
	if (!eq)
		return -FI_ENOMEM;
	eq->cap = attr->size ? attr->size : PTL3_EQ_DEFAULT_SIZE;
	eq->ring = calloc(eq->cap, sizeof(*eq->ring));
	eq->efd = -1;
	if (eq->ring && attr->wait_obj == FI_WAIT_FD)
		eq->efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	if (!eq->ring || (attr->wait_obj == FI_WAIT_FD && eq->efd < 0)) {
		free(eq->ring);
		free(eq);
		return -FI_ENOMEM;
	}
	pthread_mutex_init(&eq->lock, NULL);
	pthread_condattr_t ca;
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&eq->cond, &ca);
	pthread_condattr_destroy(&ca);
	eq->flags = attr->flags;
	eq->wait_obj = attr->wait_obj;
	eq->eq_fid.fid.fclass = FI_CLASS_EQ;
	eq->eq_fid.fid.context = context;
	eq->eq_fid.fid.ops = &eq_fi_ops;
	eq->eq_fid.ops = &eq_ops;
	*feq = &eq->eq_fid;
	return 0;
}

/* an endpoint or AV binds the EQ: it may not close before they do */
void ptl3_eq_ref(struct fid_eq *feq, int delta)
{
	struct ptl3_eq *eq = eq_of(feq);
	pthread_mutex_lock(&eq->lock);
	eq->ref += delta;
	pthread_mutex_unlock(&eq->lock);
}

/* fi_trywait on an EQ: -FI_EAGAIN while it holds entries */
int ptl3_eq_trywait(struct fid_eq *feq)
{
	struct ptl3_eq *eq = eq_of(feq);
	pthread_mutex_lock(&eq->lock);
	int r = eq->count ? -FI_EAGAIN : 0;
	pthread_mutex_unlock(&eq->lock);
	return r;
}
