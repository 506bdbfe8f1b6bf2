/*
 * dset_empty.c - a dataset that grows emptied: `cat x > d`, `cp x d`
 * (open with O_TRUNC) and `truncate -s 0 d` through the mount, after which
 * the new bytes are appended as rows (append.c). As h5py's resize to 0
 * rows, the object keeps its header, attributes, type, chunk shape and
 * filters; its rows and chunk index go.
 *
 * Two in-place writes, each fsync'd (doc/MODIFY.md "Emptying"):
 *   1. the layout message's index address becomes undefined (IV.A.2.i):
 *      no chunk is referenced any more, and every row reads as the fill
 *      value, as libhdf5 reads a dataset whose chunks were never written;
 *   2. the modification time, and dims[0] of the dataspace message
 *      (IV.A.2.b) becomes 0.
 * A crash before 1 leaves the dataset as it was; between 1 and 2, its old
 * number of rows, every one the fill value (the data is gone, as after an
 * O_TRUNC on any file system: the truncation is done, its size not yet);
 * after 2, empty. No state references a chunk of the old index, so the
 * next append starts a new index and never meets an old chunk. The old
 * chunks and index blocks are noted before and freed after (issue 53:
 * a truncate-and-rewrite loop grew FILE by 90 KB a cycle): at once when
 * nothing can undo the emptying, else when the replacement that began
 * with it succeeded (h5_dataset_empty_done).
 */

#include "base.h"
#include "rd.h"
#include "cache.h"
#include "file.h"
#include "txn.h"
#include "ohdr.h"
#include "dspace.h"
#include "dataset.h"
#include "cidx_write.h"
#include "append_int.h"
#include "space.h"
#include "freesp.h"

#include <pthread.h>
#include <string.h>
#include <stdio.h>
#include <time.h>

/* The two ordered writes that set a growable dataset's rows (e: its
 * header, ds and lay its dataspace and layout messages): the layout
 * message's index address becomes idx (unless keep_idx), fsync; then
 * the modification time (when touch) and dims[0] = n, every chunk
 * written, fsync. Emptying, its rollback and the undo of a failed
 * replacement are all this, with other values. */
static int set_rows(h5_file *f, h5_ohdr_edit *e, const h5_cidx_write_ops *wops, const h5_msg *ds,
		    const h5_msg *lay, bool keep_idx, uint64_t idx, bool touch, uint64_t n)
{
	uint64_t field;
	uint8_t v[8];
	h5_txn t;
	int rc = 0;

	h5_txn_begin(&t, f, true, wops, NULL);
	if (!keep_idx) {
		rc = wops->addr_field(&field, lay, &f->fmt);
		h5_le_encode(v, idx, f->fmt.sizeof_addr);
		if (rc == 0)
			rc = h5_ohdr_patch(e, field, v, f->fmt.sizeof_addr);
		if (rc == 0)
			rc = h5_ohdr_write_chunk(f, e, h5_ohdr_chunk_of(e->oh, field));
		if (rc == 0)
			rc = h5_txn_order(&t);
		if (rc < 0)
			return rc;
	}
	if (touch)
		rc = h5_ohdr_touch(e, (uint32_t)time(NULL));
	if (rc == 0)
		rc = h5_dspace_patch_dim0(e, ds, &f->fmt, n);
	for (size_t c = 0; rc == 0 && c < e->oh->nchunks; c++)
		rc = h5_ohdr_write_chunk(f, e, c);
	return rc < 0 ? rc : h5_txn_order(&t);
}

int h5_dataset_empty(h5_file *f, uint64_t addr)
{
	return h5_dataset_empty_undoable(f, addr, NULL);
}

int h5_dataset_empty_undoable(h5_file *f, uint64_t addr, h5_empty_undo *undo)
{
	h5_dataset *d = NULL;
	h5_ohdr_edit e = { 0 };
	const h5_cidx_write_ops *wops;
	const h5_msg *ds, *lay;
	h5_astream *as = NULL;
	h5_freesp gone = { .merge = true };
	bool locked = false;
	int rc;

	if (!f->writable)
		return h5_err_set(H5_ERR_ROFS, "%s is open read-only", f->path);
	rc = h5_dataset_open(&d, f, addr);
	if (rc < 0)
		return rc;
	rc = h5_append_check(d);
	if (rc < 0)
		goto out;
	wops = h5_cidx_write_ops_of(d->layout.idx_type);
	if (!wops) {
		rc = h5_err_set(H5_ERR_PERM, "chunk index %s: cannot be emptied",
				h5_layout_index_name(d->layout.idx_type));
		goto out;
	}
	/* an open stream (the lock order is the commit's: the stream's, then
	 * write_lock) must hold no rows not committed; it then goes on from
	 * the empty dataset */
	as = h5_astream_hold(f, addr);
	if (as)
		pthread_mutex_lock(&as->lock);
	pthread_mutex_lock(&f->write_lock);
	locked = true;
	if (as && (as->failed || as->row0 + as->nbuf > as->committed || as->ea)) {
		rc = h5_err_set(H5_ERR_BUSY, "rows appended to it are not committed yet");
		goto out;
	}
	rc = h5_ohdr_load(&e.oh, f, addr);
	if (rc < 0)
		goto out;
	ds = h5_ohdr_find(e.oh, H5_MSG_DSPACE);
	lay = h5_ohdr_find(e.oh, H5_MSG_LAYOUT);
	if (!ds || !lay || ds->size < 4 || (ds->data[0] != 1 && ds->data[0] != 2)) {
		rc = h5_err_set(H5_ERR_FORMAT, "object header 0x%llx: no dataspace or layout message",
				(unsigned long long)addr);
		goto out;
	}
	if ((ds->flags | lay->flags) & H5_MSG_FLAG_SHARED) {
		rc = h5_err_set(H5_ERR_PERM, "shared dataspace or layout message");
		goto out;
	}
	rc = h5_ohdr_edit_ranges(&e);
	if (rc < 0)
		goto out;
	/* what the emptying stops referencing (a walk that fails frees
	 * nothing: the space stays unreferenced, as before) */
	if (h5_dataset_blocks(d, h5_space_note, &gone) < 0) {
		h5_err_clear();
		h5_freesp_clear(&gone);
	}
	if (undo) {
		undo->valid = true;
		undo->idx_addr = d->layout.idx_addr;
		undo->dims0 = d->space.rank ? d->space.dims[0] : 0;
		undo->gone = NULL;
	}
	/* 1. no index; 2. the time, then no rows */
	rc = set_rows(f, &e, wops, ds, lay, !h5_addr_defined(d->layout.idx_addr), H5_ADDR_UNDEF, true, 0);
	if (rc < 0 && h5_addr_defined(d->layout.idx_addr)) {
		/* a failed emptying leaves the rows: the old index back, then
		 * the old dims[0] (still in our copy unless step 2 patched it) */
		char *why = strdup(h5_err_msg());
		int rc2 = set_rows(f, &e, wops, ds, lay, false, d->layout.idx_addr, false,
				   d->space.rank ? d->space.dims[0] : 0);

		h5_err_set(rc, "%s%s", why ? why : "out of memory", rc2 == 0 ? " (the rows were kept)" : "");
		free(why);
		if (undo)
			undo->valid = false;
	}
	if (rc == 0 && !undo) {
		h5_space_free_noted(f, &gone, 0);
	} else if (rc == 0 && gone.n) {
		h5_freesp *keep = malloc(sizeof(*keep));

		if (keep) {
			*keep = gone;
			memset(&gone, 0, sizeof(gone));
		}
		undo->gone = keep;      /* (out of memory: left unreferenced) */
	}
	if (rc == 0 && as) {
		/* (rows it buffered were the committed ones of a partly
		 * filled last chunk row: gone with them) */
		as->ea_addr = H5_ADDR_UNDEF;
		/* (its partial chunk row's chunks are the old index's: freed
		 * with it above) */
		h5_freesp_clear(&as->partial);
		as->prow = UINT64_MAX;
		as->nstaged = 0;
		stream_set_row0(as, 0);
		as->nbuf = 0;
		as->since = 0;
		__atomic_store_n(&as->committed, 0, __ATOMIC_RELEASE);
	} else if (rc < 0 && as) {
		/* which state the file holds, the stream cannot tell */
		__atomic_store_n(&as->failed, rc, __ATOMIC_RELEASE);
	}
out:
	if (locked) {
		/* whatever happened, cached copies of what may have changed go */
		h5_cache_invalidate(f->meta, H5_CK_OHDR, addr);
		pthread_mutex_unlock(&f->write_lock);
	}
	if (as) {
		pthread_mutex_unlock(&as->lock);
		h5_astream_release(f, as);
	}
	h5_freesp_clear(&gone);
	if (e.oh)
		h5_ohdr_free(e.oh);
	free(e.lo);
	free(e.hi);
	h5_dataset_close(d);
	return rc < 0 ? h5_err_wrap(rc, "emptying the dataset at 0x%llx: ", (unsigned long long)addr) : 0;
}

/* ---- undo: the old rows back ------------------------------------------------ */

int h5_dataset_empty_undo(h5_file *f, uint64_t addr, h5_empty_undo *undo)
{
	h5_dataset *d = NULL;
	h5_ohdr_edit e = { 0 };
	const h5_cidx_write_ops *wops;
	const h5_msg *ds, *lay;
	h5_astream *as = NULL;
	int rc;

	if (!undo || !undo->valid)
		return 0;
	/* the old index is referenced again: none of it is freed */
	if (undo->gone) {
		h5_freesp_clear(undo->gone);
		free(undo->gone);
		undo->gone = NULL;
	}
	rc = h5_dataset_open(&d, f, addr);
	if (rc < 0)
		return rc;
	wops = h5_cidx_write_ops_of(d->layout.idx_type);
	as = h5_astream_hold(f, addr);
	if (as)
		pthread_mutex_lock(&as->lock);
	pthread_mutex_lock(&f->write_lock);
	rc = wops ? h5_ohdr_load(&e.oh, f, addr) : h5_err_set(H5_ERR_PERM, "no index writer");
	if (rc < 0)
		goto out;
	ds = h5_ohdr_find(e.oh, H5_MSG_DSPACE);
	lay = h5_ohdr_find(e.oh, H5_MSG_LAYOUT);
	if (!ds || !lay) {
		rc = h5_err_set(H5_ERR_FORMAT, "object header 0x%llx: no dataspace or layout message",
				(unsigned long long)addr);
		goto out;
	}
	rc = h5_ohdr_edit_ranges(&e);
	/* 1. the old index (a new one the failed replacement committed is
	 * left unreferenced); 2. the time, then the old rows */
	if (rc == 0)
		rc = set_rows(f, &e, wops, ds, lay, false, undo->idx_addr, true, undo->dims0);
	if (as && !as->failed) {
		h5_err_set(H5_ERR_IO, "the dataset was put back as it was before a failed replacement");
		snprintf(as->why, sizeof(as->why), "%s", h5_err_msg());
		__atomic_store_n(&as->failed, H5_ERR_IO, __ATOMIC_RELEASE);
	}
out:
	h5_cache_invalidate(f->meta, H5_CK_OHDR, addr);
	pthread_mutex_unlock(&f->write_lock);
	if (as) {
		pthread_mutex_unlock(&as->lock);
		h5_astream_release(f, as);
	}
	if (e.oh)
		h5_ohdr_free(e.oh);
	free(e.lo);
	free(e.hi);
	h5_dataset_close(d);
	return rc < 0 ? h5_err_wrap(rc, "restoring the dataset at 0x%llx: ", (unsigned long long)addr) : 0;
}

void h5_dataset_empty_done(h5_file *f, h5_empty_undo *undo)
{
	if (!undo || !undo->valid)
		return;
	if (undo->gone) {
		pthread_mutex_lock(&f->write_lock);
		h5_space_free_noted(f, undo->gone, 0);
		pthread_mutex_unlock(&f->write_lock);
		h5_freesp_clear(undo->gone);
		free(undo->gone);
	}
	undo->gone = NULL;
	undo->valid = false;
}
