/*
 * commit.h - the daemon's commit layer (src/fuse/commit), between the node
 * model (node/) and the member root's operations (member/): where every
 * write of a single-FILE mount is admitted, ordered, made durable or
 * lost. SQLite's pager is the model: one state diagram, numbered
 * invariants, one sticky error.
 *
 *   gate.c     admit: FILE's write lock, the barrier of the write-behind
 *              kinds, the object as the current generation shows it
 *              (commit_begin/commit_end); reader sections (commit_rd_*)
 *   sched.c    the write-behind kinds, registered with callbacks, and the
 *              one scheduler thread that commits them when due
 *   durable.c  durability: every kind flushed, FILE fsync'd and cut to its
 *              end of allocation (fs_meta_sync); the unmount's compaction
 *
 * The engine below does the ordered commit itself (h5core write/txn.c:
 * new bytes first, a barrier, then the one pointer that makes them
 * reachable), so what this layer orders is which change goes first.
 *
 * A change's states (the function of each transition):
 *
 *   request --admit--> ADMITTED --reserve--> RESERVED --answer--> PENDING
 *   (commit_begin:      (the engine's h5_*_reserve, before   (in a kind's batch
 *    fs_write_begin,     the answer: ENOSPC, the host's       or a handle's
 *    barrier, EROFS,     margin, refused here)                queue: answered)
 *    EBUSY, ESTALE,
 *    EIO when LOST)
 *   PENDING --commit--> COMMITTED --sync--> DURABLE
 *   (the scheduler: a kind's   (fs_meta_sync, fsync, syncfs,
 *    commit when due; a         fsyncdir, the idle kind, the unmount)
 *    barrier; fsync; close)
 *   PENDING or COMMITTED --a commit or sync fails--> LOST (fs_lost_set:
 *    sticky until unmount; fsync returns its errno, writes get EIO, the
 *    daemon exits 1)
 *   A change made at once (mkdir, rm, mv, utimens, truncate, a setxattr
 *   that is not batched) goes ADMITTED -> COMMITTED inside commit_begin /
 *   commit_end, answered after its commit.
 *
 * Invariants:
 *   1. Every write runs between commit_begin (or fs_write_begin for a
 *      handle's stream) and commit_end/fs_write_end: FILE's lock is held
 *      while any change is not committed (node/hold.c).
 *   2. A change answered success is in exactly one kind's batch or one
 *      handle's queue, or committed (ordered, crash-safe) in FILE.
 *   3. Space is decided before the answer: a change is answered only once
 *      the engine reserved what committing it needs (ENOSPC before).
 *   4. Barriers keep the order users see: a change that may depend on a
 *      batched one flushes that kind first (commit_barrier), in the kinds'
 *      order (new files' names before attribute values).
 *   5. A kind's commit that fails keeps its batch, tried again when due;
 *      after its tries, or at the unmount, it marks the mount LOST.
 *   6. fs_meta_sync flushes every kind, in order, then fsyncs FILE once;
 *      meta_unsynced is cleared only by a sync that no change overtook.
 *   7. One thread (sched.c) commits every kind when due; a kind's own
 *      lock is held across its count and commit, never the scheduler's.
 *
 * Tests: test_lbatch.py, test_xbatch.py, test_durable.py,
 * test_durable_kinds.py, test_idle_commit.py, test_long_runs.py, and the
 * crash enumerations (test_*_crash.py).
 */
#ifndef H5FS_COMMIT_H
#define H5FS_COMMIT_H

#include "node.h"

/* ---- gate.c ---- */
/* Kinds a barrier flushes (commit_barrier, sched.c; commit_begin's flags) */
enum {
	COMMIT_NAMES = 1,       /* new files not linked yet (member/lbatch.c) */
	COMMIT_ATTRS = 2,       /* attribute values answered (member/xbatch.c) */
	COMMIT_ALL = 3,
};
/* Admit a change of n (a node of FILE itself; objects of other files,
 * reached by external links, are read-only): the kinds in barrier
 * flushed, FILE's lock taken, n in use (*u) as the current generation
 * shows it. 0, or an errno (EROFS logged as op's notice; EBUSY, ESTALE
 * logged by the lock). */
int commit_begin(struct use *u, h5fs *fs, struct node *n, unsigned barrier, const char *op);
/* The change ended (changed: it may have written FILE, also after a
 * failure: durable at the next sync); u and FILE's lock let go. */
void commit_end(h5fs *fs, struct use *u, bool changed);
/* A change refused before its answer (the transition to RESERVED failed:
 * ENOSPC, the host's margin, EIO): the engine's rc made an errno, with
 * one log line "OP PATH[/NAME]: refused (...) before its answer: why"
 * (a full disk a notice, the rest errors); the engine's error cleared */
int commit_refuse(h5fs *fs, int rc, const char *op, const char *path, const char *name);
/* A reader section of the current generation's FILE (its space freed
 * meanwhile is not reused until the section ends): every request that
 * reads FILE is one, on a mount that writes */
struct rd {
	struct gen *g;
	uint64_t t;
};
struct rd commit_rd_begin(h5fs *fs);
void commit_rd_end(struct rd *x);

/* ---- sched.c ---- */
/* A kind of write-behind. Batch kinds (count and commit set) are
 * committed idle_ms after their last change, max_ms after the first at
 * the latest, then made durable (settle: fs_meta_sync) once empty; a commit that
 * fails is tried again idle_ms later. A periodic kind (poll set) is
 * called when due and says when next. flush commits everything now
 * (barriers, fs_meta_sync). */
struct commit_kind {
	const char *name;
	unsigned bit;           /* COMMIT_NAMES, ...: barriers and flush order */
	unsigned idle_ms, max_ms;
	size_t (*count)(void *owner);           /* slot mu held */
	int (*commit)(void *owner);             /* slot mu held: 0 or an errno */
	int (*flush)(void *owner);              /* no lock held: 0 or an errno */
	int (*settle)(h5fs *fs);                /* a batch empty after its commits: fs_meta_sync */
	int64_t (*poll)(void *owner, int64_t now);      /* next due time */
};
/* A registered kind's slot, kept in its owner. mu is the batch's lock,
 * held around count() and commit() and by commit_changed's caller. */
struct commit_slot {
	const struct commit_kind *k;
	void *owner;
	h5fs *fs;
	struct commit_sched *cs;
	pthread_mutex_t mu;
	bool timed, busy, listed;
	int64_t first_ns, last_ns;
};
/* Registered (fs->lock held: no flush that follows the first change
 * misses it); the scheduler started at the first. 0 or an errno. */
int commit_slot_start_locked(struct commit_slot *s, h5fs *fs, const struct commit_kind *k, void *owner);
/* A change added to the slot's batch (mu held); first: it was empty */
void commit_changed(struct commit_slot *s, bool first);
/* Unregistered, waiting for the scheduler to leave it (mu not held) */
void commit_slot_stop(struct commit_slot *s);
/* A barrier: every kind in mask flushed, in their order: 0, or the errno
 * of the first commit that failed (its batch stays, tried again later) */
int commit_barrier(h5fs *fs, unsigned mask);
/* The scheduler's thread ended (unmount, after the kinds' stops) */
void commit_sched_stop(h5fs *fs);

/* ---- durable.c ---- */
/* What fs_meta_changed (node.h) remembered made durable: every kind
 * flushed, then FILE fsync'd and cut: fsync, syncfs, idle, unmount. */
int fs_meta_sync(h5fs *fs);
/* Unmounting: the last rewritten chunk moved down when FILE can end lower
 * (h5_file_compact); failures are logged only. */
void fs_compact(h5fs *fs);

#endif
