/* SPDX-License-Identifier: BSD-3-Clause */
/* lib-match.c - walking a portal's match list (spec 4.2, 4.3). */
#include "lib.h"

/* 4.3: does md accept `rlength` bytes of operation `type`?  Sets offset and
 * mlength when it does. */
static inline int p3_md_accepts(const struct p3_md *md, const struct p3_hdr *hdr,
				uint64_t *offset, uint64_t *mlength)
{
	unsigned int opt = md->md_user.options;
	uint64_t off, space;

	switch (hdr->type) {
	case P3_MSG_PUT:
		if (!(opt & PTL_MD_OP_PUT))
			return 0;
		break;
	case P3_MSG_GET:
		if (!(opt & PTL_MD_OP_GET))
			return 0;
		break;
	default: /* GETPUT needs both */
		if ((opt & (PTL_MD_OP_PUT | PTL_MD_OP_GET)) != (PTL_MD_OP_PUT | PTL_MD_OP_GET))
			return 0;
		break;
	}
	off = (opt & PTL_MD_MANAGE_REMOTE) ? hdr->remote_offset : md->md_local_offset;
	if (off > md->md_length)
		return 0;
	space = md->md_length - off;
	if (hdr->rlength <= space)
		*mlength = hdr->rlength;
	else if (opt & PTL_MD_TRUNCATE)
		*mlength = space;
	else
		return 0;
	*offset = off;
	return 1;
}

struct p3_me *p3_match_locked(struct p3_lib *lib, const struct p3_hdr *hdr, uint64_t *offset,
			      uint64_t *mlength)
{
	struct p3_me *me;

	P3_ASSERT_LOCKED(lib);
	for (me = lib->lib_ptl[hdr->pt_index].pt_head; me; me = me->me_next) {
		/* 4.2 */
		if ((me->me_match_id.nid != PTL_NID_ANY && me->me_match_id.nid != hdr->src.nid) ||
		    (me->me_match_id.pid != PTL_PID_ANY && me->me_match_id.pid != hdr->src.pid) ||
		    ((me->me_mbits ^ hdr->match_bits) & ~me->me_ibits) != 0)
			continue;
		if (!me->me_md || !p3_md_active(me->me_md))
			continue;
		if (p3_md_accepts(me->me_md, hdr, offset, mlength))
			return me;
	}
	return NULL;
}
