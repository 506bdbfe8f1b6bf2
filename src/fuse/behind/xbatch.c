/*
 * xbatch.c - setfattr's write-behind: attribute values set in quick
 * succession, accepted at once and committed together (doc/MODIFY.md
 * "Write-behind"); and every attribute or link change made durable
 * (fs_meta_changed, fs_meta_sync: the batch flushed, FILE fsync'd).
 *
 * A commit costs an fsync (the new space durable before the switch), and
 * in dense storage a store written anew: a script setting 10,000
 * attributes of a group paid both 10,000 times (quadratic in the store's
 * size). So `setfattr -n user.NAME -v TEXT` is checked before it is
 * answered - everything its commit could fail on (issue 47): TEXT parses
 * in the attribute's type, the message fits its place, a new name does
 * not move the attributes to dense storage, the dense heap has room
 * (h5_attr_set_check, with the batch's h5_attr_room), and the disk space
 * the commit may take is allocated (h5_file_reserve; ENOSPC now) - then
 * answered and kept here (a name set again while pending: its value
 * replaced). A change the batch cannot promise is made at once by the
 * caller (xattr.c), which gives its real error. The batch is committed
 * by one engine call (h5_attr_write_batch: one heap collection, one
 * store written, one commit) when
 *   - an xattr of any object is read or changed otherwise, a link changes,
 *     a dataset is opened for writing, or the mount is fsync'd or
 *     unmounted (xbatch_flush);
 *   - another object's attribute comes, or the batch is full (XB_MAX_ITEMS,
 *     or its policy's max_bytes of names and values: commit/sched.c);
 *   - XB_IDLE_MS passed without one, or XB_MAX_MS since its first (the
 *     timer thread, commit/sched.c, which then fsyncs and cuts FILE to its end of
 *     allocation).
 * A crash meanwhile leaves the batch not done (each change done or not
 * done, as every commit); FILE's lock is held from the first accepted
 * change to the commit, as for appended rows. A commit that still fails
 * (an I/O error) is never only a log line: fs_lost_set makes the next
 * fsync return it, every later write EIO, and the unmount exit 1.
 */
#include "commit.h"
#include "batch.h"
#include "xattrs.h"
#include "owner.h"

#include <sys/xattr.h>

#define XB_IDLE_MS 20
#define XB_MAX_MS 100   /* from a batch's first change, whatever follows */
#define XB_MAX_ITEMS 4096
#define XB_MAX_BYTES ((size_t)8 << 20)  /* its policy's max_bytes (H5FS_COMMIT_ATTRS_BYTES) */

struct xbatch {
	struct commit_slot t;           /* its timer; t.mu: the batch, held across its commit */
	struct node *n;         /* pinned (busy) while pending */
	struct use u;           /* its file and object, held (the lock too) */
	h5_attr_str *it;        /* the changes, as the engine takes them (name
				 * without "user.", value: strings owned here) */
	size_t count, cap, bytes;
	h5_attr_room room;      /* what the batch promised (h5_attr_set_check) */
	h5_attr_room *share;    /* each change's part of room (cap of them): a
				 * name set again is counted once, with its
				 * last value */
	uint64_t reserved;      /* disk space held for its commit (h5_file_reserve) */
	int own;                /* the file's owner (src/common/owner.c), -1: not asked yet */
};

/* The node let go, and freed if it was forgotten meanwhile (as the live
 * sweep does). Its kept xattrs were dropped when the change was accepted
 * (xattr.c), after the batch held it: a set read before that drop is not
 * kept, and every read after it commits the batch first. No node lock is
 * taken here: a flush may come from a request that holds one. */
static void node_let_go(h5fs *fs, struct node *n)
{
	bool dead;

	pthread_mutex_lock(&fs->lock);
	dead = --n->busy == 0 && n->dead;
	pthread_mutex_unlock(&fs->lock);
	if (dead)
		node_free(n);
}

/* The batch committed (xb->t.mu held). */
static void commit_locked(h5fs *fs, struct xbatch *xb)
{
	size_t done = 0;
	int rc;

	if (!xb->count)
		return;
	rc = h5_attr_write_batch(&done, xb->u.f, xb->u.addr, xb->it, xb->count);
	if (rc < 0) {
		/* answered already: never only a log line (fs_lost_set: the
		 * next fsync says it, writes get EIO, unmount fails) */
		h5fs_log(fs, LOG_ERR, "setxattr %s: %zu of %zu attribute changes committed, the rest lost: %s",
			 show_path(xb->n->path), done, xb->count, h5_err_msg());
		fs_lost_set(fs, h5fs_errno(rc));
	}
	h5_err_clear();
	for (size_t i = 0; i < xb->count; i++) {
		free((char *)xb->it[i].name);
		free((char *)xb->it[i].val);
	}
	__atomic_store_n(&xb->count, 0, __ATOMIC_RELEASE);
	xb->bytes = 0;
	xb->room = (h5_attr_room){ 0 };
	h5_file_unreserve(xb->u.f, &xb->reserved);     /* (committed or lost) */
	node_use_end(&xb->u);
	node_let_go(fs, xb->n);
	xb->n = NULL;
	fs_meta_changed(fs);
	commit_end(fs, NULL, false);
}

static void xbatch_flush(h5fs *fs)
{
	struct xbatch *xb = __atomic_load_n(&fs->xb, __ATOMIC_ACQUIRE);

	if (!xb || !__atomic_load_n(&xb->count, __ATOMIC_ACQUIRE))
		return;
	pthread_mutex_lock(&xb->t.mu);
	commit_locked(fs, xb);
	pthread_mutex_unlock(&xb->t.mu);
}

/* The kind's flush (commit/sched.c: barriers, fs_meta_sync) (fs_meta_sync): the batch committed. */
static int kind_flush(void *owner)
{
	xbatch_flush(((struct xbatch *)owner)->t.fs);
	return 0;       /* (a failure marked the mount lost: fs_meta_sync returns it) */
}

/* The timer's (commit/sched.c), t.mu held. */
static size_t pending_count(void *owner)
{
	return ((struct xbatch *)owner)->count;
}

static int timed_commit(void *owner)
{
	struct xbatch *xb = owner;

	commit_locked(xb->t.fs, xb);      /* (a failure marks the mount) */
	return 0;
}

static int kind_admit(h5fs *fs, const struct commit_ask *q);

const struct commit_kind xbatch_kind = {
	.name = "attribute values", .key = "ATTRS", .bit = COMMIT_ATTRS,
	.policy = { .idle_ms = XB_IDLE_MS, .max_ms = XB_MAX_MS, .max_bytes = XB_MAX_BYTES },
	.count = pending_count, .commit = timed_commit, .flush = kind_flush, .settle = fs_meta_settle,
	.stop = xbatch_stop, .admit = kind_admit,
};

static struct xbatch *xbatch_get(h5fs *fs)
{
	struct xbatch *xb;

	pthread_mutex_lock(&fs->lock);
	xb = fs->xb;
	if (!xb && (xb = commit_kind_new_locked(fs, sizeof(*xb), offsetof(struct xbatch, t), &xbatch_kind)) != NULL)
		__atomic_store_n(&fs->xb, xb, __ATOMIC_RELEASE);
	pthread_mutex_unlock(&fs->lock);
	return xb;
}

/* The batch's object, begun (xb->t.mu held, batch empty): FILE's lock
 * taken, n in use as the current generation shows it, pinned. */
static int begin_locked(h5fs *fs, struct xbatch *xb, struct node *n)
{
	int err = commit_begin(&xb->u, fs, n, 0, "setxattr");

	if (err)
		return err;
	pthread_mutex_lock(&fs->lock);
	n->busy++;
	pthread_mutex_unlock(&fs->lock);
	xb->n = n;
	xb->room = (h5_attr_room){ 0 };
	xb->reserved = 0;
	xb->own = -1;
	return 0;
}

static size_t pending_at(const struct xbatch *xb, const char *name, size_t len)
{
	for (size_t i = 0; i < xb->count; i++)
		if (xb->it[i].name_len == len && memcmp(xb->it[i].name, name, len) == 0)
			return i;
	return SIZE_MAX;
}

/* A pending change's value replaced (the name set again). */
static int revalue(struct xbatch *xb, h5_attr_str *it, const char *val, size_t len)
{
	char *v = malloc(len + 1);

	if (!v)
		return ENOMEM;
	memcpy(v, val, len);
	xb->bytes = xb->bytes - it->len + len;
	free((char *)it->val);
	it->val = v;
	it->len = len;
	return 0;
}

static int push(struct xbatch *xb, const char *name, size_t name_len, const char *val, size_t len, bool set,
		int raw, enum h5_fstr fstr, const h5_attr_room *share)
{
	h5_attr_str *it;
	char *nm, *v;

	if (xb->count == xb->cap) {
		size_t cap = xb->cap ? xb->cap * 2 : 64;

		h5_attr_room *sh;

		if (!(it = realloc(xb->it, cap * sizeof(*it))))
			return ENOMEM;
		xb->it = it;
		if (!(sh = realloc(xb->share, cap * sizeof(*sh))))
			return ENOMEM;
		xb->share = sh;
		xb->cap = cap;
	}
	nm = malloc(name_len + 1);
	v = malloc(len + 1);
	if (!nm || !v) {
		free(nm);
		free(v);
		return ENOMEM;
	}
	memcpy(nm, name, name_len);
	nm[name_len] = 0;
	memcpy(v, val, len);
	xb->it[xb->count] = (h5_attr_str){ .name = nm, .name_len = name_len, .val = v, .len = len, .set = set,
					   .raw = raw, .fstr = set ? H5_FSTR_NONE : fstr };
	xb->share[xb->count] = *share;
	xb->bytes += name_len + len;
	__atomic_store_n(&xb->count, xb->count + 1, __ATOMIC_RELEASE);
	return 0;
}

/* The disk space the batch's commit may take, allocated before the
 * change is answered (doubling, so a long batch asks a few times): a full
 * disk is ENOSPC now, never a change lost after its answer. Once space is
 * freed the next change gets it. */
static int reserve(h5fs *fs, struct xbatch *xb, const char *name, size_t name_len)
{
	uint64_t need = xb->room.need, want;
	int rc;

	if (need <= xb->reserved)
		return 0;
	want = need < 2 * xb->reserved ? 2 * xb->reserved : need;
	rc = h5_file_reserve(xb->u.f, &xb->reserved, want);
	if (rc < 0 && want > need) {
		h5_err_clear();
		rc = h5_file_reserve(xb->u.f, &xb->reserved, need);
	}
	if (rc < 0) {
		char op[300];

		snprintf(op, sizeof(op), "setxattr user.%.*s of", (int)(name_len < 255 ? name_len : 255), name);
		return commit_refuse(fs, rc, op, xb->n->path, NULL);
	}
	return 0;
}

/* room less one change's share (h5_attr_set_check counts need anew). */
static void room_less(h5_attr_room *r, const h5_attr_room *s)
{
	r->n -= s->n;
	r->nnew -= s->nnew;
	r->bytes -= s->bytes;
	r->ngrow -= s->ngrow;
	r->heap -= s->heap;
}

static h5_attr_room room_diff(const h5_attr_room *after, const h5_attr_room *before)
{
	return (h5_attr_room){ .n = after->n - before->n, .nnew = after->nnew - before->nnew,
			       .bytes = after->bytes - before->bytes, .ngrow = after->ngrow - before->ngrow,
			       .heap = after->heap - before->heap };
}

/* A change asked of the kind (commit_ask's arg, in and out): the change,
 * then what the admit found - its place among the pending ones (at),
 * whether NAME exists (rc of h5_attr_set_check), its text form, its
 * share of the room, the room before it (keep), and at_once: not one
 * the batch can promise (the caller makes it at once, xattr.c). */
struct xb_ask {
	struct xbatch *xb;
	const char *name, *val;
	size_t name_len, len;
	int flags;
	size_t at;
	int rc;
	enum h5_fstr fstr;
	h5_attr_room keep, share;
	bool at_once;
};

/* The kind's admit (commit_ask after the pager's table; xb->t.mu held,
 * the batch begun on the object): everything the batch's commit could
 * fail on decided before the answer - a name pending or present with
 * XATTR_CREATE (EEXIST), absent with XATTR_REPLACE (ENODATA), the value
 * in the attribute's type and the place its message goes (engine
 * h5_attr_set_check: what a header message or the object's dense store
 * holds; a change it cannot promise is at_once: made now by the caller,
 * whose engine call gives its real error before the answer), the disk
 * space the commit may take (ENOSPC). A name set again while pending is
 * checked again with its new value and counted once: its earlier value's
 * share taken off first. (Counted twice, a full disk refused the second
 * of two quick changes of one string attribute though the batch writes
 * one value: test_space_reuse in CI; a new name set again with a longer
 * value was not counted at all.) The room is as before on a refusal. */
static int kind_admit(h5fs *fs, const struct commit_ask *q)
{
	struct xb_ask *a = q->arg;
	struct xbatch *xb = a->xb;
	int raw = fs->cfg.xattr_raw;
	h5_attr_room before;
	int err = 0;

	a->at = pending_at(xb, a->name, a->name_len);
	a->keep = xb->room;
	if (a->at != SIZE_MAX && (a->flags & XATTR_CREATE))
		return EEXIST;
	if (a->at != SIZE_MAX)
		room_less(&xb->room, &xb->share[a->at]);
	before = xb->room;
	/* an existing attribute: its new value must parse in its type now,
	 * as h5_attr_write would take it (else the caller's way gives the
	 * error, after the batch is committed) */
	/* a new name is text as the file's owner writes it (owner.h: NC_CHAR
	 * in netCDF-4 files); asked once per batch */
	if (xb->own < 0)
		xb->own = (int)own_detect(xb->u.f);
	a->fstr = a->at != SIZE_MAX && !xb->it[a->at].set ? xb->it[a->at].fstr : own_new_text((enum own_kind)xb->own);
	a->rc = h5_attr_set_check(&xb->room, xb->u.f, xb->u.addr, a->name, a->name_len, a->val, a->len, raw, a->fstr);
	if (a->rc < 0 && a->rc != H5_ERR_NOTFOUND)
		h5fs_log(fs, LOG_DEBUG, "setxattr %s: user.%.*s made at once, not behind: %s", show_path(xb->n->path),
			 (int)a->name_len, a->name, h5_err_msg());
	h5_err_clear();
	if (a->rc < 0 && a->rc != H5_ERR_NOTFOUND) {
		a->at_once = true;
		goto out;
	}
	a->share = room_diff(&xb->room, &before);
	if (a->at == SIZE_MAX && a->rc == 0 && (a->flags & XATTR_CREATE))
		err = EEXIST;
	else if (a->at == SIZE_MAX && a->rc == H5_ERR_NOTFOUND && (a->flags & XATTR_REPLACE))
		err = ENODATA;
	else
		err = reserve(fs, xb, a->name, a->name_len);
out:
	if (err || a->at_once)
		xb->room = a->keep;
	return err;
}

/* The change of NAME admitted (kind_admit) and kept (xb->t.mu held, the
 * batch begun on its object): 0, an errno, or -1 for the caller's way. */
static int accept_locked(h5fs *fs, struct xbatch *xb, const char *name, size_t name_len, const char *val,
			 size_t len, int flags)
{
	struct xb_ask a = { .xb = xb, .name = name, .name_len = name_len, .val = val, .len = len, .flags = flags };
	int err = commit_ask(fs, &(struct commit_ask){ .op = PAGER_CHANGE, .kind = COMMIT_ATTRS, .what = "setxattr",
						       .path = xb->n->path, .arg = &a });

	if (err || a.at_once)
		return err ? err : -1;
	if (a.at != SIZE_MAX) {
		if ((err = revalue(xb, &xb->it[a.at], val, len)) == 0)
			xb->share[a.at] = a.share;
	} else {
		err = push(xb, name, name_len, val, len, a.rc == 0, fs->cfg.xattr_raw, a.fstr, &a.share);
	}
	if (err)
		xb->room = a.keep;
	return err;
}

int xbatch_add(h5fs *fs, struct node *n, const char *name, size_t name_len, const char *val, size_t len, int flags)
{
	struct xbatch *xb = xbatch_get(fs);
	int err = 0;

	if (!xb)
		return 1;       /* no thread to commit it: at once, as before */
	pthread_mutex_lock(&xb->t.mu);
	/* (the kind's policy: max_bytes of names and values at most) */
	if (xb->n && (xb->n != n || xb->count >= XB_MAX_ITEMS || xb->bytes + name_len + len > xb->t.pol.max_bytes))
		commit_locked(fs, xb);
	if (!xb->n && (err = begin_locked(fs, xb, n)) != 0)
		goto out;
	err = accept_locked(fs, xb, name, name_len, val, len, flags);
	if (!err)
		commit_changed(&xb->t, xb->count == 1);
	if (xb->count == 0) {
		/* nothing pending after all: the object and the lock let go */
		node_use_end(&xb->u);
		node_let_go(fs, xb->n);
		xb->n = NULL;
		commit_end(fs, NULL, false);
	}
out:
	pthread_mutex_unlock(&xb->t.mu);
	return err < 0 ? 1 : err;
}

void xbatch_stop(h5fs *fs)
{
	struct xbatch *xb = __atomic_load_n(&fs->xb, __ATOMIC_ACQUIRE);

	if (!xb)
		return;
	pthread_mutex_lock(&xb->t.mu);
	commit_locked(fs, xb);
	pthread_mutex_unlock(&xb->t.mu);
	commit_slot_stop(&xb->t);
	__atomic_store_n(&fs->xb, NULL, __ATOMIC_RELEASE);
	free(xb->it);
	free(xb->share);
	free(xb);
}
