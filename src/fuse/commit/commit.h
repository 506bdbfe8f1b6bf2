/*
 * commit.h - the daemon's commit layer (src/fuse/commit), between the node
 * model (node/) and what writes: the write-behind kinds (behind/) and,
 * above them, the member root's operations (member/). Where every write
 * of a single-FILE mount is admitted, ordered, made durable or lost.
 * SQLite's pager is the model: one state diagram, numbered invariants,
 * one sticky error.
 *
 *   admit.c    admission before the answer (commit_ask): the pager's
 *              table of operation x state (state/pager.c), one log line
 *              a refusal, then the admit of the kind whose storage takes
 *              the change
 *   gate.c     begin: FILE's write lock, the barrier of the write-behind
 *              kinds, the object as the current generation shows it
 *              (commit_begin/commit_end); reader sections (commit_rd_*)
 *   sched.c    the write-behind kinds, registered with the mount (their
 *              policies, admits, stops) and with the scheduler (their
 *              slots), and the one scheduler thread that commits them
 *              when due
 *   durable.c  durability: every kind flushed, FILE fsync'd and cut to its
 *              end of allocation (fs_meta_sync; fs_meta_settle: the
 *              batches and streams); the unmount's compaction
 *
 * The kinds (src/fuse/behind/, each one file defining a struct
 * commit_kind, registered the same way by member/setup.c; nothing here
 * calls them but through it):
 *   lbatch.c   new files and directories not linked yet, rmdirs, and
 *              (mbatch.c) renames, hard links and unlinks within a
 *              symbol-table group (COMMIT_NAMES);
 *              its admit: a soft link its group's storage cannot take,
 *              a create's or mkdir's name taken (EEXIST) or its room
 *              (ENOSPC)
 *   xbatch.c   attribute values answered (COMMIT_ATTRS); its admit: what
 *              the object's attribute storage takes (h5_attr_set_check),
 *              XATTR_CREATE/REPLACE, the room
 *   npy.c      np.save's streams whose every byte is in (COMMIT_STREAMS:
 *              made 1 s after their last byte, at their close, or at any
 *              sync); its admit: a failed stream's errno again, EPERM
 *              once made, EINVAL for bytes out of order (their space is
 *              the engine writer's, ENOSPC as each byte is placed)
 *   idle.c     the open datasets' pending bytes: write handles' rows and
 *              kept overwrites (wfile.c, wopen.c, write.c, wclose.c,
 *              wqueue.c, pending.c, overwrite.c, tail.c, csvin.c,
 *              truncate.c) (COMMIT_WRITES): their policy (max_bytes,
 *              max_ms: the append stream's and the overwriter's bound),
 *              their idle commit, their flush (fs_meta_sync) and stop
 *              (every descriptor's bytes committed), their admit (wfile.c
 *              wfile_admit: every refusal of a write)
 *
 * The engine below does the ordered commit itself (h5core write/txn.c:
 * new bytes first, a barrier, then the one pointer that makes them
 * reachable), so what this layer orders is which change goes first.
 *
 * The mount's state is the pager (state/pager.h: fs->pg, its diagram and
 * its invariants P1-P4, checked by pager.c at every transition; a debug
 * build, configure --enable-debug as the sanitizer builds CI runs are,
 * aborts on a violation, a release build logs the first once;
 * tests/unit/test_pager.c breaks each on purpose). Its state is what the
 * write decisions read: admission (admit.c commit_ask, over the pager's
 * table of operation x state: EROFS on a read-only mount, another file's
 * object or a view; EIO once LOST), FILE's lock (node/hold.c, which
 * moves the pager at each begin and end), the syncs (durable.c) and the
 * idle kind (behind/idle.c). A root without writes refuses through
 * kit/root.c root_no_write.
 *
 * A change's way through (the function of each step):
 *
 *   request --admit--> ADMITTED --reserve--> RESERVED --answer--> PENDING
 *   (commit_ask: the     (the engine's h5_*_reserve, before   (in a kind's batch
 *    table, the kind's   the answer: ENOSPC, the host's       or a handle's
 *    admit; commit_begin: margin, refused by commit_refuse;   pending bytes:
 *    kinds flushed,      a write's: its kind's admit)         answered)
 *    FILE's lock; EROFS,
 *    EBUSY, ESTALE; EIO
 *    when LOST)
 *   PENDING --commit--> COMMITTED --sync--> DURABLE
 *   (batches: the scheduler   (fs_meta_sync: fsyncdir, fsync
 *    when due, a barrier;      without own bytes, the unmount;
 *    a handle's bytes: its     fs_meta_settle: a handle's fsync,
 *    request thread at the     a batch's settle, the idle sync)
 *    kind's max_bytes or
 *    max_ms, fsync, close,
 *    fs_meta_sync, the idle
 *    kind)
 *   PENDING or COMMITTED --a commit or sync fails--> LOST (fs_lost_set)
 *   A change made at once (rm, mv, utimens, truncate, a setxattr that is
 *   not batched; mkdir and rmdir go in the new files' batch, lbatch.c,
 *   and so do mv, ln and rm within a symbol-table group, mbatch.c) goes ADMITTED -> COMMITTED inside commit_begin /
 *   commit_end, answered after its commit.
 *
 * The rules the layer keeps (the pager asserts P1-P4 of state/pager.h;
 * these others are the code's structure, held by the tests named below):
 *   1. Every write runs between commit_begin and commit_end (COMMIT_FILE:
 *      a write descriptor's stream, a batch's commit, holding FILE's lock
 *      alone; COMMIT_UNDO: putting back what a failed change took): FILE's
 *      lock is held exactly while there are writers (the pager's P1).
 *   2. A change answered success is in exactly one kind's batch or one
 *      handle's pending bytes, or committed (ordered, crash-safe) in FILE.
 *   3. Space is decided before the answer: a change is answered only once
 *      the engine reserved what committing it needs (ENOSPC before); a
 *      handle's overwrites reserve the chunks they touch, once each;
 *      np.save's streams write before they answer, each write's bytes
 *      given their disk blocks or reserved first by the engine's writer
 *      (h5_dset_writer_put: h5_file_fill, h5_file_reserve; doc/DESIGN.md
 *      "The commit layer").
 *   4. Barriers keep the order users see: a change that may depend on a
 *      batched one flushes that kind first (commit_barrier), in the kinds'
 *      order (new files' names before attribute values).
 *   5. A batch's commit that fails: the link batch keeps its files and is
 *      tried again when due, until its tries run out or the unmount, then
 *      the mount is LOST; the attribute batch marks the mount LOST at once
 *      (its values were answered and cannot be put back in order).
 *   6. fs_meta_sync flushes every kind (COMMIT_EVERY: the batches,
 *      np.save's streams, every write descriptor's pending bytes), in
 *      order, then fsyncs FILE once; fs_meta_settle the batches and
 *      streams alone (POSIX fsync(2) asks for a file's own data: another
 *      descriptor's bytes stay its own); the unmount stops every kind
 *      registered with the mount through one loop (commit_sched_stop),
 *      the write descriptors' stop committing what any still holds; the
 *      pager's unsynced flag is cleared only by a sync that no change
 *      overtook (fs_meta_synced).
 *   7. One thread (sched.c) commits the batch kinds when due (their
 *      policy, computed once at registration: commit_policy), with the
 *      kind's own lock; a handle's bytes are committed on its request
 *      threads (a write past the bound, fsync, close), by a request's
 *      fs_meta_sync, or by the idle kind on that thread; a write's
 *      admission and ticket are taken under one q->mu, and a hold given
 *      back only under q->apply (behind/wfile.c wfile_give_back), so no
 *      other thread's commit leaves a write without FILE's lock.
 *   8. What a kind's storage cannot hold is refused before the answer
 *      on one path, commit_ask -> the pager's table -> the kind's admit:
 *      every write of a descriptor (wfile_admit), a soft link by symlink
 *      or rename and a new name of the batch, its room reserved
 *      (lbatch.c), an attribute value the batch takes (xbatch.c: EEXIST,
 *      ENODATA, h5_attr_set_check, its reserve; a change it cannot
 *      promise is made at once by xattr.c, whose engine call refuses it
 *      before the answer).
 *
 * Tests: test_lbatch.py, test_xbatch.py, test_durable.py,
 * test_durable_kinds.py, test_idle_commit.py, test_commit_kinds.py,
 * test_procs.py, test_long_runs.py, and the crash enumerations
 * (test_*_crash.py).
 */
#ifndef H5FS_COMMIT_H
#define H5FS_COMMIT_H

#include "node.h"

/* ---- admit.c ---- */
/* What a request asks before its answer: the table's row (op), and the
 * kind whose storage is to hold it (kind: COMMIT_NAMES, ...; 0: none),
 * with what that kind's admit reads (arg: the kind's own struct, declared
 * beside it: batch.h struct lb_ask, wstate.h struct wfile_ask). */
struct commit_ask {
	enum pager_op op;
	unsigned kind;
	const char *what;       /* the request, for the log line */
	const char *path;       /* the object's path, or NULL */
	void *arg;              /* the kind's: what it reads, what it found */
};
/* The one way a write is admitted: the pager's admission table (state/
 * pager.c: EROFS, EIO) read under wmu, then the kind's admit callback
 * (what its storage can hold: ENAMETOOLONG, EFBIG, EBUSY, ENOSPC, ...).
 * 0, or the errno the request is answered with, logged once (the table's
 * refusals here, the kind's by the kind, which knows why). */
int commit_ask(h5fs *fs, const struct commit_ask *q);
/* The table alone (no kind): commit_ask with kind 0 */
int commit_admit(h5fs *fs, enum pager_op op, const char *what, const char *path);

/* ---- gate.c ---- */
/* Kinds a barrier flushes (commit_barrier, sched.c; commit_begin's flags) */
enum {
	COMMIT_NAMES = 1,       /* new files not linked yet (behind/lbatch.c) */
	COMMIT_ATTRS = 2,       /* attribute values answered (behind/xbatch.c) */
	COMMIT_ALL = 3,
	/* np.save's streams whose every byte is in (behind/npy.c): their
	 * datasets made. Not in COMMIT_ALL (a change does not depend on an
	 * array still being written): flushed by the syncs (fs_meta_sync) */
	COMMIT_STREAMS = 4,
	/* not kinds: FILE's lock alone, for no object (u and n NULL: a write
	 * descriptor's stream, a batch's own commit) */
	COMMIT_FILE = 8,
	/* the write descriptors' pending bytes (behind/idle.c): flushed by
	 * fs_meta_sync (every descriptor committed as its fsync commits it),
	 * not by a barrier nor fs_meta_settle */
	COMMIT_WRITES = 32,
	COMMIT_EVERY = COMMIT_ALL | COMMIT_STREAMS | COMMIT_WRITES,
	/* putting back what a failed change took away (trunc_unempty): also
	 * on a mount that lost a change (node.h fs_write_begin_undo) */
	COMMIT_UNDO = 16,
};
/* Admit a change of n (a node of FILE itself; objects of other files,
 * reached by external links, are read-only): the kinds in barrier
 * flushed, FILE's lock taken, n in use (*u) as the current generation
 * shows it. 0, or an errno (EROFS logged as op's notice; EBUSY, ESTALE
 * logged by the lock). */
int commit_begin(struct use *u, h5fs *fs, struct node *n, unsigned barrier, const char *op);
/* The change ended (changed: it may have written FILE, also after a
 * failure: durable at the next sync); u (NULL: COMMIT_FILE) and FILE's
 * lock let go. */
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
/* The requests of one READDIRPLUS reply (its readdir and lookup of each
 * entry, made by this thread between the two) in one reader section:
 * theirs, while the generation is still the section's, are empty (each
 * was three of fs->lock's and the readers' locks, 2.6% of a read-write
 * mount's cold walk, issue 82) */
void commit_rd_batch_begin(h5fs *fs);
void commit_rd_batch_end(h5fs *fs);
/* A change's reader section (member root's changes): as commit_rd_begin,
 * but paused while the change holds FILE's lock (commit_begin to
 * commit_end, gate.c), when no other request can free or take space and
 * the change's own commit frees what it replaced: those extents must not
 * wait for the change's own section (an unlink's freed object stayed
 * held back past the unmount's cut: FILE 204 KB, test_stress_io) */
void commit_rd_change_begin(h5fs *fs, struct rd *x);
void commit_rd_change_end(struct rd *x);

/* ---- sched.c ---- */
/* A kind's commit policy, read by the scheduler (batches: committed
 * idle_ms after their last change, max_ms after their first at the
 * latest) and by the kind's own writers (the attribute batch committed
 * before it holds more than max_bytes of names and values; the write
 * descriptors: a descriptor's pending bytes committed by its writing
 * request once they reach max_bytes, an append stream's rows max_ms
 * after the oldest came; a descriptor idle for idle_ms committed by the
 * periodic look). 0: none. */
struct commit_policy {
	unsigned idle_ms, max_ms;
	uint64_t max_bytes;
};
/* A kind of write-behind, registered with the mount at its start
 * (commit_kind_register: its policy and admit known before its first
 * change) and, at its first change, with the scheduler (its slot).
 * Batch kinds (count and commit set) are committed by the policy above,
 * then made durable (settle: fs_meta_sync) once empty; a commit that
 * fails is tried again idle_ms later. A periodic kind (poll set) is
 * called when due and says when next. flush commits everything now
 * (barriers, fs_meta_sync). */
struct commit_kind {
	const char *name;
	/* its policy's overrides (tests, tuning): H5FS_COMMIT_<key>_BYTES,
	 * _MS (max_ms), _IDLE_MS, read once at registration (sched.c) */
	const char *key;
	unsigned bit;           /* COMMIT_NAMES, ...: barriers and flush order */
	/* the defaults (a periodic kind's idle_ms: the mount's -o idle_commit) */
	struct commit_policy policy;
	size_t (*count)(void *owner);           /* slot mu held */
	int (*commit)(void *owner);             /* slot mu held: 0 or an errno */
	int (*flush)(void *owner);              /* no lock held: 0 or an errno */
	int (*settle)(h5fs *fs);                /* a batch empty after its commits: fs_meta_sync */
	/* the unmount: what is left committed, the slot unregistered
	 * (commit_slot_stop), the kind's state freed; commit_sched_stop
	 * calls it for every kind registered with the mount, in their order */
	void (*stop)(h5fs *fs);
	int64_t (*poll)(void *owner, int64_t now);      /* next due time */
	/* what its storage can hold (commit_ask, after the table): 0 or the
	 * errno of the refusal, logged by it; q->arg is the kind's own */
	int (*admit)(h5fs *fs, const struct commit_ask *q);
};
/* k known to the mount (member/setup.c, for every kind of behind/, in
 * their order): its policy computed (defaults, the mount's options, the
 * overrides); no thread started. 0 or ENOMEM. */
int commit_kind_register(h5fs *fs, const struct commit_kind *k);
/* The policy of the kind bit registered (zeros: none) */
struct commit_policy commit_policy(h5fs *fs, unsigned bit);
/* The mount's kinds forgotten (h5fs_free, after commit_sched_stop) */
void commit_kinds_free(h5fs *fs);
/* The kind bit registered, or NULL (admit.c) */
const struct commit_kind *commit_kind_of(h5fs *fs, unsigned bit);
/* A registered kind's slot, kept in its owner. mu is the batch's lock,
 * held around count() and commit() and by commit_changed's caller. */
struct commit_slot {
	const struct commit_kind *k;
	void *owner;
	h5fs *fs;
	struct commit_sched *cs;
	pthread_mutex_t mu;
	bool timed, busy, listed;
	unsigned flushing;      /* barriers in its flush (cs->mu): its stop waits */
	int64_t first_ns, last_ns;
	struct commit_policy pol;       /* the kind's (commit_policy) */
};
/* Registered (fs->lock held: no flush that follows the first change
 * misses it); the scheduler started at the first. 0 or an errno. */
int commit_slot_start_locked(struct commit_slot *s, h5fs *fs, const struct commit_kind *k, void *owner);
/* A kind's state made at its first use (fs->lock held, by the caller
 * that then publishes it): size bytes zeroed, their struct commit_slot at
 * slot_off registered as above with the block as its owner (its fs:
 * the slot's). NULL when it cannot be (out of memory; unmounting). */
void *commit_kind_new_locked(h5fs *fs, size_t size, size_t slot_off, const struct commit_kind *k);
/* A change added to the slot's batch (mu held); first: it was empty */
void commit_changed(struct commit_slot *s, bool first);
/* Unregistered, waiting for the scheduler to leave it (mu not held) */
void commit_slot_stop(struct commit_slot *s);
/* A barrier: every kind in mask flushed, in their order: 0, or the errno
 * of the first commit that failed (its batch stays, tried again later) */
int commit_barrier(h5fs *fs, unsigned mask);
/* The unmount: every kind registered stopped (its stop callback, in the
 * kinds' order), then the scheduler's thread ended */
void commit_sched_stop(h5fs *fs);

/* ---- durable.c ---- */
/* Everything answered made durable: every kind flushed (COMMIT_EVERY:
 * the batches, np.save's streams and every write descriptor's pending
 * bytes, in that order), then FILE fsync'd and cut to its end of
 * allocation: fsyncdir, fsync of a descriptor that holds no bytes of its
 * own, the unmount. */
int fs_meta_sync(h5fs *fs);
/* What fs_meta_changed (node.h) remembered made durable, the batches and
 * streams flushed first, other descriptors' bytes left to them (POSIX
 * fsync(2) asks for the file's own data only): a batch's settle, the
 * idle sync of attribute and link changes, a write descriptor's fsync
 * after its own bytes. */
int fs_meta_settle(h5fs *fs);
/* Unmounting: the last rewritten chunk moved down when FILE can end lower
 * (h5_file_compact); failures are logged only. */
void fs_compact(h5fs *fs);

#endif
