/*
 * fheap.c - fractal heaps (spec III.G "Disk Format: Level 1G - Fractal Heap").
 *
 * A fractal heap stores variable-size objects (link messages of dense
 * groups, attribute messages of dense attribute storage, shared messages)
 * and hands out heap IDs. An ID is one of three kinds (spec "Fractal Heap
 * ID" layouts):
 *  - tiny: the object bytes are inside the ID itself;
 *  - huge: the object is stored alone in the file, found either from the
 *    address/length in the ID ("directly accessed") or through a v2 B-tree
 *    of type 1/2 keyed by an object number ("indirectly accessed");
 *  - managed: an offset/length in the heap's linear address space, which a
 *    doubling table maps to direct blocks (FHDB), reached from the root
 *    through indirect blocks (FHIB).
 *
 * Header, indirect and direct blocks are cached in f->meta. A cached block
 * remembers the heap, row count / size and heap offset it was loaded for;
 * when a pointer disagrees with that (a hostile file sharing a block between
 * two places, or looping back to an ancestor) it is a format error, never a
 * reinterpretation of the cached bytes.
 */
#include "internal.h"

#define FH_ID_VERSION_MASK 0xC0
#define FH_ID_TYPE_MASK 0x30
#define FH_ID_MANAGED 0x00
#define FH_ID_HUGE 0x10
#define FH_ID_TINY 0x20
#define FH_TINY_LEN_SHORT 16u       /* longest tiny object of the 'normal' form */
#define FH_FLAG_CHECKSUM_DBLOCKS 0x02
#define FH_MAX_ROWS 65              /* max_heap_bits <= 64 */
#define FH_MAX_DIRECT_SIZE ((uint64_t)1 << 31) /* libhdf5's H5HF_MAX_DIRECT_SIZE_LIMIT */

/* The decoded header (the cached H5_CK_FHEAP_HDR object). */
typedef struct fh_hdr {
	uint64_t addr;
	h5_fmt fmt;
	uint16_t id_len;
	uint16_t filter_len;
	uint8_t flags;
	uint32_t max_man_size;
	uint64_t next_huge_id;
	uint64_t huge_bt2_addr;
	uint64_t man_size;          /* size of the managed linear address space */
	uint64_t man_nobjs, huge_nobjs, tiny_nobjs;
	uint16_t width;
	uint64_t start_block_size;
	uint64_t max_direct_size;
	uint16_t max_heap_bits;
	uint16_t start_root_rows;
	uint64_t root_addr;
	uint16_t curr_root_rows;    /* 0: root_addr is a direct block */
	uint64_t root_filt_size;    /* filtered heaps: root direct block on disk */
	uint32_t root_filt_mask;
	bool filtered;
	h5_pline pline;
	/* derived, as libhdf5's H5HF__hdr_finish_init and H5HF__dtable_init */
	unsigned heap_off_size;     /* bytes of a heap offset (IDs and block prefixes) */
	unsigned heap_len_size;     /* bytes of a managed object length in IDs */
	unsigned start_bits, first_row_bits;
	unsigned max_root_rows, max_direct_rows;
	uint64_t num_id_first_row;  /* heap bytes addressed by row 0 */
	uint64_t row_block_size[FH_MAX_ROWS];
	uint64_t row_block_off[FH_MAX_ROWS];
	unsigned dblock_overhead;   /* direct block prefix bytes */
	bool tiny_extended;
	bool huge_direct;
	unsigned huge_id_size;
} fh_hdr;

/* A decoded indirect block (H5_CK_FHEAP_IBLOCK). */
typedef struct fh_iblock {
	uint64_t addr;
	uint64_t heap_addr;
	uint64_t block_off;
	unsigned nrows;
	size_t nents;               /* nrows * width */
	uint64_t *child;            /* nents addresses (UNDEF: not allocated) */
	uint64_t *filt_size;        /* filtered heaps: direct entries only */
	uint32_t *filt_mask;
} fh_iblock;

/* A verified, unfiltered direct block (H5_CK_FHEAP_DBLOCK). */
typedef struct fh_dblock {
	uint64_t addr;
	uint64_t heap_addr;
	uint64_t block_off;
	size_t size;
	uint8_t *data;              /* the whole block, prefix included */
} fh_dblock;

struct h5_fheap {
	h5_pinned pin;              /* first: the header stays cached while open */
	const fh_hdr *hdr;
};

static bool fh_pow2(uint64_t v) { return v && !(v & (v - 1)); }

static unsigned fh_log2(uint64_t v)
{
	unsigned b = 0;

	while (v >>= 1)
		b++;
	return b;
}

/* libhdf5's H5VM_limit_enc_size. */
static unsigned fh_enc_size(uint64_t limit) { return fh_log2(limit) / 8 + 1; }

static size_t fh_hdr_fixed_size(const h5_fmt *fmt)
{
	/* signature..max managed size (14), 12 lengths, 3 addresses, table
	 * width, heap size bits, two row counts (8), checksum (4) */
	return 14 + 12 * (size_t)fmt->sizeof_size + 3 * (size_t)fmt->sizeof_addr + 8 + 4;
}

static void fh_hdr_free(void *obj)
{
	fh_hdr *h = obj;

	if (!h)
		return;
	h5_pline_clear(&h->pline);
	free(h);
}

/* Doubling-table geometry and ID layout derived from the stored
 * parameters; everything checked so later arithmetic cannot overflow. */
static int fh_hdr_derive(fh_hdr *h)
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
	size_t fixed = fh_hdr_fixed_size(fmt);
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
	h->flags = h5_rd_u8(&r);
	h->max_man_size = h5_rd_u32(&r);
	h->next_huge_id = h5_rd_uint(&r, fmt->sizeof_size);
	h->huge_bt2_addr = h5_rd_addr(&r, fmt);
	h5_rd_skip(&r, fmt->sizeof_size);   /* free space in managed blocks */
	h5_rd_skip(&r, fmt->sizeof_addr);   /* free-space manager address */
	h->man_size = h5_rd_uint(&r, fmt->sizeof_size);
	h5_rd_skip(&r, fmt->sizeof_size);   /* allocated managed space */
	h5_rd_skip(&r, fmt->sizeof_size);   /* direct block allocation iterator */
	h->man_nobjs = h5_rd_uint(&r, fmt->sizeof_size);
	h5_rd_skip(&r, fmt->sizeof_size);   /* size of huge objects */
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
	return fh_hdr_derive(h);
}

/* Not h5_file_load_block(): the filter information makes the header
 * variable-size, so it is read in two steps. ud is an h5_block_load. */
static int fh_hdr_load(void **obj, size_t *cost, void *udp)
{
	const h5_block_load *ud = udp;
	size_t fixed = fh_hdr_fixed_size(&ud->f->fmt);
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
	fh_hdr_free(h);
	free(buf);
	return rc;
}

int h5_fheap_open(h5_fheap **out, h5_file *f, uint64_t addr)
{
	h5_block_load b = { .f = f, .addr = addr };
	h5_pinned *p;
	int rc = h5_pinned_open(&p, sizeof(h5_fheap), "fractal heap", H5_CK_FHEAP_HDR,
				 fh_hdr_load, fh_hdr_free, &b);

	*out = (h5_fheap *)p; /* pin is the first member */
	if (p)
		(*out)->hdr = p->ref.obj;
	return rc;
}

void h5_fheap_close(h5_fheap *h) { h5_pinned_close(h ? &h->pin : NULL); }

size_t h5_fheap_id_len(const h5_fheap *h) { return h->hdr->id_len; }

/* ---- indirect blocks --------------------------------------------------- */

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

static unsigned fh_iblock_direct_rows(const fh_hdr *h, unsigned nrows)
{
	return nrows < h->max_direct_rows ? nrows : h->max_direct_rows;
}

static uint64_t fh_iblock_bytes(const fh_hdr *h, unsigned nrows)
{
	uint64_t drows = fh_iblock_direct_rows(h, nrows);
	uint64_t irows = nrows - drows;
	uint64_t dent = h->fmt.sizeof_addr + (h->filtered ? (uint64_t)h->fmt.sizeof_size + 4 : 0);

	return 4 + 1 + h->fmt.sizeof_addr + h->heap_off_size + drows * h->width * dent +
	       irows * h->width * h->fmt.sizeof_addr + 4;
}

/* Pure decoder of an FHIB image of exactly fh_iblock_bytes() bytes. */
static int fh_iblock_decode(fh_iblock **out, const fh_hdr *h, uint64_t addr, unsigned nrows,
			    const uint8_t *buf, size_t len)
{
	unsigned long long a = (unsigned long long)addr;
	uint64_t need = fh_iblock_bytes(h, nrows);
	size_t ndirect = (size_t)fh_iblock_direct_rows(h, nrows) * h->width;
	const uint8_t *sig;
	fh_iblock *ib = NULL;
	uint8_t version;
	uint64_t heap_addr;
	h5_rd r;
	int rc;

	*out = NULL;
	if (len < need)
		return h5_err_set(H5_ERR_FORMAT, "fractal heap indirect block at 0x%llx: truncated (%zu of %llu bytes)",
				  a, len, (unsigned long long)need);
	h5_rd_init(&r, buf, (size_t)need);
	sig = h5_rd_bytes(&r, 4);
	if (!sig || memcmp(sig, "FHIB", 4) != 0)
		return h5_err_set(H5_ERR_FORMAT, "fractal heap indirect block at 0x%llx: bad signature", a);
	version = h5_rd_u8(&r);
	if (version != 0)
		return h5_err_set(H5_ERR_FORMAT, "fractal heap indirect block at 0x%llx: unsupported version %u", a, version);
	rc = h5_checksum_verify(buf, (size_t)need, "fractal heap indirect block", addr);
	if (rc < 0)
		return rc;
	heap_addr = h5_rd_addr(&r, &h->fmt);
	if (heap_addr != h->addr)
		return h5_err_set(H5_ERR_FORMAT, "fractal heap indirect block at 0x%llx: belongs to heap 0x%llx, not 0x%llx",
				  a, (unsigned long long)heap_addr, (unsigned long long)h->addr);
	ib = calloc(1, sizeof(*ib));
	if (!ib)
		return h5_err_set(H5_ERR_NOMEM, "out of memory decoding fractal heap indirect block");
	ib->addr = addr;
	ib->heap_addr = heap_addr;
	ib->nrows = nrows;
	ib->nents = (size_t)nrows * h->width;
	ib->block_off = h5_rd_uint(&r, h->heap_off_size);
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

	ud->b.size = fh_iblock_bytes(ud->hdr, ud->nrows);
	if (ud->b.size > SIZE_MAX)
		return h5_err_set(H5_ERR_FORMAT, "fractal heap indirect block at 0x%llx: too large",
				  (unsigned long long)ud->b.addr);
	/* h5_file_read_alloc refuses ranges past the end of the file, which
	 * bounds the entry arrays allocated by the decoder too. */
	return h5_file_load_block(obj, cost, &ud->b);
}

static int fh_iblock_get(const fh_iblock **out, h5_cache_ref *ref, h5_fheap *fh, uint64_t addr,
			 unsigned nrows, uint64_t block_off)
{
	struct fh_iblock_ud ud = { { fh->pin.f, addr, 0, "fractal heap indirect block", 0, fh_iblock_dec }, fh->hdr,
				   nrows };
	const fh_iblock *ib;
	int rc;

	*out = NULL;
	rc = h5_cache_get(ref, fh->pin.f->meta, H5_CK_FHEAP_IBLOCK, addr, fh_iblock_load, fh_iblock_free, &ud);
	if (rc < 0)
		return rc;
	ib = ref->obj;
	if (ib->heap_addr != fh->hdr->addr || ib->nrows != nrows) {
		rc = h5_err_set(H5_ERR_LOOP, "fractal heap 0x%llx: indirect block 0x%llx reached with %u rows, "
				"but it was loaded with %u rows for heap 0x%llx", (unsigned long long)fh->hdr->addr,
				(unsigned long long)addr, nrows, ib->nrows, (unsigned long long)ib->heap_addr);
		goto out;
	}
	if (ib->block_off != block_off) {
		rc = h5_err_set(H5_ERR_FORMAT, "fractal heap indirect block at 0x%llx: block offset %llu, expected %llu",
				(unsigned long long)addr, (unsigned long long)ib->block_off,
				(unsigned long long)block_off);
		goto out;
	}
	*out = ib;
	return 0;
out:
	h5_cache_release(fh->pin.f->meta, ref);
	return rc;
}

/* ---- direct blocks ----------------------------------------------------- */

static void fh_dblock_free(void *obj)
{
	fh_dblock *db = obj;

	if (!db)
		return;
	free(db->data);
	free(db);
}

/* Pure verifier/decoder of an (unfiltered) FHDB image of exactly size bytes.
 * Takes ownership of buf, whose checksum field it zeroes and restores. */
static int fh_dblock_decode(fh_dblock **out, const fh_hdr *h, uint64_t addr, uint8_t *buf, size_t size)
{
	unsigned long long a = (unsigned long long)addr;
	const uint8_t *sig;
	fh_dblock *db;
	uint8_t version;
	uint64_t heap_addr, block_off;
	h5_rd r;

	*out = NULL;
	if (size < h->dblock_overhead)
		return h5_err_set(H5_ERR_FORMAT, "fractal heap direct block at 0x%llx: truncated", a);
	h5_rd_init(&r, buf, size);
	sig = h5_rd_bytes(&r, 4);
	if (!sig || memcmp(sig, "FHDB", 4) != 0)
		return h5_err_set(H5_ERR_FORMAT, "fractal heap direct block at 0x%llx: bad signature", a);
	version = h5_rd_u8(&r);
	if (version != 0)
		return h5_err_set(H5_ERR_FORMAT, "fractal heap direct block at 0x%llx: unsupported version %u", a, version);
	heap_addr = h5_rd_addr(&r, &h->fmt);
	block_off = h5_rd_uint(&r, h->heap_off_size);
	if (!h5_rd_ok(&r))
		return h5_err_set(H5_ERR_FORMAT, "fractal heap direct block at 0x%llx: truncated", a);
	if (h->flags & FH_FLAG_CHECKSUM_DBLOCKS) {
		/* The checksum covers the whole block with its own field
		 * zeroed (libhdf5 H5HF__cache_dblock_verify_chksum). */
		uint8_t *chk = buf + r.pos;
		uint32_t stored = (uint32_t)h5_le_decode(chk, 4);
		uint32_t computed;

		memset(chk, 0, 4);
		computed = h5_checksum_metadata(buf, size);
		h5_le_encode(chk, stored, 4);
		if (stored != computed)
			return h5_err_set(H5_ERR_CHECKSUM, "fractal heap direct block at 0x%llx: checksum mismatch "
					  "(stored 0x%08x, computed 0x%08x)", a, stored, computed);
	}
	if (heap_addr != h->addr)
		return h5_err_set(H5_ERR_FORMAT, "fractal heap direct block at 0x%llx: belongs to heap 0x%llx, not 0x%llx",
				  a, (unsigned long long)heap_addr, (unsigned long long)h->addr);
	db = calloc(1, sizeof(*db));
	if (!db)
		return h5_err_set(H5_ERR_NOMEM, "out of memory decoding fractal heap direct block");
	db->addr = addr;
	db->heap_addr = heap_addr;
	db->block_off = block_off;
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
		rc = h5_filter_decode(&buf, &len, &h->pline, ud->mask, NULL, ud->size);
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

static int fh_dblock_get(const fh_dblock **out, h5_cache_ref *ref, h5_fheap *fh, uint64_t addr, uint64_t size,
			 uint64_t block_off, uint64_t disk_size, uint32_t mask)
{
	struct fh_dblock_ud ud = { fh->pin.f, fh->hdr, addr, (size_t)size, disk_size, mask };
	const fh_dblock *db;
	int rc;

	*out = NULL;
	if (!h5_addr_defined(addr))
		return h5_err_set(H5_ERR_FORMAT, "fractal heap 0x%llx: object lies in an unallocated direct block",
				  (unsigned long long)fh->hdr->addr);
	rc = h5_cache_get(ref, fh->pin.f->meta, H5_CK_FHEAP_DBLOCK, addr, fh_dblock_load, fh_dblock_free, &ud);
	if (rc < 0)
		return rc;
	db = ref->obj;
	if (db->heap_addr != fh->hdr->addr || db->size != size) {
		rc = h5_err_set(H5_ERR_LOOP, "fractal heap 0x%llx: direct block 0x%llx reached as %llu bytes, "
				"but it was loaded as %zu bytes for heap 0x%llx", (unsigned long long)fh->hdr->addr,
				(unsigned long long)addr, (unsigned long long)size, db->size,
				(unsigned long long)db->heap_addr);
		goto out;
	}
	if (db->block_off != block_off) {
		rc = h5_err_set(H5_ERR_FORMAT, "fractal heap direct block at 0x%llx: block offset %llu, expected %llu",
				(unsigned long long)addr, (unsigned long long)db->block_off,
				(unsigned long long)block_off);
		goto out;
	}
	*out = db;
	return 0;
out:
	h5_cache_release(fh->pin.f->meta, ref);
	return rc;
}

/* ---- objects ----------------------------------------------------------- */

/* Row and column of a heap offset relative to a block's start
 * (H5HF__dtable_lookup). */
static void fh_dtable_lookup(const fh_hdr *h, uint64_t off, unsigned *row, uint64_t *col)
{
	if (off < h->num_id_first_row) {
		*row = 0;
		*col = off / h->start_block_size;
	} else {
		unsigned high = fh_log2(off);

		*row = high - h->first_row_bits + 1;
		*col = *row < h->max_root_rows ? (off - ((uint64_t)1 << high)) / h->row_block_size[*row] : 0;
	}
}

static int fh_read_managed(uint8_t **out, size_t *out_len, h5_fheap *fh, const uint8_t *id, size_t id_len)
{
	const fh_hdr *h = fh->hdr;
	unsigned long long ha = (unsigned long long)h->addr;
	h5_cache_ref iref = { 0 }, dref = { 0 };
	bool have_iref = false, have_dref = false;
	const fh_dblock *db;
	uint64_t off, len, dsize, dblock_addr, dblock_off, disk_size = 0, blk_off;
	uint32_t mask = 0;
	uint8_t *obj;
	int rc;

	if (id_len < 1 + (size_t)h->heap_off_size + h->heap_len_size)
		return h5_err_set(H5_ERR_FORMAT, "fractal heap 0x%llx: %zu-byte managed heap ID is too short", ha, id_len);
	off = h5_le_decode(id + 1, h->heap_off_size);
	len = h5_le_decode(id + 1 + h->heap_off_size, h->heap_len_size);
	if (off == 0 || off > h->man_size)
		return h5_err_set(H5_ERR_FORMAT, "fractal heap 0x%llx: object offset %llu outside the managed space (%llu bytes)",
				  ha, (unsigned long long)off, (unsigned long long)h->man_size);
	if (len == 0 || len > h->max_man_size || len > h->max_direct_size)
		return h5_err_set(H5_ERR_FORMAT, "fractal heap 0x%llx: bad managed object length %llu", ha,
				  (unsigned long long)len);
	if (!h5_addr_defined(h->root_addr))
		return h5_err_set(H5_ERR_FORMAT, "fractal heap 0x%llx: managed object in an empty heap", ha);

	if (h->curr_root_rows == 0) {
		/* The root is a single starting-size direct block. */
		dblock_addr = h->root_addr;
		dsize = h->start_block_size;
		dblock_off = 0;
		disk_size = h->root_filt_size;
		mask = h->root_filt_mask;
	} else {
		const fh_iblock *ib;
		uint64_t iblock_addr = h->root_addr, iblock_off = 0, col;
		unsigned nrows = h->curr_root_rows, row, depth = 0;
		size_t entry;

		for (;;) {
			rc = fh_iblock_get(&ib, &iref, fh, iblock_addr, nrows, iblock_off);
			if (rc < 0)
				return rc;
			have_iref = true;
			fh_dtable_lookup(h, off - iblock_off, &row, &col);
			if (row >= ib->nrows || col >= h->width) {
				rc = h5_err_set(H5_ERR_FORMAT, "fractal heap 0x%llx: offset %llu beyond indirect block 0x%llx",
						ha, (unsigned long long)off, (unsigned long long)iblock_addr);
				goto out;
			}
			entry = (size_t)row * h->width + (size_t)col;
			if (row < h->max_direct_rows)
				break;
			/* A child indirect block: it covers fewer rows than its
			 * parent, so the descent always ends (the depth counter
			 * only guards against arithmetic surprises). */
			if (++depth > H5_MAX_BTREE_DEPTH) {
				rc = h5_err_set(H5_ERR_LIMIT, "fractal heap 0x%llx: indirect blocks nest too deep", ha);
				goto out;
			}
			if (!h5_addr_defined(ib->child[entry])) {
				rc = h5_err_set(H5_ERR_FORMAT, "fractal heap 0x%llx: offset %llu lies in an unallocated indirect block",
						ha, (unsigned long long)off);
				goto out;
			}
			iblock_addr = ib->child[entry];
			iblock_off += h->row_block_off[row] + col * h->row_block_size[row];
			nrows = fh_log2(h->row_block_size[row]) - h->first_row_bits + 1;
			if (nrows >= ib->nrows) {
				rc = h5_err_set(H5_ERR_FORMAT, "fractal heap 0x%llx: child indirect block 0x%llx not smaller than its parent",
						ha, (unsigned long long)iblock_addr);
				goto out;
			}
			h5_cache_release(fh->pin.f->meta, &iref);
			have_iref = false;
		}
		dblock_addr = ib->child[entry];
		dsize = h->row_block_size[row];
		dblock_off = iblock_off + h->row_block_off[row] + col * h->row_block_size[row];
		if (h->filtered) {
			disk_size = ib->filt_size[entry];
			mask = ib->filt_mask[entry];
		}
		h5_cache_release(fh->pin.f->meta, &iref);
		have_iref = false;
	}

	rc = fh_dblock_get(&db, &dref, fh, dblock_addr, dsize, dblock_off, disk_size, mask);
	if (rc < 0)
		goto out;
	have_dref = true;
	blk_off = off - dblock_off;
	if (blk_off < h->dblock_overhead || blk_off >= db->size || len > db->size - blk_off) {
		rc = h5_err_set(H5_ERR_FORMAT, "fractal heap 0x%llx: object at offset %llu (%llu bytes) does not lie "
				"inside direct block 0x%llx", ha, (unsigned long long)off, (unsigned long long)len,
				(unsigned long long)dblock_addr);
		goto out;
	}
	obj = malloc((size_t)len);
	if (!obj) {
		rc = h5_err_set(H5_ERR_NOMEM, "out of memory reading a %llu-byte heap object", (unsigned long long)len);
		goto out;
	}
	memcpy(obj, db->data + blk_off, (size_t)len);
	*out = obj;
	*out_len = (size_t)len;
	rc = 0;
out:
	if (have_iref)
		h5_cache_release(fh->pin.f->meta, &iref);
	if (have_dref)
		h5_cache_release(fh->pin.f->meta, &dref);
	return rc;
}

static int fh_read_tiny(uint8_t **out, size_t *out_len, const fh_hdr *h, const uint8_t *id, size_t id_len)
{
	size_t skip = 1, len;
	uint8_t *obj;

	if (h->tiny_extended) {
		if (id_len < 2)
			return h5_err_set(H5_ERR_FORMAT, "fractal heap 0x%llx: tiny heap ID too short",
					  (unsigned long long)h->addr);
		len = (((size_t)id[0] & 0x0F) << 8 | id[1]) + 1;
		skip = 2;
	} else {
		len = ((size_t)id[0] & 0x0F) + 1;
	}
	if (len > id_len - skip)
		return h5_err_set(H5_ERR_FORMAT, "fractal heap 0x%llx: tiny object of %zu bytes overruns its %zu-byte ID",
				  (unsigned long long)h->addr, len, id_len);
	obj = malloc(len);
	if (!obj)
		return h5_err_set(H5_ERR_NOMEM, "out of memory");
	memcpy(obj, id + skip, len);
	*out = obj;
	*out_len = len;
	return 0;
}

/* v2 B-tree search for indirectly accessed huge objects (record types 1
 * and 2 end with the object number). */
struct fh_huge_key {
	uint64_t id;
	size_t id_off;          /* where the object number sits in a record */
	unsigned sizeof_size;
};

struct fh_huge_rec {
	const fh_hdr *hdr;
	uint64_t addr, len, mem_size;
	uint32_t mask;
	bool found;
};

static int fh_huge_cmp(const void *key, const uint8_t *rec, size_t len, void *ud)
{
	const struct fh_huge_key *k = key;
	uint64_t id;

	(void)ud;
	if (len < k->id_off + k->sizeof_size)
		return -1;
	id = h5_le_decode(rec + k->id_off, k->sizeof_size);
	return k->id < id ? -1 : k->id > id ? 1 : 0;
}

static int fh_huge_found(const uint8_t *rec, size_t len, void *udp)
{
	struct fh_huge_rec *r = udp;
	const h5_fmt *fmt = &r->hdr->fmt;
	h5_rd rd;

	h5_rd_init(&rd, rec, len);
	r->addr = h5_rd_addr(&rd, fmt);
	r->len = h5_rd_uint(&rd, fmt->sizeof_size);
	if (r->hdr->filtered) {
		r->mask = h5_rd_u32(&rd);
		r->mem_size = h5_rd_uint(&rd, fmt->sizeof_size);
	}
	if (!h5_rd_ok(&rd))
		return h5_err_set(H5_ERR_FORMAT, "fractal heap 0x%llx: huge object record truncated",
				  (unsigned long long)r->hdr->addr);
	r->found = true;
	return 0;
}

/* Where a huge object lives: from the ID itself ("directly accessed") or
 * from the huge-object v2 B-tree keyed by the object number in the ID. */
static int fh_huge_locate(struct fh_huge_rec *rec, h5_fheap *fh, const uint8_t *id, size_t id_len)
{
	const fh_hdr *h = fh->hdr;
	const h5_fmt *fmt = &h->fmt;
	unsigned long long ha = (unsigned long long)h->addr;
	struct fh_huge_key key;
	h5_bt2 *bt = NULL;
	uint8_t want = h->filtered ? 2 : 1;
	h5_rd r;
	int rc;

	if (h->huge_direct) {
		h5_rd_init(&r, id + 1, id_len - 1);
		rec->addr = h5_rd_addr(&r, fmt);
		rec->len = h5_rd_uint(&r, fmt->sizeof_size);
		if (h->filtered) {
			rec->mask = h5_rd_u32(&r);
			rec->mem_size = h5_rd_uint(&r, fmt->sizeof_size);
		}
		if (!h5_rd_ok(&r))
			return h5_err_set(H5_ERR_FORMAT, "fractal heap 0x%llx: huge heap ID too short", ha);
		return 0;
	}
	if (id_len < 1 + (size_t)h->huge_id_size)
		return h5_err_set(H5_ERR_FORMAT, "fractal heap 0x%llx: huge heap ID too short", ha);
	if (!h5_addr_defined(h->huge_bt2_addr))
		return h5_err_set(H5_ERR_FORMAT, "fractal heap 0x%llx: huge object but no huge-object B-tree", ha);
	key.id = h5_le_decode(id + 1, h->huge_id_size);
	key.sizeof_size = fmt->sizeof_size;
	key.id_off = (size_t)fmt->sizeof_addr + fmt->sizeof_size + (h->filtered ? 4 + (size_t)fmt->sizeof_size : 0);
	rc = h5_bt2_open(&bt, fh->pin.f, h->huge_bt2_addr);
	if (rc < 0)
		return h5_err_wrap(rc, "fractal heap 0x%llx: huge objects: ", ha);
	if (h5_bt2_type(bt) != want || h5_bt2_record_size(bt) < key.id_off + fmt->sizeof_size) {
		rc = h5_err_set(H5_ERR_FORMAT, "fractal heap 0x%llx: huge-object B-tree 0x%llx has type %u "
				"(%u-byte records), expected type %u", ha, (unsigned long long)h->huge_bt2_addr,
				h5_bt2_type(bt), h5_bt2_record_size(bt), want);
		goto out;
	}
	rc = h5_bt2_find(bt, fh_huge_cmp, &key, fh_huge_found, rec);
	if (rc == H5_ERR_NOTFOUND)
		rc = h5_err_set(H5_ERR_FORMAT, "fractal heap 0x%llx: huge object %llu is not in its B-tree", ha,
				(unsigned long long)key.id);
out:
	h5_bt2_close(bt);
	return rc;
}

static int fh_read_huge(uint8_t **out, size_t *out_len, h5_fheap *fh, const uint8_t *id, size_t id_len)
{
	const fh_hdr *h = fh->hdr;
	unsigned long long ha = (unsigned long long)h->addr;
	struct fh_huge_rec rec = { .hdr = h };
	uint8_t *buf = NULL;
	size_t len = 0;
	int rc;

	rc = fh_huge_locate(&rec, fh, id, id_len);
	if (rc < 0)
		return rc;
	if (rec.len == 0 || rec.len > SIZE_MAX || !h5_file_range_ok(fh->pin.f, rec.addr, rec.len))
		return h5_err_set(H5_ERR_FORMAT, "fractal heap 0x%llx: huge object at 0x%llx (%llu bytes) outside the file",
				  ha, (unsigned long long)rec.addr, (unsigned long long)rec.len);
	if (h->filtered && (rec.mem_size == 0 || rec.mem_size > SIZE_MAX))
		return h5_err_set(H5_ERR_FORMAT, "fractal heap 0x%llx: huge object has bad size %llu", ha,
				  (unsigned long long)rec.mem_size);
	len = (size_t)rec.len;
	rc = h5_file_read_alloc(&buf, fh->pin.f, rec.addr, len);
	if (rc < 0)
		goto out;
	if (h->filtered) {
		rc = h5_filter_decode(&buf, &len, &h->pline, rec.mask, NULL, (size_t)rec.mem_size);
		if (rc < 0) {
			rc = h5_err_wrap(rc, "fractal heap 0x%llx: huge object at 0x%llx: ", ha,
					 (unsigned long long)rec.addr);
			goto out;
		}
		if (len != rec.mem_size) {
			rc = h5_err_set(H5_ERR_FORMAT, "fractal heap 0x%llx: huge object decodes to %zu bytes, expected %llu",
					ha, len, (unsigned long long)rec.mem_size);
			goto out;
		}
	}
	*out = buf;
	*out_len = len;
	buf = NULL;
out:
	free(buf);
	return rc;
}

int h5_fheap_read(uint8_t **out, size_t *out_len, h5_fheap *h, const uint8_t *id, size_t id_len)
{
	*out = NULL;
	*out_len = 0;
	if (!id || id_len == 0)
		return h5_err_set(H5_ERR_INVAL, "fractal heap: empty heap ID");
	if ((id[0] & FH_ID_VERSION_MASK) != 0)
		return h5_err_set(H5_ERR_FORMAT, "fractal heap 0x%llx: heap ID version %u unsupported",
				  (unsigned long long)h->hdr->addr, id[0] >> 6);
	switch (id[0] & FH_ID_TYPE_MASK) {
	case FH_ID_MANAGED:
		return fh_read_managed(out, out_len, h, id, id_len);
	case FH_ID_HUGE:
		return fh_read_huge(out, out_len, h, id, id_len);
	case FH_ID_TINY:
		return fh_read_tiny(out, out_len, h->hdr, id, id_len);
	default:
		return h5_err_set(H5_ERR_FORMAT, "fractal heap 0x%llx: unknown heap ID type %u",
				  (unsigned long long)h->hdr->addr, (id[0] & FH_ID_TYPE_MASK) >> 4);
	}
}
