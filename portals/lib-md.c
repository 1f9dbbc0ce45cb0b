/* SPDX-License-Identifier: BSD-3-Clause */
/* lib-md.c - memory descriptors: creation, attach/bind, unlink (explicit and
 * automatic), PtlMDUpdate, and copies to and from an MD's bytes. */
#include "lib.h"

#include <stdlib.h>
#include <string.h>

#define P3_MD_OPTIONS_ALL                                                                          \
	(PTL_MD_OP_PUT | PTL_MD_OP_GET | PTL_MD_MANAGE_REMOTE | PTL_MD_TRUNCATE |                  \
	 PTL_MD_ACK_DISABLE | PTL_MD_IOVEC | PTL_MD_MAX_SIZE | PTL_MD_EVENT_START_DISABLE |        \
	 PTL_MD_EVENT_END_DISABLE | PTL_MD_EVENT_UNLINK_DISABLE | PTL_MD_EVENT_SUCCESS_DISABLE)

int p3_md_validate_locked(struct p3_lib *lib, const ptl_md_t *umd, struct p3_eq **eq)
{
	*eq = NULL;
	if (umd->options & ~P3_MD_OPTIONS_ALL)
		return PTL_MD_ILLEGAL;
	if (umd->threshold < PTL_MD_THRESH_INF)
		return PTL_MD_ILLEGAL;
	if (umd->options & PTL_MD_IOVEC) {
		if (umd->length > (ptl_size_t)lib->lib_limits.max_md_iovecs)
			return PTL_MD_ILLEGAL;
		if (umd->length && !umd->start)
			return PTL_MD_ILLEGAL;
	} else if (umd->length && !umd->start) {
		return PTL_MD_ILLEGAL;
	}
	if (umd->eq_handle != PTL_EQ_NONE) {
		*eq = p3_obj_lookup_locked(&lib->lib_eqs, umd->eq_handle);
		if (!*eq) {
			/* An EQ of another NI is an illegal MD; a dead one is
			 * simply an invalid EQ. */
			if (p3_handle_type(umd->eq_handle) == P3_HT_EQ &&
			    p3_handle_ni(umd->eq_handle) != lib->lib_ni)
				return PTL_MD_ILLEGAL;
			return PTL_EQ_INVALID;
		}
	}
	return PTL_OK;
}

/* Fill md from umd (validated).  May fail only on memory for iovec copies;
 * md is unchanged on failure. */
int p3_md_setup_locked(struct p3_lib *lib, struct p3_md *md, const ptl_md_t *umd,
		       struct p3_eq *eq)
{
	struct iovec *iov = &md->md_iov1, one = {NULL, 0};
	size_t niov = 1;
	uint64_t total = 0;

	(void)lib;
	if (umd->options & PTL_MD_IOVEC) {
		const ptl_md_iovec_t *uiov = umd->start;
		niov = (size_t)umd->length;
		iov = malloc((niov ? niov : 1) * sizeof(*iov));
		if (!iov)
			return PTL_NO_SPACE;
		for (size_t i = 0; i < niov; i++) {
			iov[i].iov_base = uiov[i].iov_base;
			iov[i].iov_len = (size_t)uiov[i].iov_len;
			total += uiov[i].iov_len;
		}
	} else {
		one.iov_base = umd->start;
		one.iov_len = (size_t)umd->length;
		total = umd->length;
	}
	if (md->md_iov && md->md_iov != &md->md_iov1)
		free(md->md_iov);
	if (iov == &md->md_iov1)
		md->md_iov1 = one;
	md->md_iov = iov;
	md->md_niov = niov;
	md->md_length = total;
	md->md_local_offset = 0;
	md->md_user = *umd;
	md->md_eq = eq;
	md->md_maxed = 0;
	md->md_armed = 0;
	/* MAX_SIZE: an MD already too small for max_size starts inactive. */
	if ((umd->options & PTL_MD_MAX_SIZE) && total < umd->max_size)
		md->md_maxed = 1;
	return PTL_OK;
}

struct p3_md *p3_md_create_locked(struct p3_lib *lib, const ptl_md_t *umd, ptl_unlink_t unlink,
				  int *rc)
{
	struct p3_eq *eq;

	*rc = p3_md_validate_locked(lib, umd, &eq);
	if (*rc != PTL_OK)
		return NULL;
	return p3_md_create_valid_locked(lib, umd, eq, unlink, rc);
}

struct p3_md *p3_md_create_valid_locked(struct p3_lib *lib, const ptl_md_t *umd,
					struct p3_eq *eq, ptl_unlink_t unlink, int *rc)
{
	struct p3_md *md = p3_obj_alloc_locked(&lib->lib_mds);

	if (!md) {
		*rc = PTL_NO_SPACE;
		return NULL;
	}
	*rc = p3_md_setup_locked(lib, md, umd, eq);
	if (*rc != PTL_OK) {
		p3_obj_free_locked(&lib->lib_mds, md);
		return NULL;
	}
	md->md_unlink = unlink;
	return md;
}

void p3_md_destroy_locked(struct p3_lib *lib, struct p3_md *md)
{
	struct p3_me *me = md->md_me;

	P3_ASSERT_LOCKED(lib);
	if (md->md_iov != &md->md_iov1)
		free(md->md_iov);
	md->md_iov = NULL;
	md->md_me = NULL;
	p3_obj_free_locked(&lib->lib_mds, md);
	if (me) {
		me->me_md = NULL;
		/* An ME created with PTL_UNLINK goes with its MD. */
		if (me->me_unlink == PTL_UNLINK)
			p3_me_destroy_locked(lib, me);
	}
}

void p3_md_maybe_unlink_locked(struct p3_lib *lib, struct p3_md *md, uint32_t link,
			       struct p3_defer *d)
{
	struct p3_evinfo ei;

	if (md->md_pending || !md->md_armed || md->md_unlink != PTL_UNLINK)
		return;
	if (md->md_user.options & PTL_MD_EVENT_UNLINK_DISABLE) {
		p3_md_destroy_locked(lib, md);
		return;
	}
	memset(&ei, 0, sizeof(ei));
	ei.ei_initiator = lib->lib_id;
	ei.ei_uid = lib->lib_uid;
	ei.ei_jid = lib->lib_jid;
	ei.ei_link = link; /* the event that caused it */
	if (md->md_me)
		ei.ei_pt = md->md_me->me_pt;
	p3_eq_post_locked(lib, md, PTL_EVENT_UNLINK, &ei, PTL_NI_OK, d);
	P3_DBG(lib, PTL_DBG_MD, "MD %#x auto-unlinked", (unsigned)md->md_obj.obj_handle);
	p3_md_destroy_locked(lib, md);
}

int p3_lib_md_attach(struct p3_lib *lib, ptl_handle_me_t meh, const ptl_md_t *umd,
		     ptl_unlink_t unlink, ptl_handle_md_t *out)
{
	struct p3_me *me = NULL;
	struct p3_md *md;
	int rc;

	p3_lib_lock(lib);
	if (meh != PTL_INVALID_HANDLE) {
		me = p3_obj_lookup_locked(&lib->lib_mes, meh);
		if (!me) {
			rc = PTL_ME_INVALID;
			goto out;
		}
		if (me->me_md) {
			rc = PTL_ME_IN_USE;
			goto out;
		}
	}
	md = p3_md_create_locked(lib, umd, unlink, &rc);
	if (!md)
		goto out;
	if (me) {
		md->md_me = me;
		me->me_md = md;
	}
	*out = md->md_obj.obj_handle;
	P3_DBG(lib, PTL_DBG_MD, "MD %#x %s, %llu bytes, threshold %d, options %#x",
	       (unsigned)*out, me ? "attached" : "bound", (unsigned long long)md->md_length,
	       umd->threshold, umd->options);
out:
	p3_lib_unlock(lib);
	return rc;
}

int p3_lib_md_unlink(struct p3_lib *lib, ptl_handle_md_t mdh)
{
	struct p3_md *md;
	int rc = PTL_OK;

	p3_lib_lock(lib);
	md = p3_obj_lookup_locked(&lib->lib_mds, mdh);
	if (!md)
		rc = PTL_MD_INVALID;
	else if (md->md_pending)
		rc = PTL_MD_IN_USE;
	else
		p3_md_destroy_locked(lib, md); /* explicit: no UNLINK event */
	p3_lib_unlock(lib);
	return rc;
}

int p3_lib_md_update(struct p3_lib *lib, ptl_handle_md_t mdh, ptl_md_t *old_md,
		     const ptl_md_t *new_md, ptl_handle_eq_t test_eq)
{
	struct p3_eq *teq = NULL, *neq;
	struct p3_md *md;
	int rc = PTL_OK;

	p3_lib_lock(lib);
	md = p3_obj_lookup_locked(&lib->lib_mds, mdh);
	if (!md) {
		rc = PTL_MD_INVALID;
		goto out;
	}
	if (test_eq != PTL_EQ_NONE) {
		teq = p3_obj_lookup_locked(&lib->lib_eqs, test_eq);
		if (!teq) {
			rc = PTL_EQ_INVALID;
			goto out;
		}
	}
	/* DECISION (portals3.h): old_md is filled even on PTL_MD_NO_UPDATE. */
	if (old_md)
		*old_md = md->md_user;
	if (!new_md)
		goto out;
	/* 4.9: the test and the replacement happen under the lock matching
	 * uses.  Pending operations make the EQ "non-empty"; they also make any
	 * replacement unsafe (a NAL may be writing into the old buffer), so an
	 * MD with operations in flight is never updated. */
	if (md->md_pending || (teq && !p3_eq_is_empty_locked(lib, teq))) {
		rc = PTL_MD_NO_UPDATE;
		goto out;
	}
	rc = p3_md_validate_locked(lib, new_md, &neq);
	if (rc != PTL_OK)
		goto out;
	rc = p3_md_setup_locked(lib, md, new_md, neq);
	P3_DBG(lib, PTL_DBG_MD, "MD %#x updated: threshold %d options %#x rc %d", (unsigned)mdh,
	       new_md->threshold, new_md->options, rc);
out:
	p3_lib_unlock(lib);
	return rc;
}

void p3_iov_copy_out(const struct iovec *iov, size_t niov, uint64_t off, void *dst,
		     uint64_t len)
{
	char *d = dst;

	for (size_t i = 0; i < niov && len; i++) {
		if (off >= iov[i].iov_len) {
			off -= iov[i].iov_len;
			continue;
		}
		uint64_t n = iov[i].iov_len - off;
		if (n > len)
			n = len;
		memcpy(d, (char *)iov[i].iov_base + off, n);
		d += n;
		len -= n;
		off = 0;
	}
}

void p3_iov_copy_in(const struct iovec *iov, size_t niov, uint64_t off, const void *src,
		    uint64_t len)
{
	const char *s = src;

	for (size_t i = 0; i < niov && len; i++) {
		if (off >= iov[i].iov_len) {
			off -= iov[i].iov_len;
			continue;
		}
		uint64_t n = iov[i].iov_len - off;
		if (n > len)
			n = len;
		memcpy((char *)iov[i].iov_base + off, s, n);
		s += n;
		len -= n;
		off = 0;
	}
}
