/*
 * durable.c - where the daemon's changes become durable (commit.h, the
 * transition COMMITTED -> DURABLE; invariants 5 and 6): every kind of
 * write-behind flushed through its registration (sched.c), in order
 * (new files' names before attribute values), then FILE fsync'd once and
 * cut to its end of allocation. Called by fsync, fsyncdir, the
 * scheduler once a batch is empty, the idle kind and the unmount
 * (syncfs(2) is never sent to a FUSE daemon; the kernel's flushes reach
 * it as fsync).
 * A kind's failure stops it (the batch stays, tried again) and is
 * returned; a sync that fails after answers were given marks the mount
 * lost (fs_lost_set): fsync returns it, later writes EIO, unmount exit 1.
 * The pager's unsynced flag and sequence (node/hold.c fs_meta_changed) are
 * cleared only by a sync that no change overtook.
 * Tests: test_lbatch.py, test_xbatch.py, test_durable.py,
 * test_durable_kinds.py, test_long_runs.py.
 */
#include "commit.h"

#include <fcntl.h>
#include <sys/stat.h>

/* A sync's cut (FILE trimmed to its end of allocation, its EOF address
 * lowered) and the unmount's compaction change no byte anything shows,
 * but move FILE's mtime, which every dataset without stored times shows:
 * the idle trim 5 s after a copy-in made a second `rsync -a` out send
 * them again (issue 72 item 4). Called holding FILE's lock: FILE's mtime
 * before (0, or -1: not kept), and the writer count then; keep_mtime puts
 * it back when no other write began meanwhile (the lock is shared by
 * concurrent writers, whose changes do move it). */
static int mtime_before(h5fs *fs, struct timespec *t, uint64_t *begins)
{
	struct stat st;
	int fd = h5_file_fd(fs->f);
	bool alone;

	pthread_mutex_lock(&fs->wmu);
	alone = fs->pg.writers == 1;
	*begins = fs->wbegins;
	pthread_mutex_unlock(&fs->wmu);
	if (!alone || fd < 0 || fstat(fd, &st) < 0)
		return -1;
	*t = st.st_mtim;
	return 0;
}

static void keep_mtime(h5fs *fs, const struct timespec *t, uint64_t begins)
{
	struct stat st;
	int fd = h5_file_fd(fs->f);
	bool alone;

	pthread_mutex_lock(&fs->wmu);
	alone = fs->pg.writers == 1 && fs->wbegins == begins;
	pthread_mutex_unlock(&fs->wmu);
	if (alone && fstat(fd, &st) == 0 &&
	    (st.st_mtim.tv_sec != t->tv_sec || st.st_mtim.tv_nsec != t->tv_nsec)) {
		struct timespec ts[2] = { { .tv_nsec = UTIME_OMIT }, *t };

		if (futimens(fd, ts) < 0)
			h5fs_log(fs, LOG_DEBUG, "%s: its modification time not kept after the trim: %s",
				 h5_file_path(fs->f), strerror(errno));
	}
}

/* The changes' fsync, holding FILE's lock as every write does, after
 * the kinds in mask flushed. */
static int meta_sync(h5fs *fs, unsigned mask)
{
	bool pending;
	uint64_t seq, begins;
	struct timespec mt;
	int err, rc, keep;

	err = commit_barrier(fs, mask);        /* (tried again by the next flush) */
	if (err)
		return err;
	pthread_mutex_lock(&fs->wmu);
	pending = pager_unsynced(&fs->pg);
	seq = fs->pg.seq;
	err = pager_lost(&fs->pg);
	pthread_mutex_unlock(&fs->wmu);
	if (err || !pending)
		return err;     /* lost: FILE stays at its last good commit */
	err = commit_begin(NULL, fs, NULL, 0, "fsync");        /* (FILE's lock alone) */
	if (err)
		return err;
	keep = mtime_before(fs, &mt, &begins);
	rc = h5_file_write_sync(fs->f);
	if (rc == 0 && keep == 0)
		keep_mtime(fs, &mt, begins);
	if (rc == 0) {
		/* a change that came while this sync waited for FILE (an
		 * unlink, storage freed at a release) stays for the next one:
		 * cleared, the unmount skipped its sync and cut, and FILE kept
		 * a removed dataset's length (test_stress_io "truncated", CI
		 * run 4 of session 62: 4.8 MB) */
		fs_meta_synced(fs, seq);
	}
	commit_end(fs, NULL, false);
	if (rc < 0) {
		/* committed changes were answered: not durable now, and a
		 * later fsync that succeeded would say they are */
		err = h5err_logged(fs, rc, "fsync", "/", NULL, UINT64_MAX);
		fs_lost_set(fs, err);
		return err;
	}
	return 0;
}

int fs_meta_sync(h5fs *fs)
{
	return meta_sync(fs, COMMIT_EVERY);
}

int fs_meta_settle(h5fs *fs)
{
	return meta_sync(fs, COMMIT_ALL | COMMIT_STREAMS);
}

/* Unmounting, no reader left: the last rewritten chunk moved down if
 * that lets FILE end lower (h5_file_compact). Nothing answered depends
 * on it: a failure is logged, FILE keeps its last commit. Only after this
 * mount wrote (wepoch: FILE's lock taken at least once): a mount that
 * only read leaves FILE as it found it, and its unmount does not wait for
 * FILE's lock (an h5py reader of FILE held it for the 60 s of
 * FINAL_LOCK_WAIT, node/hold.c: 10 s of every such test's teardown).
 * After writes it waits as the last commit does, so that FILE ends as
 * `h5fs -u` leaves it whatever opened it at once (issue 72). */
void fs_compact(h5fs *fs)
{
	struct timespec mt;
	uint64_t begins, wrote;
	int rc, keep;

	pthread_mutex_lock(&fs->wmu);
	wrote = fs->wepoch;
	pthread_mutex_unlock(&fs->wmu);
	if (!wrote || fs_lost(fs) || commit_begin(NULL, fs, NULL, 0, "compact"))
		return;
	keep = mtime_before(fs, &mt, &begins);
	rc = h5_file_compact(fs->f);
	if (rc == 0 && keep == 0)
		keep_mtime(fs, &mt, begins);
	commit_end(fs, NULL, false);
	if (rc < 0)
		h5err_logged(fs, rc, "unmounting: moving the last chunk down", "/", NULL, UINT64_MAX);
}

