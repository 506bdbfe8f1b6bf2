/*
 * txn.c - the ordered commit (txn.h, doc/APPEND.md "Commit").
 *
 * libhdf5 has no crash safety of its own (its metadata cache writes back in
 * any order); h5fs gets it from the order of writes and three fsyncs:
 * nothing on disk points at new space before that space and the
 * superblock's EOF address (II.A) covering it are durable, and the one
 * in-place switch comes before the last write that makes it visible.
 */
#include "txn.h"
#include "ordered.h"
#include "space.h"
#include "base.h"
#include "rd.h"
#include "file.h"
#include "superblock.h"
#include "ohdr.h"
#include "file_ws.h"
#include "gslot.h"

/* Room a non-durable commit reserves beyond the end of allocated space, so
 * that the next commits need no superblock update (doc/APPEND.md). */
#define RESERVE_MIN ((uint64_t)1 << 20)
#define RESERVE_MAX ((uint64_t)256 << 20)

/* Four times what the last commits used, within bounds. */
static uint64_t reserve_size(uint64_t last_end, uint64_t end)
{
	uint64_t r = end > last_end ? (end - last_end) * 4 : 0;

	return r < RESERVE_MIN ? RESERVE_MIN : r > RESERVE_MAX ? RESERVE_MAX : r;
}

/* Every fsync of a commit: none in a loose object's (loose.h). */
static int order_point(const h5_txn *t)
{
	return t->loose ? 0 : h5_file_sync(t->f);
}

int h5_txn_order(h5_txn *t)
{
	return order_point(t);
}

int h5_txn_write_ordered(h5_txn *t, uint64_t addr, const void *buf, size_t len)
{
	int rc = h5_file_write_inplace(t->f, addr, buf, len);

	return rc < 0 ? rc : order_point(t);
}

int h5_txn_give_back(h5_file *f)
{
	return h5_file_sync(f);
}

int h5_txn_done(h5_txn *t)
{
	if (!t->durable || !t->sync_later || !t->last_done || t->loose)
		return 0;
	return h5_file_sync_since(t->f, t->want);
}

void h5_txn_begin(h5_txn *t, h5_file *f, bool durable, const h5_cidx_write_ops *wops, void *w)
{
	/* (loose_on changes only under write_lock, which the caller holds
	 * from here to its last write) */
	*t = (h5_txn){ .f = f, .wops = wops, .w = w, .durable = durable,
		       .loose = __atomic_load_n(&f->loose_on, __ATOMIC_ACQUIRE) };
}

/* The index writer writes its blocks in new space it takes from space.c;
 * the allocation end is past them, even when the writer failed after
 * writing. */
static int write_blocks(h5_txn *t)
{
	int rc = t->wops ? t->wops->write(t->w) : 0;

	t->end = h5_space_end(t->f);
	return rc;
}

int h5_txn_stage(h5_txn *t, uint64_t last_end)
{
	h5_file *f = t->f;
	uint64_t end;
	int rc = write_blocks(t);

	if (rc < 0)
		return rc;
	end = t->end;
	if (end > f->eoa) {
		uint64_t r = t->durable ? 0 : reserve_size(last_end, end);

		t->new_eoa = end;
		if (!r || h5_add_overflow(end, r, &t->new_eoa) || !h5_space_fits(f, t->new_eoa))
			t->new_eoa = end;
		/* FILE never shorter than the EOF address on disk (libhdf5:
		 * "truncated file"): space taken at the end and not written yet
		 * - a commit that failed on a full disk after its allocation -
		 * stays a hole */
		rc = h5_space_extend(f, t->new_eoa);
	}
	/* A durable commit keeps the room reserved past the end: the next
	 * change (cp -r: a create, then this file's rows, then the next
	 * create) needs no superblock write and fsync to take it again, and
	 * none to give it back (issue 55: 2 of a new file's 6 fsyncs). The
	 * daemon gives it back once changes are idle and at unmount
	 * (h5_txn_idle). */
	if (rc == 0)
		rc = order_point(t);
	/* a loose object's commit (loose.h): the EOF address waits for the
	 * commit that links it - written now, without the fsync before it, a
	 * power cut could keep the address and lose the file's new length */
	if (rc < 0 || !t->new_eoa || t->loose)
		return rc;
	/* the superblock covers the new space before anything points there */
	rc = h5_superblock_write_eoa(f, t->new_eoa);
	if (rc == 0)
		rc = order_point(t);
	if (rc == 0)
		f->eoa = t->new_eoa;
	return rc;
}

/* A new index (none before, or a new root or header): the layout message
 * points at it, in one write of its chunk; else the index switches in
 * place (its header). */
int h5_txn_switch(h5_txn *t, h5_ohdr_edit *e, const h5_msg *lay)
{
	h5_file *f = t->f;
	int rc;

	if (t->wops->addr_is_new(t->w)) {
		uint64_t field = H5_ADDR_UNDEF;
		size_t vlen = f->fmt.sizeof_addr;
		uint8_t v[32];

		rc = t->wops->addr_field(&field, lay, &f->fmt);
		h5_le_encode(v, t->wops->addr(t->w), f->fmt.sizeof_addr);
		if (rc == 0 && t->wops->switch_bytes)
			rc = t->wops->switch_bytes(t->w, &f->fmt, &field, v, &vlen);
		if (rc == 0)
			rc = h5_ohdr_patch(e, field, v, vlen);
		if (rc == 0)
			rc = h5_ohdr_write_chunk(f, e, h5_ohdr_chunk_of(e->oh, field));
		if (rc == 0 && t->wops->switched)
			rc = t->wops->switched(t->w);
	} else {
		rc = t->wops->commit(t->w);
	}
	return rc < 0 ? rc : order_point(t);
}

/* The superblock's EOF address drops to end. The file keeps its length
 * until that is durable (h5_space_cut). f->eoa drops first: when the
 * write or the fsync after it fails, the superblock holds either value,
 * and the next commit that needs more rewrites it (found by a failing
 * write in test_attr_crash.py: a later commit's new space lay beyond the
 * EOF address on disk, below the old f->eoa). */
static int eoa_lower(h5_file *f, uint64_t end)
{
	f->eoa = end;
	return h5_superblock_write_eoa(f, end);
}

/* The last write done: what this commit frees waits for an fsync that
 * begins after it - the durable commit's own below, else a later one. */
static int last_done(h5_txn *t, int rc)
{
	t->ticket = h5_space_ticket(t->f);
	t->last_done = rc == 0;
	if (rc == 0 && t->durable && t->sync_later)
		t->want = __atomic_load_n(&t->f->sync_started, __ATOMIC_SEQ_CST) + 1;
	else if (rc == 0 && t->durable)
		rc = order_point(t);
	return rc;
}

int h5_txn_last(h5_txn *t, h5_ohdr_edit *e, size_t c)
{
	return last_done(t, h5_ohdr_write_chunk(t->f, e, c));
}

int h5_txn_last_write(h5_txn *t, uint64_t addr, const void *buf, size_t len)
{
	return last_done(t, h5_file_write_inplace(t->f, addr, buf, len));
}

/* h5_txn_idle's work, also of h5_file_write_sync (no commit). */
static int sync_idle(h5_file *f, bool unsynced)
{
	uint64_t end, size;
	bool shrink;
	int rc = 0;

	/* slots for new groups no mkdir took since the last sync: freed, so
	 * an idle FILE keeps none of them (between two batches of mkdir the
	 * pool stays) */
	h5_gslot_release_locked(f, H5_ADDR_UNDEF, true);
	/* freed space at the allocation end lowers it (space.c; space held
	 * back for reader sections that ended joins the list first) */
	h5_space_settle(f);
	/* freed space waiting for a sync (its ticket) is released by one
	 * first: else space freed since the last sync - a removed dataset's
	 * chunks at release, stress-ng's files - stayed allocated past the
	 * unmount (545 MB of an empty tree after 10 s of aiol) */
	if (h5_ws(f)->freesp.pending) {
		rc = h5_file_sync(f);
		if (rc < 0)
			return rc;
		unsynced = false;
		h5_space_settle(f);
	}
	end = h5_space_end(f);
	/* also a file longer than its end of allocation (space allocated
	 * ahead, h5_file_reserve): the superblock's EOF address is written
	 * again before the cut, whatever this handle last wrote there, so the
	 * file is never shorter than the address on disk */
	shrink = f->eoa > end ||
		 (f->eoa == end && h5_file_size(f, &size) == 0 && size > f->base + end + h5_space_held(f));

	h5_err_clear();
	/* and never shorter than it: space allocated at the end and never
	 * written (a commit refused by a full disk after its allocation;
	 * stress-ng aiol left FILE 17 MB shorter than its EOF address) */
	rc = h5_space_extend(f, end < f->eoa ? f->eoa : end);
	if (rc == 0 && shrink)
		rc = eoa_lower(f, end);
	if (rc == 0 && (shrink || unsynced))
		rc = h5_file_sync(f);
	if (rc == 0 && shrink)
		rc = h5_space_cut(f, end);
	return rc;
}

int h5_txn_idle(h5_txn *t, bool unsynced)
{
	return t->loose ? 0 : sync_idle(t->f, unsynced);
}

/* Group fsync (issue 55): everything written before this call is durable
 * once an fsync that began after it has completed - another writer's,
 * done while this one waited for write_lock; then none of its own. */
int h5_file_write_sync(h5_file *f)
{
	uint64_t want;
	int rc;

	if (!h5_file_writable(f))
		return 0;
	want = __atomic_load_n(&f->sync_started, __ATOMIC_SEQ_CST) + 1;
	pthread_mutex_lock(&f->write_lock);
	rc = sync_idle(f, __atomic_load_n(&f->sync_done, __ATOMIC_ACQUIRE) < want);
	pthread_mutex_unlock(&f->write_lock);
	return rc;
}
