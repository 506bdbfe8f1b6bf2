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
 * The header, indirect and direct blocks are decoded and cached by
 * fheap_block.c; this file resolves IDs: tiny ones in place, huge ones
 * from the ID or the huge-object v2 B-tree, managed ones down the doubling
 * table.
 */
#include "base.h"
#include "rd.h"
#include "checksum.h"
#include "cache.h"
#include "file.h"
#include "pline.h"
#include "fheap.h"
#include "btree2.h"
#include "filter.h"
#include "fheap_int.h"
#include "fspace.h"

#define FH_ID_VERSION_MASK 0xC0
#define FH_ID_TYPE_MASK 0x30
#define FH_ID_MANAGED 0x00
#define FH_ID_HUGE 0x10
#define FH_ID_TINY 0x20

int h5_fheap_open(h5_fheap **out, h5_file *f, uint64_t addr)
{
	h5_block_load b = { .f = f, .addr = addr };
	h5_pinned *p;
	int rc = h5_pinned_open(&p, sizeof(h5_fheap), "fractal heap", H5_CK_FHEAP_HDR,
				 h5_fh_hdr_load, h5_fh_hdr_free, &b);

	*out = (h5_fheap *)p; /* pin is the first member */
	if (p)
		(*out)->hdr = p->ref.obj;
	return rc;
}

void h5_fheap_close(h5_fheap *h) { h5_pinned_close(h ? &h->pin : NULL); }

size_t h5_fheap_id_len(const h5_fheap *h) { return h->hdr->id_len; }
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
			rc = h5_fh_iblock_get(&ib, &iref, fh, iblock_addr, nrows, iblock_off);
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

	rc = h5_fh_dblock_get(&db, &dref, fh, dblock_addr, dsize, dblock_off, disk_size, mask);
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
		rc = h5_filter_decode(&buf, &len, &h->pline, rec.mask, (size_t)rec.mem_size);
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

/* ---- the heap's blocks (the space report) -------------------------------- */

struct fh_blocks {
	h5_fheap *fh;
	h5_block_cb cb;
	void *ud;
};

/* An indirect block and everything below it: its direct blocks (on disk
 * the filtered size its entry records, else the row's block size) and its
 * child indirect blocks, each of fewer rows (III.G "Fractal Heap Indirect
 * Block"; the child's rows as fh_read_managed finds them). */
static int fh_iblock_blocks(struct fh_blocks *w, uint64_t addr, unsigned nrows, uint64_t block_off)
{
	const fh_hdr *h = w->fh->hdr;
	const fh_iblock *ib;
	h5_cache_ref ref;
	int rc;

	rc = h5_fh_iblock_get(&ib, &ref, w->fh, addr, nrows, block_off);
	if (rc < 0)
		return rc;
	rc = w->cb(addr, h5_fh_iblock_bytes(h, nrows), w->ud);
	for (size_t e = 0; e < ib->nents && rc == 0; e++) {
		unsigned row = (unsigned)(e / h->width), rows;
		uint64_t col = e % h->width;

		if (!h5_addr_defined(ib->child[e]))
			continue;
		if (row < h->max_direct_rows) {
			rc = w->cb(ib->child[e], h->filtered ? ib->filt_size[e] : h->row_block_size[row], w->ud);
			continue;
		}
		rows = fh_log2(h->row_block_size[row]) - h->first_row_bits + 1;
		if (rows >= nrows) {
			rc = h5_err_set(H5_ERR_FORMAT, "fractal heap 0x%llx: child indirect block 0x%llx not smaller "
					"than its parent", (unsigned long long)h->addr, (unsigned long long)ib->child[e]);
			break;
		}
		rc = fh_iblock_blocks(w, ib->child[e], rows,
				      block_off + h->row_block_off[row] + col * h->row_block_size[row]);
	}
	h5_cache_release(w->fh->pin.f->meta, &ref);
	return rc;
}

/* A record of the huge-object B-tree: the object's own extent. */
static int fh_huge_rec_block(const uint8_t *rec, size_t len, void *udp)
{
	struct fh_blocks *w = udp;
	struct fh_huge_rec r = { .hdr = w->fh->hdr };
	int rc = fh_huge_found(rec, len, &r);

	return rc < 0 ? rc : w->cb(r.addr, r.len, w->ud);
}

/* Indirectly accessed huge objects: the v2 B-tree's blocks, and each
 * object its records locate. */
static int fh_huge_blocks(struct fh_blocks *w)
{
	const fh_hdr *h = w->fh->hdr;
	h5_bt2 *bt = NULL;
	int rc;

	rc = h5_bt2_open(&bt, w->fh->pin.f, h->huge_bt2_addr);
	if (rc < 0)
		return h5_err_wrap(rc, "fractal heap 0x%llx: huge objects: ", (unsigned long long)h->addr);
	rc = h5_bt2_blocks(bt, w->cb, w->ud);
	if (rc == 0)
		rc = h5_bt2_iterate(bt, fh_huge_rec_block, w);
	h5_bt2_close(bt);
	return rc;
}

int h5_fheap_blocks(h5_fheap *fh, h5_block_cb cb, void *ud)
{
	const fh_hdr *h = fh->hdr;
	struct fh_blocks w = { fh, cb, ud };
	int rc;

	rc = cb(h->addr, h->hdr_size, ud);
	if (rc == 0 && h5_addr_defined(h->fs_addr))
		rc = h5_fspace_blocks(NULL, fh->pin.f, h->fs_addr, cb, ud);
	if (rc == 0 && h5_addr_defined(h->huge_bt2_addr))
		rc = fh_huge_blocks(&w);
	if (rc != 0 || !h5_addr_defined(h->root_addr))
		return rc;
	if (h->curr_root_rows == 0)
		return cb(h->root_addr, h->filtered ? h->root_filt_size : h->start_block_size, ud);
	return fh_iblock_blocks(&w, h->root_addr, h->curr_root_rows, 0);
}

int h5_fheap_id_extent(uint64_t *addr, uint64_t *len, h5_fheap *fh, const uint8_t *id, size_t id_len)
{
	struct fh_huge_rec rec = { .hdr = fh->hdr };
	int rc;

	*addr = H5_ADDR_UNDEF;
	*len = 0;
	if (id_len == 0 || (id[0] & FH_ID_TYPE_MASK) != FH_ID_HUGE || !fh->hdr->huge_direct)
		return 0;
	rc = fh_huge_locate(&rec, fh, id, id_len);
	if (rc < 0)
		return rc;
	*addr = rec.addr;
	*len = rec.len;
	return 0;
}
