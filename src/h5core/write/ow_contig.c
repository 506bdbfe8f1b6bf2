/*
 * ow_contig.c - the contiguous entry of the overwriters' layout table
 * (ow_int.h h5_ow_layout_ops; IV.A.2.i, layout class 1): allocated
 * storage takes the whole elements of each put in place at once, from
 * the caller's buffer (no copy; dd through the mount runs near the
 * disk's speed), and keeps only its partial elements, so that an element
 * is still written whole, and its bytes from several writes together, at
 * the commit; the commit writes the kept bytes, sets the modification
 * time and fsyncs (a kill before it leaves elements of the writes so far
 * new, as in-place commits always could: doc/OVERWRITE.md). Storage
 * never allocated (libhdf5 allocates it at the first write) is written
 * whole at the commit: fill, then the extents, then the layout message
 * points at it.
 * Tests: test_overwrite.py, test_overwrite_crash.py, test_fsx.py.
 */
#include "ow_int.h"
#include "txn.h"
#include "space.h"
#include "base.h"
#include "rd.h"
#include "file.h"

static int contig_check(const h5_dataset *d)
{
	if (!h5_addr_defined(d->layout.addr) && d->layout.version < 3)
		return h5_err_set(H5_ERR_UNSUPPORTED, "unallocated contiguous storage, layout message version %u",
				  d->layout.version);
	return 0;
}

/* Storage never allocated takes the whole dataset at its first commit. */
static int contig_need(uint64_t *need, const h5_overwriter *w, uint64_t len)
{
	(void)len;
	*need = h5_addr_defined(w->caddr) ? 0 : w->nbytes;
	return 0;
}

/* Whole elements [a, b) written in place: kept bytes they cover are
 * older, and take the new ones (the commit writes kept bytes last). */
static int put_in_place(h5_overwriter *w, uint64_t a, const uint8_t *p, uint64_t b)
{
	for (size_t i = 0; i < w->n; i++) {
		h5_ow_ext *x = &w->ext[i];
		uint64_t lo = x->off > a ? x->off : a, hi = x->off + x->len < b ? x->off + x->len : b;

		if (lo < hi)
			memcpy(x->p + (lo - x->off), p + (lo - a), (size_t)(hi - lo));
	}
	w->direct += b - a;
	return h5_file_write(w->f, w->caddr + a, p, (size_t)(b - a));
}

static int contig_put(h5_overwriter *w, uint64_t off, const uint8_t *p, size_t len)
{
	uint64_t end = off + len, a, b;
	int rc;

	if (!h5_addr_defined(w->caddr))
		return h5_ow_keep(w, off, p, len);
	/* storage grown sparsely is a hole in FILE: its blocks now, within
	 * the host's margin, the kept bytes' too (written at the commit,
	 * after the answer) */
	rc = h5_file_fill(w->f, w->caddr + off, len, false);
	if (rc < 0)
		return rc;
	a = (off + w->esize - 1) / w->esize * w->esize;
	b = end / w->esize * w->esize;
	if (a >= b)
		return h5_ow_keep(w, off, p, len);
	rc = put_in_place(w, a, p + (a - off), b);
	if (rc == 0)
		rc = h5_ow_keep(w, off, p, (size_t)(a - off));
	if (rc == 0)
		rc = h5_ow_keep(w, b, p + (b - off), (size_t)(end - b));
	return rc;
}

/* txn.c stages an index writer's blocks; contiguous storage has none. */
static int noidx_write(void *w)
{
	(void)w;
	return 0;
}

static const h5_cidx_write_ops noidx = { .write = noidx_write };

/* Contiguous storage never allocated (libhdf5 allocates it at the first
 * write): all of it is written at the allocation end - fill, then the
 * extents - made durable and covered by the end of allocated space, and
 * then the layout message (v3: version, class, address, size) points at
 * it in one write of its chunk. */
static int contig_commit_new(h5_overwriter *w, h5_dataset *d, size_t n, bool durable)
{
	h5_ohdr_edit e = { 0 };
	const h5_msg *lay = NULL;
	uint8_t *fill = NULL, v[8];
	uint64_t addr = 0;
	size_t fl = 1 << 20, lc;
	h5_txn t;
	int rc = h5_ow_edit_begin(&e, &lay, w->f, w->addr);

	if (rc == 0 && (lay->size < 2u + w->f->fmt.sizeof_addr + w->f->fmt.sizeof_size || lay->data[1] != 1))
		rc = h5_err_set(H5_ERR_FORMAT, "contiguous layout message too short");
	if (rc == 0 && !(fill = malloc(fl)))
		rc = h5_err_set(H5_ERR_NOMEM, "out of memory");
	if (rc == 0)
		rc = h5_space_alloc(&addr, w->f, w->nbytes);
	for (uint64_t o = 0; rc == 0 && o < w->nbytes; o += fl) {
		size_t k = w->nbytes - o < fl ? (size_t)(w->nbytes - o) : fl;

		h5_dataset_fill(d, fill, o, k);
		rc = h5_file_write(w->f, addr + o, fill, k);
	}
	for (size_t i = 0; i < n && rc == 0; i++)
		rc = h5_file_write(w->f, addr + w->ext[i].off, w->ext[i].p, w->ext[i].len);
	if (rc == 0) {
		h5_txn_begin(&t, w->f, durable, &noidx, NULL);
		rc = h5_txn_stage(&t, w->last_end);
	}
	if (rc == 0) {
		h5_le_encode(v, addr, w->f->fmt.sizeof_addr);
		rc = h5_ohdr_patch(&e, lay->addr + 2, v, w->f->fmt.sizeof_addr);
	}
	lc = rc == 0 ? h5_ohdr_chunk_of(e.oh, lay->addr) : 0;
	if (rc == 0)
		rc = h5_ow_touch_header(&e, w->f, lc);
	if (rc == 0)
		rc = h5_txn_last(&t, &e, lc);
	if (rc == 0)
		w->last_end = t.end;
	free(fill);
	h5_ow_edit_end(&e, w->f, w->addr);
	return rc;
}

/* Contiguous, allocated: in place, each byte written once (doc/OVERWRITE.md
 * on what a kill in the middle of a write leaves). */
static int contig_commit(h5_overwriter *w, h5_dataset *d, size_t n, bool durable)
{
	h5_ohdr_edit e = { 0 };
	const h5_msg *lay = NULL;
	int rc = 0;

	h5_ow_ext *r = NULL;
	size_t m = 0;
	h5_txn t;

	(void)durable;  /* in place: every commit is synced (below) */
	h5_txn_begin(&t, w->f, true, NULL, NULL);
	if (!n && !w->direct)
		return h5_txn_order(&t);        /* a durable request, nothing kept */
	if (!h5_addr_defined(d->layout.addr))
		return contig_commit_new(w, d, n, true);
	if (n)      /* (none: only bytes written in place, to sync and date) */
		rc = h5_ow_merge(&r, &m, w->ext, n);
	for (size_t i = 0; i < m && rc == 0; i++)
		rc = h5_file_write(w->f, d->layout.addr + r[i].off, r[i].p, r[i].len);
	h5_ow_free(r, m);
	if (rc == 0)
		rc = h5_ow_edit_begin(&e, &lay, w->f, w->addr);
	if (rc == 0)
		rc = h5_ow_touch_header(&e, w->f, SIZE_MAX);
	/* in place: every commit is synced, so that a later one's writes
	 * cannot reach the disk before an earlier one's (an element written
	 * in both would mix them after a power cut) */
	if (rc == 0)
		rc = h5_txn_order(&t);
	h5_ow_edit_end(&e, w->f, w->addr);
	return rc;
}

/* Storage never allocated reads as the fill value: zeros already, or
 * bytes only writing all of it would change (then zeros written). */
static int contig_punch(h5_overwriter *w, uint64_t off, uint64_t len)
{
	h5_dataset *d = NULL;
	bool zero;
	int rc;

	if (h5_addr_defined(w->caddr))
		return h5_ow_put_zeros(w, off, len, contig_put);
	rc = h5_dataset_open(&d, w->f, w->addr);
	if (rc < 0)
		return rc;
	zero = h5_ow_fill_is_zero(d);
	h5_dataset_close(d);
	return zero ? 0 : h5_ow_put_zeros(w, off, len, contig_put);
}

const h5_ow_layout_ops h5_ow_contig = {
	.name = "contiguous",
	.check = contig_check,
	.need = contig_need,
	.put = contig_put,
	.commit = contig_commit,
	.punch = contig_punch,
};
