/* SPDX-License-Identifier: BSD-3-Clause */
/* ptl3_av.c - address vectors: FI_AV_TABLE (also answers for FI_AV_MAP). */
#include "config.h"

#include <stdlib.h>
#include <string.h>

#include "ptl3.h"

static int av_insert(struct fid_av *fav, const void *addr, size_t count, fi_addr_t *fi_addr,
		     uint64_t flags, void *context)
{
	if (!fav || (count && !addr))
		return -FI_EINVAL;
	struct ptl3_av *av = container_of(fav, struct ptl3_av, av_fid);
	const struct ptl3_addr *in = addr;
	int ok = 0;
	if (flags)
		return -FI_EBADFLAGS;
	if (!count)
		return 0;
	ptl3_lock(av->dom);
	if (av->count + count > av->cap) {
		size_t ncap = av->cap ? av->cap : 64;
		while (ncap < av->count + count)
			ncap *= 2;
		struct ptl3_addr *t = realloc(av->tab, ncap * sizeof(*t));
		if (!t) {
			ptl3_unlock(av->dom);
			return -FI_ENOMEM;
		}
		av->tab = t;
		av->cap = ncap;
	}
	for (size_t i = 0; i < count; i++) {
		if (in[i].magic != PTL3_ADDR_MAGIC || in[i].version != PTL3_ADDR_VERSION) {
			PTL3_WARN(FI_LOG_AV, "av_insert: entry %zu is not a ptl3 address\n", i);
			if (fi_addr)
				fi_addr[i] = FI_ADDR_NOTAVAIL;
			continue;
		}
		av->tab[av->count] = in[i];
		if (fi_addr)
			fi_addr[i] = av->count;
		av->count++;
		ok++;
	}
	ptl3_unlock(av->dom);
	return ok;
}

/* node and service as fi_getinfo reads them (ptl3_addr.c) */
static int av_insertsvc(struct fid_av *av, const char *node, const char *service,
			fi_addr_t *fi_addr, uint64_t flags, void *context)
{
	if (!av || !node)
		return -FI_EINVAL;
	struct ptl3_addr a;
	if (ptl3_addr_resolve(node, service, &a) || a.pid == (uint32_t)PTL_PID_ANY) {
		if (fi_addr)
			*fi_addr = FI_ADDR_NOTAVAIL;
		return 0;
	}
	return av_insert(av, &a, 1, fi_addr, flags, context);
}

static int av_insertsym(struct fid_av *av, const char *node, size_t nodecnt, const char *service,
			size_t svccnt, fi_addr_t *fi_addr, uint64_t flags, void *context)
{
	return -FI_ENOSYS;
}

static int av_remove(struct fid_av *fav, fi_addr_t *fi_addr, size_t count, uint64_t flags)
{
	if (!fav || (count && !fi_addr))
		return -FI_EINVAL;
	if (flags)
		return -FI_EBADFLAGS;
	struct ptl3_av *av = container_of(fav, struct ptl3_av, av_fid);
	ptl3_lock(av->dom);
	for (size_t i = 0; i < count; i++)
		if (fi_addr[i] < av->count)
			av->tab[fi_addr[i]].magic = 0;
	ptl3_unlock(av->dom);
	return 0;
}

static int av_lookup(struct fid_av *fav, fi_addr_t fi_addr, void *addr, size_t *addrlen)
{
	if (!fav || !addrlen || (*addrlen && !addr))
		return -FI_EINVAL;
	struct ptl3_av *av = container_of(fav, struct ptl3_av, av_fid);
	int rc = 0;
	ptl3_lock(av->dom);
	if (fi_addr >= av->count) {
		rc = -FI_EINVAL;
	} else {
		size_t n = *addrlen < sizeof(struct ptl3_addr) ? *addrlen : sizeof(struct ptl3_addr);
		memcpy(addr, &av->tab[fi_addr], n);
		*addrlen = sizeof(struct ptl3_addr);
	}
	ptl3_unlock(av->dom);
	return rc;
}

static const char *av_straddr(struct fid_av *av, const void *addr, char *buf, size_t *len)
{
	if (!len)
		return NULL;
	if (!ptl3_addr_valid(addr, sizeof(struct ptl3_addr))) {
		if (buf && *len)
			snprintf(buf, *len, "(not a ptl3 address)");
		*len = sizeof("(not a ptl3 address)");
		return buf;
	}
	size_t n = ptl3_addr_print(addr, buf, buf ? *len : 0);
	*len = n + 1;
	return buf;
}

static int av_no_set(struct fid_av *av, struct fi_av_set_attr *attr, struct fid_av_set **av_set,
		     void *context)
{
	return -FI_ENOSYS;
}

static struct fi_ops_av av_ops = {
	.size = sizeof(struct fi_ops_av),
	.insert = av_insert,
	.insertsvc = av_insertsvc,
	.insertsym = av_insertsym,
	.remove = av_remove,
	.lookup = av_lookup,
	.straddr = av_straddr,
	.av_set = av_no_set,
};

static int av_close(struct fid *fid)
{
	struct ptl3_av *av = container_of(fid, struct ptl3_av, av_fid.fid);
	if (av->ref)
		return -FI_EBUSY;
	ptl3_lock(av->dom);
	av->dom->ref--;
	ptl3_unlock(av->dom);
	free(av->tab);
	free(av);
	return 0;
}

static struct fi_ops av_fi_ops = {
	.size = sizeof(struct fi_ops),
	.close = av_close,
	.bind = ptl3_no_bind,
	.control = ptl3_no_control,
	.ops_open = ptl3_no_ops_open,
	.tostr = ptl3_no_tostr,
	.ops_set = ptl3_no_ops_set,
};

int ptl3_av_open(struct fid_domain *domain, struct fi_av_attr *attr, struct fid_av **fav,
		 void *context)
{
	struct ptl3_domain *dom = container_of(domain, struct ptl3_domain, domain_fid);
	if (attr) {
		/* a named (shared) AV would let ranks skip the address exchange: refuse */
		if (attr->name)
			return -FI_ENOSYS;
		if (attr->type != FI_AV_UNSPEC && attr->type != FI_AV_TABLE &&
		    attr->type != FI_AV_MAP)
			return -FI_EINVAL;
		if (attr->flags & (FI_EVENT | FI_READ | FI_SYMMETRIC))
			return -FI_ENOSYS;
	}
	struct ptl3_av *av = calloc(1, sizeof(*av));
	if (!av)
		return -FI_ENOMEM;
	av->dom = dom;
	av->av_fid.fid.fclass = FI_CLASS_AV;
	av->av_fid.fid.context = context;
	av->av_fid.fid.ops = &av_fi_ops;
	av->av_fid.ops = &av_ops;
	ptl3_lock(dom);
	dom->ref++;
	ptl3_unlock(dom);
	*fav = &av->av_fid;
	return 0;
}
