/* lbatch_int.h - the batch of link changes (behind/lbatch.c: new files
 * and directories, rmdirs; behind/mbatch.c: renames, hard links and
 * unlinks), shared by its two files: one kind (COMMIT_NAMES), one timer,
 * one group at a time, one of the three lists pending at a time. */
#ifndef H5FS_LBATCH_INT_H
#define H5FS_LBATCH_INT_H

#include "commit.h"
#include "batch.h"

#define LB_IDLE_MS 20
#define LB_MAX_MS 100
#define LB_MAX_ITEMS 4096
#define LB_TRIES 3      /* failed commits of one batch before its changes are lost */

/* A name's last change in the moves' list (mbatch.c) */
struct lb_move {
	char *name;
	uint64_t addr;          /* the object it names now (UINT64_MAX: removed) */
	uint64_t was;           /* the hard link's object in FILE (UINT64_MAX: none) */
	bool in_file;           /* FILE has a link of that name */
};

/* What the timer knows of a pending file beyond its name and header. */
struct lb_item {
	int64_t held_ns;        /* since when the timer left it pending (0: not yet) */
	/* Between its create and its write handle's registration (the
	 * dispatcher's lookup and open, wfile_open), and during its
	 * handle's release until forget_refused decided on it (wclose.c):
	 * no descriptor is seen writing it then, yet its rows are not
	 * committed, or its name may be given up for want of space. The
	 * timer linked such files: an empty name after a full disk's cp -r
	 * under ASan's timing (issue 69 item 5), a name before its rows. */
	bool busy;
};

struct lbatch {
	struct commit_slot t;           /* its timer (commit/sched.c); t.mu: the batch, held across its commit */
	struct use u;           /* the group, held (FILE's lock too) while pending */
	char *path;             /* the group's, for log lines */
	uint64_t pino;          /* the group's node (lbatch_forget) */
	char **names;
	uint64_t *addrs;
	struct lb_item *items;  /* beside names and addrs */
	size_t count, cap;
	/* open-addressed index of names (index + 1; 0: empty; at most half
	 * full): names[0..nm_indexed) while nm_idx_ok, which a reorder or a
	 * removal of names clears (made again at the next look); appended
	 * names are indexed at the next look (pending_locked: a create's
	 * lookups scanned up to LB_MAX_ITEMS names each, issue 82) */
	uint32_t *nm_idx;
	size_t nm_idx_cap, nm_indexed;
	bool nm_idx_ok;
	uint64_t name_bytes;
	/* the room asked for (reserve_locked): names, their bytes, the need */
	size_t room_n;
	uint64_t room_bytes, need;
	uint64_t reserved;      /* disk space held for its commit (h5_file_reserve) */
	unsigned fails;         /* commits of this batch that failed */
	/* rmdir's names removed in the batch's group, not yet in FILE (never
	 * with new names pending: each kind flushes the other first) */
	char **rm;
	uint64_t *rm_addrs;     /* beside rm: each removed group's address */
	size_t nrm, rm_cap;
	uint64_t commits;       /* batches linked (lbatch_commits) */
	/* names[0..committing) are being linked by a commit that let t.mu go
	 * for its engine call (issue 70 item 3: a mkdir waited for whole
	 * commits on t.mu): creates of the same group append behind them
	 * meanwhile; anything else that changes or commits the batch waits
	 * on cv (cv_made: initialized) */
	size_t committing;      /* (or rm[0..committing): the removals') */
	pthread_cond_t cv;
	bool cv_made;
	/* callers committing the batch to begin another (a create in another
	 * group, an rmdir): while one is, creates wait on cv rather than
	 * join the batch, which would keep it from ever emptying */
	unsigned draining;
	/* renames, hard links and unlinks in the batch's group (mbatch.c),
	 * not yet in FILE: each name's last change (never with new names or
	 * removals pending: each kind flushes the others first) */
	struct lb_move *mv;
	size_t nmv, mv_cap;
	uint64_t mv_bytes;      /* the names' bytes that join (room) */
	/* names the list adds to the group's in FILE, less those it takes
	 * (each entry: whether it names an object, less whether FILE has the
	 * name), and how many one commit may add while the group keeps its
	 * form (h5_link_change_room, asked when the list begins: a compact
	 * group's limit less its links; UINT64_MAX: no bound) */
	int64_t mv_net;
	uint64_t mv_room;
	uint32_t *mv_idx;       /* open-addressed index of mv by name (index + 1; 0: empty) */
	size_t mv_idx_cap;
	/* the moves' list's own operations, set by mbatch.c when it first
	 * keeps an entry: the batch's core (lbatch.c) commits, looks into
	 * and frees that list through them, so neither file takes names of
	 * the other's (the list registers itself, as the commit kinds do) */
	const struct lb_moves_ops *mv_ops;
};

/* The moves' list, as lbatch.c asks it (t.mu held): committed as
 * commit_locked's lists; NAME (len bytes) in it: 1 naming *addr, 2
 * removed, 0 not there; its memory freed (stop) */
struct lb_moves_ops {
	int (*commit_locked)(h5fs *fs, struct lbatch *lb, bool last);
	int (*state_locked)(const struct lbatch *lb, const char *name, size_t len, uint64_t *addr);
	void (*free)(struct lbatch *lb);
};

/* t.mu held: until no commit is under way outside it; the batch
 * committed until want_commit says no more (after any other caller doing
 * so); the batch let go (its group, FILE's lock); its group begun (empty
 * batch). (lbatch.c) */
int lb_drain_locked(h5fs *fs, struct lbatch *lb, bool (*want_commit)(const struct lbatch *, const struct node *),
		    const struct node *p);
void lb_release_locked(h5fs *fs, struct lbatch *lb);
/* t.mu held: NAME among the pending new names (*addr: its header's, when
 * addr is not NULL); the first of it (lbatch_names.c) */
bool lb_pending_locked(struct lbatch *lb, const char *name, uint64_t *addr);
int lb_begin_locked(h5fs *fs, struct lbatch *lb, struct node *p);
struct lbatch *lbatch_get(h5fs *fs);

#endif
