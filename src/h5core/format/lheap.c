/*
 * lheap.c - local heaps (spec III.D "Local Heaps").
 *
 * A local heap holds the link names (and old-style soft link values) of a
 * symbol-table group, and the file names of an external file list. The
 * header is fixed-size; its data segment lives elsewhere (usually right after
 * it) and is read whole, because every lookup touches several names.
 */
#include "base.h"
#include "rd.h"
#include "cache.h"
#include "file.h"
#include "lheap.h"
#include "held.h"

#include <stddef.h>

/* The cached object: the public heap plus the cache entry it came from, so
 * h5_lheap_release() can hand the entry back without a second lookup. */
struct lheap_obj {
	h5_lheap pub;
	void *ent;
};

int h5_lheap_decode(h5_lheap *out, const h5_fmt *fmt, const uint8_t *buf, size_t len)
{
	h5_rd r;
	const uint8_t *sig;
	uint8_t version;
	uint64_t size, free_off, data_addr;

	memset(out, 0, sizeof(*out));
	h5_rd_init(&r, buf, len);
	sig = h5_rd_bytes(&r, 4);
	version = h5_rd_u8(&r);
	h5_rd_skip(&r, 3);
	/* Raw values: an all-ones size is not "unlimited" here, it is corrupt. */
	size = h5_rd_uint(&r, fmt->sizeof_size);
	free_off = h5_rd_uint(&r, fmt->sizeof_size);
	data_addr = h5_rd_addr(&r, fmt);
	if (!h5_rd_ok(&r))
		return h5_err_set(H5_ERR_FORMAT, "local heap: header truncated (%zu bytes)", len);
	if (memcmp(sig, "HEAP", 4) != 0)
		return h5_err_set(H5_ERR_FORMAT, "local heap: bad signature");
	if (version != 0)
		return h5_err_set(H5_ERR_FORMAT, "local heap: unsupported version %u", version);
	if (size > SIZE_MAX)
		return h5_err_set(H5_ERR_FORMAT, "local heap: data segment size %llu too large",
				  (unsigned long long)size);
	if (size > 0 && !h5_addr_defined(data_addr))
		return h5_err_set(H5_ERR_FORMAT, "local heap: %llu-byte data segment has no address",
				  (unsigned long long)size);
	out->size = (size_t)size;
	out->data_addr = data_addr;
	/* The free list is only needed to add names; keep it for writers but
	 * normalise "none" (all ones in any width) to UNDEF. */
	{
		unsigned n = fmt->sizeof_size;
		uint64_t ones = n >= 8 ? UINT64_MAX : ((UINT64_C(1) << (8 * n)) - 1);

		out->free_off = free_off == ones ? H5_ADDR_UNDEF : free_off;
	}
	return 0;
}

static size_t lheap_hdr_size(const h5_fmt *fmt)
{
	return 8 + 2 * (size_t)fmt->sizeof_size + fmt->sizeof_addr;
}

size_t h5_lheap_hdr_size(const h5_fmt *fmt)
{
	return lheap_hdr_size(fmt);
}

void h5_lheap_hdr_encode(uint8_t *buf, const h5_fmt *fmt, uint64_t size, uint64_t free_off, uint64_t data_addr)
{
	memset(buf, 0, lheap_hdr_size(fmt));
	memcpy(buf, "HEAP", 4);
	h5_le_encode(buf + 8, size, fmt->sizeof_size);
	h5_le_encode(buf + 8 + fmt->sizeof_size, free_off, fmt->sizeof_size);
	h5_le_encode(buf + 8 + 2 * fmt->sizeof_size, data_addr, fmt->sizeof_addr);
}

static void lheap_free(void *obj)
{
	struct lheap_obj *o = obj;

	if (!o)
		return;
	free(o->pub.data);
	free(o);
}

static int lheap_load(void **obj, size_t *cost, void *udp)
{
	const h5_held_load *ud = udp;
	h5_file *f = ud->f;
	uint8_t hdr[8 + 8 + 8 + 8];
	size_t hlen = lheap_hdr_size(&f->fmt);
	struct lheap_obj *o = NULL;
	int rc;

	*obj = NULL;
	rc = h5_file_read(f, ud->addr, hdr, hlen);
	if (rc < 0)
		goto out;
	o = calloc(1, sizeof(*o));
	if (!o) {
		rc = h5_err_set(H5_ERR_NOMEM, "out of memory");
		goto out;
	}
	rc = h5_lheap_decode(&o->pub, &f->fmt, hdr, hlen);
	if (rc < 0)
		goto out;
	o->pub.addr = ud->addr;
	if (o->pub.size > 0) {
		/* h5_file_read_alloc refuses ranges past EOF, so a hostile size
		 * cannot make us allocate more than the file holds. */
		rc = h5_file_read_alloc(&o->pub.data, f, o->pub.data_addr, o->pub.size);
		if (rc < 0)
			goto out;
	}
	*obj = o;
	*cost = sizeof(*o) + o->pub.size;
	o = NULL;
out:
	if (rc < 0)
		rc = h5_err_wrap(rc, "local heap at 0x%llx: ", (unsigned long long)ud->addr);
	lheap_free(o);
	return rc;
}

int h5_lheap_get(h5_lheap **out, h5_file *f, uint64_t addr)
{
	struct lheap_obj *o;
	int rc = h5_held_get((void **)&o, f, H5_CK_LHEAP, addr, "local heap", offsetof(struct lheap_obj, ent),
			     lheap_load, lheap_free);

	*out = rc < 0 ? NULL : &o->pub;
	return rc;
}

void h5_lheap_release(h5_file *f, h5_lheap *h)
{
	h5_held_release(f, h, offsetof(struct lheap_obj, ent)); /* pub is the first member */
}

const char *h5_lheap_string(const h5_lheap *h, uint64_t off)
{
	const char *s;

	if (!h || !h->data || off >= h->size)
		return NULL;
	s = (const char *)h->data + off;
	/* A name running off the end of the segment would let callers read
	 * past the buffer: only hand out strings terminated inside it. */
	if (!memchr(s, '\0', h->size - (size_t)off))
		return NULL;
	return s;
}

/* III.D: the header and the data segment, wherever each lies (libhdf5
 * allocates a new heap's two together, a grown segment elsewhere). */
int h5_lheap_blocks(h5_file *f, uint64_t addr, h5_block_cb cb, void *ud)
{
	h5_lheap *h;
	int rc;

	rc = h5_lheap_get(&h, f, addr);
	if (rc < 0)
		return rc;
	rc = cb(addr, h5_lheap_hdr_size(&f->fmt), ud);
	if (rc == 0 && h->size)
		rc = cb(h->data_addr, h->size, ud);
	h5_lheap_release(f, h);
	return rc;
}
