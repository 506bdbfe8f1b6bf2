/*
 * durable.c - where the daemon's write-behind becomes durable (issue 62:
 * one durability place; the kinds of write-behind register here instead
 * of being called by name, so a new kind is one file and one
 * registration, and the batches and their timer (wbtimer.c) depend on
 * this file, never this file on them).
 *
 * Kinds (registered when first made, flushed in their order: new files'
 * names before attribute values, lbatch.c then xbatch.c):
 *   - WB_ORDER_NAMES  lbatch.c: new files not linked yet;
 *   - WB_ORDER_ATTRS  xbatch.c: attribute values answered, not written.
 * Invariants:
 *   1. A change answered success is in exactly one kind's batch, or
 *      committed (ordered, crash-safe) in FILE.
 *   2. fs_meta_sync flushes every kind, in order, then fsyncs FILE once
 *      and cuts it to its end of allocation; a kind's failure stops it
 *      (the batch stays, tried again) and is returned.
 *   3. A sync that fails after answers were given marks the mount lost
 *      (fs_lost_set): fsync returns it, later writes EIO, unmount exit 1.
 *   4. The flags meta_unsynced/meta_seq (node/hold.c fs_meta_changed)
 *      are cleared only by a sync that no change overtook.
 * Tests: test_lbatch.py, test_xbatch.py, test_durable.py,
 * test_durable_kinds.py, test_long_runs.py.
 */
#include "member.h"

int wb_register_locked(h5fs *fs, const struct wb_kind *k, void *owner)
{
	unsigned i;

	if (fs->nwb >= WB_KINDS_MAX)
		return ENOMEM;
	/* in the kinds' order (names before attributes) */
	for (i = fs->nwb; i > 0 && fs->wb[i - 1].k->order > k->order; i--)
		fs->wb[i] = fs->wb[i - 1];
	fs->wb[i].k = k;
	fs->wb[i].owner = owner;
	fs->nwb++;
	return 0;
}

void wb_unregister(h5fs *fs, void *owner)
{
	pthread_mutex_lock(&fs->lock);
	for (unsigned i = 0; i < fs->nwb; i++) {
		if (fs->wb[i].owner != owner)
			continue;
		for (unsigned j = i + 1; j < fs->nwb; j++)
			fs->wb[j - 1] = fs->wb[j];
		fs->nwb--;
		break;
	}
	pthread_mutex_unlock(&fs->lock);
}

int wb_flush_all(h5fs *fs)
{
	struct wb_reg regs[WB_KINDS_MAX];
	unsigned n;
	int err = 0;

	pthread_mutex_lock(&fs->lock);
	n = fs->nwb;
	memcpy(regs, fs->wb, n * sizeof(regs[0]));
	pthread_mutex_unlock(&fs->lock);
	/* (a kind is unregistered only at the unmount, after the requests) */
	for (unsigned i = 0; i < n && !err; i++)
		err = regs[i].k->flush(regs[i].owner);
	return err;
}


/* The changes' fsync, holding FILE's lock as every write does. */
int fs_meta_sync(h5fs *fs)
{
	bool pending;
	uint64_t seq;
	int err, rc;

	err = wb_flush_all(fs);         /* (tried again by the next flush) */
	if (err)
		return err;
	pthread_mutex_lock(&fs->wmu);
	pending = fs->meta_unsynced;
	seq = fs->meta_seq;
	err = fs->lost;
	pthread_mutex_unlock(&fs->wmu);
	if (err || !pending)
		return err;     /* lost: FILE stays at its last good commit */
	err = fs_write_begin(fs);
	if (err)
		return err;
	rc = h5_file_write_sync(fs->f);
	if (rc == 0) {
		/* a change that came while this sync waited for FILE (an
		 * unlink, storage freed at a release) stays for the next one:
		 * cleared, the unmount skipped its sync and cut, and FILE kept
		 * a removed dataset's length (test_stress_io "truncated", CI
		 * run 4 of session 62: 4.8 MB) */
		pthread_mutex_lock(&fs->wmu);
		if (fs->meta_seq == seq)
			fs->meta_unsynced = false;
		pthread_mutex_unlock(&fs->wmu);
	}
	fs_write_end(fs);
	if (rc < 0) {
		/* committed changes were answered: not durable now, and a
		 * later fsync that succeeded would say they are */
		err = h5err_logged(fs, rc, "fsync", "/", NULL, UINT64_MAX);
		fs_lost_set(fs, err);
		return err;
	}
	return 0;
}

/* Unmounting, no reader left: the last rewritten chunk moved down if
 * that lets FILE end lower (h5_file_compact). Nothing answered depends
 * on it: a failure is logged, FILE keeps its last commit. */
void fs_compact(h5fs *fs)
{
	int rc;

	if (fs_lost(fs) || fs_write_begin(fs))
		return;
	rc = h5_file_compact(fs->f);
	fs_write_end(fs);
	if (rc < 0)
		h5err_logged(fs, rc, "unmounting: moving the last chunk down", "/", NULL, UINT64_MAX);
}

