/*
 * fheap_enc.c - a whole fractal heap encoded from its objects (spec III.G
 * "Fractal Heap": the header FRHP, a root indirect block FHIB and direct
 * blocks FHDB), the mirror of fheap_block.c's decoders. For writers that
 * replace a small heap rather than change it in place (dense link and
 * attribute storage, write/dense_write.c): one image at an address the
 * caller gives, that no reader sees until something points at it.
 *
 * The objects are laid out as libhdf5 would have allocated them one after
 * another (H5HF__man_insert): packed into direct blocks in the order of
 * the doubling table, a block too small for the next object skipped; a
 * heap that fits one starting-size block has that block as its root,
 * otherwise the root is an indirect block of a power of two rows, as
 * libhdf5's root creation and doubling make them
 * (H5HF__man_iblock_root_create, _root_double). The header's counters
 * (managed space, allocated space, the allocation iterator, free space)
 * are what libhdf5 would hold after those inserts, so libhdf5 goes on
 * allocating after the last block. No free-space manager is written
 * (its address undefined, as libhdf5 leaves it when a heap has no free
 * sections): the room left in the last block is not reused by libhdf5,
 * which only costs space.
 *
 * The root's direct rows and one level of child indirect blocks (whole:
 * all their rows, as libhdf5 makes them) are used: 4 MiB of objects with
 * libhdf5's default parameters for links and attributes; filtered heaps
 * are not encoded.
 */
#include "base.h"
#include "rd.h"
#include "checksum.h"
#include "file.h"
#include "fheap.h"
#include "fheap_int.h"

int h5_fheap_params_get(h5_fheap_params *p, const h5_fheap *fh)
{
	const fh_hdr *h = fh->hdr;

	*p = (h5_fheap_params){
		.id_len = h->id_len, .width = h->width, .max_heap_bits = h->max_heap_bits,
		.start_root_rows = h->start_root_rows, .max_man_size = h->max_man_size,
		.start_block_size = h->start_block_size, .max_direct_size = h->max_direct_size,
		.checksum_dblocks = (h->flags & FH_FLAG_CHECKSUM_DBLOCKS) != 0,
		.next_huge_id = h->next_huge_id, .huge_bt2_addr = h->huge_bt2_addr, .huge_nobjs = h->huge_nobjs,
		.filtered = h->filtered,
	};
	return 0;
}

uint64_t h5_fheap_managed_bytes(const h5_fheap *fh)
{
	const fh_hdr *h = fh->hdr;

	/* the counters are the writer's word: the address space bounds them */
	return h->man_alloc >= h->man_free && h->man_alloc - h->man_free <= h->man_size ? h->man_alloc - h->man_free
											: h->man_size;
}

/* A place in the doubling table: the root's row and column and, in a
 * child indirect block (a root row past the direct rows), the child's. */
typedef struct fe_pos {
	unsigned row, col, crow, ccol;
} fe_pos;

/* A direct block of the layout. */
typedef struct fe_blk {
	fe_pos at;
	uint64_t size, off;     /* bytes, heap offset */
	uint64_t used;          /* bytes filled (prefix included) */
	uint64_t addr;
} fe_blk;

/* A child indirect block of the root: all its rows, as libhdf5 makes one
 * (H5HF__hdr_update_iter: child_nrows from the row's block size). */
typedef struct fe_child {
	unsigned row, col, nrows;
	uint64_t off, addr;
} fe_child;

static unsigned child_rows(const fh_hdr *g, unsigned row)
{
	return fh_log2(g->row_block_size[row]) - g->first_row_bits + 1;
}

/* The next place after p in heap-offset order. */
static void pos_next(fe_pos *p, const fh_hdr *g)
{
	if (p->row >= g->max_direct_rows) {
		if (++p->ccol == g->width) {
			p->ccol = 0;
			p->crow++;
		}
		if (p->crow < child_rows(g, p->row))
			return;
		p->crow = p->ccol = 0;
	}
	if (++p->col == g->width) {
		p->col = 0;
		p->row++;
	}
}

/* The direct block at p: its size and heap offset. */
static void pos_block(uint64_t *size, uint64_t *off, const fe_pos *p, const fh_hdr *g)
{
	uint64_t base = g->row_block_off[p->row] + p->col * g->row_block_size[p->row];

	if (p->row < g->max_direct_rows) {
		*size = g->row_block_size[p->row];
		*off = base;
	} else {
		*size = g->row_block_size[p->crow];
		*off = base + g->row_block_off[p->crow] + p->ccol * *size;
	}
}

/* Free space of the direct blocks a root of nrows rows covers, as libhdf5
 * counts it when it creates or doubles the root (allocated or not). */
static uint64_t rows_free(const fh_hdr *g, unsigned nrows)
{
	uint64_t f = 0;

	for (unsigned r = 0; r < nrows; r++)
		f += r < g->max_direct_rows ? (g->row_block_size[r] - g->dblock_overhead) * g->width :
		     rows_free(g, child_rows(g, r)) * g->width;
	return f;
}

/* The geometry of a heap made with p, derived as the decoder derives it. */
static int geometry(fh_hdr *g, const h5_fheap_params *p, const h5_fmt *fmt, uint64_t base)
{
	memset(g, 0, sizeof(*g));
	g->fmt = *fmt;
	g->addr = base;
	g->id_len = p->id_len;
	g->width = p->width;
	g->start_block_size = p->start_block_size;
	g->max_direct_size = p->max_direct_size;
	g->max_heap_bits = p->max_heap_bits;
	g->max_man_size = p->max_man_size;
	g->flags = p->checksum_dblocks ? FH_FLAG_CHECKSUM_DBLOCKS : 0;
	return h5_fh_hdr_derive(g);
}

/* p is past what h5_fheap_build uses: the root's direct rows and one
 * level of child indirect blocks whose rows are all direct. */
static bool past_two_levels(const fe_pos *p, const fh_hdr *g)
{
	return p->row >= g->max_root_rows || (p->row >= g->max_direct_rows && child_rows(g, p->row) > g->max_direct_rows);
}

uint64_t h5_fheap_capacity(const h5_fheap_params *p, const h5_fmt *fmt, size_t max_obj)
{
	fh_hdr g;
	fe_pos at = { 0 };
	uint64_t total = 0;

	if (p->filtered || geometry(&g, p, fmt, 0) < 0 || max_obj == 0) {
		h5_err_clear();
		return 0;
	}
	for (; !past_two_levels(&at, &g); pos_next(&at, &g)) {
		uint64_t size, off;

		pos_block(&size, &off, &at, &g);
		if (size > g.dblock_overhead + (max_obj - 1))
			total += size - g.dblock_overhead - (max_obj - 1);
	}
	return total;
}

#define PUT(v, sz) do { h5_le_encode(q, (v), (sz)); q += (sz); } while (0)

/* An indirect block at ib: nrows rows at heap offset off, its entries
 * from entry(e) (an address, UNDEF where nothing is allocated). */
static void iblock_encode(uint8_t *ib, const fh_hdr *g, const h5_fmt *fmt, uint64_t heap, uint64_t off,
			  const uint64_t *ents, size_t nents)
{
	uint8_t *q = ib;

	memcpy(q, "FHIB", 4);
	q[4] = 0;
	q += 5;
	PUT(heap, fmt->sizeof_addr);
	PUT(off, g->heap_off_size);
	for (size_t e = 0; e < nents; e++)
		PUT(ents[e], fmt->sizeof_addr);
	PUT(h5_checksum_metadata(ib, (size_t)(q - ib)), 4);
}

int h5_fheap_build(uint8_t **img, size_t *len, uint8_t *ids, const h5_fheap_params *p, const h5_fmt *fmt,
		   uint64_t base, const uint8_t *const *objs, const size_t *lens, size_t n)
{
	fh_hdr g = { 0 };
	fe_blk *blk = NULL;
	fe_child *kid = NULL;
	uint64_t *ents = NULL;
	size_t nblk = 0, cap = 0, nkid = 0, hsz, total;
	unsigned rows_used = 0, nrows = 0;
	fe_pos at = { 0 };
	bool placed = false;    /* `at` is a block already considered */
	uint64_t alloc = 0, freesp = 0, iter = 0, man_size = 0, objbytes = 0;
	uint8_t *b = NULL, *q;
	int rc = 0;

	*img = NULL;
	*len = 0;
	if (p->filtered)
		return h5_err_set(H5_ERR_UNSUPPORTED, "fractal heap encoder: filtered heaps are not written");
	rc = geometry(&g, p, fmt, base);
	if (rc < 0)
		return rc;
	if (1u + g.heap_off_size + g.heap_len_size > g.id_len)
		return h5_err_set(H5_ERR_FORMAT, "fractal heap encoder: %u-byte IDs cannot hold a managed object",
				  g.id_len);

	/* place the objects (H5HF__man_insert, one after another) */
	for (size_t i = 0; i < n; i++) {
		fe_blk *cur = nblk ? &blk[nblk - 1] : NULL;

		if (lens[i] == 0 || lens[i] > g.max_man_size) {
			rc = h5_err_set(H5_ERR_UNSUPPORTED, "fractal heap encoder: a %zu-byte object is not a managed "
					"object (at most %u bytes)", lens[i], g.max_man_size);
			goto out;
		}
		while (!cur || cur->used + lens[i] > cur->size) {
			uint64_t size, off;

			/* the next block of the doubling table (the first: row 0,
			 * column 0), skipping those too small for the object */
			if (placed)
				pos_next(&at, &g);
			placed = true;
			/* one level of child indirect blocks, whose rows are all
			 * direct: 4 MiB with libhdf5's parameters for links and
			 * attributes */
			if (past_two_levels(&at, &g)) {
				rc = h5_err_set(H5_ERR_NOSPC, "fractal heap encoder: %zu objects need more than two "
						"levels of the doubling table", n);
				goto out;
			}
			pos_block(&size, &off, &at, &g);
			if (size - g.dblock_overhead < lens[i]) {
				cur = NULL;     /* skipped: libhdf5 would keep it as free space */
				continue;
			}
			if (nblk == cap) {
				fe_blk *nb = realloc(blk, (cap = cap ? cap * 2 : 16) * sizeof(*blk));

				if (!nb) {
					rc = h5_err_set(H5_ERR_NOMEM, "out of memory encoding a fractal heap");
					goto out;
				}
				blk = nb;
			}
			cur = &blk[nblk++];
			*cur = (fe_blk){ .at = at, .size = size, .off = off, .used = g.dblock_overhead };
		}
		q = ids + i * g.id_len;
		memset(q, 0, g.id_len);
		q[0] = 0;               /* version 0, managed */
		h5_le_encode(q + 1, cur->off + cur->used, g.heap_off_size);
		h5_le_encode(q + 1 + g.heap_off_size, lens[i], g.heap_len_size);
		cur->used += lens[i];
		objbytes += lens[i];
	}
	if (nblk > 0)
		rows_used = blk[nblk - 1].at.row + 1;
	/* the child indirect blocks the blocks lie in, in heap order */
	kid = calloc(nblk ? nblk : 1, sizeof(*kid));
	if (!kid) {
		rc = h5_err_set(H5_ERR_NOMEM, "out of memory encoding a fractal heap");
		goto out;
	}
	for (size_t k = 0; k < nblk; k++) {
		const fe_pos *a = &blk[k].at;

		if (a->row < g.max_direct_rows || (nkid && kid[nkid - 1].row == a->row && kid[nkid - 1].col == a->col))
			continue;
		kid[nkid++] = (fe_child){ .row = a->row, .col = a->col, .nrows = child_rows(&g, a->row),
					  .off = g.row_block_off[a->row] + a->col * g.row_block_size[a->row] };
	}

	/* where things go: header, root indirect block (if any), child
	 * indirect blocks, direct blocks */
	hsz = h5_fh_hdr_fixed_size(fmt);       /* unfiltered: no filter information */
	total = hsz;
	if (nblk == 1 && blk[0].at.row == 0 && blk[0].at.col == 0) {
		nrows = 0;              /* a root direct block */
		man_size = g.start_block_size;
		freesp = g.start_block_size - g.dblock_overhead;
	} else if (nblk > 0) {
		for (nrows = p->start_root_rows ? p->start_root_rows : g.max_root_rows; nrows < rows_used;)
			nrows = nrows * 2 > g.max_root_rows ? g.max_root_rows : nrows * 2;
		man_size = (uint64_t)g.num_id_first_row << (nrows - 1);
		freesp = rows_free(&g, nrows);
		total += (size_t)h5_fh_iblock_bytes(&g, nrows);
		for (size_t k = 0; k < nkid; k++) {
			kid[k].addr = base + total;
			total += (size_t)h5_fh_iblock_bytes(&g, kid[k].nrows);
		}
	}
	for (size_t i = 0; i < nblk; i++) {
		blk[i].addr = base + total;
		total += blk[i].size;
		alloc += blk[i].size;
	}
	if (nblk > 0)
		iter = blk[nblk - 1].off + blk[nblk - 1].size;
	freesp -= objbytes;

	b = calloc(1, total);
	ents = calloc((size_t)(nrows > g.max_direct_rows ? nrows : g.max_direct_rows) * g.width + 1, sizeof(*ents));
	if (!b || !ents) {
		rc = h5_err_set(H5_ERR_NOMEM, "out of memory encoding a fractal heap");
		goto out;
	}
	/* the header (III.G "Fractal Heap Header") */
	q = b;
	memcpy(q, "FRHP", 4);
	q[4] = 0;
	h5_le_encode(q + 5, g.id_len, 2);
	h5_le_encode(q + 7, 0, 2);                      /* no I/O filters */
	q[9] = g.flags;
	h5_le_encode(q + 10, g.max_man_size, 4);
	q += 14;
	PUT(p->next_huge_id, fmt->sizeof_size);
	PUT(p->huge_bt2_addr, fmt->sizeof_addr);
	PUT(freesp, fmt->sizeof_size);                  /* free space in managed blocks */
	PUT(H5_ADDR_UNDEF, fmt->sizeof_addr);           /* no free-space manager */
	PUT(man_size, fmt->sizeof_size);
	PUT(alloc, fmt->sizeof_size);
	PUT(iter, fmt->sizeof_size);
	PUT(n, fmt->sizeof_size);                       /* managed objects */
	PUT(p->huge_size, fmt->sizeof_size);
	PUT(p->huge_nobjs, fmt->sizeof_size);
	PUT(0, fmt->sizeof_size);                       /* tiny objects: bytes, count */
	PUT(0, fmt->sizeof_size);
	PUT(g.width, 2);
	PUT(g.start_block_size, fmt->sizeof_size);
	PUT(g.max_direct_size, fmt->sizeof_size);
	PUT(g.max_heap_bits, 2);
	PUT(p->start_root_rows, 2);
	PUT(nblk == 0 ? H5_ADDR_UNDEF : nrows == 0 ? blk[0].addr : base + hsz, fmt->sizeof_addr);
	PUT(nrows, 2);
	PUT(h5_checksum_metadata(b, (size_t)(q - b)), 4);

	/* the indirect blocks (III.G "Fractal Heap Indirect Block"): the
	 * root's entries name direct blocks and child indirect blocks, a
	 * child's its direct blocks */
	if (nrows) {
		size_t ne = (size_t)nrows * g.width;

		for (size_t e = 0; e < ne; e++)
			ents[e] = H5_ADDR_UNDEF;
		for (size_t k = 0; k < nblk; k++)
			if (blk[k].at.row < g.max_direct_rows)
				ents[(size_t)blk[k].at.row * g.width + blk[k].at.col] = blk[k].addr;
		for (size_t k = 0; k < nkid; k++)
			ents[(size_t)kid[k].row * g.width + kid[k].col] = kid[k].addr;
		iblock_encode(b + hsz, &g, fmt, base, 0, ents, ne);
	}
	for (size_t k = 0; k < nkid; k++) {
		size_t ne = (size_t)kid[k].nrows * g.width;

		for (size_t e = 0; e < ne; e++)
			ents[e] = H5_ADDR_UNDEF;
		for (size_t j = 0; j < nblk; j++)
			if (blk[j].at.row == kid[k].row && blk[j].at.col == kid[k].col)
				ents[(size_t)blk[j].at.crow * g.width + blk[j].at.ccol] = blk[j].addr;
		iblock_encode(b + (kid[k].addr - base), &g, fmt, base, kid[k].off, ents, ne);
	}
	/* the direct blocks (III.G "Fractal Heap Direct Block"); objects in order */
	for (size_t i = 0, k = 0; k < nblk; k++) {
		uint8_t *db = b + (blk[k].addr - base);
		uint64_t pos = g.dblock_overhead;

		q = db;
		memcpy(q, "FHDB", 4);
		q[4] = 0;
		q += 5;
		PUT(base, fmt->sizeof_addr);
		PUT(blk[k].off, g.heap_off_size);
		for (; i < n; i++) {
			uint64_t off = h5_le_decode(ids + i * g.id_len + 1, g.heap_off_size);

			if (off < blk[k].off || off >= blk[k].off + blk[k].size)
				break;
			memcpy(db + pos, objs[i], lens[i]);
			pos += lens[i];
		}
		/* the checksum covers the whole block with its own field zero */
		if (g.flags & FH_FLAG_CHECKSUM_DBLOCKS)
			h5_le_encode(q, h5_checksum_metadata(db, (size_t)blk[k].size), 4);
	}
	*img = b;
	*len = total;
	b = NULL;
out:
	free(b);
	free(blk);
	free(kid);
	free(ents);
	return rc;
}
#undef PUT
