/*
 * fheap_block.c - the blocks of a fractal heap (spec III.G): the header
 * (FRHP), indirect blocks (FHIB) and direct blocks (FHDB), each a pure
 * decoder on (buf, len) that checks signature, version, checksum and
 * bounds, and its cached loader through f->meta. fheap.c walks them.
 *
 * A cached block remembers the heap, row count / size and heap offset it
 * was loaded for; when a pointer disagrees with that (a hostile file
 * sharing a block between two places, or looping back to an ancestor) it
 * is a format error, never a reinterpretation of the cached bytes.
 */
#include "base.h"
#include "rd.h"
#include "checksum.h"
#include "cache.h"
#include "file.h"
#include "filter.h"
#include "fheap_int.h"

static bool fh_pow2(uint64_t v) { return v && !(v & (v - 1)); }
/* libhdf5's H5VM_limit_enc_size. */
static unsigned fh_enc_size(uint64_t limit) { return fh_log2(limit) / 8 + 1; }

size_t h5_fh_hdr_fixed_size(const h5_fmt *fmt)
{
	/* signature..max managed size (14), 12 lengths, 3 addresses, table
	 * width, heap size bits, two row counts (8), checksum (4) */
	return 14 + 12 * (size_t)fmt->sizeof_size + 3 * (size_t)fmt->sizeof_addr + 8 + 4;
}

void h5_fh_hdr_free(void *obj)
{
	fh_hdr *h = obj;

	if (!h)
		return;
	h5_pline_clear(&h->pline);
	free(h);
}

/* Doubling-table geometry and ID layout derived from the stored
 * parameters; everything checked so later arithmetic cannot overflow. */
int h5_fh_hdr_derive(fh_hdr *h)
{
	unsigned long long a = (unsigned long long)h->addr;
	unsigned max_direct_bits;

	if (!fh_pow2(h->width))
		return h5_err_set(H5_ERR_FORMAT, "fractal heap header at 0x%llx: table width %u is not a power of two",
				  a, h->width);
	if (!fh_pow2(h->start_block_size))
		return h5_err_set(H5_ERR_FORMAT, "fractal heap header at 0x%llx: starting block size %llu is not a power of two",
				  a, (unsigned long long)h->start_block_size);
	if (!fh_pow2(h->max_direct_size) || h->max_direct_size < h->start_block_size)
		return h5_err_set(H5_ERR_FORMAT, "fractal heap header at 0x%llx: bad maximum direct block size %llu",
				  a, (unsigned long long)h->max_direct_size);
	if (h->max_direct_size > FH_MAX_DIRECT_SIZE)
		return h5_err_set(H5_ERR_LIMIT, "fractal heap header at 0x%llx: maximum direct block size %llu exceeds 2 GiB",
				  a, (unsigned long long)h->max_direct_size);
	h->start_bits = fh_log2(h->start_block_size);
	h->first_row_bits = h->start_bits + fh_log2(h->width);
	max_direct_bits = fh_log2(h->max_direct_size);
	if (h->max_heap_bits == 0 || h->max_heap_bits > 64 || h->max_heap_bits < h->first_row_bits)
		return h5_err_set(H5_ERR_FORMAT, "fractal heap header at 0x%llx: bad maximum heap size (%u bits)",
				  a, h->max_heap_bits);
	h->max_root_rows = h->max_heap_bits - h->first_row_bits + 1;
	h->max_direct_rows = max_direct_bits - h->start_bits + 2;
	h->num_id_first_row = h->start_block_size * h->width;
	/* Rows 0 and 1 hold starting-size blocks, each later row doubles. */
	h->row_block_size[0] = h->start_block_size;
	h->row_block_off[0] = 0;
	for (unsigned u = 1; u < h->max_root_rows; u++) {
		h->row_block_size[u] = h->start_block_size << (u - 1);
		h->row_block_off[u] = h->num_id_first_row << (u - 1);
	}
	if (h->curr_root_rows > h->max_root_rows)
		return h5_err_set(H5_ERR_FORMAT, "fractal heap header at 0x%llx: root indirect block has %u rows, at most %u",
				  a, h->curr_root_rows, h->max_root_rows);
	h->heap_off_size = (h->max_heap_bits + 7) / 8;
	h->heap_len_size = fh_enc_size(h->max_direct_size);
	if (fh_enc_size(h->max_man_size) < h->heap_len_size)
		h->heap_len_size = fh_enc_size(h->max_man_size);
	h->dblock_overhead = 4 + 1 + h->fmt.sizeof_addr + h->heap_off_size +
			     ((h->flags & FH_FLAG_CHECKSUM_DBLOCKS) ? 4 : 0);
	if (h->dblock_overhead >= h->start_block_size)
		return h5_err_set(H5_ERR_FORMAT, "fractal heap header at 0x%llx: %llu-byte blocks cannot hold the block prefix",
				  a, (unsigned long long)h->start_block_size);
	if (h->id_len == 0)
		return h5_err_set(H5_ERR_FORMAT, "fractal heap header at 0x%llx: heap ID length is 0", a);
	/* H5HF__tiny_init: an ID of 18 bytes or less keeps the length in 4 bits. */
	h->tiny_extended = (unsigned)h->id_len - 1 > FH_TINY_LEN_SHORT + 1;
	/* H5HF__huge_init: address and length go into the ID when they fit. */
	if (h->filtered)
		h->huge_direct = (unsigned)h->id_len - 1 >=
				 (unsigned)h->fmt.sizeof_addr + 2u * h->fmt.sizeof_size + 4u;
	else
		h->huge_direct = (unsigned)h->id_len - 1 >= (unsigned)h->fmt.sizeof_addr + h->fmt.sizeof_size;
	if (!h->huge_direct)
		h->huge_id_size = (unsigned)h->id_len - 1 < 8 ? (unsigned)h->id_len - 1 : 8;
	return 0;
}

/* Pure decoder of an FRHP image (the whole header, checksum included). */
static int fh_hdr_decode(fh_hdr *h, const h5_fmt *fmt, uint64_t addr, const uint8_t *buf, size_t len)
{
	size_t fixed = h5_fh_hdr_fixed_size(fmt);
	unsigned long long a = (unsigned long long)addr;
	const uint8_t *sig, *pl;
	size_t total;
	uint8_t version;
	h5_rd r;
	int rc;

	memset(h, 0, sizeof(*h));
	h->addr = addr;
	h->fmt = *fmt;
	if (len < fixed)
		return h5_err_set(H5_ERR_FORMAT, "fractal heap header at 0x%llx: truncated (%zu of %zu bytes)", a, len, fixed);
	h5_rd_init(&r, buf, len);
	sig = h5_rd_bytes(&r, 4);
	if (!sig || memcmp(sig, "FRHP", 4) != 0)
		return h5_err_set(H5_ERR_FORMAT, "fractal heap header at 0x%llx: bad signature", a);
	version = h5_rd_u8(&r);
	if (version != 0)
		return h5_err_set(H5_ERR_FORMAT, "fractal heap header at 0x%llx: unsupported version %u", a, version);
	h->id_len = h5_rd_u16(&r);
	h->filter_len = h5_rd_u16(&r);
	h->filtered = h->filter_len > 0;
	total = fixed + (h->filtered ? (size_t)fmt->sizeof_size + 4 + h->filter_len : 0);
	if (len < total)
		return h5_err_set(H5_ERR_FORMAT, "fractal heap header at 0x%llx: truncated (%zu of %zu bytes)", a, len, total);
	rc = h5_checksum_verify(buf, total, "fractal heap header", addr);
	if (rc < 0)
		return rc;
	h->hdr_size = total;
	h->flags = h5_rd_u8(&r);
	h->max_man_size = h5_rd_u32(&r);
	h->next_huge_id = h5_rd_uint(&r, fmt->sizeof_size);
	h->huge_bt2_addr = h5_rd_addr(&r, fmt);
	h->man_free = h5_rd_uint(&r, fmt->sizeof_size);    /* free space in managed blocks */
	h->fs_addr = h5_rd_addr(&r, fmt);   /* free-space manager address */
	h->man_size = h5_rd_uint(&r, fmt->sizeof_size);
	h->man_alloc = h5_rd_uint(&r, fmt->sizeof_size);   /* allocated managed space */
	h5_rd_skip(&r, fmt->sizeof_size);   /* direct block allocation iterator */
	h->man_nobjs = h5_rd_uint(&r, fmt->sizeof_size);
	h->huge_size = h5_rd_uint(&r, fmt->sizeof_size);
	h->huge_nobjs = h5_rd_uint(&r, fmt->sizeof_size);
	h5_rd_skip(&r, fmt->sizeof_size);   /* size of tiny objects */
	h->tiny_nobjs = h5_rd_uint(&r, fmt->sizeof_size);
	h->width = h5_rd_u16(&r);
	h->start_block_size = h5_rd_uint(&r, fmt->sizeof_size);
	h->max_direct_size = h5_rd_uint(&r, fmt->sizeof_size);
	h->max_heap_bits = h5_rd_u16(&r);
	h->start_root_rows = h5_rd_u16(&r);
	h->root_addr = h5_rd_addr(&r, fmt);
	h->curr_root_rows = h5_rd_u16(&r);
	if (h->filtered) {
		h->root_filt_size = h5_rd_uint(&r, fmt->sizeof_size);
		h->root_filt_mask = h5_rd_u32(&r);
		pl = h5_rd_bytes(&r, h->filter_len);
		if (!h5_rd_ok(&r))
			return h5_err_set(H5_ERR_FORMAT, "fractal heap header at 0x%llx: truncated", a);
		/* The I/O filter information is a Filter Pipeline message. */
		rc = h5_pline_decode(&h->pline, pl, h->filter_len);
		if (rc < 0)
			return h5_err_wrap(rc, "fractal heap header at 0x%llx: I/O filters: ", a);
	}
	if (!h5_rd_ok(&r))
		return h5_err_set(H5_ERR_FORMAT, "fractal heap header at 0x%llx: truncated", a);
	return h5_fh_hdr_derive(h);
}

/* Not h5_file_load_block(): the filter information makes the header
 * variable-size, so it is read in two steps. ud is an h5_block_load. */
int h5_fh_hdr_load(void **obj, size_t *cost, void *udp)
{
	const h5_block_load *ud = udp;
	size_t fixed = h5_fh_hdr_fixed_size(&ud->f->fmt);
	size_t total = fixed;
	uint8_t *buf = NULL;
	fh_hdr *h = NULL;
	int rc;

	rc = h5_file_read_alloc(&buf, ud->f, ud->addr, fixed);
	if (rc < 0)
		goto out;
	/* The filter information makes the header variable-size. */
	if (memcmp(buf, "FRHP", 4) == 0 && h5_le_decode(buf + 7, 2) > 0) {
		total += ud->f->fmt.sizeof_size + 4 + (size_t)h5_le_decode(buf + 7, 2);
		free(buf);
		buf = NULL;
		rc = h5_file_read_alloc(&buf, ud->f, ud->addr, total);
		if (rc < 0)
			goto out;
	}
	h = calloc(1, sizeof(*h));
	if (!h) {
		rc = h5_err_set(H5_ERR_NOMEM, "out of memory loading fractal heap header");
		goto out;
	}
	rc = fh_hdr_decode(h, &ud->f->fmt, ud->addr, buf, total);
	if (rc < 0)
		goto out;
	*obj = h;
	*cost = sizeof(*h) + total;
	h = NULL;
out:
	h5_fh_hdr_free(h);
	free(buf);
	return rc;
}

/* ---- what indirect and direct blocks share ------------------------------
 * Both begin with a signature, version 0, the heap header's address and
 * the block's offset in the heap's address space (III.G "Fractal Heap
 * Indirect Block", "Fractal Heap Direct Block"). */

/* A block kind: its cache key kind, loader, and names for errors. */
typedef struct fh_blk_class {
	uint32_t kind;              /* H5_CK_FHEAP_IBLOCK or _DBLOCK */
	const char *sig;
	const char *what;
	const char *unit;           /* of fh_blk.extent */
	h5_cache_load_fn load;
	h5_cache_free_fn free_fn;
} fh_blk_class;

static int fh_blk_sig(h5_rd *r, const fh_blk_class *k, uint64_t addr)
{
	const uint8_t *sig = h5_rd_bytes(r, 4);
	uint8_t version;

	if (!sig || memcmp(sig, k->sig, 4) != 0)
		return h5_err_set(H5_ERR_FORMAT, "fractal heap %s at 0x%llx: bad signature", k->what,
				  (unsigned long long)addr);
	version = h5_rd_u8(r);
	if (version != 0)
		return h5_err_set(H5_ERR_FORMAT, "fractal heap %s at 0x%llx: unsupported version %u", k->what,
				  (unsigned long long)addr, version);
	return 0;
}

/* The heap address and block offset after the version; the block must
 * belong to heap h. Called once the checksum is verified. */
static int fh_blk_owner(fh_blk *out, h5_rd *r, const fh_hdr *h, const fh_blk_class *k, uint64_t addr,
			uint64_t extent)
{
	unsigned long long a = (unsigned long long)addr;

	out->addr = addr;
	out->heap_addr = h5_rd_addr(r, &h->fmt);
	out->block_off = h5_rd_uint(r, h->heap_off_size);
	out->extent = extent;
	if (!h5_rd_ok(r))
		return h5_err_set(H5_ERR_FORMAT, "fractal heap %s at 0x%llx: truncated", k->what, a);
	if (out->heap_addr != h->addr)
		return h5_err_set(H5_ERR_FORMAT, "fractal heap %s at 0x%llx: belongs to heap 0x%llx, not 0x%llx",
				  k->what, a, (unsigned long long)out->heap_addr, (unsigned long long)h->addr);
	return 0;
}

/* The cached block want->addr, loaded by k->load(ud) when missing, must
 * have been loaded for the same heap, extent and heap offset as the
 * pointer reaching it now expects. */
static int fh_blk_get(const fh_blk **out, h5_cache_ref *ref, h5_fheap *fh, const fh_blk_class *k,
		      const fh_blk *want, void *ud)
{
	const fh_blk *b;
	int rc;

	*out = NULL;
	rc = h5_cache_get(ref, fh->pin.f->meta, k->kind, want->addr, k->load, k->free_fn, ud);
	if (rc < 0)
		return rc;
	b = ref->obj;
	if (b->heap_addr != want->heap_addr || b->extent != want->extent) {
		rc = h5_err_set(H5_ERR_LOOP, "fractal heap 0x%llx: %s 0x%llx reached as %llu %s, "
				"but it was loaded as %llu %s for heap 0x%llx", (unsigned long long)want->heap_addr,
				k->what, (unsigned long long)want->addr, (unsigned long long)want->extent, k->unit,
				(unsigned long long)b->extent, k->unit, (unsigned long long)b->heap_addr);
		goto out;
	}
	if (b->block_off != want->block_off) {
		rc = h5_err_set(H5_ERR_FORMAT, "fractal heap %s at 0x%llx: block offset %llu, expected %llu", k->what,
				(unsigned long long)want->addr, (unsigned long long)b->block_off,
				(unsigned long long)want->block_off);
		goto out;
	}
	*out = b;
	return 0;
out:
	h5_cache_release(fh->pin.f->meta, ref);
	return rc;
}

/* ---- indirect blocks --------------------------------------------------- */

static int fh_iblock_load(void **obj, size_t *cost, void *udp);

static void fh_iblock_free(void *obj)
{
	fh_iblock *ib = obj;

	if (!ib)
		return;
	free(ib->child);
	free(ib->filt_size);
	free(ib->filt_mask);
	free(ib);
}

static const fh_blk_class fh_iblock_class = {
	H5_CK_FHEAP_IBLOCK, "FHIB", "indirect block", "rows", fh_iblock_load, fh_iblock_free
};

static unsigned fh_iblock_direct_rows(const fh_hdr *h, unsigned nrows)
{
	return nrows < h->max_direct_rows ? nrows : h->max_direct_rows;
}

uint64_t h5_fh_iblock_bytes(const fh_hdr *h, unsigned nrows)
{
	uint64_t drows = fh_iblock_direct_rows(h, nrows);
	uint64_t irows = nrows - drows;
	uint64_t dent = h->fmt.sizeof_addr + (h->filtered ? (uint64_t)h->fmt.sizeof_size + 4 : 0);

	return 4 + 1 + h->fmt.sizeof_addr + h->heap_off_size + drows * h->width * dent +
	       irows * h->width * h->fmt.sizeof_addr + 4;
}

/* Pure decoder of an FHIB image of exactly h5_fh_iblock_bytes() bytes. */
static int fh_iblock_decode(fh_iblock **out, const fh_hdr *h, uint64_t addr, unsigned nrows,
			    const uint8_t *buf, size_t len)
{
	unsigned long long a = (unsigned long long)addr;
	uint64_t need = h5_fh_iblock_bytes(h, nrows);
	size_t ndirect = (size_t)fh_iblock_direct_rows(h, nrows) * h->width;
	fh_iblock *ib = NULL;
	fh_blk blk;
	h5_rd r;
	int rc;

	*out = NULL;
	if (len < need)
		return h5_err_set(H5_ERR_FORMAT, "fractal heap indirect block at 0x%llx: truncated (%zu of %llu bytes)",
				  a, len, (unsigned long long)need);
	h5_rd_init(&r, buf, (size_t)need);
	rc = fh_blk_sig(&r, &fh_iblock_class, addr);
	if (rc < 0)
		return rc;
	/* The checksum is the block's last 4 bytes. */
	rc = h5_checksum_verify(buf, (size_t)need, "fractal heap indirect block", addr);
	if (rc < 0)
		return rc;
	rc = fh_blk_owner(&blk, &r, h, &fh_iblock_class, addr, nrows);
	if (rc < 0)
		return rc;
	ib = calloc(1, sizeof(*ib));
	if (!ib)
		return h5_err_set(H5_ERR_NOMEM, "out of memory decoding fractal heap indirect block");
	ib->b = blk;
	ib->nrows = nrows;
	ib->nents = (size_t)nrows * h->width;
	ib->child = malloc(ib->nents * sizeof(*ib->child) + 1);
	if (h->filtered) {
		ib->filt_size = calloc(ndirect + 1, sizeof(*ib->filt_size));
		ib->filt_mask = calloc(ndirect + 1, sizeof(*ib->filt_mask));
	}
	if (!ib->child || (h->filtered && (!ib->filt_size || !ib->filt_mask))) {
		rc = h5_err_set(H5_ERR_NOMEM, "out of memory decoding fractal heap indirect block");
		goto out;
	}
	for (size_t i = 0; i < ib->nents; i++) {
		ib->child[i] = h5_rd_addr(&r, &h->fmt);
		if (h->filtered && i < ndirect) {
			ib->filt_size[i] = h5_rd_uint(&r, h->fmt.sizeof_size);
			ib->filt_mask[i] = h5_rd_u32(&r);
		}
	}
	if (!h5_rd_ok(&r)) {
		rc = h5_err_set(H5_ERR_FORMAT, "fractal heap indirect block at 0x%llx: truncated", a);
		goto out;
	}
	*out = ib;
	ib = NULL;
	rc = 0;
out:
	fh_iblock_free(ib);
	return rc;
}

struct fh_iblock_ud {
	h5_block_load b;            /* first: what h5_file_load_block() sees */
	const fh_hdr *hdr;
	unsigned nrows;
};

static int fh_iblock_dec(void **obj, size_t *cost, const uint8_t *buf, size_t len, const h5_block_load *b)
{
	const struct fh_iblock_ud *ud = (const struct fh_iblock_ud *)b;
	fh_iblock *ib;
	int rc;

	rc = fh_iblock_decode(&ib, ud->hdr, b->addr, ud->nrows, buf, len);
	if (rc < 0)
		return rc;
	*obj = ib;
	*cost = sizeof(*ib) + ib->nents * (sizeof(uint64_t) * (ud->hdr->filtered ? 2 : 1) +
					   (ud->hdr->filtered ? sizeof(uint32_t) : 0));
	return 0;
}

static int fh_iblock_load(void **obj, size_t *cost, void *udp)
{
	struct fh_iblock_ud *ud = udp;

	ud->b.size = h5_fh_iblock_bytes(ud->hdr, ud->nrows);
	if (ud->b.size > SIZE_MAX)
		return h5_err_set(H5_ERR_FORMAT, "fractal heap indirect block at 0x%llx: too large",
				  (unsigned long long)ud->b.addr);
	/* h5_file_read_alloc refuses ranges past the end of the file, which
	 * bounds the entry arrays allocated by the decoder too. */
	return h5_file_load_block(obj, cost, &ud->b);
}

int h5_fh_iblock_get(const fh_iblock **out, h5_cache_ref *ref, h5_fheap *fh, uint64_t addr, unsigned nrows,
		     uint64_t block_off)
{
	struct fh_iblock_ud ud = { { fh->pin.f, addr, 0, "fractal heap indirect block", 0, fh_iblock_dec }, fh->hdr,
				   nrows };
	fh_blk want = { addr, fh->hdr->addr, block_off, nrows };

	return fh_blk_get((const fh_blk **)out, ref, fh, &fh_iblock_class, &want, &ud);
}

/* ---- direct blocks ----------------------------------------------------- */

static int fh_dblock_load(void **obj, size_t *cost, void *udp);

static void fh_dblock_free(void *obj)
{
	fh_dblock *db = obj;

	if (!db)
		return;
	free(db->data);
	free(db);
}

static const fh_blk_class fh_dblock_class = {
	H5_CK_FHEAP_DBLOCK, "FHDB", "direct block", "bytes", fh_dblock_load, fh_dblock_free
};

/* Pure verifier/decoder of an (unfiltered) FHDB image of exactly size bytes.
 * Takes ownership of buf, whose checksum field it zeroes and restores. */
static int fh_dblock_decode(fh_dblock **out, const fh_hdr *h, uint64_t addr, uint8_t *buf, size_t size)
{
	unsigned long long a = (unsigned long long)addr;
	fh_dblock *db;
	fh_blk blk;
	h5_rd r;
	int rc;

	*out = NULL;
	if (size < h->dblock_overhead)
		return h5_err_set(H5_ERR_FORMAT, "fractal heap direct block at 0x%llx: truncated", a);
	h5_rd_init(&r, buf, size);
	rc = fh_blk_sig(&r, &fh_dblock_class, addr);
	if (rc < 0)
		return rc;
	if (h->flags & FH_FLAG_CHECKSUM_DBLOCKS) {
		/* The checksum follows the prefix and covers the whole block
		 * with its own field zeroed (libhdf5
		 * H5HF__cache_dblock_verify_chksum). */
		uint8_t *chk = buf + h->dblock_overhead - 4;
		uint32_t stored = (uint32_t)h5_le_decode(chk, 4);
		uint32_t computed;

		memset(chk, 0, 4);
		computed = h5_checksum_metadata(buf, size);
		h5_le_encode(chk, stored, 4);
		if (stored != computed)
			return h5_err_set(H5_ERR_CHECKSUM, "fractal heap direct block at 0x%llx: checksum mismatch "
					  "(stored 0x%08x, computed 0x%08x)", a, stored, computed);
	}
	rc = fh_blk_owner(&blk, &r, h, &fh_dblock_class, addr, size);
	if (rc < 0)
		return rc;
	db = calloc(1, sizeof(*db));
	if (!db)
		return h5_err_set(H5_ERR_NOMEM, "out of memory decoding fractal heap direct block");
	db->b = blk;
	db->size = size;
	db->data = buf;
	*out = db;
	return 0;
}

struct fh_dblock_ud {
	h5_file *f;
	const fh_hdr *hdr;
	uint64_t addr;
	size_t size;            /* the block's size in the doubling table */
	uint64_t disk_size;     /* bytes on disk (filtered heaps) */
	uint32_t mask;
};

static int fh_dblock_load(void **obj, size_t *cost, void *udp)
{
	struct fh_dblock_ud *ud = udp;
	const fh_hdr *h = ud->hdr;
	uint8_t *buf = NULL;
	size_t len = ud->size;
	fh_dblock *db = NULL;
	int rc;

	if (h->filtered) {
		if (ud->disk_size == 0 || ud->disk_size > SIZE_MAX) {
			rc = h5_err_set(H5_ERR_FORMAT, "fractal heap direct block at 0x%llx: bad filtered size %llu",
					(unsigned long long)ud->addr, (unsigned long long)ud->disk_size);
			goto out;
		}
		len = (size_t)ud->disk_size;
	}
	rc = h5_file_read_alloc(&buf, ud->f, ud->addr, len);
	if (rc < 0)
		goto out;
	if (h->filtered) {
		rc = h5_filter_decode(&buf, &len, &h->pline, ud->mask, ud->size);
		if (rc < 0) {
			rc = h5_err_wrap(rc, "fractal heap direct block at 0x%llx: ", (unsigned long long)ud->addr);
			goto out;
		}
		if (len != ud->size) {
			rc = h5_err_set(H5_ERR_FORMAT, "fractal heap direct block at 0x%llx: decodes to %zu bytes, expected %zu",
					(unsigned long long)ud->addr, len, ud->size);
			goto out;
		}
	}
	rc = fh_dblock_decode(&db, h, ud->addr, buf, len);
	if (rc < 0)
		goto out;
	buf = NULL; /* owned by db */
	*obj = db;
	*cost = sizeof(*db) + db->size;
out:
	free(buf);
	return rc;
}

int h5_fh_dblock_get(const fh_dblock **out, h5_cache_ref *ref, h5_fheap *fh, uint64_t addr, uint64_t size,
		     uint64_t block_off, uint64_t disk_size, uint32_t mask)
{
	struct fh_dblock_ud ud = { fh->pin.f, fh->hdr, addr, (size_t)size, disk_size, mask };
	fh_blk want = { addr, fh->hdr->addr, block_off, size };

	*out = NULL;
	if (!h5_addr_defined(addr))
		return h5_err_set(H5_ERR_FORMAT, "fractal heap 0x%llx: object lies in an unallocated direct block",
				  (unsigned long long)fh->hdr->addr);
	return fh_blk_get((const fh_blk **)out, ref, fh, &fh_dblock_class, &want, &ud);
}
