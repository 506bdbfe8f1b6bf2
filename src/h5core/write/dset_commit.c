/*
 * dset_commit.c - the one ordered commit of a chunked dataset's data
 * (dset_commit.h): appends, rewrites, size changes and the unmount's
 * move of the last chunk all end here, so the order that makes them
 * crash-safe is kept once (txn.h says what each step costs).
 */
#include "dset_commit.h"
#include "ohdr_edit.h"
#include "dspace.h"
#include "cache.h"

#include <stdlib.h>
#include <time.h>

int h5_dset_commit_msgs(const h5_msg **ds, const h5_msg **lay, const h5_ohdr *oh)
{
	*ds = h5_ohdr_find(oh, H5_MSG_DSPACE);
	*lay = h5_ohdr_find(oh, H5_MSG_LAYOUT);
	if (!*ds || !*lay)
		return h5_err_set(H5_ERR_FORMAT, "object header 0x%llx: no dataspace or layout message",
				  (unsigned long long)oh->addr);
	if (((*ds)->flags | (*lay)->flags) & H5_MSG_FLAG_SHARED)
		return h5_err_set(H5_ERR_PERM, "object header 0x%llx: shared dataspace or layout message: "
				  "cannot be rewritten", (unsigned long long)oh->addr);
	if ((*ds)->size < 4 || ((*ds)->data[0] != 1 && (*ds)->data[0] != 2))
		return h5_err_set(H5_ERR_FORMAT, "object header 0x%llx: bad dataspace message",
				  (unsigned long long)oh->addr);
	return 0;
}

int h5_dset_commit(h5_txn *t, uint64_t addr, uint64_t rows, uint64_t last_end)
{
	h5_file *f = t->f;
	h5_ohdr_edit e = { 0 };
	const h5_msg *ds = NULL, *lay = NULL;
	size_t last;
	int rc = h5_ohdr_load(&e.oh, f, addr);

	/* (a rewrite that keeps the size writes no dataspace: shared, it
	 * may stay so) */
	if (rc == 0 && rows != UINT64_MAX)
		rc = h5_dset_commit_msgs(&ds, &lay, e.oh);
	else if (rc == 0 && (!(lay = h5_ohdr_find(e.oh, H5_MSG_LAYOUT)) || (lay->flags & H5_MSG_FLAG_SHARED)))
		rc = h5_err_set(H5_ERR_UNSUPPORTED, "object header 0x%llx: no layout message of its own",
				(unsigned long long)addr);
	if (rc == 0)
		rc = h5_ohdr_edit_ranges(&e);
	/* 1. the index writer's new blocks; fsync; 2. the end of allocated
	 * space; fsync; 3. the one switch; fsync */
	if (rc == 0)
		rc = h5_txn_stage(t, last_end);
	if (rc == 0)
		rc = h5_txn_switch(t, &e, lay);
	if (rc < 0)
		goto out;
	/* 4. the modification time the header records; dims[0] (IV.A.2.b)
	 * in the chunk written last: the rows a reader sees are stored and
	 * indexed before it says so, and a shrink's chunks past it are gone
	 * or the fill value before it does */
	rc = h5_ohdr_touch(&e, (uint32_t)time(NULL));
	if (rc == 0 && rows != UINT64_MAX)
		rc = h5_dspace_patch_dim0(&e, ds, &f->fmt, rows);
	last = h5_ohdr_chunk_of(e.oh, rows != UINT64_MAX ? ds->addr : lay->addr);
	for (size_t c = 0; rc == 0 && c < e.oh->nchunks; c++)
		if (c != last)
			rc = h5_ohdr_write_chunk(f, &e, c);
	if (rc == 0)
		rc = h5_txn_last(t, &e, last);
out:
	/* whatever happened, a cached copy of what may have changed goes */
	h5_cache_invalidate(f->meta, H5_CK_OHDR, addr);
	h5_ohdr_free(e.oh);
	free(e.lo);
	free(e.hi);
	return rc;
}
