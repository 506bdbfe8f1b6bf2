/*
 * dense.c - dense link and attribute storage (dense.h): a fractal heap
 * (III.G) and a v2 B-tree name index (III.A.2), shared by groups and
 * attributes.
 *
 * The two record types differ only in their layout:
 *   type 5 (links):      hash (4), heap ID (7);
 *   type 8 (attributes): heap ID (8), message flags (1), creation order (4),
 *                        hash (4).
 */
#include "dense.h"
#include "rd.h"
#include "checksum.h"
#include "file.h"
#include "fheap.h"
#include "btree2.h"

/* The record layout of each kind. */
typedef struct dense_fmt {
	uint8_t bt2_type;
	uint32_t rec_size;
	size_t id_off, id_len, hash_off;
	size_t flags_off, corder_off;   /* 0: not in the record */
	const char *what;               /* in messages */
} dense_fmt;

static const dense_fmt dense_fmts[] = {
	[H5_DENSE_LINKS] = { 5, 11, 4, 7, 0, 0, 0, "link name index" },
	[H5_DENSE_ATTRS] = { 8, 17, 0, 8, 13, 8, 9, "attribute name index" },
};

int h5_dense_open(h5_dense *d, h5_file *f, h5_dense_kind kind, uint64_t fheap_addr, uint64_t name_bt2_addr)
{
	const dense_fmt *df = &dense_fmts[kind];
	int rc;

	*d = (h5_dense){ .f = f, .kind = kind };
	rc = h5_fheap_open(&d->heap, f, fheap_addr);
	if (rc == 0)
		rc = h5_bt2_open(&d->bt, f, name_bt2_addr);
	if (rc == 0 && (h5_bt2_type(d->bt) != df->bt2_type || h5_bt2_record_size(d->bt) != df->rec_size))
		rc = h5_err_set(H5_ERR_FORMAT, "%s at 0x%llx: type %u record size %u, expected %u/%u", df->what,
				(unsigned long long)name_bt2_addr, h5_bt2_type(d->bt), h5_bt2_record_size(d->bt),
				df->bt2_type, df->rec_size);
	if (rc < 0)
		h5_dense_close(d);
	return rc;
}

void h5_dense_close(h5_dense *d)
{
	h5_bt2_close(d->bt);
	h5_fheap_close(d->heap);
	d->bt = NULL;
	d->heap = NULL;
}

typedef struct dense_walk {
	h5_dense *d;
	h5_dense_cb cb;
	void *ud;
	uint32_t hash;          /* h5_dense_find */
} dense_walk;

/* Decode a record, read its object and pass both on. */
static int rec_visit(const uint8_t *rec, size_t len, void *udp)
{
	dense_walk *w = udp;
	const dense_fmt *df = &dense_fmts[w->d->kind];
	h5_dense_rec r = { 0 };
	uint8_t *obj = NULL;
	int rc;

	if (len != df->rec_size)
		return h5_err_set(H5_ERR_FORMAT, "%s: record of %zu bytes, expected %u", df->what, len, df->rec_size);
	r.hash = (uint32_t)h5_le_decode(rec + df->hash_off, 4);
	if (df->flags_off)
		r.flags = rec[df->flags_off];
	if (df->corder_off)
		r.corder = (uint32_t)h5_le_decode(rec + df->corder_off, 4);
	rc = h5_fheap_read(&obj, &r.obj_len, w->d->heap, rec + df->id_off, df->id_len);
	if (rc < 0)
		return h5_err_wrap(rc, "%s: ", df->what);
	r.obj = obj;
	r.id = rec + df->id_off;
	r.id_len = df->id_len;
	rc = w->cb(&r, w->ud);
	free(obj);
	return rc;
}

int h5_dense_iterate(h5_dense *d, h5_dense_cb cb, void *ud)
{
	dense_walk w = { d, cb, ud, 0 };

	return h5_bt2_iterate(d->bt, rec_visit, &w);
}

static int hash_cmp(const void *key, const uint8_t *rec, size_t len, void *udp)
{
	const dense_walk *w = udp;
	const dense_fmt *df = &dense_fmts[w->d->kind];
	uint32_t k = *(const uint32_t *)key;
	uint32_t h = len == df->rec_size ? (uint32_t)h5_le_decode(rec + df->hash_off, 4) : 0;

	return (k > h) - (k < h);
}

uint32_t h5_dense_name_hash(const char *name, size_t len)
{
	/* III.A.2 types 5 and 8: lookup3 of the name bytes, initval 0 */
	return h5_checksum_lookup3(name, len, 0);
}

int h5_dense_find(h5_dense *d, const char *name, size_t len, h5_dense_cb cb, void *ud)
{
	dense_walk w = { d, cb, ud, h5_dense_name_hash(name, len) };

	return h5_bt2_find(d->bt, hash_cmp, &w.hash, rec_visit, &w);
}

/* ---- records written (write/dense_write.c), the mirror of rec_visit ----
 * With the creation-order indexes' two types:
 *   type 6 (link creation order):      creation order (8), heap ID;
 *   type 9 (attribute creation order): heap ID, message flags (1),
 *                                      creation order (4). */

unsigned h5_dense_rec_size(uint8_t type, unsigned id_len)
{
	return type == 5 ? 4 + id_len : type == 6 ? 8 + id_len : type == 8 ? id_len + 9 : id_len + 5;
}

void h5_dense_rec_encode(uint8_t *p, uint8_t type, const uint8_t *id, unsigned id_len, uint32_t hash,
			 uint64_t corder, uint8_t flags)
{
	switch (type) {
	case 5:
		h5_le_encode(p, hash, 4);
		memcpy(p + 4, id, id_len);
		break;
	case 6:
		h5_le_encode(p, corder, 8);
		memcpy(p + 8, id, id_len);
		break;
	default:        /* 8, 9 */
		memcpy(p, id, id_len);
		p[id_len] = flags;
		h5_le_encode(p + id_len + 1, corder, 4);
		if (type == 8)
			h5_le_encode(p + id_len + 5, hash, 4);
		break;
	}
}

struct dense_blocks {
	h5_dense *d;
	h5_block_cb cb;
	void *ud;
};

/* A name index record whose ID holds a huge object's address (a heap
 * without a huge-object B-tree): that object's extent. */
static int rec_huge(const uint8_t *rec, size_t len, void *udp)
{
	struct dense_blocks *w = udp;
	const dense_fmt *df = &dense_fmts[w->d->kind];
	uint64_t addr, n;
	int rc;

	if (len != df->rec_size)
		return h5_err_set(H5_ERR_FORMAT, "%s: record of %zu bytes, expected %u", df->what, len, df->rec_size);
	rc = h5_fheap_id_extent(&addr, &n, w->d->heap, rec + df->id_off, df->id_len);
	if (rc < 0 || !h5_addr_defined(addr))
		return rc;
	return w->cb(addr, n, w->ud);
}

int h5_dense_blocks(h5_file *f, h5_dense_kind kind, uint64_t fheap_addr, uint64_t name_bt2_addr,
		    uint64_t corder_bt2_addr, h5_block_cb cb, void *ud)
{
	h5_dense d;
	struct dense_blocks w = { &d, cb, ud };
	int rc;

	rc = h5_dense_open(&d, f, kind, fheap_addr, name_bt2_addr);
	if (rc < 0)
		return rc;
	rc = h5_fheap_blocks(d.heap, cb, ud);
	if (rc == 0)
		rc = h5_bt2_blocks(d.bt, cb, ud);
	if (rc == 0)
		rc = h5_bt2_iterate(d.bt, rec_huge, &w);
	/* the creation-order index (types 6 and 9) holds the same heap IDs */
	if (rc == 0 && h5_addr_defined(corder_bt2_addr))
		rc = h5_bt2_blocks_at(f, corder_bt2_addr, cb, ud);
	h5_dense_close(&d);
	return rc;
}
