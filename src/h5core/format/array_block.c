/*
 * array_block.c - what the blocks of the extensible and fixed arrays have
 * in common (spec VII.C "Fixed Array", VII.D "Extensible Array"): the
 * opening checks of a block's decoder (prefix, checksum, owner; a
 * header's client and element size), the encoders' prefix and checksum, the
 * conflict of a cached block claimed twice, and the cached loader of data
 * block pages (elements and a checksum, verified by each format's own
 * page decoder). earray_codec.c, earray.c and farray.c use them.
 */
#include "base.h"
#include "rd.h"
#include "checksum.h"
#include "cache.h"
#include "file.h"
#include "chunk_rec.h"
#include "array_int.h"

int h5_arr_hdr_open(h5_rd *r, uint8_t *client, uint8_t *elmt_size, const char *sig, unsigned version,
		    uint64_t addr, const uint8_t *buf, size_t len, uint64_t size)
{
	int rc = h5_block_check(buf, len, size, sig, version, addr);

	if (rc < 0)
		return rc;
	h5_rd_init(r, buf, len);
	h5_rd_skip(r, 5);
	*client = h5_rd_u8(r);
	*elmt_size = h5_rd_u8(r);
	return 0;
}

int h5_arr_hdr_close(const h5_rd *r, const h5_fmt *fmt, const char *sig, uint64_t addr, unsigned client,
		     unsigned elmt_size)
{
	int rc;

	if (!h5_rd_ok(r))
		return h5_err_set(H5_ERR_FORMAT, "%s at 0x%llx: truncated", sig, (unsigned long long)addr);
	rc = h5_chunk_elmt_check(fmt, client, elmt_size);
	if (rc < 0)
		return h5_err_wrap(rc, "%s at 0x%llx: ", sig, (unsigned long long)addr);
	return 0;
}

int h5_arr_block_open(h5_rd *r, const h5_arr_owner *o, const char *sig, uint64_t addr, const uint8_t *buf,
		      size_t len, uint64_t size)
{
	unsigned client;
	uint64_t owner;
	int rc;

	rc = h5_block_check(buf, len, size, sig, o->version, addr);
	if (rc < 0)
		return rc;
	h5_rd_init(r, buf, (size_t)size);
	h5_rd_skip(r, 5);
	client = h5_rd_u8(r);
	owner = h5_rd_addr(r, o->fmt);
	if (client != o->client)
		return h5_err_set(H5_ERR_FORMAT, "%s at 0x%llx: client id %u differs from the header's %u", sig,
				  (unsigned long long)addr, client, o->client);
	if (owner != o->hdr_addr)
		return h5_err_set(H5_ERR_FORMAT, "%s at 0x%llx: header address 0x%llx does not point back to %s at 0x%llx",
				  sig, (unsigned long long)addr, (unsigned long long)owner, o->hdr_sig,
				  (unsigned long long)o->hdr_addr);
	return 0;
}

void h5_arr_put_prefix(uint8_t *buf, const char *sig, unsigned version, unsigned client)
{
	memcpy(buf, sig, 4);
	buf[4] = (uint8_t)version;
	buf[5] = (uint8_t)client;
}

void h5_arr_put_cksum(uint8_t *buf, size_t len)
{
	h5_le_encode(buf + len - H5_ARR_CKSUM, h5_checksum_metadata(buf, len - H5_ARR_CKSUM), 4);
}

int h5_arr_check_len(size_t len, uint64_t want, const char *what)
{
	if (want == 0 || len != want)
		return h5_err_set(H5_ERR_INVAL, "%s encode: buffer of %zu bytes, need %llu", what, len,
				  (unsigned long long)want);
	return 0;
}

int h5_arr_conflict(h5_file *f, h5_cache_ref *ref, const char *what, uint64_t addr)
{
	h5_cache_release(f->meta, ref);
	return h5_err_set(H5_ERR_FORMAT, "%s at 0x%llx is claimed by two different array structures", what,
			  (unsigned long long)addr);
}

static void arr_page_free(void *obj) { free(obj); }

static int arr_page_load(void **obj, size_t *cost, void *ud)
{
	const h5_arr_page_load *l = ud;
	h5_arr_page *pg;
	int rc;

	if (l->size == 0 || l->size > SIZE_MAX - sizeof(*pg))
		return h5_err_set(H5_ERR_FORMAT, "%s at 0x%llx: size overflows", l->what, (unsigned long long)l->addr);
	if (!h5_file_range_ok(l->f, l->addr, l->size))
		return h5_err_set(H5_ERR_FORMAT, "%s at 0x%llx+%llu is outside the file", l->what,
				  (unsigned long long)l->addr, (unsigned long long)l->size);
	pg = malloc(sizeof(*pg) + (size_t)l->size);
	if (!pg)
		return h5_err_set(H5_ERR_NOMEM, "out of memory loading %s", l->what);
	pg->hdr_addr = l->hdr_addr;
	pg->tag = l->tag;
	pg->elmts = (uint8_t *)(pg + 1);
	rc = h5_file_read(l->f, l->addr, pg->elmts, (size_t)l->size);
	if (rc >= 0)
		rc = l->verify(l->h, l->addr, l->tag, pg->elmts, (size_t)l->size);
	if (rc < 0) {
		free(pg);
		return rc;
	}
	*obj = pg;
	*cost = sizeof(*pg) + (size_t)l->size;
	return 0;
}

int h5_arr_page_get(const h5_arr_page **out, h5_cache_ref *ref, h5_arr_page_load *l)
{
	int rc;

	*out = NULL;
	rc = h5_cache_get(ref, l->f->meta, l->kind, l->addr, arr_page_load, arr_page_free, l);
	if (rc < 0)
		return rc;
	*out = ref->obj;
	if ((*out)->hdr_addr != l->hdr_addr || (*out)->tag != l->tag) {
		*out = NULL;
		return h5_arr_conflict(l->f, ref, l->what, l->addr);
	}
	return 0;
}
