/*
 * snod.c - symbol table nodes and symbol table entries
 * (spec III.B "Symbol Table Node", III.C "Symbol Table Entry").
 *
 * An SNOD is a leaf of an old-style group's v1 B-tree: up to 2K entries
 * (K = "Group Leaf Node K" from the superblock), sorted by name. It has no
 * checksum, so the signature, version and count are all we can verify.
 */
#include "base.h"
#include "rd.h"
#include "cache.h"
#include "file.h"
#include "snod.h"
#include "held.h"

#include <stddef.h>

/* Cached SNOD plus the cache entry it belongs to (see h5_snod_release). */
struct snod_obj {
	h5_snod pub;
	void *ent;
};

static size_t symentry_size(const h5_fmt *fmt)
{
	/* name offset + header address + cache type + reserved + scratch pad */
	return (size_t)fmt->sizeof_size + fmt->sizeof_addr + 4 + 4 + 16;
}

int h5_symentry_decode(h5_snod_entry *out, h5_rd *r, const h5_fmt *fmt)
{
	const uint8_t *pad;
	h5_rd pr;

	memset(out, 0, sizeof(*out));
	/* The name offset is an offset into the local heap. The spec's table
	 * (III.C) marks it as an offset, but libhdf5 (H5G_ent_decode) and so
	 * every file store it with the width of a length: they differ only in
	 * files whose offsets and lengths have different sizes. */
	out->name_off = h5_rd_uint(r, fmt->sizeof_size);
	out->obj_addr = h5_rd_addr(r, fmt);
	out->cache_type = h5_rd_u32(r);
	h5_rd_skip(r, 4);
	pad = h5_rd_bytes(r, 16);
	out->btree_addr = H5_ADDR_UNDEF;
	out->heap_addr = H5_ADDR_UNDEF;
	if (!h5_rd_ok(r))
		return h5_err_set(H5_ERR_FORMAT, "symbol table entry truncated");
	h5_rd_init(&pr, pad, 16);
	switch (out->cache_type) {
	case 0:
		break;
	case 1:
		out->btree_addr = h5_rd_addr(&pr, fmt);
		out->heap_addr = h5_rd_addr(&pr, fmt);
		break;
	case 2:
		out->link_off = h5_rd_u32(&pr);
		break;
	default:
		return h5_err_set(H5_ERR_FORMAT, "symbol table entry: unknown cache type %u",
				  out->cache_type);
	}
	if (!h5_rd_ok(&pr))
		return h5_err_set(H5_ERR_FORMAT, "symbol table entry: scratch pad too small");
	return 0;
}

int h5_snod_decode(h5_snod *out, const h5_fmt *fmt, unsigned leaf_k, const uint8_t *buf, size_t len)
{
	h5_rd r;
	const uint8_t *sig;
	uint8_t version;
	uint16_t n;
	int rc = 0;

	memset(out, 0, sizeof(*out));
	h5_rd_init(&r, buf, len);
	sig = h5_rd_bytes(&r, 4);
	version = h5_rd_u8(&r);
	h5_rd_skip(&r, 1);
	n = h5_rd_u16(&r);
	if (!h5_rd_ok(&r))
		return h5_err_set(H5_ERR_FORMAT, "SNOD: header truncated");
	if (memcmp(sig, "SNOD", 4) != 0)
		return h5_err_set(H5_ERR_FORMAT, "SNOD: bad signature");
	if (version != 1)
		return h5_err_set(H5_ERR_FORMAT, "SNOD: unsupported version %u", version);
	if (leaf_k == 0 || n > 2 * leaf_k)
		return h5_err_set(H5_ERR_FORMAT, "SNOD: %u symbols exceed 2K = %u", n, 2 * leaf_k);
	/* Check the whole entry array fits before allocating for it. */
	if ((size_t)n * symentry_size(fmt) > h5_rd_left(&r))
		return h5_err_set(H5_ERR_FORMAT, "SNOD: %u entries do not fit in %zu bytes", n, len);
	if (n == 0)
		return 0;
	out->e = calloc(n, sizeof(*out->e));
	if (!out->e)
		return h5_err_set(H5_ERR_NOMEM, "out of memory");
	for (unsigned i = 0; i < n; i++) {
		rc = h5_symentry_decode(&out->e[i], &r, fmt);
		if (rc < 0) {
			rc = h5_err_wrap(rc, "SNOD entry %u: ", i);
			goto out;
		}
	}
	out->n = n;
out:
	if (rc < 0)
		h5_snod_clear(out);
	return rc;
}

/* ---- encoders, the mirror of the decoders above ---- */

size_t h5_symentry_size(const h5_fmt *fmt)
{
	return symentry_size(fmt);
}

size_t h5_snod_size(const h5_fmt *fmt, unsigned leaf_k)
{
	return 8 + 2 * (size_t)leaf_k * symentry_size(fmt);
}

void h5_symentry_encode(uint8_t *buf, const h5_fmt *fmt, const h5_snod_entry *e)
{
	size_t p = 0;

	memset(buf, 0, symentry_size(fmt));
	h5_le_encode(buf + p, e->name_off, fmt->sizeof_size);
	p += fmt->sizeof_size;
	h5_le_encode(buf + p, e->obj_addr, fmt->sizeof_addr);
	p += fmt->sizeof_addr;
	h5_le_encode(buf + p, e->cache_type, 4);
	p += 8;                 /* cache type, reserved */
	if (e->cache_type == 1) {
		h5_le_encode(buf + p, e->btree_addr, fmt->sizeof_addr);
		h5_le_encode(buf + p + fmt->sizeof_addr, e->heap_addr, fmt->sizeof_addr);
	} else if (e->cache_type == 2) {
		h5_le_encode(buf + p, e->link_off, 4);
	}
}

int h5_snod_encode(uint8_t *buf, size_t len, const h5_fmt *fmt, unsigned leaf_k, const h5_snod_entry *e,
		   size_t n)
{
	size_t es = symentry_size(fmt);

	if (n > 2 * (size_t)leaf_k || len < h5_snod_size(fmt, leaf_k))
		return h5_err_set(H5_ERR_INVAL, "SNOD: %zu entries do not fit 2K = %u", n, 2 * leaf_k);
	memset(buf, 0, h5_snod_size(fmt, leaf_k));
	memcpy(buf, "SNOD", 4);
	buf[4] = 1;             /* version */
	h5_le_encode(buf + 6, n, 2);
	for (size_t i = 0; i < n; i++)
		h5_symentry_encode(buf + 8 + i * es, fmt, &e[i]);
	return 0;
}

void h5_snod_clear(h5_snod *s)
{
	if (!s)
		return;
	free(s->e);
	s->e = NULL;
	s->n = 0;
}

static void snod_free(void *obj)
{
	struct snod_obj *o = obj;

	if (!o)
		return;
	h5_snod_clear(&o->pub);
	free(o);
}

static int snod_load(void **obj, size_t *cost, void *udp)
{
	const h5_held_load *ud = udp;
	h5_file *f = ud->f;
	struct snod_obj *o = NULL;
	uint8_t *buf = NULL;
	size_t len;
	int rc;

	*obj = NULL;
	/* The node always occupies room for 2K entries (III.B); reading it whole
	 * is one I/O and h5_file_read_alloc bounds it by the file. */
	len = 8 + 2 * (size_t)f->sym_leaf_k * symentry_size(&f->fmt);
	rc = h5_file_read_alloc(&buf, f, ud->addr, len);
	if (rc < 0)
		goto out;
	o = calloc(1, sizeof(*o));
	if (!o) {
		rc = h5_err_set(H5_ERR_NOMEM, "out of memory");
		goto out;
	}
	rc = h5_snod_decode(&o->pub, &f->fmt, f->sym_leaf_k, buf, len);
	if (rc < 0)
		goto out;
	*obj = o;
	*cost = sizeof(*o) + o->pub.n * sizeof(*o->pub.e);
	o = NULL;
out:
	if (rc < 0)
		rc = h5_err_wrap(rc, "SNOD at 0x%llx: ", (unsigned long long)ud->addr);
	free(buf);
	snod_free(o);
	return rc;
}

int h5_snod_get(h5_snod **out, h5_file *f, uint64_t addr)
{
	struct snod_obj *o;
	int rc = h5_held_get((void **)&o, f, H5_CK_SNOD, addr, "SNOD", offsetof(struct snod_obj, ent), snod_load,
			     snod_free);

	*out = rc < 0 ? NULL : &o->pub;
	return rc;
}

/* Why a walk's nodes are not cached: h5py's default K of 4 makes 328-byte
 * nodes, 249,249 of them for 1 M objects; read one pread each and each
 * put in the cache (its table probed, an entry made, others evicted at
 * the budget), they were ~22% of a cold walk's daemon CPU (issue 82). A
 * group's nodes lie near each other: one read of the window answers tens
 * of them. A node is never changed in place (write/link_stab.c
 * write_leaf writes a changed one anew elsewhere), so FILE's bytes are
 * what the cache would hold. */
int h5_snod_walk_get(h5_snod **out, h5_snod *tmp, h5_file *f, uint64_t addr, h5_window *w)
{
	size_t len = 8 + 2 * (size_t)f->sym_leaf_k * symentry_size(&f->fmt);
	uint8_t *buf;
	int rc;

	*out = NULL;
	memset(tmp, 0, sizeof(*tmp));
	if (!w)
		return h5_snod_get(out, f, addr);
	buf = malloc(len);
	if (!buf)
		return h5_err_set(H5_ERR_NOMEM, "out of memory reading %zu bytes", len);
	rc = h5_file_read_window(w, f, addr, buf, len);
	if (rc == 0)
		rc = h5_snod_decode(tmp, &f->fmt, f->sym_leaf_k, buf, len);
	free(buf);
	if (rc < 0)
		return h5_err_wrap(rc, "SNOD at 0x%llx: ", (unsigned long long)addr);
	*out = tmp;
	return 0;
}

void h5_snod_walk_release(h5_file *f, h5_snod *s, h5_snod *tmp)
{
	if (s == tmp)
		h5_snod_clear(tmp);
	else
		h5_snod_release(f, s);
}

void h5_snod_release(h5_file *f, h5_snod *s)
{
	h5_held_release(f, s, offsetof(struct snod_obj, ent)); /* pub is the first member */
}
