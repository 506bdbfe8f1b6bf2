/*
 * dense_write.c - changing dense link and attribute storage (dense_write.h).
 *
 * libhdf5 changes a dense store in place: an insert goes into free space
 * of the heap (its free-space manager, III.G and III.B) and into the
 * name index (B-tree splits and merges). h5fs instead writes the whole
 * store anew, copy-on-write, and switches the info message to it in one
 * write: a crash can then only leave the old store or the new one, and no
 * free-space manager has to be kept true. The cost is a write of the
 * whole store per change (a few KiB for the tens of attributes of a
 * netCDF file; O(n) in general). The old store's blocks are freed once
 * the switch returned, and a later store takes them again (space.h), so
 * a store changed over and over takes about twice its size, not one
 * copy per change (issue 56: 3,000 mkdir/rmdir in a dense group grew
 * FILE by 135 MB).
 *
 * The records (types 5, 6, 8, 9: format/dense.c h5_dense_rec_encode) are
 * as libhdf5 writes them: name records sorted by hash, then by name (H5G__dense_btree2_name_compare,
 * H5A__dense_btree2_name_compare); creation-order records by order.
 */
#include "dense_write.h"
#include "base.h"
#include "rd.h"
#include "file.h"
#include "linkmsg.h"
#include "attr.h"
#include "space.h"
#include "ohdr_edit.h"
#include "file_ws.h"

#define ID_TYPE_MASK 0x30       /* heap ID type bits: 0 managed, 1 huge, 2 tiny */
#define MSG_MAX_SIZE 65536      /* H5O_MESG_MAX_SIZE: a message's size field is 2 bytes */

void h5_dense_set_init(h5_dense_set *s, h5_dense_kind kind, bool index_corder)
{
	bool links = kind == H5_DENSE_LINKS;
	uint16_t id_len = links ? 7 : 8;

	memset(s, 0, sizeof(*s));
	s->kind = kind;
	s->index_corder = index_corder;
	/* H5G_FHEAP_* / H5O_FHEAP_* (H5Gpkg.h, H5Opkg.h), H5G_NAME_BT2_*,
	 * H5A_NAME_BT2_* and the creation-order trees' node sizes */
	s->hp = (h5_fheap_params){ .id_len = id_len, .width = 4, .start_block_size = 512,
				   .max_direct_size = 64 * 1024, .max_heap_bits = links ? 32 : 40, .start_root_rows = 1,
				   .checksum_dblocks = true, .max_man_size = H5_DENSE_MAX_MAN, .huge_bt2_addr = H5_ADDR_UNDEF };
	s->name_bp = (h5_bt2_params){ .type = links ? 5 : 8, .node_size = 512, .split_pct = 100, .merge_pct = 40 };
	s->corder_bp = (h5_bt2_params){ .type = links ? 6 : 9, .node_size = 512, .split_pct = 100, .merge_pct = 40 };
	s->name_bp.rec_size = (uint16_t)h5_dense_rec_size(s->name_bp.type, id_len);
	s->corder_bp.rec_size = (uint16_t)h5_dense_rec_size(s->corder_bp.type, id_len);
}

void h5_dense_set_free(h5_dense_set *s)
{
	for (size_t i = 0; i < s->n; i++) {
		free(s->o[i].msg);
		free(s->o[i].name);
	}
	free(s->o);
	s->o = NULL;
	s->n = s->cap = 0;
	h5_freesp_clear(&s->old);
}

/* Freed with the switch's ticket; a reader walking the old store (a
 * listxattr begun before the commit) holds its reuse back (space.c: the
 * reader sections - without them tests/stress/xattr_race.py met reused
 * blocks, "fractal heap indirect block: checksum mismatch"). */
void h5_dense_set_old_free(h5_dense_set *s, h5_file *f, uint64_t ticket)
{
	h5_space_free_noted(f, &s->old, ticket);
}

int h5_dense_movable(h5_file *f, h5_dense_kind kind, uint64_t fheap, uint64_t name_bt2, uint64_t corder_bt2)
{
	h5_freesp sp = { 0 };
	uint64_t top = 0, total = 0;
	int rc = h5_dense_blocks(f, kind, fheap, name_bt2, corder_bt2, h5_space_note, &sp);

	for (size_t i = 0; rc == 0 && i < sp.n; i++) {
		top = sp.v[i].addr + sp.v[i].len > top ? sp.v[i].addr + sp.v[i].len : top;
		total += sp.v[i].len;
	}
	h5_freesp_clear(&sp);
	if (rc < 0)
		return rc;
	return top == h5_space_end(f) && h5_freesp_largest(&h5_ws(f)->freesp) >= total;
}

/* A new object at the end (fields zero). */
static int grow(h5_dense_obj **out, h5_dense_set *s)
{
	if (s->n == s->cap) {
		size_t cap = s->cap ? s->cap * 2 : 16;
		h5_dense_obj *o = realloc(s->o, cap * sizeof(*o));

		if (!o)
			return h5_err_set(H5_ERR_NOMEM, "out of memory");
		s->o = o;
		s->cap = cap;
	}
	*out = &s->o[s->n++];
	memset(*out, 0, sizeof(**out));
	return 0;
}

/* The name of a message: links always have one; attributes unless shared. */
static int msg_name(char **name, size_t *name_len, h5_dense_kind kind, const h5_fmt *fmt, const uint8_t *msg,
		    size_t len, uint64_t *corder)
{
	*name = NULL;
	*name_len = 0;
	if (kind == H5_DENSE_LINKS) {
		h5_link l;
		int rc = h5_link_decode(&l, msg, len, fmt);

		if (rc < 0)
			return rc;
		*name = l.name;
		*name_len = l.name_len;
		*corder = l.has_corder ? (uint64_t)l.corder : 0;
		l.name = NULL;
		h5_link_clear(&l);
	} else {
		h5_attr_hdr h;
		int rc = h5_attr_hdr_decode(&h, msg, len);

		if (rc < 0)
			return rc;
		*name_len = h.name_size ? h.name_size - 1 : 0;
		*name = strndup((const char *)h.name, *name_len);
		if (!*name)
			return h5_err_set(H5_ERR_NOMEM, "out of memory");
	}
	return 0;
}

typedef struct load_ud {
	h5_dense_set *s;
	const h5_fmt *fmt;
} load_ud;

static int load_one(const h5_dense_rec *r, void *udp)
{
	load_ud *u = udp;
	h5_dense_obj *o;
	int rc;

	if (r->id_len > H5_DENSE_MAX_ID)
		return h5_err_set(H5_ERR_FORMAT, "dense storage: %zu-byte heap IDs", r->id_len);
	rc = grow(&o, u->s);
	if (rc < 0)
		return rc;
	o->hash = r->hash;
	o->flags = r->flags;
	o->corder = r->corder;
	memcpy(o->id, r->id, r->id_len);
	o->keep = (r->id[0] & ID_TYPE_MASK) != 0;
	if (!(u->s->kind == H5_DENSE_ATTRS && (r->flags & H5_MSG_FLAG_SHARED))) {
		uint64_t corder = o->corder;

		rc = msg_name(&o->name, &o->name_len, u->s->kind, u->fmt, r->obj, r->obj_len, &corder);
		if (rc < 0)
			return rc;
		if (u->s->kind == H5_DENSE_LINKS)
			o->corder = corder;
	}
	if (!o->keep) {
		o->msg = malloc(r->obj_len);
		if (!o->msg)
			return h5_err_set(H5_ERR_NOMEM, "out of memory");
		memcpy(o->msg, r->obj, r->obj_len);
		o->len = r->obj_len;
	}
	return 0;
}

int h5_dense_set_load(h5_dense_set *s, h5_file *f, h5_dense_kind kind, uint64_t fheap, uint64_t name_bt2,
		      uint64_t corder_bt2)
{
	h5_dense d;
	load_ud u = { s, &f->fmt };
	h5_bt2 *cbt = NULL;
	int rc;

	h5_dense_set_init(s, kind, h5_addr_defined(corder_bt2));
	rc = h5_dense_open(&d, f, kind, fheap, name_bt2);
	if (rc < 0)
		return rc;
	h5_fheap_params_get(&s->hp, d.heap);
	h5_bt2_params_get(&s->name_bp, d.bt);
	if (s->hp.filtered)
		rc = h5_err_set(H5_ERR_UNSUPPORTED, "dense storage in a filtered fractal heap is not written");
	if (rc == 0 && s->hp.id_len > H5_DENSE_MAX_ID)
		rc = h5_err_set(H5_ERR_UNSUPPORTED, "dense storage with %u-byte heap IDs is not written", s->hp.id_len);
	if (rc == 0 && s->index_corder) {
		/* its record size is checked where the records are made */
		rc = h5_bt2_open(&cbt, f, corder_bt2);
		if (rc == 0)
			h5_bt2_params_get(&s->corder_bp, cbt);
		if (rc == 0 && s->corder_bp.type != (kind == H5_DENSE_LINKS ? 6 : 9))
			rc = h5_err_set(H5_ERR_FORMAT, "creation-order index at 0x%llx has record type %u",
					(unsigned long long)corder_bt2, s->corder_bp.type);
	}
	if (rc == 0)
		rc = h5_dense_iterate(&d, load_one, &u);
	h5_bt2_close(cbt);
	h5_dense_close(&d);
	/* the blocks a change frees, unless a new store shares some: huge
	 * objects (their B-tree, carried over in s->hp, and their blocks).
	 * One not listed is only left behind, as before any reuse. */
	if (rc == 0 && !h5_addr_defined(s->hp.huge_bt2_addr) &&
	    h5_dense_blocks(f, kind, fheap, name_bt2, corder_bt2, h5_space_note, &s->old) < 0) {
		h5_err_clear();
		h5_freesp_clear(&s->old);
	}
	if (rc < 0)
		h5_dense_set_free(s);
	return rc;
}

size_t h5_dense_set_find(const h5_dense_set *s, const char *name, size_t name_len)
{
	/* the hash first: a batch of new names is looked for among all
	 * (h5_link_insert_batch, 10,000 in one group) */
	uint32_t h = s->n ? h5_dense_name_hash(name, name_len) : 0;

	for (size_t i = 0; i < s->n; i++)
		if (s->o[i].hash == h && s->o[i].name && s->o[i].name_len == name_len &&
		    memcmp(s->o[i].name, name, name_len) == 0)
			return i;
	return SIZE_MAX;
}

int h5_dense_set_put(h5_dense_set *s, size_t at, const uint8_t *msg, size_t len, const char *name, size_t name_len,
		     uint64_t corder, uint8_t flags)
{
	h5_dense_obj *o;
	uint8_t *m = malloc(len ? len : 1);
	char *nm = strndup(name, name_len);
	int rc = 0;

	if (!m || !nm) {
		rc = h5_err_set(H5_ERR_NOMEM, "out of memory");
		goto out;
	}
	if (at == SIZE_MAX) {
		rc = grow(&o, s);
		if (rc < 0)
			goto out;
	} else {
		o = &s->o[at];
		free(o->msg);
		free(o->name);
	}
	memcpy(m, msg, len);
	*o = (h5_dense_obj){ .msg = m, .len = len, .name = nm, .name_len = name_len,
			     .hash = h5_dense_name_hash(name, name_len), .corder = corder, .flags = flags };
	m = NULL;
	nm = NULL;
out:
	free(m);
	free(nm);
	return rc;
}

void h5_dense_set_del(h5_dense_set *s, size_t at)
{
	free(s->o[at].msg);
	free(s->o[at].name);
	memmove(&s->o[at], &s->o[at + 1], (s->n - at - 1) * sizeof(*s->o));
	s->n--;
}

/* ---- writing ---------------------------------------------------------------- */

static int name_cmp(const h5_dense_obj *a, const h5_dense_obj *b)
{
	size_t n;
	int c;

	if (a->hash != b->hash)
		return a->hash < b->hash ? -1 : 1;
	if (!a->name || !b->name)
		return !a->name - !b->name;
	/* strcmp of the NUL-terminated names */
	n = a->name_len < b->name_len ? a->name_len : b->name_len;
	c = memcmp(a->name, b->name, n);
	if (c)
		return c;
	return (a->name_len > b->name_len) - (a->name_len < b->name_len);
}

/* qsort's comparators, on pointers to the set's objects. */
static int by_name(const void *x, const void *y)
{
	return name_cmp(*(const h5_dense_obj *const *)x, *(const h5_dense_obj *const *)y);
}

static int by_corder(const void *x, const void *y)
{
	uint64_t a = (*(const h5_dense_obj *const *)x)->corder, b = (*(const h5_dense_obj *const *)y)->corder;

	return (a > b) - (a < b);
}

/* An image built for a base address (its blocks name their own and each
 * other's addresses). */
typedef int (*build_fn)(uint8_t **img, size_t *len, uint64_t base, void *ud);

/* The image placed where h5_space_take puts its bytes - space freed
 * earlier that holds it whole, else the allocation end (it is written
 * whole) - built for the end first to learn its size, and again for the
 * place taken when that is not the end (*addr: where). */
static int place(uint64_t *addr, h5_file *f, build_fn build, void *ud)
{
	uint64_t base = h5_space_end(f);
	uint8_t *img = NULL;
	size_t len = 0, again = 0;
	int rc = build(&img, &len, base, ud);

	if (rc == 0)
		rc = h5_space_take(addr, f, len);
	if (rc == 0 && *addr != base) {
		free(img);
		img = NULL;
		rc = build(&img, &again, *addr, ud);
		if (rc == 0 && again != len)
			rc = h5_err_set(H5_ERR_INVAL, "dense storage: %zu bytes built at 0x%llx, %zu at the end",
					again, (unsigned long long)*addr, len);
	}
	if (rc == 0)
		rc = h5_file_write(f, *addr, img, len);
	free(img);
	return rc;
}

typedef struct tree_build {
	const h5_bt2_params *bp;
	const h5_fmt *fmt;
	const uint8_t *recs;
	size_t n;
} tree_build;

static int build_tree(uint8_t **img, size_t *len, uint64_t base, void *ud)
{
	const tree_build *b = ud;

	return h5_bt2_build(img, len, b->bp, b->fmt, base, b->recs, b->n);
}

typedef struct heap_build {
	uint8_t *ids;
	const h5_fheap_params *hp;
	const h5_fmt *fmt;
	const uint8_t *const *objs;
	const size_t *lens;
	size_t n;
} heap_build;

static int build_heap(uint8_t **img, size_t *len, uint64_t base, void *ud)
{
	const heap_build *b = ud;

	return h5_fheap_build(img, len, b->ids, b->hp, b->fmt, base, b->objs, b->lens, b->n);
}

/* A tree of the set's objects in order ord (pointers into s->o), their
 * heap IDs in ids by object, written at the allocation end. */
static int tree_write(uint64_t *addr, h5_file *f, const h5_dense_set *s, const h5_bt2_params *bp,
		      const uint8_t *ids, const h5_dense_obj *const *ord)
{
	unsigned idl = s->hp.id_len, rs = h5_dense_rec_size(bp->type, idl);
	uint8_t *recs = NULL;
	tree_build b = { bp, &f->fmt, NULL, s->n };
	int rc = 0;

	if (bp->rec_size != rs)
		return h5_err_set(H5_ERR_FORMAT, "dense storage: type %u index records of %u bytes, expected %u",
				  bp->type, bp->rec_size, rs);
	recs = malloc(s->n ? s->n * rs : 1);
	if (!recs)
		return h5_err_set(H5_ERR_NOMEM, "out of memory");
	for (size_t i = 0; i < s->n; i++) {
		const h5_dense_obj *o = ord[i];

		h5_dense_rec_encode(recs + i * rs, bp->type, ids + (size_t)(o - s->o) * idl, idl, o->hash, o->corder,
				    o->flags);
	}
	b.recs = recs;
	rc = place(addr, f, build_tree, &b);
	free(recs);
	return rc;
}

int h5_dense_set_write(uint64_t *fheap, uint64_t *name_bt2, uint64_t *corder_bt2, h5_file *f,
		       const h5_dense_set *s)
{
	unsigned idl = s->hp.id_len;
	uint8_t *ids = calloc(s->n ? s->n : 1, idl), *mids = calloc(s->n ? s->n : 1, idl);
	const uint8_t **objs = calloc(s->n ? s->n : 1, sizeof(*objs));
	size_t *lens = calloc(s->n ? s->n : 1, sizeof(*lens)), nm = 0;
	const h5_dense_obj **ord = calloc(s->n ? s->n : 1, sizeof(*ord));
	heap_build hb = { mids, &s->hp, &f->fmt, objs, lens, 0 };
	int rc = 0;

	*fheap = *name_bt2 = *corder_bt2 = H5_ADDR_UNDEF;
	if (!ids || !mids || !objs || !lens || !ord) {
		rc = h5_err_set(H5_ERR_NOMEM, "out of memory");
		goto out;
	}
	/* the heap: every object but those whose IDs are kept */
	for (size_t i = 0; i < s->n; i++)
		if (!s->o[i].keep) {
			if (s->o[i].len > s->hp.max_man_size) {
				rc = h5_err_set(H5_ERR_LIMIT, "\"%.*s\" takes %zu bytes; a dense store keeps at most %u "
						"in place (a larger one is a huge object, which h5fs does not write)",
						(int)s->o[i].name_len, s->o[i].name ? s->o[i].name : "", s->o[i].len,
						s->hp.max_man_size);
				goto out;
			}
			objs[nm] = s->o[i].msg;
			lens[nm++] = s->o[i].len;
		}
	hb.n = nm;
	rc = place(fheap, f, build_heap, &hb);
	if (rc < 0)
		goto out;
	for (size_t i = 0, k = 0; i < s->n; i++)
		memcpy(ids + i * idl, s->o[i].keep ? s->o[i].id : mids + k++ * idl, idl);
	/* the indexes */
	for (size_t i = 0; i < s->n; i++)
		ord[i] = &s->o[i];
	qsort(ord, s->n, sizeof(*ord), by_name);
	for (size_t i = 1; i < s->n; i++)
		if (name_cmp(ord[i - 1], ord[i]) == 0 && ord[i]->name) {
			rc = h5_err_set(H5_ERR_FORMAT, "dense storage: the name \"%.*s\" twice", (int)ord[i]->name_len,
					ord[i]->name);
			goto out;
		}
	rc = tree_write(name_bt2, f, s, &s->name_bp, ids, ord);
	if (rc == 0 && s->index_corder) {
		qsort(ord, s->n, sizeof(*ord), by_corder);
		rc = tree_write(corder_bt2, f, s, &s->corder_bp, ids, ord);
	}
out:
	free(ids);
	free(mids);
	free(objs);
	free(lens);
	free(ord);
	return rc;
}

int h5_dense_info_update(uint8_t *body, size_t len, h5_dense_kind kind, const h5_fmt *fmt, uint64_t fheap,
			 uint64_t name_bt2, uint64_t corder_bt2, int64_t max_corder)
{
	/* IV.A.2.c Link Info / IV.A.2.v Attribute Info: version, flags, the
	 * maximum creation order (8 / 2 bytes) when tracked, the heap, the
	 * name index, the creation-order index when indexed */
	unsigned a = fmt->sizeof_addr, csz = kind == H5_DENSE_LINKS ? 8 : 2;
	size_t p, need;

	if (len < 2 || body[0] != 0)
		return h5_err_set(H5_ERR_FORMAT, "info message: version %u", len ? body[0] : 0);
	p = 2 + ((body[1] & 0x01) ? csz : 0);
	need = p + 2 * (size_t)a + ((body[1] & 0x02) ? a : 0);
	if (len < need)
		return h5_err_set(H5_ERR_FORMAT, "info message truncated");
	if (max_corder >= 0 && (body[1] & 0x01))
		h5_le_encode(body + 2, (uint64_t)max_corder, csz);
	h5_le_encode(body + p, fheap, a);
	h5_le_encode(body + p + a, name_bt2, a);
	if (body[1] & 0x02)
		h5_le_encode(body + p + 2 * a, corder_bt2, a);
	return 0;
}

int h5_dense_set_switch(h5_ohdr_change *c, h5_file *f, const h5_dense_set *s, size_t info, int64_t max_corder)
{
	const h5_msg *m = &c->e.oh->msgs[info];
	uint64_t fheap, name_bt2, corder_bt2;
	uint8_t *body = NULL;
	int rc = h5_dense_set_write(&fheap, &name_bt2, &corder_bt2, f, s);

	if (rc == 0 && !(body = malloc(m->size)))
		rc = h5_err_set(H5_ERR_NOMEM, "out of memory");
	if (rc == 0) {
		memcpy(body, m->data, m->size);
		rc = h5_dense_info_update(body, m->size, s->kind, &f->fmt, fheap, name_bt2, corder_bt2, max_corder);
	}
	if (rc == 0)
		rc = h5_ohdr_rewrite(c, info, body, m->size);
	free(body);
	return rc;
}

/* The info message of the change made to name no dense storage (every
 * address undefined, as libhdf5 leaves it), max_corder as its maximum
 * creation order: a patch of its chunk. */
static int info_unswitch(h5_ohdr_change *c, const h5_fmt *fmt, h5_dense_kind kind, size_t info, int64_t max_corder)
{
	const h5_msg *m = &c->e.oh->msgs[info];
	uint8_t *body = malloc(m->size ? m->size : 1);
	int rc = body ? 0 : h5_err_set(H5_ERR_NOMEM, "out of memory");

	if (rc == 0) {
		memcpy(body, m->data, m->size);
		rc = h5_dense_info_update(body, m->size, kind, fmt, H5_ADDR_UNDEF, H5_ADDR_UNDEF, H5_ADDR_UNDEF,
					  max_corder);
	}
	if (rc == 0)
		rc = h5_ohdr_rewrite(c, info, body, m->size);
	free(body);
	return rc;
}

int h5_dense_set_to_header(bool *moved, h5_ohdr_change *c, h5_file *f, const h5_dense_set *s, size_t info,
			   int64_t max_corder)
{
	bool attrs = s->kind == H5_DENSE_ATTRS;
	h5_ohdr_new_msg *m;
	int rc;

	*moved = false;
	for (size_t i = 0; i < s->n; i++)
		if ((s->o[i].flags & H5_MSG_FLAG_SHARED) || s->o[i].len >= MSG_MAX_SIZE)
			return 0;
	if (!(m = calloc(s->n ? s->n : 1, sizeof(*m))))
		return h5_err_set(H5_ERR_NOMEM, "out of memory");
	/* a Link message holds its creation order itself; an Attribute
	 * message's is the header's field (IV.A.1.b) */
	for (size_t i = 0; i < s->n; i++)
		m[i] = (h5_ohdr_new_msg){ .type = attrs ? H5_MSG_ATTR : H5_MSG_LINK,
					  .crt = attrs ? (uint16_t)s->o[i].corder : 0, .body = s->o[i].msg,
					  .len = s->o[i].len };
	rc = h5_ohdr_put_many(c, f, m, s->n);
	free(m);
	if (rc == 0)
		rc = info_unswitch(c, &f->fmt, s->kind, info, max_corder);
	*moved = rc == 0;
	return rc;
}
