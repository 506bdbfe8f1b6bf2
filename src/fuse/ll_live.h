/*
 * ll_live.h - what the live-file files share (private to them): the
 * watcher's state (struct live) and the helpers each offers the others.
 * ll_live.c: generations, the checked/fast mode, refreshing, read checks;
 * ll_live_node.c: re-resolving nodes by path in a generation;
 * ll_live_watch.c: inotify, the watcher thread, the sweep after a change.
 * The story is ll_live.c's header comment.
 */
#ifndef H5FS_LL_LIVE_H
#define H5FS_LL_LIVE_H

#include "ll.h"

#define LIVE_QUIET_NS 30000000LL        /* more than a clock tick of file times */
#define LIVE_SETTLE_NS 1000000000LL     /* a change with no event after it: vouched after this */
#define LIVE_REQ_SETTLE_NS 100000000LL  /* the most a request waits for that event */
#define LIVE_WRITER_NS 10000000000LL    /* no event, a writer's descriptor open: vouched after this */
#define LIVE_OPEN_TRIES 8               /* the watcher's: 5 ms doubling, about 1.3 s in all */

struct live {
	/* One node rebuild, or one refresh's bookkeeping, at a time. Never
	 * held while sleeping or opening FILE (a request waiting for it would
	 * wait on FILE's state): a refresh marks itself (refreshing) and opens
	 * FILE outside it, and other threads do not wait for that refresh. */
	pthread_mutex_t mu;
	const h5_open_opts *opts;
	char *path;
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

/* ll_live.c */
int64_t live_now_ns(void);
int live_refresh(h5fs *fs, bool doubt, bool patient);
void live_sleep_ns(int64_t ns);

/* ll_live_node.c: re-resolve n by its path in the current generation
 * (lv->mu held): 0, ESTALE, or EIO (logged when log). */
int node_rebuild(h5fs *fs, struct node *n, bool log);
char *live_dir_of(const char *path);

/* ll_live_watch.c */
bool live_read_events(struct live *lv);
bool live_writes_done(struct live *lv, int64_t t);
void live_watch_path(struct live *lv);

#endif
