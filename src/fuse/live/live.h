/*
 * live.h - what the live-file files share (private to them): the
 * watcher's state (struct live) and the helpers each offers the others.
 * live/live.c: generations, the checked/fast mode, refreshing, read checks;
 * node/fresh.c: re-resolving nodes by path in a generation;
 * live/watch.c: inotify, the watcher thread, the sweep after a change.
 * The story is live/live.c's header comment.
 */
#ifndef H5FS_LIVE_H
#define H5FS_LIVE_H

#include "fs.h"

#define LIVE_QUIET_NS 30000000LL        /* more than a clock tick of file times */
#define LIVE_SETTLE_NS 1000000000LL     /* a change with no event after it: vouched after this */
#define LIVE_REQ_SETTLE_NS 100000000LL  /* the most a request waits for that event */
#define LIVE_WRITER_NS 10000000000LL    /* no event, a writer's descriptor open: vouched after this */
#define LIVE_OPEN_TRIES 8               /* the watcher's: 5 ms doubling, about 1.3 s in all */

/* Related files watched by inotify, at most (the rest: every refresh). */
#define LIVE_REL_WATCH_MAX 64

struct live {
	/* the member's re-resolution of every node after a new generation
	 * (node/fresh.c node_sweep): live/ knows nodes only through it */
	void (*sweep)(h5fs *fs);
	/* One node rebuild, or one refresh's bookkeeping, at a time. Never
	 * held while sleeping or opening FILE (a request waiting for it would
	 * wait on FILE's state): a refresh marks itself (refreshing) and opens
	 * FILE outside it, and other threads do not wait for that refresh. */
	pthread_mutex_t mu;
	const h5_open_opts *opts;
	char *path;
	/* a local FILE's name in its folder opened at mount (opts->dir_fd),
	 * and what a file renamed over it must be to be followed: of the
	 * same kind, FILE's owner's at mount (live.c open_again) */
	char *name;
	uid_t owner;
	mode_t ftype;
	/* the file at that name open_again last refused (under mu): until the
	 * name leads elsewhere, nothing changed (no retry, no log) */
	bool refused;
	dev_t refused_dev;
	ino_t refused_ino;
	unsigned refresh;
	uint64_t ngen;          /* numbers handed out (under mu) */
	uint64_t seen;          /* the generation the kernel was told about */
	pthread_t thread;
	bool started;
	int wake[2];            /* pipe: live_free stops the watcher */
	int ino_fd;             /* inotify, or -1 */
	/* watch descriptors: set by watch_path under mu, read by the watcher's
	 * read_events without it (atomic, relaxed: each is one int on its own) */
	int file_wd;            /* the watch of FILE (-1: none, the old rule alone) */
	int dir_wd;             /* the watch of FILE's folder (events of other names: not FILE's) */
	/* the watches of related files (external link targets, VDS sources:
	 * their in-place changes wake the watcher as FILE's do; not FILE's
	 * events); the watcher's alone */
	int rel_wd[LIVE_REL_WATCH_MAX];
	unsigned nrel_wd;
	int64_t event_ns;       /* when the watcher last read an event of FILE (atomic) */
	int64_t wcheck_ns;      /* when /proc was last searched for a writer (atomic) */
	bool wopen;             /* and whether one had FILE open for writing (atomic) */
	int failed_rc;          /* the refresh failure last logged, 0: none */
	bool gone_logged;
	bool refreshing;        /* a thread is opening FILE anew (under mu) */
	/* Reads are checked (hashed, copied, verified: the full guarantee):
	 * from the first change seen on, or from the start (-o live=strict, a
	 * SWMR writer or a writer's lock at mount). Until then a read is
	 * answered as a frozen mount answers it (atomic; never cleared). */
	bool checked;
	unsigned fast_reads;    /* unchecked reads not replied yet (atomic) */
	bool swept_checked;     /* the watcher's sweep has run since then */
	bool local;             /* FILE is a local file (else remote: probes) */
	bool accessed;          /* a request came since the last probe (atomic) */
	char **retired;         /* node paths replaced (read unlocked in logs) */
	size_t nretired;
};

/* live/live.c */
int64_t live_now_ns(void);
int live_refresh(h5fs *fs, bool doubt, bool patient);
void live_sleep_ns(int64_t ns);


/* live/watch.c */
bool live_read_events(struct live *lv);
bool live_writes_done(struct live *lv, int64_t t);
void live_watch_path(struct live *lv);

/* live.c: generations opened anew, checked or fast reads */
/* attempts at a read while a live FILE changes (the last one's error is
 * logged; the earlier ones', met while a writer writes, are not) */
#define H5FS_LIVE_READ_TRIES 4
/* sweep: the member's re-resolution of every node after a new
 * generation (node_sweep), called by the watcher */
int live_new(h5fs *fs, h5_file *f, void (*sweep)(h5fs *fs));
void live_free(h5fs *fs);
void live_start(h5fs *fs);
void live_tick(h5fs *fs);
double node_timeout(const h5fs *fs);
int live_read_check(h5fs *fs, struct gen *g, int attempt, bool failed, const char *path);
/* Reads of this live FILE are checked (hashed, copied, verified): it has
 * changed since the mount, or -o live=strict; else they are answered as a
 * frozen mount answers them. */
bool live_checked(const h5fs *fs);
/* A read answered unchecked (true: FILE has not changed yet), counted until
 * its reply is written (live_fast_end), so that the sweep after the first
 * change drops the kernel's pages only once no such answer is still on its
 * way into them. */
bool live_fast_begin(h5fs *fs);
void live_fast_end(h5fs *fs);
/* After an engine error (EIO) of attempt: true when a live FILE is being
 * written and a fresh generation is worth another attempt. */
bool live_retry(h5fs *fs, int attempt);

/* pcache.c: the page ledger of cached handles */
/* fi->fh of a read handle that uses the page cache on a live mount (write
 * handles hold a struct wfile, other read handles 0) */
#define H5FS_FH_CACHED ((uint64_t)1)
enum pc_verdict { PC_SAME, PC_VERIFIED, PC_DIFFERS, PC_UNREADABLE };
/* An answer to a cached handle, hashed before it is checked and recorded
 * (pcache_commit) once it passed live_read_check. */
struct pc_answer {
	uint64_t gen;           /* the generation answered from */
	uint64_t base, adds;    /* the ledger as pcache_prepare saw it */
	enum pc_verdict verdict;
	uint64_t first;         /* the first page */
	size_t npages;
	bool aligned;
	uint64_t *h;
};
struct pcache;
/* A version answered unchecked, kept for the first change's comparison
 * (pcache_keep_old): its dataset, view, related file and generation held,
 * and how far its answers reached. */
struct pc_old {
	h5_dataset *ds;
	const h5_view_ops *view;
	h5_file *f;
	struct gen *g;
	uint64_t end;
};
/* Under n->lk (shared): hash the answer (iov: a buffer, or pinned decoded
 * chunks), and when the ledger holds another generation's pages, read
 * them again in g (n->ds) and compare. */
int pcache_prepare(struct pc_answer *pa, h5fs *fs, struct node *n, struct gen *g, uint64_t off,
		   const struct iovec *iov, size_t niov);
/* After live_read_check: 0 (recorded: reply), EAGAIN (the ledger moved
 * meanwhile: read again) or EIO (logged once per node: the kernel may hold
 * pages of another version). */
int pcache_commit(h5fs *fs, struct node *n, struct pc_answer *pa, const char *path);
void pcache_answer_clear(struct pc_answer *pa);
void pcache_free(struct pcache *pc);
/* A cached read handle of n opens (0; *fresh: the ledger was started anew
 * after a rewrite, the kernel must drop the inode's pages) or EBUSY: a
 * rewrite made n's recorded pages differ and handles that may hold them
 * are still open (this one reads with direct_io). pcache_close when a
 * handle pcache_open let in is released. */
int pcache_open(h5fs *fs, struct node *n, bool *fresh);
void pcache_close(struct node *n);
/* n follows its object into a generation whose bytes may differ (lv->mu
 * and n->lk held): while cached handles are open, the kernel or a
 * reader (cat between two read()s) may hold bytes answered unchecked
 * before the first change, [0, end) of the old version (ds, view, f, g).
 * The ledger then takes those (true: ds, f and g are its now) and
 * compares them with the new version at the next answer (different or
 * unreadable: poisoned, as a rewrite under recorded pages), and opens meanwhile
 * read with direct_io. false: nothing to keep. */
bool pcache_keep_old(struct node *n, h5_dataset *ds, const h5_view_ops *view, h5_file *f, struct gen *g,
		     uint64_t end);
/* A page's fingerprint (hash and length, never 0), its length, and an
 * answer's, page by page from its start (live/dio.c uses them too). */
uint64_t pcache_entry(const uint8_t *p, size_t len);
size_t pcache_entry_len(uint64_t e);
void pcache_hash_answer(uint64_t *h, const struct iovec *iov, size_t niov, size_t len);

/* dio.c: the ledger of direct_io handles */
/* fi->fh of a live mount's direct_io read handle: a struct dio_ledger *
 * with this bit set (malloc'd pointers have it clear; H5FS_FH_CACHED too) */
#define H5FS_FH_DIO ((uint64_t)2)
struct dio_ledger;
static inline struct dio_ledger *fh_dio(uint64_t fh)
{
	return fh & H5FS_FH_DIO ? (struct dio_ledger *)(uintptr_t)(fh & ~H5FS_FH_DIO) : NULL;
}
/* An answer to a direct_io handle, hashed before it is checked and
 * recorded (dio_commit) once it passed live_read_check. */
struct dio_answer {
	bool used;
	pid_t tid;              /* the thread whose read() it is a piece of */
	uint64_t gen, off;
	size_t len, asked;
	enum pc_verdict verdict;
	size_t npieces;
	uint64_t *h;
};
struct dio_ledger *dio_new(void);
void dio_free(struct dio_ledger *d);
/* Under n->lk (shared): hash the answer, and when it continues tid's run
 * of another generation, read the run again in g (n->ds) and compare. */
int dio_prepare(struct dio_answer *da, struct dio_ledger *d, struct node *n, struct gen *g, pid_t tid, uint64_t off,
		size_t asked, const struct iovec *iov, size_t niov);
/* After live_read_check: 0 (recorded: reply), EAGAIN (could not verify:
 * read again) or EIO (logged: the read() would mix two versions). */
int dio_commit(h5fs *fs, struct dio_ledger *d, struct dio_answer *da, const char *path);
void dio_answer_clear(struct dio_answer *da);

#endif
