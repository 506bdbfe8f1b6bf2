/* array_int.h - what the extensible and fixed arrays (earray*.c,
 * farray.c) share below their own formats: every block after the header
 * starts with a signature, version and client id and points back to its
 * header, ends with a checksum, and data block pages are elements plus a
 * checksum (spec VII.C, VII.D). One copy of those checks, encoders and
 * the cached page loader. */
#ifndef H5_ARRAY_INT_H
#define H5_ARRAY_INT_H

#include "array.h"
#include "rd.h"
#include "cache.h"
#include "file.h"

#define H5_ARR_PREFIX 6u  /* signature, version, client id */
#define H5_ARR_CKSUM 4u

/* The low n bytes (a stored block offset of n bytes). */
static inline uint64_t h5_arr_off_mask(unsigned n)
{
	return n >= 8 ? UINT64_MAX : (UINT64_C(1) << (8 * n)) - 1;
}

/* The header decoders' start and end (EAHD, FAHD): h5_block_check of
 * exactly size bytes, r past signature and version, the client id and
 * element size read; then, once the rest is read, that nothing was cut
 * and that (client, elmt_size) describe a chunk record. */
int h5_arr_hdr_open(h5_rd *r, uint8_t *client, uint8_t *elmt_size, const char *sig, unsigned version,
		    uint64_t addr, const uint8_t *buf, size_t len, uint64_t size);
int h5_arr_hdr_close(const h5_rd *r, const h5_fmt *fmt, const char *sig, uint64_t addr, unsigned client,
		     unsigned elmt_size);

/* Whose a block after the header is: each such block names its header's
 * client id and address right after signature and version. */
typedef struct h5_arr_owner {
	const h5_fmt *fmt;
	const char *hdr_sig;    /* "EAHD", "FAHD": names the header in errors */
	unsigned version, client;
	uint64_t hdr_addr;
} h5_arr_owner;

/* The start of such a block's decoder: h5_block_check (signature sig,
 * the owner's version, the checksum of exactly size bytes), then r on the
 * image just past client id and header address, which must be the
 * owner's. */
int h5_arr_block_open(h5_rd *r, const h5_arr_owner *o, const char *sig, uint64_t addr, const uint8_t *buf,
		      size_t len, uint64_t size);

/* Encoders: the prefix, the trailing checksum over the rest of buf, and
 * the check that buf is exactly the size wanted (H5_ERR_INVAL if not). */
void h5_arr_put_prefix(uint8_t *buf, const char *sig, unsigned version, unsigned client);
void h5_arr_put_cksum(uint8_t *buf, size_t len);
int h5_arr_check_len(size_t len, uint64_t want, const char *what);

/* A cached block decoded for another header (or another place in it):
 * two structures claim the same bytes. Releases *ref. */
int h5_arr_conflict(h5_file *f, h5_cache_ref *ref, const char *what, uint64_t addr);

/* A data block page (the cached H5_CK_EA_PAGE / H5_CK_FA_PAGE object). */
typedef struct h5_arr_page {
	uint64_t hdr_addr;
	uint64_t tag;     /* what it was loaded as: EA elements per page, FA page index */
	uint8_t *elmts;   /* points at the page image (checksum included) */
} h5_arr_page;

/* How to load one page: size bytes at addr, verified by verify(h, addr,
 * tag, buf, len) (the format's page decoder), cached under kind. */
typedef struct h5_arr_page_load {
	h5_file *f;
	uint32_t kind;
	uint64_t addr, size;
	const void *h;    /* the header, for verify */
	uint64_t hdr_addr, tag;
	const char *what; /* names the page in errors */
	int (*verify)(const void *h, uint64_t addr, uint64_t tag, const uint8_t *buf, size_t len);
} h5_arr_page_load;

/* The cached page; a hit loaded for another (hdr_addr, tag) is a conflict.
 * *ref is released by the caller (h5_cache_release). */
int h5_arr_page_get(const h5_arr_page **out, h5_cache_ref *ref, h5_arr_page_load *l);

#endif
