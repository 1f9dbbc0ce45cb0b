/* SPDX-License-Identifier: BSD-3-Clause */
/* handle.c - LIB-side object tables: slot allocation and handle generations. */
#include "lib.h"

#include <stdlib.h>
#include <string.h>

int p3_objtab_init(struct p3_objtab *t, unsigned int type, unsigned int ni, unsigned int ni_gen,
		   size_t size, uint32_t max)
{
	uint32_t nchunks;

	memset(t, 0, sizeof(*t));
	if (max > P3_HANDLE_IDX_MAX + 1u)
		max = P3_HANDLE_IDX_MAX + 1u;
	nchunks = (max + P3_CHUNK_SIZE - 1) / P3_CHUNK_SIZE;
	t->ot_type = type;
	t->ot_ni = ni;
	t->ot_size = size;
	t->ot_max = max;
	/* Fresh slots of successive opens of the same NI slot start at
	 * different generations, so handles from before a PtlNIFini do not
	 * validate afterwards. */
	t->ot_gen_base = (ni_gen * 97u) & P3_HANDLE_GEN_MASK;
	if (!t->ot_gen_base)
		t->ot_gen_base = 1;
	t->ot_chunks = calloc(nchunks ? nchunks : 1, sizeof(void *));
	return t->ot_chunks ? 0 : -ENOMEM;
}

void p3_objtab_fini(struct p3_objtab *t)
{
	uint32_t nchunks = (t->ot_max + P3_CHUNK_SIZE - 1) / P3_CHUNK_SIZE;

	if (!t->ot_chunks)
		return;
	for (uint32_t i = 0; i < nchunks; i++)
		free(t->ot_chunks[i]);
	free(t->ot_chunks);
	t->ot_chunks = NULL;
}

static struct p3_obj *p3_obj_at(const struct p3_objtab *t, uint32_t idx)
{
	return (struct p3_obj *)((char *)t->ot_chunks[idx >> P3_CHUNK_SHIFT] +
				 (idx & (P3_CHUNK_SIZE - 1)) * t->ot_size);
}

/* A reserved slot is off the free list and not live: this in obj_next_free. */
#define P3_OBJ_RESERVED UINT32_MAX

/* The slot a reserved handle names, or NULL when it names none. */
static struct p3_obj *p3_obj_reserved_at(const struct p3_objtab *t, ptl_handle_any_t h)
{
	uint32_t idx = p3_handle_idx(h);
	if (p3_handle_type(h) != t->ot_type || p3_handle_ni(h) != t->ot_ni || idx >= t->ot_next_new)
		return NULL;
	struct p3_obj *o = p3_obj_at(t, idx);
	if (o->obj_handle || o->obj_next_free != P3_OBJ_RESERVED ||
	    o->obj_gen != p3_handle_gen(h))
		return NULL;
	return o;
}

/* A slot off the free list, or a fresh one: NULL when the table is full. */
static struct p3_obj *p3_obj_take_free(struct p3_objtab *t)
{
	struct p3_obj *o;
	uint32_t idx;

	if (t->ot_free) {
		idx = t->ot_free - 1;
		o = p3_obj_at(t, idx);
		t->ot_free = o->obj_next_free;
		return o;
	}
	if (t->ot_next_new >= t->ot_max)
		return NULL;
	idx = t->ot_next_new;
	if (!t->ot_chunks[idx >> P3_CHUNK_SHIFT]) {
		void *c = calloc(P3_CHUNK_SIZE, t->ot_size);
		if (!c)
			return NULL;
		t->ot_chunks[idx >> P3_CHUNK_SHIFT] = c;
	}
	t->ot_next_new++;
	o = p3_obj_at(t, idx);
	o->obj_gen = t->ot_gen_base;
	o->obj_idx = idx;
	return o;
}

void *p3_obj_alloc_locked(struct p3_objtab *t)
{
	struct p3_obj *o;

	if (t->ot_want) {
		o = p3_obj_reserved_at(t, t->ot_want);
		t->ot_want = 0;
		if (!o)
			return NULL;
		t->ot_reserved--;
	} else if (!(o = p3_obj_take_free(t))) {
		return NULL;
	}
	/* Zero the object but keep its generation. */
	uint32_t gen = o->obj_gen, idx = o->obj_idx;
	memset(o, 0, t->ot_size);
	o->obj_gen = gen;
	o->obj_idx = idx;
	o->obj_handle = p3_handle_make(t->ot_type, t->ot_ni, gen, idx);
	t->ot_inuse++;
	return o;
}

int p3_obj_reserve_locked(struct p3_objtab *t, ptl_handle_any_t *h)
{
	struct p3_obj *o = p3_obj_take_free(t);
	if (!o)
		return -1;
	o->obj_handle = 0;
	o->obj_next_free = P3_OBJ_RESERVED;
	t->ot_reserved++;
	*h = p3_handle_make(t->ot_type, t->ot_ni, o->obj_gen, o->obj_idx);
	return 0;
}

int p3_obj_unreserve_locked(struct p3_objtab *t, ptl_handle_any_t h)
{
	struct p3_obj *o = p3_obj_reserved_at(t, h);
	if (!o)
		return -1;
	t->ot_reserved--;
	/* A new generation, as after a free: the host may still name h. */
	o->obj_gen = (o->obj_gen + 1) & P3_HANDLE_GEN_MASK;
	if (o->obj_gen == 0)
		o->obj_gen = t->ot_gen_base;
	o->obj_next_free = t->ot_free;
	t->ot_free = o->obj_idx + 1;
	return 0;
}

void p3_obj_free_locked(struct p3_objtab *t, void *obj)
{
	struct p3_obj *o = obj;

	o->obj_handle = 0;
	/* Skip generation 0 so no handle of a live object ever has gen 0. */
	o->obj_gen = (o->obj_gen + 1) & P3_HANDLE_GEN_MASK;
	if (o->obj_gen == 0)
		o->obj_gen = t->ot_gen_base;
	o->obj_next_free = t->ot_free;
	t->ot_free = o->obj_idx + 1;
	t->ot_inuse--;
}

void p3_objtab_foreach(struct p3_objtab *t, void (*fn)(void *obj, void *arg), void *arg)
{
	for (uint32_t i = 0; i < t->ot_next_new; i++) {
		struct p3_obj *o = p3_obj_at(t, i);
		if (o->obj_handle)
			fn(o, arg);
	}
}
