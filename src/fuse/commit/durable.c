/*
 * durable.c - where the daemon's changes become durable (commit.h, the
 * transition COMMITTED -> DURABLE; invariants 5 and 6): every kind of
 * write-behind flushed through its registration (sched.c), in order
 * (new files' names before attribute values), then FILE fsync'd once and
 * cut to its end of allocation. Called by fsync, fsyncdir, syncfs, the
 * scheduler once a batch is empty, the idle kind and the unmount.
 * A kind's failure stops it (the batch stays, tried again) and is
 * returned; a sync that fails after answers were given marks the mount
 * lost (fs_lost_set): fsync returns it, later writes EIO, unmount exit 1.
 * The flags meta_unsynced/meta_seq (node/hold.c fs_meta_changed) are
 * cleared only by a sync that no change overtook.
 * Tests: test_lbatch.py, test_xbatch.py, test_durable.py,
 * test_durable_kinds.py, test_long_runs.py.
 */
#include "commit.h"

/* The changes' fsync, holding FILE's lock as every write does. */
int fs_meta_sync(h5fs *fs)
{
	bool pending;
	uint64_t seq;
	int err, rc;

	err = commit_barrier(fs, COMMIT_ALL);         /* (tried again by the next flush) */
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
		fs_meta_synced(fs, seq);
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

