/*
 * attr_dense.c - where an attribute change goes in a version 2 header
 * (IV.A.1.b's attribute phase change values) and in dense storage (a
 * fractal heap and its name index named by the Attribute Info message,
 * IV.A.2.v): a change into a dense store written anew and switched to in
 * one commit, the move of every compact attribute there when a header is
 * at its compact limit, and back into the header below the minimum, as
 * libhdf5 does. attr_write.c decides which; its batches use these too.
 */
#include "base.h"
#include "rd.h"
#include "file.h"
#include "ohdr.h"
#include "attr.h"
#include "ohdr_edit.h"
#include "dense_write.h"
#include "dense.h"
#include "attr_write_int.h"

#define MAX_COMPACT_DEFAULT 8   /* libhdf5's H5O_CRT_ATTR_MAX_COMPACT_DEF */
#define MIN_DENSE_DEFAULT 6     /* H5O_CRT_ATTR_MIN_DENSE_DEF */

/* v2 headers: how many compact attributes libhdf5 keeps before it moves
 * them to dense storage (IV.A.1.b, "attribute phase change values"). */
unsigned h5_attr_max_compact(const h5_ohdr *oh)
{
	const uint8_t *b = oh->chunks[0].buf;

	if (oh->version == 1)
		return UINT32_MAX;
	if (!(oh->flags & 0x10))
		return MAX_COMPACT_DEFAULT;
	return (unsigned)h5_le_decode(b + 6 + (oh->has_times ? 16 : 0), 2);
}


/* ch's attribute into the dense set s: a new value of the one at `at`, or
 * (at SIZE_MAX, or a typed or fixed-string replacement, which keeps its place) a new
 * one, with the next creation order when the object tracks it (*max_crt
 * moves). */
int h5_attr_dense_put(h5_dense_set *s, size_t at, int64_t *max_crt, h5_file *f, const h5_ohdr *oh,
		      const found *fd, const h5_attr_change *ch)
{
	bool keep = at != SIZE_MAX && !ch->typestr && !ch->fstr && !ch->rdt;
	uint64_t crt = at != SIZE_MAX ? s->o[at].corder : 0;
	uint8_t *msg = NULL;
	size_t mlen = 0;
	int rc = 0;

	if (at != SIZE_MAX && (s->o[at].flags & H5_MSG_FLAG_SHARED))
		rc = h5_err_set(H5_ERR_UNSUPPORTED, "attribute \"%.*s\" is a shared message", (int)ch->name_len,
				ch->name);
	if (rc == 0)
		rc = h5_attr_build(&msg, &mlen, f, oh, keep ? s->o[at].msg : NULL, keep ? s->o[at].len : 0, ch);
	if (rc == 0 && at == SIZE_MAX && (fd->ainfo_flags & AINFO_TRACK_CORDER)) {
		if (*max_crt == UINT16_MAX)
			rc = h5_err_set(H5_ERR_LIMIT, "object 0x%llx: creation order exhausted", (unsigned long long)oh->addr);
		crt = (uint64_t)(*max_crt)++;
	}
	if (rc == 0)
		rc = h5_dense_set_put(s, at, msg, mlen, ch->name, ch->name_len, crt, at != SIZE_MAX ? s->o[at].flags : 0);
	free(msg);
	return rc;
}

/* v2 headers: below how many attributes libhdf5 moves dense ones back into
 * the header (IV.A.1.b, "attribute phase change values"). */
static unsigned min_dense(const h5_ohdr *oh)
{
	const uint8_t *b = oh->chunks[0].buf;

	if (!(oh->flags & 0x10))
		return MIN_DENSE_DEFAULT;
	return (unsigned)h5_le_decode(b + 8 + (oh->has_times ? 16 : 0), 2);
}

/* Attributes in dense storage: the set loaded, changed, written anew and
 * the Attribute Info message switched to it (dense_write.h), one commit;
 * a removal below the minimum moves them back into the header. */
int h5_attr_apply_dense(h5_ohdr_change *c, h5_file *f, const found *fd, const h5_attr_change *ch)
{
	h5_dense_set s = { 0 };
	int64_t max_crt = fd->max_crt;
	uint64_t coll = H5_ADDR_UNDEF;  /* the old value's own collection */
	bool moved = false;
	size_t at;
	int rc = h5_dense_set_load(&s, f, H5_DENSE_ATTRS, fd->fheap, fd->name_bt2, fd->corder_bt2);

	if (rc < 0)
		goto out;
	at = h5_dense_set_find(&s, ch->name, ch->name_len);
	if (at != SIZE_MAX && s.o[at].msg)
		coll = h5_attr_owned_coll(f, s.o[at].msg, s.o[at].len);
	if (ch->val) {
		rc = h5_attr_dense_put(&s, at, &max_crt, f, c->e.oh, fd, ch);
	} else if (at == SIZE_MAX) {
		rc = h5_err_set(H5_ERR_NOTFOUND, "no attribute \"%.*s\"", (int)ch->name_len, ch->name);
	} else {
		h5_dense_set_del(&s, at);
		if (s.n < min_dense(c->e.oh))
			rc = h5_dense_set_to_header(&moved, c, f, &s, fd->ainfo, max_crt);
	}
	if (rc == 0 && !moved)
		rc = h5_dense_set_switch(c, f, &s, fd->ainfo, max_crt);
	if (rc == 0)
		rc = h5_ohdr_commit_cow(c, f, false);
	if (rc == 0) {
		h5_dense_set_old_free(&s, f, c->ticket);        /* the old store */
		h5_attr_coll_free(f, coll, c->ticket);
		if (!moved)
			h5_ohdr_note(f, H5_NOTE_ATTRS, c->e.oh->addr);
	}
out:
	h5_dense_set_free(&s);
	return rc;
}

/* A new Attribute Info message's body (IV.A.2.v): version 0, flags, the
 * maximum creation order 0 when tracked, every address undefined; its
 * length. */
#define AINFO_MAX (2 + 2 + 3 * 8)
#define AINFO_MSG_FLAGS 0x04    /* libhdf5's "don't share" */

static size_t ainfo_body(uint8_t *b, uint8_t flags, const h5_fmt *fmt)
{
	size_t n = 2;

	b[0] = 0;
	b[1] = flags;
	if (flags & AINFO_TRACK_CORDER) {
		h5_le_encode(b + n, 0, 2);
		n += 2;
	}
	for (int i = 0; i < ((flags & AINFO_INDEX_CORDER) ? 3 : 2); i++, n += fmt->sizeof_addr)
		h5_le_encode(b + n, H5_ADDR_UNDEF, fmt->sizeof_addr);
	return n;
}

/* The set written, and an Attribute Info message naming it added (a header
 * that has none, as netCDF-4 makes some, as libhdf5 adds one; IV.A.2.v:
 * version 0, no creation order, the heap and the name index). */
static int ainfo_put_new(h5_ohdr_change *c, h5_file *f, const h5_dense_set *s, int64_t max_crt)
{
	uint64_t fheap, name_bt2, corder_bt2;
	uint8_t body[AINFO_MAX];
	size_t blen = ainfo_body(body, 0, &f->fmt);
	int rc = h5_dense_set_write(&fheap, &name_bt2, &corder_bt2, f, s);

	if (rc == 0)
		rc = h5_dense_info_update(body, blen, H5_DENSE_ATTRS, &f->fmt, fheap, name_bt2, corder_bt2, max_crt);
	if (rc == 0)
		rc = h5_ohdr_put(c, f, SIZE_MAX, H5_MSG_AINFO, AINFO_MSG_FLAGS, 0, body, blen);
	return rc;
}

/* A v2 header at its compact limit gets one more attribute: as libhdf5
 * (H5O__attr_create, H5A__dense_create), its attributes move to new dense
 * storage holding the new one too; every Attribute message goes and the
 * Attribute Info message names the new storage, in one commit that copies
 * the header's continuation chunks (h5_ohdr_commit_cow). */
int h5_attr_to_dense(h5_ohdr_change *c, h5_file *f, const found *fd, const h5_attr_change *ch)
{
	const h5_ohdr *oh = c->e.oh;
	h5_dense_set s;
	int64_t max_crt = fd->max_crt;
	int rc = 0;

	h5_dense_set_init(&s, H5_DENSE_ATTRS, (fd->ainfo_flags & AINFO_INDEX_CORDER) != 0);
	for (size_t i = 0; rc == 0 && i < oh->nmsgs; i++) {
		const h5_msg *m = &oh->msgs[i];
		h5_attr_hdr h;

		if (m->type != H5_MSG_ATTR)
			continue;
		if (m->flags & H5_MSG_FLAG_SHARED)
			rc = h5_err_set(H5_ERR_UNSUPPORTED, "object 0x%llx: a shared attribute cannot move to dense "
					"storage here", (unsigned long long)oh->addr);
		if (rc == 0)
			rc = h5_attr_hdr_decode(&h, m->data, m->size);
		if (rc == 0)
			rc = h5_dense_set_put(&s, SIZE_MAX, m->data, m->size, (const char *)h.name,
					      h.name_size ? h.name_size - 1 : 0, m->crt_order, 0);
	}
	if (rc == 0)
		rc = h5_attr_dense_put(&s, SIZE_MAX, &max_crt, f, oh, fd, ch);
	if (rc == 0 && fd->ainfo != SIZE_MAX)
		rc = h5_dense_set_switch(c, f, &s, fd->ainfo, max_crt);
	else if (rc == 0)
		rc = ainfo_put_new(c, f, &s, max_crt);
	/* then every Attribute message goes (after the put, which takes free
	 * space as the header shows it now) */
	for (size_t i = 0; rc == 0 && i < oh->nmsgs; i++)
		if (oh->msgs[i].type == H5_MSG_ATTR)
			rc = h5_ohdr_nil(c, i);
	if (rc == 0)
		rc = h5_ohdr_commit_cow(c, f, false);
	if (rc == 0)
		h5_ohdr_note(f, H5_NOTE_ATTRS, oh->addr);
	h5_dense_set_free(&s);
	return rc;
}

/* A v2 header's first attribute: as libhdf5 (H5O__attr_create's
 * "new_ainfo"), an Attribute Info message comes first, tracking and
 * indexing creation order as the header's flags say (IV.A.1.b bits 2 and
 * 3), no attributes counted yet. A commit of its own: a crash after it
 * leaves a header libhdf5 reads as having no attributes, as before. */
int h5_attr_ainfo_add(h5_ohdr_change *c, h5_file *f)
{
	const h5_ohdr *oh = c->e.oh;
	uint8_t b[AINFO_MAX];
	size_t n = ainfo_body(b, (uint8_t)(((oh->flags & 0x04) ? AINFO_TRACK_CORDER : 0) |
					   ((oh->flags & 0x08) ? AINFO_INDEX_CORDER : 0)), &f->fmt);
	int rc = h5_ohdr_put(c, f, SIZE_MAX, H5_MSG_AINFO, AINFO_MSG_FLAGS, 0, b, n);

	if (rc == 0)
		rc = h5_ohdr_commit(c, f, false);
	return rc;
}
