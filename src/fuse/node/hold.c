/*
 * hold.c - FILE held for writing: whether the mount writes (fs_writable),
 * the lock every write takes (fs_write_begin/end) and the lost-change
 * state (fs_lost_set, fs_lost: ext4's errors=remount-ro is the model).
 */
#include "node.h"

#include <assert.h>
#include <stdlib.h>

/* ---- the pager (commit/pager.c: the state every write decision reads,
 * moved by its transitions under wmu) ----------------------------------- */

/* After a transition (wmu held): a broken invariant a release build kept
 * is logged once per mount (a debug build aborted in pager.c). */
static void pager_logged(h5fs *fs)
{
	if (fs->pg.violation && !fs->pg_logged) {
		fs->pg_logged = true;
		h5fs_log(fs, LOG_ERR, "pager: %s (state %s, writers %u): please report", fs->pg.violation,
			 pager_state_name(fs->pg.state), fs->pg.writers);
	}
}

/* The mount writes: FILE is open read-write and the mount is not -o ro
 * (the pager is not RO; set once, at h5fs_new, never moved after). */
bool fs_writable(const h5fs *fs)
{
	return pager_writes(&fs->pg);
}

/* FILE's lock is held only while a write is under way (issue 33: a
 * mount that only reads, or is idle, must not keep libhdf5 - h5py, a
 * detector's own writer - out of its file). The first write takes
 * libhdf5's writer lock (flock LOCK_EX, never waiting: EBUSY with one
 * log line while another program has FILE open, libhdf5's readers hold
 * LOCK_SH); the last one gives it back once committed. While the lock was
 * not held, another program may have written FILE: writing from a view
 * read before (decoded metadata, an appender's rows) could undo that
 * program's work, so the first write asks h5_file_changed_by_others
 * (size, or times and first bytes - libhdf5 opening FILE r+ and closing
 * it moves only the times; a live mount takes any move of the stamp for
 * a change) against the stamp of the generation it locks,
 * which the engine takes again when we give the lock back (our own writes
 * are no change). A live mount (live/live.c) then opens FILE anew and
 * tries again (live_retry); the caller re-resolves its nodes in that
 * generation (node_use_current; a write descriptor, behind/write.c
 * wfile_follow, only when FILE did not change since it was opened). A
 * mount that does not follow changes (-o refresh=0) gets ESTALE. The lock
 * is always taken on the current generation's FILE, and a refresh never
 * replaces it while writers is not 0 (live_refresh). */
#define FINAL_LOCK_WAIT 60      /* s an unmount's last commit waits for FILE's lock */

static int write_lock(h5fs *fs, bool *changed)
{
	int rc;

	*changed = false;
	if (pager_writing(&fs->pg))
		return 0;
	rc = h5_file_lock(fs->f);
	/* Unmounting: `fusermount3 -u` returned before these last commits,
	 * and a program that opened FILE right after it (h5py: LOCK_SH while
	 * open) holds the lock a moment. Refused now, what was answered would
	 * be lost and FILE left with unreferenced space at its end (issue 72:
	 * "could not be fsync'd: Device or resource busy"): wait for it, up to
	 * FINAL_LOCK_WAIT s (wmu held: nothing else writes meanwhile). */
	for (unsigned ms = 0; rc == H5_ERR_BUSY && __atomic_load_n(&fs->final_commit, __ATOMIC_ACQUIRE) &&
	     ms < FINAL_LOCK_WAIT * 1000; ms += 20) {
		if (ms == 0)
			h5fs_log(fs, LOG_NOTICE, "unmounting: %s is locked by another program; the last commit "
				 "waits for it to close the file (up to %d s)", h5_file_path(fs->f), FINAL_LOCK_WAIT);
		h5_err_clear();
		usleep(20000);
		rc = h5_file_lock(fs->f);
	}
	if (rc == H5_ERR_BUSY) {
		if (!fs->busy_logged)
			h5fs_log(fs, LOG_NOTICE, "write refused (EBUSY): %s is locked by another program "
				 "(libhdf5 holds the lock while it has the file open); try again once "
				 "it closed the file", h5_file_path(fs->f));
		fs->busy_logged = true;
		return EBUSY;
	}
	if (rc < 0)
		return h5err_logged(fs, rc, "write lock", "", NULL, UINT64_MAX);
	/* a live mount: any change of the stamp (an in-place rewrite of the
	 * same size moves the times; the lenient test below would take the
	 * stamp as it is, and the watcher would never see that change) */
	rc = fs->live && h5_file_changed(fs->f, NULL) ? 1 : h5_file_changed_by_others(fs->f);
	if (rc != 0) {
		h5_file_unlock(fs->f);
		if (rc < 0)
			return h5err_logged(fs, rc, "write lock", "", NULL, UINT64_MAX);
		*changed = true;
		return ESTALE;
	}
	fs->busy_logged = fs->stale_logged = false;
	fs->locked_f = fs->f;
	fs->wepoch++;
	return 0;
}

/* undo: the write puts back what a failed change of this mount took
 * away (trunc_unempty: a replacement's old rows). It runs also on a mount
 * that lost a change since: refusing it would turn one lost change into a
 * second one (the old dataset emptied for good), and it writes nothing the
 * mount had not already committed once. */
static int write_begin(h5fs *fs, bool undo)
{
	bool changed = false;
	int e;

	for (int attempt = 0;; attempt++) {
		uint64_t tried, now;
		unsigned state;

		pthread_mutex_lock(&fs->wmu);
		tried = fs->gen->num;
		/* the pager decides (its admission table, under wmu: a commit
		 * thread that lost a change meanwhile is seen here) */
		state = fs->pg.state;
		e = pager_admit(&fs->pg, undo ? PAGER_UNDO : PAGER_CHANGE);
		if (!e)
			e = write_lock(fs, &changed);
		if (!e) {
			pager_begin(&fs->pg, undo);
			fs->wbegins++;
			pager_logged(fs);
		}
		pthread_mutex_unlock(&fs->wmu);
		if (e && e != EBUSY && e != ESTALE && !changed) {
			h5fs_log(fs, e == EIO ? LOG_ERR : LOG_NOTICE, "write refused (%s): %s (%s)", strerror(e),
				 pager_refusal(undo ? PAGER_UNDO : PAGER_CHANGE, state), h5_file_path(fs->f));
			return e;
		}
		/* a live mount follows the change (a new generation: made by
		 * the watcher meanwhile, or now) */
		if (!changed || !fs->live || attempt + 1 >= H5FS_LIVE_READ_TRIES)
			break;
		pthread_mutex_lock(&fs->wmu);
		now = fs->gen->num;
		pthread_mutex_unlock(&fs->wmu);
		if (now == tried && !live_retry(fs, attempt))
			break;
	}
	h5_err_clear();
	if (e == ESTALE) {
		pthread_mutex_lock(&fs->wmu);
		if (!fs->stale_logged)
			h5fs_log(fs, LOG_ERR, "write refused (ESTALE): %s was changed by another program %s",
				 h5_file_path(fs->f), fs->live ? "and could not be opened anew" : "since it was "
				 "mounted; with -o refresh=0 a read-write mount does not follow such changes: "
				 "unmount and mount again to write");
		fs->stale_logged = true;
		pthread_mutex_unlock(&fs->wmu);
	}
	return e;
}

void fs_meta_changed(h5fs *fs)
{
	int64_t now = h5fs_now_ns();

	pthread_mutex_lock(&fs->wmu);
	fs->meta_ns = now;
	pager_changed(&fs->pg);
	pager_logged(fs);
	pthread_mutex_unlock(&fs->wmu);
}

void fs_meta_synced(h5fs *fs, uint64_t seq)
{
	pthread_mutex_lock(&fs->wmu);
	pager_synced(&fs->pg, seq);
	pager_logged(fs);
	pthread_mutex_unlock(&fs->wmu);
}

/* (a change counted from before the lock is asked for: FILE is written
 * only after it, and fs_write_end ends it) */
static int change_write_begin(h5fs *fs, bool undo)
{
	int e;

	fs_change_begin(fs);
	e = write_begin(fs, undo);
	if (e)
		fs_change_end(fs);
	return e;
}

int fs_write_begin(h5fs *fs)
{
	return change_write_begin(fs, false);
}

int fs_write_begin_undo(h5fs *fs)
{
	return change_write_begin(fs, true);
}

/* Sequentially consistent: a listing reads chg_begun then chg_done, a
 * change adds to chg_begun before it touches anything */
void fs_change_begin(h5fs *fs)
{
	__atomic_add_fetch(&fs->chg_begun, 1, __ATOMIC_SEQ_CST);
}

void fs_change_end(h5fs *fs)
{
	__atomic_add_fetch(&fs->chg_done, 1, __ATOMIC_SEQ_CST);
}

/* done == begun read after it: every change begun up to mark has ended
 * (one begun after mark and ended already may hide one of them still
 * under way, but then chg_begun moved past mark: fs_change_since) */
bool fs_change_mark(h5fs *fs, uint64_t *mark)
{
	*mark = __atomic_load_n(&fs->chg_begun, __ATOMIC_SEQ_CST);
	return __atomic_load_n(&fs->chg_done, __ATOMIC_SEQ_CST) == *mark;
}

bool fs_change_since(h5fs *fs, uint64_t mark)
{
	return __atomic_load_n(&fs->chg_begun, __ATOMIC_SEQ_CST) != mark;
}

void fs_lost_set(h5fs *fs, int err)
{
	pthread_mutex_lock(&fs->wmu);
	pager_lose(&fs->pg, err);
	pager_logged(fs);
	pthread_mutex_unlock(&fs->wmu);
	h5fs_lost_note();
}

int fs_lost(h5fs *fs)
{
	int e;

	pthread_mutex_lock(&fs->wmu);
	e = pager_lost(&fs->pg);
	pthread_mutex_unlock(&fs->wmu);
	return e;
}

void fs_write_end(h5fs *fs)
{
	pthread_mutex_lock(&fs->wmu);
	if (pager_end(&fs->pg)) {
		h5_file_unlock(fs->locked_f);
		fs->locked_f = NULL;
	}
	pager_logged(fs);
	pthread_mutex_unlock(&fs->wmu);
	fs_change_end(fs);
}
