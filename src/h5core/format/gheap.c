/* gheap.c - global heap collections (spec III.E "Global Heap"), which hold
 * variable-length data and region references. A collection is decoded once
 * into an index of (id, offset, size) and cached; objects are copied out. */
#include "base.h"
#include "rd.h"
#include "cache.h"
#include "file.h"
#include "gheap.h"

#define GCOL_HDR_MIN 16 /* signature, version, reserved, size (8 with 8-byte lengths) */

typedef struct gheap_obj {
	uint32_t id;
	size_t off;   /* offset of the data inside buf */
	size_t size;
} gheap_obj;

typedef struct gheap_coll {
	uint8_t *buf;
	size_t len;
	size_t nobjs;
	gheap_obj *objs;
} gheap_coll;

static void gheap_coll_free(void *p)
{
	gheap_coll *c = p;

	if (!c)
		return;
	free(c->buf);
	free(c->objs);
	free(c);
}

/* Decode a whole collection image; buf ownership passes to the result. */
static int gheap_decode(gheap_coll **out, const h5_fmt *fmt, uint8_t *buf, size_t len, uint64_t addr)
{
	gheap_coll *c = NULL;
	const uint8_t *sig;
	h5_rd r;
	uint64_t csize;
	size_t cap = 0;
	int rc = 0;

	*out = NULL;
	h5_rd_init(&r, buf, len);
	sig = h5_rd_bytes(&r, 4);
	if (!sig || memcmp(sig, "GCOL", 4) != 0) {
		rc = h5_err_set(H5_ERR_FORMAT, "global heap at 0x%llx: bad signature", (unsigned long long)addr);
		goto out;
	}
	if (h5_rd_u8(&r) != 1) {
		rc = h5_err_set(H5_ERR_FORMAT, "global heap at 0x%llx: unsupported version", (unsigned long long)addr);
		goto out;
	}
	h5_rd_skip(&r, 3);
	csize = h5_rd_size(&r, fmt);
	if (!h5_rd_ok(&r) || csize != len) {
		rc = h5_err_set(H5_ERR_FORMAT, "global heap at 0x%llx: collection size %llu inconsistent",
				(unsigned long long)addr, (unsigned long long)csize);
		goto out;
	}
	/* The collection header is padded to 8 bytes (libhdf5's
	 * H5HG_SIZEOF_HDR aligns it): with 4-byte lengths the first object
	 * starts at 16, not right after the size field. */
	h5_rd_skip(&r, ((r.pos + 7) & ~(size_t)7) - r.pos);
	c = calloc(1, sizeof(*c));
	if (!c) {
		rc = h5_err_set(H5_ERR_NOMEM, "out of memory");
		goto out;
	}
	/* Objects follow back to back; object 0 (free space) ends the list, and
	 * a tail too short for an object header is implied free space. */
	while (h5_rd_left(&r) >= (size_t)8 + fmt->sizeof_size) {
		uint32_t id = h5_rd_u16(&r);
		uint64_t size, padded;

		h5_rd_skip(&r, 2 + 4); /* reference count, reserved */
		size = h5_rd_size(&r, fmt);
		if (id == 0)
			break;
		/* the object header is padded to 8 bytes as well (libhdf5's
		 * H5HG_SIZEOF_OBJHDR): 16 bytes with 4-byte lengths */
		h5_rd_skip(&r, ((r.pos + 7) & ~(size_t)7) - r.pos);
		padded = (size + 7) & ~(uint64_t)7;
		if (size > h5_rd_left(&r) || padded < size) {
			rc = h5_err_set(H5_ERR_FORMAT, "global heap at 0x%llx: object %u size %llu exceeds collection",
					(unsigned long long)addr, id, (unsigned long long)size);
			goto out;
		}
		if (c->nobjs == cap) {
			size_t ncap = cap ? cap * 2 : 16;
			gheap_obj *n = realloc(c->objs, ncap * sizeof(*n));

			if (!n) {
				rc = h5_err_set(H5_ERR_NOMEM, "out of memory");
				goto out;
			}
			c->objs = n;
			cap = ncap;
		}
		c->objs[c->nobjs].id = id;
		c->objs[c->nobjs].off = r.pos;
		c->objs[c->nobjs].size = (size_t)size;
		c->nobjs++;
		/* The last object's padding may run into the end of the collection. */
		h5_rd_skip(&r, padded <= h5_rd_left(&r) ? (size_t)padded : h5_rd_left(&r));
	}
	c->buf = buf;
	c->len = len;
	buf = NULL;
	*out = c;
	c = NULL;
out:
	gheap_coll_free(c);
	free(buf);
	return rc;
}

typedef struct gheap_load_ud {
	h5_file *f;
	uint64_t addr;
} gheap_load_ud;

static int gheap_load(void **obj, size_t *cost, void *ud)
{
	gheap_load_ud *u = ud;
	uint8_t hdr[GCOL_HDR_MIN];
	uint8_t *buf = NULL;
	gheap_coll *c = NULL;
	h5_rd r;
	uint64_t csize;
	size_t hlen = 8 + u->f->fmt.sizeof_size;
	int rc;

	rc = h5_file_read(u->f, u->addr, hdr, hlen);
	if (rc < 0)
		return h5_err_wrap(rc, "global heap at 0x%llx: ", (unsigned long long)u->addr);
	h5_rd_init(&r, hdr, hlen);
	h5_rd_skip(&r, 8);
	csize = h5_rd_size(&r, &u->f->fmt);
	if (csize < hlen || !h5_file_range_ok(u->f, u->addr, csize))
		return h5_err_set(H5_ERR_FORMAT, "global heap at 0x%llx: collection size %llu outside the file",
				  (unsigned long long)u->addr, (unsigned long long)csize);
	rc = h5_file_read_alloc(&buf, u->f, u->addr, (size_t)csize);
	if (rc < 0)
		return rc;
	rc = gheap_decode(&c, &u->f->fmt, buf, (size_t)csize, u->addr);
	if (rc < 0)
		return rc;
	*obj = c;
	*cost = c->len + c->nobjs * sizeof(gheap_obj) + sizeof(*c);
	return 0;
}

/* The cached collection at coll_addr; *ref is released by the caller. */
static int gheap_get(h5_cache_ref *ref, h5_file *f, uint64_t coll_addr)
{
	gheap_load_ud ud = {f, coll_addr};

	if (!h5_addr_defined(coll_addr))
		return h5_err_set(H5_ERR_FORMAT, "global heap reference to an undefined address");
	return h5_cache_get(ref, f->meta, H5_CK_GHEAP, coll_addr, gheap_load, gheap_coll_free, &ud);
}

int h5_gheap_read(uint8_t **out, size_t *out_len, h5_file *f, uint64_t coll_addr, uint32_t index)
{
	h5_cache_ref ref;
	gheap_coll *c;
	int rc;

	*out = NULL;
	*out_len = 0;
	rc = gheap_get(&ref, f, coll_addr);
	if (rc < 0)
		return rc;
	c = ref.obj;
	rc = h5_err_set(H5_ERR_FORMAT, "global heap at 0x%llx: no object %u",
			(unsigned long long)coll_addr, index);
	for (size_t i = 0; i < c->nobjs; i++) {
		if (c->objs[i].id != index)
			continue;
		*out = malloc(c->objs[i].size ? c->objs[i].size : 1);
		if (!*out) {
			rc = h5_err_set(H5_ERR_NOMEM, "out of memory");
			break;
		}
		memcpy(*out, c->buf + c->objs[i].off, c->objs[i].size);
		*out_len = c->objs[i].size;
		rc = 0;
		break;
	}
	h5_cache_release(f->meta, &ref);
	return rc;
}

int h5_gheap_coll_size(uint64_t *out, h5_file *f, uint64_t coll_addr)
{
	h5_cache_ref ref;
	int rc;

	*out = 0;
	rc = gheap_get(&ref, f, coll_addr);
	if (rc < 0)
		return rc;
	*out = ((const gheap_coll *)ref.obj)->len;
	h5_cache_release(f->meta, &ref);
	return 0;
}
