/* wstate.h - write handles of the member root, shared by wfile.c (the
 * handle's state), wopen.c (open, release), write.c (the write path),
 * wclose.c (flush, fsync, the commits readers and size changes ask for),
 * wqueue.c (the write order of a dataset's handles, and which of them use
 * the page cache), csvin.c, pending.c, truncate.c and idle.c (the idle
 * commit). */
#ifndef H5FS_WSTATE_H
#define H5FS_WSTATE_H

#include "commit.h"
#include "handle.h"
#include "tail.h"

/* At most this many writes of a dataset are answered before they are
 * applied (write-behind, doc/APPEND.md) */
#define WQ_EARLY 4

struct wqueue {
	pthread_mutex_t mu;
	pthread_cond_t cv;      /* turn moved, or early dropped */
	uint64_t next, turn;    /* tickets handed out / applied */
	unsigned early;         /* writes answered, not applied yet */
	uint64_t vrows;         /* stream rows once every accepted write is applied */
	struct wfile *partial;  /* the one handle with a partial row (behind/tail.c) */
	uint64_t row_bytes;
	uint64_t seen;          /* committed size the node shows (under apply) */
	pthread_mutex_t apply;  /* engine calls on the node's appender and overwriter, wfile_refresh */
	/* held from deciding where a write past or across the end goes until
	 * its rows are accepted (write.c): taken before apply and mu, never
	 * under them */
	pthread_mutex_t grow;
	unsigned refs;          /* write handles (under fs->lock) */
	unsigned direct;        /* those bypassing the page cache (under fs->lock) */
	/* writes answered early that gave their ticket back and still drop
	 * pages (ow_pages_settle, under mu): release waits for them, or it
	 * would free the handle and let the node go under them (issue 65:
	 * fsstress -p 8, SIGSEGV in ow_pages_settle) */
	unsigned settling;
	/* The node's one overwriter (issue 81 item 3, behind/overwrite.c):
	 * the bytes every write handle of the node puts inside the dataset,
	 * kept until a commit takes them, whichever handle's flush, fsync,
	 * close or bound it is (a later put over an earlier one simply wins:
	 * reads and FILE get the last). Opened at the first put in the
	 * current generation (owg, held), again in a new one once it holds
	 * nothing; closed with the queue. ow_pages: a direct_io handle put
	 * bytes since the last commit (the commit drops readers' pages).
	 * Used under apply; its space reserved under mu (wfile.c's
	 * admission): overwrite.c q_ow_locked says how both hold. */
	h5_overwriter *ow;      /* (atomic: set under mu and apply both, or under mu when none) */
	struct gen *owg;        /* (under mu) */
	/* (under mu) earlier generations' overwriters and appenders, empty
	 * (wq_retire) */
	struct wq_retired {
		h5_overwriter *ow;
		h5_appender *a;
		struct gen *g;
		struct wq_retired *next;
	} *retired;
	bool ow_pages;
	/* The node's one appender (issue 81 item 3): the rows every write
	 * handle of the node appends and the one partial row (q->partial's),
	 * in generation ag (held): opened by the first handle that can grow
	 * (wq_attach), again in the current generation once it keeps nothing
	 * (wfile.c q_a_locked; a holder of rows holds FILE's lock, under
	 * which no generation is made), the old one retired as the
	 * overwriter's are. Engine calls on it under apply; replaced under
	 * mu (atomic); closed with the queue. */
	h5_appender *a;
	struct gen *ag;
};

/* The node's appender (NULL: its dataset cannot grow), read under q->apply or q->mu */
static inline h5_appender *wq_a(const struct wqueue *q)
{
	return __atomic_load_n(&q->a, __ATOMIC_ACQUIRE);
}

struct wfile {
	struct hlink link;      /* first: fs->open_wfiles */
	bool grows;             /* the dataset can grow: its rows go to q->a */
	bool can_ow;            /* it may write inside the dataset (q->ow; behind/overwrite.c) */
	/* (atomics) its bytes are in q->ow, not committed (kept) or not
	 * durable (undurable): a commit that takes everything clears them
	 * on every handle of the node; one that fails is the error of each
	 * handle with kept bytes (behind/overwrite.c ow_commit) */
	bool ow_kept, ow_undurable;
	struct node *n;         /* the kernel holds the inode while it is open */
	struct gen *g;          /* the generation a and ow write through (held) */
	struct wqueue *q;       /* n->wq */
	bool append;            /* opened with O_APPEND */
	bool cached;            /* writes through the page cache (behind/overwrite.c) */
	/* under q->mu */
	uint64_t vplen;         /* its partial row once every accepted write is applied */
	uint64_t rows_end;      /* where its last accepted bytes end in the dataset */
	int err;                /* errno of a write answered before it failed */
	bool holding;           /* counts in fs_write_begin's writers */
	int64_t last_ns;        /* its last write (atomic): the idle commit */
	bool stale_logged;      /* its ESTALE (under q->mu) */
	unsigned pins;          /* the idle commit uses it (under fs->lock) */
	struct npy_stream *npy; /* an np.save placeholder's: writes go there (npy.c) */
	bool held;              /* n referenced for it (np.save over a view: views.c), let go at release */
	struct csv_stream *csv; /* NAME.csv opened to write: its writes are text (csvin.c) */
	/* opened with O_TRUNC over rows (cp, cat x > d): what emptying
	 * replaced, put back at release when any of its writes, flushes or
	 * fsyncs failed (issue 56 item 3: a failed replacement leaves the old
	 * contents); failed (atomic) says one did */
	h5_empty_undo undo;
	bool failed;
	/* (atomic) a write refused for space before its answer: a new file
	 * left empty by it loses its name at release (wfile_release) */
	bool nospc;
};

/* The node's overwriter (NULL: none yet), read under q->apply or q->mu */
static inline h5_overwriter *wq_ow(const struct wqueue *q)
{
	return __atomic_load_n(&q->ow, __ATOMIC_ACQUIRE);
}

/* wqueue.c: the node's queue joined (want: opened to read and write, a
 * mapping; sets w->cached) and left; every accepted write applied; len
 * more accepted bytes of w (under q->mu) */
int wq_attach(h5fs *fs, struct wfile *w, bool want, h5_appender *a);
/* (under q->mu) the node's overwriter or appender of an earlier
 * generation, which keeps nothing, retired with its generation in r
 * (allocated before the new one was opened): a reader under q->apply may
 * still use it. (under q->apply) The retired ones closed: no one else is
 * under q->apply. */
void wq_retire(struct wqueue *q, struct wq_retired *r, h5_overwriter *ow, h5_appender *a, struct gen *g);
void wq_retired_close(struct wqueue *q);
void wq_detach(h5fs *fs, struct wfile *w);
void wq_drain(struct wqueue *q);
/* the same, and no early write still dropping pages (release: nothing held) */
void wq_quiesce(struct wqueue *q);
void vplen_add(struct wqueue *q, struct wfile *w, uint64_t len);
/* n's queue, referenced (NULL: no write handle), and let go (the last
 * reference frees it): a reader's (behind/pending.c) */
struct wqueue *wq_get(h5fs *fs, struct node *n);
void wq_put(h5fs *fs, struct node *n, struct wqueue *q);
/* n's dataset now holds bytes (emptied or grown: behind/truncate.c): its
 * open write handles go on from there, once their accepted writes are
 * applied */
void wq_resized(h5fs *fs, struct node *n, uint64_t bytes);
/* wfile.c, shared with write.c and wclose.c: w's hold of FILE's lock counted in its
 * node; what the appender committed shown (after every operation that
 * may have committed); bytes readers were shown taken back (len, or
 * UINT64_MAX: all not committed); the error of a write answered before it
 * failed; the hold given back once nothing of w waits; the bytes written
 * inside the dataset committed durably */
void wfile_hold_set(struct wfile *w, bool v);
void wfile_refresh(h5fs *fs, struct wfile *w, fuse_ino_t ino);
void wfile_shown_drop(h5fs *fs, struct node *n, fuse_ino_t ino, uint64_t len);
int wfile_err(struct wfile *w);
void wfile_give_back(h5fs *fs, struct wfile *w);
int wfile_ow_flush(h5fs *fs, struct wfile *w, fuse_ino_t ino);
/* wfile.c: a write of w asked before its answer (under q->mu), the one
 * way its refusals are decided: commit_ask (commit/admit.c: the pager's
 * table, row PAGER_WRITE), then the write descriptors' kind's admit,
 * wfile_admit - the stage's checks of what the dataset can take, FILE's
 * lock held for w (taken at its first write: EBUSY, ESTALE), and the
 * space the answer promises reserved (append_bytes of rows not
 * committed, ow_bytes of chunks an overwrite rewrites: ENOSPC). 0 or the
 * errno, logged. */
enum wfile_stage {
	WFILE_INSIDE,   /* wholly inside the committed end (lim): overwritten */
	WFILE_CROSS,    /* across it: n bytes overwritten, the rest appended */
	WFILE_APPEND,   /* at the end (end): appended */
	WFILE_NOW,      /* rows appended before the answer (wfile_append_now) */
};
struct wfile_ask {
	struct wfile *w;
	enum wfile_stage stage;
	off_t off;
	size_t size;
	uint64_t end;           /* the stream's end once every accepted write is applied */
	uint64_t lim;           /* the dataset's committed end */
	uint64_t n;             /* CROSS: the bytes of it inside lim */
	bool others;            /* CROSS: other descriptors' writes kept coming */
	uint64_t append_bytes, ow_bytes;
};
int wfile_ask(h5fs *fs, struct wfile_ask *a);
int wfile_admit(h5fs *fs, const struct commit_ask *q);
/* bytes of rows not committed once add more follow the dataset's end bytes */
uint64_t wfile_uncommitted(struct wfile *w, uint64_t end, uint64_t add);
/* wfile.c: the dataset at addr of f opened to append (h5_append_open),
 * its stream committing by the write descriptors' kind's policy
 * (commit_policy: max_bytes of rows waiting, max_ms after the oldest) */
int wfile_append_open(h5fs *fs, h5_appender **a, h5_file *f, uint64_t addr);
/* wfile.c: len bytes of whole rows appended to w's stream now, before
 * the answer (a demoted np.save stream's, write.c; the rows of csvin.c's
 * text): 0 or an errno, kept in the handle too */
int wfile_append_now(h5fs *fs, struct wfile *w, fuse_ino_t ino, const void *buf, size_t len);
/* wfile.c: the append path every writer of rows shares (write.c's
 * behind_write, wfile_append_now): accept - under q->mu - asks the write
 * a->size bytes of a->w (wfile_ask: stage WFILE_APPEND or WFILE_NOW; the
 * refusals, FILE's lock held for w, their space reserved), shows them to
 * readers (tail.c) and gives them ticket *t; apply gives them to the
 * stream in ticket order (early: answered already, so an error is w's,
 * for its next write, fsync or close; it is kept in w either way): 0 or
 * an errno (logged) */
int wfile_append_accept(h5fs *fs, struct wfile_ask *a, uint64_t *t, const void *buf);
int wfile_append_apply(h5fs *fs, struct wfile *w, fuse_ino_t ino, uint64_t t, const void *buf, size_t len,
		       bool early);
/* wfile.c: the open write handles scanned (fs->open_wfiles): the first
 * that match takes, under fs->lock (pinned when pin: its release waits
 * until unpin, fs->idle_cv); the same taking fs->lock; a pin let go. For
 * the idle kind (idle.c) and the node's commits (wclose.c) */
struct wfile *wfile_find_locked(h5fs *fs, bool (*match)(const struct wfile *w, const void *arg), const void *arg,
				bool pin);
struct wfile *wfile_find_pin(h5fs *fs, bool (*match)(const struct wfile *w, const void *arg), const void *arg);
void wfile_unpin(h5fs *fs, struct wfile *w);
/* wopen.c: w freed (its release's last step; setup.c's at unmount) */
void wfile_free(struct wfile *w);
/* csvin.c: NAME.csv's text written (w opened on dataset NAME): open
 * (EPERM, logged: a dataset that cannot grow, a column no text sets),
 * a write (EINVAL, logged: a line that does not parse, nothing of the
 * write appended), the record left without its line end taken at close
 * (flush), the state freed */
struct csv_stream;
int csvin_open(h5fs *fs, struct wfile *w);
int csvin_write(h5fs *fs, struct wfile *w, fuse_ino_t ino, const char *buf, size_t size, off_t off);
int csvin_flush(h5fs *fs, struct wfile *w, fuse_ino_t ino);
void csvin_free(struct csv_stream *s);
/* wclose.c: whether w has rows to commit (it holds FILE's lock); the
 * node's writeback committed for w's release (wopen.c), as close commits
 * it (wclose.c wb_commit: the rows' engine error, or 0 and *e; *partial
 * the bytes of w's partial row dropped) */
bool wfile_has_rows(const struct wfile *w);
int wfile_commit_release(h5fs *fs, struct wfile *w, fuse_ino_t ino, int *e, size_t *partial);
/* wclose.c: fsync's commit of w (the idler's too) */
int wfile_fsync(h5fs *fs, struct wfile *w, fuse_ino_t ino);
/* wclose.c: the whole rows of w's stream committed, not fsync'd (a reader
 * wants them: tail.c); an error stays in the handle */
void wfile_show(h5fs *fs, struct wfile *w, fuse_ino_t ino);
/* wclose.c: the same, before a write over them; the committed bytes after */
uint64_t wfile_show_rows(h5fs *fs, struct wfile *w, fuse_ino_t ino);

#endif
