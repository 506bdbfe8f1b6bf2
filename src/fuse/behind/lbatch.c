/*
 * lbatch.c - the write-behind of new files (issue 55 item 1; doc/MODIFY.md
 * "Write-behind of new files"): `cp -r` of small files paid a durable
 * commit per create (the header made durable, then the link) and three
 * fsyncs more at close; 1,000 files of 4 KiB took 0.9-2 ms each against a
 * plain folder's 0.1-0.2 ms.
 *
 * create(2) of a new file in a group now makes its dataset's header at
 * the allocation end and leaves it unlinked (h5_dataset_create_loose;
 * mkdir likewise its group's, h5_group_create_loose, and rmdir's
 * removals wait in the batch too, lbatch_rmdir: issue 70 item 3, each
 * answered after an fsync took 0.5-6 ms):
 * nothing references it, so its commits (the rows cp writes, committed at
 * close) keep no order against a power cut and skip their fsyncs. Its name
 * is kept here, and shown by lookup (lbatch_lookup) from then on. The
 * names are linked together, one commit in a symbol-table group
 * (h5_link_insert_batch: one stage making every new header and its rows
 * durable, then one write of the B-tree's root), when
 *   - anything else could see the group's names or depend on them: a
 *     readdir, a link change (mkdir, rm, mv, ln, symlink), a new file of
 *     another group, fsync or syncfs of any file, the unmount (lbatch_flush);
 *   - LB_IDLE_MS passed without a create, or LB_MAX_MS since the first
 *     (the timer thread, commit/sched.c, which then makes it durable);
 *   - LB_MAX_ITEMS are pending.
 * A crash before the commit leaves none of the batch's files (their space
 * unreferenced); after its one write, all of them, each with the rows its
 * commits had made. The disk space the commit may take is allocated
 * before each create is answered (h5_file_reserve). A commit that fails
 * (an I/O error) stays pending and is tried again; the request that asked
 * for it gets the errno. Three failures in a row, or one at unmount, are
 * never only a log line: fs_lost_set (the next fsync returns it, writes
 * get EIO, the unmount exits 1). FILE's lock is held from the first
 * create to the commit, as for appended rows.
 */
#include "commit.h"
#include "batch.h"
#include "handle.h"
#include "lbatch_int.h"

#define LB_HOLD_MS 1000 /* how long the timer leaves a file being written unlinked */

static int commit_locked(h5fs *fs, struct lbatch *lb, bool last, bool timed);

/* t.mu held: until no commit is under way outside it. */
static void wait_commit_locked(struct lbatch *lb)
{
	while (lb->committing)
		pthread_cond_wait(&lb->cv, &lb->t.mu);
}

/* t.mu let go while a commit links or removes its first n names, whose
 * pointers the caller copied: the batch's arrays may move meanwhile */
static void let_go_locked(struct lbatch *lb, size_t n)
{
	lb->committing = n;
	pthread_mutex_unlock(&lb->t.mu);
}

static void take_back(struct lbatch *lb)
{
	pthread_mutex_lock(&lb->t.mu);
	lb->committing = 0;
	pthread_cond_broadcast(&lb->cv);
}

/* t.mu held: the batch committed until want_commit says no more (the
 * caller's change then begins its own batch), after any other caller
 * doing so; creates of the batch's group meanwhile wait (draining)
 * instead of joining it. 0 or an errno. */
int lb_drain_locked(h5fs *fs, struct lbatch *lb, bool (*want_commit)(const struct lbatch *, const struct node *),
			const struct node *p)
{
	int err = 0;

	/* (again after each: a commit lets t.mu go while it links) */
	while (lb->draining && lb->cv_made)
		pthread_cond_wait(&lb->cv, &lb->t.mu);
	lb->draining++;
	while (!err && want_commit(lb, p))
		err = commit_locked(fs, lb, false, false);
	lb->draining--;
	if (lb->cv_made)
		pthread_cond_broadcast(&lb->cv);
	return err;
}

/* The first n items (linked) taken out of the batch (t.mu held). */
static void drop_first(struct lbatch *lb, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		lb->name_bytes -= strlen(lb->names[i]);
		free(lb->names[i]);
	}
	lb->nm_idx_ok = false;
	memmove(lb->names, lb->names + n, (lb->count - n) * sizeof(*lb->names));
	memmove(lb->addrs, lb->addrs + n, (lb->count - n) * sizeof(*lb->addrs));
	memmove(lb->items, lb->items + n, (lb->count - n) * sizeof(*lb->items));
	__atomic_store_n(&lb->count, lb->count - n, __ATOMIC_RELEASE);
}

/* The first n removals (done) taken out of the batch (t.mu held). */
static void drop_first_rm(struct lbatch *lb, size_t n)
{
	for (size_t i = 0; i < n; i++)
		free(lb->rm[i]);
	memmove(lb->rm, lb->rm + n, (lb->nrm - n) * sizeof(*lb->rm));
	memmove(lb->rm_addrs, lb->rm_addrs + n, (lb->nrm - n) * sizeof(*lb->rm_addrs));
	__atomic_store_n(&lb->nrm, lb->nrm - n, __ATOMIC_RELEASE);
}

/* Items linked already (a failed commit's names that made it, or its
 * first done in compact storage) taken out of the batch. */
static void drop_linked(struct lbatch *lb, size_t done)
{
	size_t k = 0;

	lb->nm_idx_ok = false;
	for (size_t i = 0; i < lb->count; i++) {
		bool linked = i < done;

		if (!linked) {
			h5_link l;

			if (h5_group_lookup(&l, lb->u.f, lb->u.addr, lb->names[i]) == 0) {
				linked = l.type == H5_LINK_HARD && l.addr == lb->addrs[i];
				h5_link_clear(&l);
			}
			h5_err_clear();
		}
		if (linked) {
			free(lb->names[i]);
		} else {
			lb->names[k] = lb->names[i];
			lb->items[k] = lb->items[i];
			lb->addrs[k++] = lb->addrs[i];
		}
	}
	__atomic_store_n(&lb->count, k, __ATOMIC_RELEASE);
}

/* The batch let go: its group and FILE's lock. */
void lb_release_locked(h5fs *fs, struct lbatch *lb)
{
	for (size_t i = 0; i < lb->count; i++)
		free(lb->names[i]);
	for (size_t i = 0; i < lb->nrm; i++)
		free(lb->rm[i]);
	__atomic_store_n(&lb->nrm, 0, __ATOMIC_RELEASE);
	__atomic_store_n(&lb->count, 0, __ATOMIC_RELEASE);
	lb->nm_idx_ok = false;
	lb->name_bytes = 0;
	lb->room_n = 0;
	lb->fails = 0;
	free(lb->path);
	lb->path = NULL;
	h5_file_unreserve(lb->u.f, &lb->reserved);
	node_use_end(&lb->u);
	fs_meta_changed(fs);
	commit_end(fs, NULL, false);
}

/* The batch linked (lb->t.mu held): 0, or the errno of a commit that
 * failed. A failure (an I/O error, a full disk) leaves FILE at its last
 * commit (doc/MODIFY.md): the batch stays and the next flush tries again
 * (the caller that asked for this one gets the error: rename(2) after a
 * failed write-behind fails, the mount does not); after LB_TRIES failures
 * in a row, or at the unmount (last), the files are lost: fs_lost_set,
 * as every answered change that cannot be written. */
static int commit_rm_locked(h5fs *fs, struct lbatch *lb, bool last);

static int commit_locked(h5fs *fs, struct lbatch *lb, bool last, bool timed)
{
	size_t done = 0, n;
	char **names;
	uint64_t *addrs;
	int rc, err;

	wait_commit_locked(lb);
	if (lb->nmv)
		return lb->mv_ops->commit_locked(fs, lb, last);
	if (lb->nrm)
		return commit_rm_locked(fs, lb, last);
	if (!lb->count)
		return 0;
	/* A name is linked only with its rows (issue 65: a file still being
	 * written when the timer linked its name, then kill -9, left the
	 * name with no rows). The timer links the files no descriptor has
	 * open for writing, first in the batch, and leaves the others pending
	 * until their close committed their rows, and busy ones (struct
	 * lb_item) until their open or release is done, each for LB_HOLD_MS
	 * at most from the first look that left it (cp's write of a file is
	 * not cut in two commits; the hold is per file: one held since a file
	 * before it was linked at once under ASan's timing, issue 69 item 5);
	 * after that, and in a flush that must link them all (a listing, a
	 * link change, fsync, syncfs, unmount), their rows are committed
	 * first (not fsync'd: the link's stage is), so a file written for
	 * long is linked with what it has. */
	int64_t now = h5fs_now_ns();

	n = 0;
	for (size_t i = 0; i < lb->count; i++) {
		struct lb_item *it = &lb->items[i];
		bool writing = wfile_writing_addr(fs, lb->addrs[i]);

		if (writing || it->busy) {
			if (timed && !it->held_ns)
				it->held_ns = now;
			if (timed && now - it->held_ns < (int64_t)LB_HOLD_MS * 1000000)
				continue;
			if (writing)
				wfile_show_addr(fs, lb->addrs[i]);
		}
		if (i != n) {
			char *nm = lb->names[n];

			lb->nm_idx_ok = false;
			uint64_t a = lb->addrs[n];
			struct lb_item t = lb->items[n];

			lb->names[n] = lb->names[i];
			lb->addrs[n] = lb->addrs[i];
			lb->items[n] = lb->items[i];
			lb->names[i] = nm;
			lb->addrs[i] = a;
			lb->items[i] = t;
		}
		n++;
	}
	if (n == 0) {
		lb->t.first_ns = lb->t.last_ns = h5fs_now_ns();   /* looked at again LB_IDLE_MS on */
		return 0;
	}
	/* linked without t.mu: a mkdir or create of this group meanwhile
	 * (its header written without write_lock too, gslot.h) appends to the
	 * batch instead of waiting for the commit's writes and fsyncs; their
	 * arrays may move, so the commit links copies of the pointers */
	names = malloc(n * sizeof(*names));
	addrs = malloc(n * sizeof(*addrs));
	if (names && addrs && lb->cv_made) {
		memcpy(names, lb->names, n * sizeof(*names));
		memcpy(addrs, lb->addrs, n * sizeof(*addrs));
		let_go_locked(lb, n);
		rc = h5_link_insert_batch(&done, lb->u.f, lb->u.addr, names, addrs, n);
		take_back(lb);
	} else {
		rc = h5_link_insert_batch(&done, lb->u.f, lb->u.addr, lb->names, lb->addrs, n);
	}
	free(names);
	free(addrs);
	if (rc == 0 || done)
		__atomic_add_fetch(&lb->commits, 1, __ATOMIC_RELEASE);
	if (rc == 0 && n < lb->count) {
		/* (the rest: files held, or created during the commit) */
		drop_first(lb, n);
		lb->t.first_ns = lb->t.last_ns = h5fs_now_ns();
		return 0;
	}
	if (rc == 0) {
		lb_release_locked(fs, lb);
		return 0;
	}
	err = h5fs_errno(rc);
	h5fs_log(fs, LOG_ERR, "create %s/%s and %zu more: linking failed (%s)%s: %s", show_path(lb->path),
		 lb->names[0], lb->count - 1, strerror(err),
		 last || lb->fails + 1 >= LB_TRIES ? ", the new files are lost" : ", tried again later", h5_err_msg());
	h5_err_clear();
	drop_linked(lb, done);
	if (last || ++lb->fails >= LB_TRIES) {
		fs_lost_set(fs, err);
		for (size_t i = 0; i < lb->count; i++)
			h5_dataset_loose_drop(lb->u.f, lb->addrs[i]);
		lb_release_locked(fs, lb);
	} else if (!lb->count) {
		lb_release_locked(fs, lb);
	}
	/* the timer tries again LB_IDLE_MS from now */
	lb->t.first_ns = lb->t.last_ns = h5fs_now_ns();
	return err;
}

/* The removals linked out (lb->t.mu held): one commit in a symbol-table
 * group (h5_link_remove_batch). A failure is handled as the new names'
 * (tried again, then lost). */
static int commit_rm_locked(h5fs *fs, struct lbatch *lb, bool last)
{
	size_t done = 0, n = lb->nrm;
	char **copy = lb->cv_made ? malloc(n * sizeof(*copy)) : NULL;
	uint64_t *acopy = copy ? malloc(n * sizeof(*acopy)) : NULL;
	char **names = lb->rm;
	uint64_t *addrs = lb->rm_addrs;
	bool apart = copy && acopy;
	int rc, err;

	/* without t.mu, as the new names' commit: an rmdir of the same group
	 * meanwhile joins the batch (lbatch_removed sees the names being
	 * removed until they are gone from FILE) */
	if (apart) {
		names = memcpy(copy, lb->rm, n * sizeof(*copy));
		addrs = memcpy(acopy, lb->rm_addrs, n * sizeof(*acopy));
		let_go_locked(lb, n);
	}
	/* every node of a removed group marked unlinked before the commit
	 * frees its space (the rmdir marks them after its batch let go of
	 * t.mu: a mkdir in another group could commit the batch in between,
	 * and its group, placed in the space freed, was answered with the
	 * removed group's node; the kernel, which held that id as the
	 * directory being removed, answered the mkdir ESTALE) */
	for (size_t i = 0; i < n; i++)
		if (addrs[i] != UINT64_MAX)
			gone_unlinked(fs, lb->u.f, addrs[i]);
	rc = h5_link_remove_batch(&done, lb->u.f, lb->u.addr, names, n);
	if (apart)
		take_back(lb);
	free(copy);
	free(acopy);
	if (done)
		__atomic_add_fetch(&lb->commits, 1, __ATOMIC_RELEASE);
	/* a listing made from FILE before the removal (another thread's
	 * readdir, built as the rmdir was answered) may have given the kernel
	 * the name again: dropped once it is gone from FILE */
	for (size_t i = 0; fs->se && i < done; i++)
		notify_inval_entry(fs->se, fs_ino_out(fs, lb->pino), lb->rm[i], strlen(lb->rm[i]));
	if (rc == 0 && n == lb->nrm) {
		lb_release_locked(fs, lb);
		return 0;
	}
	if (rc == 0) {
		/* removals that joined during the commit: the next one's */
		drop_first_rm(lb, n);
		lb->t.first_ns = lb->t.last_ns = h5fs_now_ns();
		return 0;
	}
	err = h5fs_errno(rc);
	h5fs_log(fs, LOG_ERR, "rmdir %s/%s and %zu more: removal failed (%s)%s: %s", show_path(lb->path), lb->rm[0],
		 lb->nrm - 1, strerror(err), last || lb->fails + 1 >= LB_TRIES ? ", the removals are lost" :
		 ", tried again later", h5_err_msg());
	h5_err_clear();
	drop_first_rm(lb, done);
	if (last || ++lb->fails >= LB_TRIES || !lb->nrm) {
		if (lb->nrm)
			fs_lost_set(fs, err);
		lb_release_locked(fs, lb);
	}
	lb->t.first_ns = lb->t.last_ns = h5fs_now_ns();
	return err;
}

static int lbatch_flush(h5fs *fs)
{
	struct lbatch *lb = __atomic_load_n(&fs->lb, __ATOMIC_ACQUIRE);
	int err;

	if (!lb || (!__atomic_load_n(&lb->count, __ATOMIC_ACQUIRE) && !__atomic_load_n(&lb->nrm, __ATOMIC_ACQUIRE) &&
		    !__atomic_load_n(&lb->nmv, __ATOMIC_ACQUIRE)))
		return 0;
	pthread_mutex_lock(&lb->t.mu);
	err = commit_locked(fs, lb, false, false);
	pthread_mutex_unlock(&lb->t.mu);
	return err;
}

/* The kind's flush (commit/sched.c: barriers, fs_meta_sync) (fs_meta_sync). */
static int kind_flush(void *owner)
{
	return lbatch_flush(((struct lbatch *)owner)->t.fs);
}

/* The timer's (commit/sched.c), t.mu held. */
static size_t pending_count(void *owner)
{
	return ((struct lbatch *)owner)->count + ((struct lbatch *)owner)->nrm + ((struct lbatch *)owner)->nmv;
}

static int timed_commit(void *owner)
{
	struct lbatch *lb = owner;

	return commit_locked(lb->t.fs, lb, false, true);
}

struct lbatch *lbatch_get(h5fs *fs)
{
	struct lbatch *lb;

	pthread_mutex_lock(&fs->lock);
	lb = fs->lb;
	if (!lb && (lb = commit_kind_new_locked(fs, sizeof(*lb), offsetof(struct lbatch, t), &lbatch_kind)) != NULL) {
		lb->cv_made = pthread_cond_init(&lb->cv, NULL) == 0;
		__atomic_store_n(&fs->lb, lb, __ATOMIC_RELEASE);
	}
	pthread_mutex_unlock(&fs->lock);
	return lb;
}

/* The batch's group, begun (lb->t.mu held, batch empty): FILE's lock taken,
 * the group in use as the current generation shows it. */
int lb_begin_locked(h5fs *fs, struct lbatch *lb, struct node *p)
{
	int err = commit_begin(&lb->u, fs, p, 0, "create");

	lb->pino = p->ino;
	if (!err && !(lb->path = strdup(p->path))) {
		commit_end(fs, &lb->u, false);
		err = ENOMEM;
	}
	return err;
}

/* The room the batch's commit may take (h5_link_batch_room, asked again
 * when the batch outgrows what it was asked for: twice the names and
 * bytes), allocated from the allocation end at every create (twice it:
 * the rows written after this create take from it), so that a full disk
 * refuses the create, not the commit. */
static int reserve_locked(h5fs *fs, struct lbatch *lb, size_t name_len, const char *name)
{
	int rc = 0;

	if (lb->count + 1 > lb->room_n || lb->name_bytes + name_len > lb->room_bytes) {
		lb->room_n = 2 * (lb->count + 1);
		lb->room_bytes = 2 * (lb->name_bytes + name_len) + 64 * lb->room_n;
		rc = h5_link_batch_room(&lb->need, lb->u.f, lb->u.addr, lb->room_n, lb->room_bytes);
	}
	if (rc == 0)
		rc = h5_file_reserve_again(lb->u.f, &lb->reserved, 2 * lb->need);
	if (rc < 0) {
		lb->room_n = 0;
		return commit_refuse(fs, rc, "create", lb->path, name);
	}
	return 0;
}

/* The kind's admit (commit_ask, after the pager's table), before the
 * answer: a name joining the batch (create, mkdir: t.mu held) not taken
 * and its room reserved; a soft link its group's storage cannot take
 * (engine h5_link_fits: a ~4 KiB target into a dense group) refused, not
 * failed at a commit after it. Hard links are not measured: a 255-byte
 * name's message is below 300 bytes, which every store keeps. */
static int kind_admit(h5fs *fs, const struct commit_ask *q)
{
	const struct lb_ask *a = q->arg;
	h5_link l;
	int rc, e;

	if (a->lb) {
		if (lb_pending_locked(a->lb, a->name, NULL))
			return EEXIST;
		/* linked by a batch since the caller looked (commits hold mu) */
		rc = h5_group_lookup(&l, a->f, a->group, a->name);
		h5_link_clear(&l);
		h5_err_clear();
		return rc == 0 ? EEXIST : reserve_locked(fs, a->lb, strlen(a->name), a->name);
	}
	if (a->type != H5_LINK_SOFT)
		return 0;       /* (an external link renamed keeps its size: the engine's move checks it) */
	if ((rc = h5_link_fits(a->f, a->group, strlen(a->name), a->type, a->target)) == 0)
		return 0;
	e = rc == H5_ERR_LIMIT ? ENAMETOOLONG : h5fs_errno(rc);
	h5fs_log(fs, LOG_ERR, "%s %s%s%s: %s: %s", q->what, q->path ? show_path(q->path) : "",
		 q->path && strcmp(q->path, "/") ? "/" : "", a->name, strerror(e), h5_err_msg());
	h5_err_clear();
	return e;
}

const struct commit_kind lbatch_kind = {
	.name = "new files", .key = "NAMES", .bit = COMMIT_NAMES,
	.policy = { .idle_ms = LB_IDLE_MS, .max_ms = LB_MAX_MS },
	.count = pending_count, .commit = timed_commit, .flush = kind_flush, .settle = fs_meta_settle,
	.stop = lbatch_stop, .admit = kind_admit,
};

/* What a create in p, and an rmdir in p, must commit first. */
static bool create_needs_commit(const struct lbatch *lb, const struct node *p)
{
	return (lb->count && (lb->u.addr != p->addr || lb->u.f != p->f || lb->count >= LB_MAX_ITEMS)) || lb->nrm ||
	       lb->nmv;
}

static bool rmdir_needs_commit(const struct lbatch *lb, const struct node *p)
{
	return lb->count || lb->nmv ||
	       (lb->nrm && (lb->u.addr != p->addr || lb->u.f != p->f || lb->nrm >= LB_MAX_ITEMS));
}

int lbatch_create(h5fs *fs, struct node *p, const char *name, const h5_dset_new *d)
{
	struct lbatch *lb = lbatch_get(fs);
	size_t len = strlen(name);
	uint64_t addr;
	char *nm = NULL;
	int err = 0, rc;

	if (!lb)
		return -1;      /* no thread to commit it: made at once */
	pthread_mutex_lock(&lb->t.mu);
	if ((err = lb_drain_locked(fs, lb, create_needs_commit, p)) != 0)
		goto out;
	if (!lb->count && (err = lb_begin_locked(fs, lb, p)) != 0)
		goto out;
	if (lb->count == lb->cap) {
		size_t cap = lb->cap ? 2 * lb->cap : 64;
		char **nv = realloc(lb->names, cap * sizeof(*nv));
		uint64_t *av = nv ? realloc(lb->addrs, cap * sizeof(*av)) : NULL;
		struct lb_item *iv = av ? realloc(lb->items, cap * sizeof(*iv)) : NULL;

		if (nv)
			lb->names = nv;
		if (av)
			lb->addrs = av;
		if (iv)
			lb->items = iv;
		if (!nv || !av || !iv) {
			err = ENOMEM;
			goto undo;
		}
		lb->cap = cap;
	}
	/* the names kind's admit: the name free, its room (kind_admit) */
	err = commit_ask(fs, &(struct commit_ask){ .op = PAGER_CHANGE, .kind = COMMIT_NAMES, .what = d ? "create" : "mkdir",
						   .path = lb->path, .arg = &(struct lb_ask){
							   .f = lb->u.f, .group = lb->u.addr, .name = name,
							   .type = H5_LINK_HARD, .lb = lb } });
	if (err)
		goto undo;
	if (!(nm = strdup(name))) {
		err = ENOMEM;
		goto undo;
	}
	/* (d NULL: mkdir's new group, of the form the group's children take) */
	rc = d ? h5_dataset_create_loose(&addr, lb->u.f, d) : h5_group_create_loose(&addr, lb->u.f, lb->u.addr);
	if (rc < 0) {
		err = h5fs_errno(rc);
		h5fs_log(fs, err == ENOSPC || err == EIO ? LOG_ERR : LOG_DEBUG, "%s %s/%s: %s: %s",
			 d ? "create" : "mkdir", show_path(lb->path), name, strerror(err), h5_err_msg());
		h5_err_clear();
		free(nm);
		goto undo;
	}
	lb->names[lb->count] = nm;
	lb->addrs[lb->count] = addr;
	/* busy until the dispatcher's open registered its handle (a new
	 * file's; mkdir's group has no open to wait for: linked at the
	 * timer's next look, not held LB_HOLD_MS) */
	lb->items[lb->count] = (struct lb_item){ .busy = d != NULL };
	lb->name_bytes += len;
	__atomic_store_n(&lb->count, lb->count + 1, __ATOMIC_RELEASE);
	commit_changed(&lb->t, lb->count == 1);
undo:
	if (!lb->count && lb->path) {
		/* nothing pending after all: the group and the lock let go */
		free(lb->path);
		lb->path = NULL;
		node_use_end(&lb->u);
		commit_end(fs, NULL, false);
	}
out:
	pthread_mutex_unlock(&lb->t.mu);
	return err;
}

int lbatch_rmdir(h5fs *fs, struct node *p, const char *name, uint64_t *target, int *h5rc)
{
	struct lbatch *lb = lbatch_get(fs);
	char *nm = NULL;
	int err = 0, rc;

	*h5rc = 0;
	if (!lb)
		return -1;
	pthread_mutex_lock(&lb->t.mu);
	if ((err = lb_drain_locked(fs, lb, rmdir_needs_commit, p)) != 0)
		goto out;
	for (size_t i = 0; i < lb->nrm; i++)
		if (strcmp(lb->rm[i], name) == 0) {
			err = ENOENT;
			goto out;
		}
	if (!lb->nrm && (err = lb_begin_locked(fs, lb, p)) != 0)
		goto out;
	rc = h5_group_rmdir_check(target, lb->u.f, lb->u.addr, name);
	if (rc < 0) {
		*h5rc = rc;
		err = -2;
		goto undo;
	}
	if (lb->nrm == lb->rm_cap) {
		size_t cap = lb->rm_cap ? 2 * lb->rm_cap : 64;
		char **nv = realloc(lb->rm, cap * sizeof(*nv));
		uint64_t *av = nv ? realloc(lb->rm_addrs, cap * sizeof(*av)) : NULL;

		if (nv)
			lb->rm = nv;
		if (av)
			lb->rm_addrs = av;
		if (!nv || !av) {
			err = ENOMEM;
			goto undo;
		}
		lb->rm_cap = cap;
	}
	/* the space the batch's removal commit may take (its nodes anew),
	 * held from now: a full disk refuses this rmdir, not the commit */
	rc = 0;
	if (lb->nrm + 1 > lb->room_n) {
		/* (asked again when the batch outgrows it: twice the names) */
		lb->room_n = 2 * (lb->nrm + 1);
		rc = h5_link_batch_room(&lb->need, lb->u.f, lb->u.addr, lb->room_n, 0);
	}
	if (rc == 0)
		rc = h5_file_reserve_again(lb->u.f, &lb->reserved, lb->need);
	if (rc < 0) {
		lb->room_n = 0;
		err = commit_refuse(fs, rc, "rmdir", lb->path, name);
		goto undo;
	}
	if (!(nm = strdup(name))) {
		err = ENOMEM;
		goto undo;
	}
	lb->rm[lb->nrm] = nm;
	lb->rm_addrs[lb->nrm] = *target;
	__atomic_store_n(&lb->nrm, lb->nrm + 1, __ATOMIC_RELEASE);
	commit_changed(&lb->t, lb->nrm == 1);
undo:
	if (!lb->nrm && !lb->count && lb->path) {
		free(lb->path);
		lb->path = NULL;
		h5_file_unreserve(lb->u.f, &lb->reserved);
		node_use_end(&lb->u);
		commit_end(fs, NULL, false);
	}
out:
	pthread_mutex_unlock(&lb->t.mu);
	return err;
}

bool lbatch_removed(h5fs *fs, h5_file *f, uint64_t group, const char *name, size_t len)
{
	struct lbatch *lb = __atomic_load_n(&fs->lb, __ATOMIC_ACQUIRE);
	bool found = false;

	if (!lb || (!__atomic_load_n(&lb->nrm, __ATOMIC_ACQUIRE) && !__atomic_load_n(&lb->nmv, __ATOMIC_ACQUIRE)))
		return false;
	pthread_mutex_lock(&lb->t.mu);
	for (size_t i = 0; lb->nrm && lb->u.f == f && lb->u.addr == group && i < lb->nrm && !found; i++)
		found = strncmp(lb->rm[i], name, len) == 0 && lb->rm[i][len] == '\0';
	/* (a name a batched unlink or rename took away, mbatch.c) */
	if (!found && lb->nmv && lb->u.f == f && lb->u.addr == group)
		found = lb->mv_ops->state_locked(lb, name, len, NULL) == 2;
	pthread_mutex_unlock(&lb->t.mu);
	return found;
}

uint64_t lbatch_commits(h5fs *fs)
{
	struct lbatch *lb = __atomic_load_n(&fs->lb, __ATOMIC_ACQUIRE);

	return lb ? __atomic_load_n(&lb->commits, __ATOMIC_ACQUIRE) : 0;
}

bool lbatch_lookup(h5fs *fs, h5_file *f, uint64_t group, const char *name, uint64_t *addr)
{
	struct lbatch *lb = __atomic_load_n(&fs->lb, __ATOMIC_ACQUIRE);
	bool found = false;

	if (!lb || !__atomic_load_n(&lb->count, __ATOMIC_ACQUIRE))
		return false;
	pthread_mutex_lock(&lb->t.mu);
	if (lb->count && lb->u.f == f && lb->u.addr == group)
		found = lb_pending_locked(lb, name, addr);
	pthread_mutex_unlock(&lb->t.mu);
	return found;
}

int lbatch_forget(h5fs *fs, h5_file *f, uint64_t addr, char **name, uint64_t *pino)
{
	struct lbatch *lb = __atomic_load_n(&fs->lb, __ATOMIC_ACQUIRE);
	int found = 0;

	if (!lb || !__atomic_load_n(&lb->count, __ATOMIC_ACQUIRE))
		return 0;
	pthread_mutex_lock(&lb->t.mu);
	wait_commit_locked(lb);         /* (the commit links its names by pointer) */
	for (size_t i = 0; lb->count && lb->u.f == f && i < lb->count; i++) {
		if (lb->addrs[i] != addr)
			continue;
		*name = lb->names[i];
		*pino = lb->pino;
		lb->name_bytes -= strlen(lb->names[i]);
		lb->nm_idx_ok = false;
		memmove(&lb->names[i], &lb->names[i + 1], (lb->count - i - 1) * sizeof(*lb->names));
		memmove(&lb->addrs[i], &lb->addrs[i + 1], (lb->count - i - 1) * sizeof(*lb->addrs));
		memmove(&lb->items[i], &lb->items[i + 1], (lb->count - i - 1) * sizeof(*lb->items));
		__atomic_store_n(&lb->count, lb->count - 1, __ATOMIC_RELEASE);
		h5_dataset_loose_drop(f, addr);
		if (!lb->count)
			lb_release_locked(fs, lb);
		found = 1;
		break;
	}
	pthread_mutex_unlock(&lb->t.mu);
	return found;
}

void lbatch_busy(h5fs *fs, struct node *n, bool busy)
{
	struct lbatch *lb = __atomic_load_n(&fs->lb, __ATOMIC_ACQUIRE);
	h5_file *f;
	uint64_t addr;

	if (!lb || !__atomic_load_n(&lb->count, __ATOMIC_ACQUIRE))
		return;
	/* (under n->lk: a live refresh swaps a node's file and address,
	 * node/fresh.c node_swap; TSan, test_rw_live) */
	pthread_rwlock_rdlock(&n->lk);
	f = n->f;
	addr = n->addr;
	pthread_rwlock_unlock(&n->lk);
	pthread_mutex_lock(&lb->t.mu);
	for (size_t i = 0; lb->u.f == f && i < lb->count; i++)
		if (lb->addrs[i] == addr) {
			lb->items[i].busy = busy;
			break;
		}
	pthread_mutex_unlock(&lb->t.mu);
}

void lbatch_stop(h5fs *fs)
{
	struct lbatch *lb = __atomic_load_n(&fs->lb, __ATOMIC_ACQUIRE);

	if (!lb)
		return;
	pthread_mutex_lock(&lb->t.mu);
	/* (a last commit that fails lets the batch go: count 0) */
	while (lb->count || lb->nrm || lb->nmv)
		commit_locked(fs, lb, true, false);
	pthread_mutex_unlock(&lb->t.mu);
	commit_slot_stop(&lb->t);
	__atomic_store_n(&fs->lb, NULL, __ATOMIC_RELEASE);
	free(lb->names);
	free(lb->nm_idx);
	free(lb->addrs);
	free(lb->items);
	free(lb->rm);
	free(lb->rm_addrs);
	if (lb->mv_ops)
		lb->mv_ops->free(lb);
	if (lb->cv_made)
		pthread_cond_destroy(&lb->cv);
	free(lb);
}
