/*
 * mbatch.c - the write-behind of rename, link and unlink (issue 82 item
 * 2; doc/MODIFY.md "Write-behind of renames, links and unlinks"): each was
 * an ordered commit answered after its fsyncs, 0.5-1 ms a call on a disk
 * where a FUSE round trip is 0.03 ms.
 *
 * In a group whose form changes many names in one commit (every form h5fs
 * writes: symbol table, compact, dense; h5_link_change_batchable), these join the batch
 * of link changes (lbatch.c: its timer, its group, FILE's lock held while
 * pending), answered before the commit:
 *   rename  of a dataset or named datatype within one group, to a name
 *           that is free (the batch's view: FILE and the list below);
 *   link    of one to a free name of the group;
 *   unlink  of a soft or external link FILE has; of a name whose object
 *           keeps another name (its count, FILE's
 *           and the list's, at least 2), or of a dataset's one name in
 *           FILE that the batch does not otherwise touch and no
 *           descriptor has open (not in a netCDF-4 file: its dimensions
 *           name it; an open one takes the ordered unlink, whose
 *           gone_keep keeps its storage from the answer on), its nodes
 *           marked unlinked at the answer and its storage freed after
 *           the commit.
 * The list keeps each name's last change (mv a b; mv b a leaves a naming
 * its object, b removed: nothing to write for either), read by lookups
 * (lbatch_moved, lbatch_removed: member/lookup.c member_name_seen) and
 * st_nlink (lbatch_nlink) from the answer on. Everything else -
 * another group's name, a name that is there (rename over it: rename_keep,
 * netCDF-4 variables, directories), directories, soft links, np.save's
 * streams - is not for the batch:
 * the caller then takes today's path, whose barrier commits the batch
 * first. Refusals decided here, before the answer: ENOENT (no such name),
 * EEXIST (link to a name taken), ENOSPC (the room the commit may take,
 * reserved per call as the new files' batch does).
 *
 * The commit (lbatch.c's timer LB_IDLE_MS after the last change, LB_MAX_MS
 * after the first, any barrier: a readdir, another change, fsync,
 * unmount) hands the net change of every name to h5_link_change_batch:
 * counts raised, one stage, the root's one write, counts lowered. A crash
 * before it leaves FILE as before the batch; after, as after. It holds
 * t.mu throughout (a change of a name being committed must wait for it).
 */
#include "commit.h"
#include "batch.h"
#include "lbatch_int.h"
#include "hash.h"

/* ---- the list and its index ----------------------------------------------- */

/* t.mu held: the entry of NAME (len bytes), or SIZE_MAX */
static size_t find_locked(const struct lbatch *lb, const char *name, size_t len)
{
	if (!lb->mv_idx_cap)
		return SIZE_MAX;
	for (size_t b = hash_name_n(0, name, len, lb->mv_idx_cap);; b = (b + 1) & (lb->mv_idx_cap - 1)) {
		uint32_t v = lb->mv_idx[b];
		const char *k;

		if (!v)
			return SIZE_MAX;
		k = lb->mv[v - 1].name;
		if (strncmp(k, name, len) == 0 && k[len] == '\0')
			return v - 1;
	}
}

static void index_put(struct lbatch *lb, size_t i)
{
	hash_slot_put(lb->mv_idx, lb->mv_idx_cap, lb->mv[i].name, i);
}

static int mbatch_state_locked(const struct lbatch *lb, const char *name, size_t len, uint64_t *addr);
static void mbatch_free(struct lbatch *lb);
static int mbatch_commit_locked(h5fs *fs, struct lbatch *lb, bool last);

/* how the batch's core (lbatch.c) reaches this list (lbatch_int.h) */
static const struct lb_moves_ops moves_ops = {
	.commit_locked = mbatch_commit_locked,
	.state_locked = mbatch_state_locked,
	.free = mbatch_free,
};

/* Room for two more entries (the list and an index at most half full);
 * the list's operations registered with the batch */
static int grow(struct lbatch *lb)
{
	lb->mv_ops = &moves_ops;
	if (lb->nmv + 2 > lb->mv_cap) {
		size_t cap = lb->mv_cap ? 2 * lb->mv_cap : 64;
		struct lb_move *nv = realloc(lb->mv, cap * sizeof(*nv));

		if (!nv)
			return ENOMEM;
		lb->mv = nv;
		lb->mv_cap = cap;
	}
	if (2 * (lb->nmv + 2) > lb->mv_idx_cap) {
		size_t cap = lb->mv_idx_cap ? 2 * lb->mv_idx_cap : 256;
		uint32_t *ni = calloc(cap, sizeof(*ni));

		if (!ni)
			return ENOMEM;
		free(lb->mv_idx);
		lb->mv_idx = ni;
		lb->mv_idx_cap = cap;
		for (size_t i = 0; i < lb->nmv; i++)
			index_put(lb, i);
	}
	return 0;
}

static int mbatch_state_locked(const struct lbatch *lb, const char *name, size_t len, uint64_t *addr)
{
	size_t i = find_locked(lb, name, len);

	if (i == SIZE_MAX)
		return 0;
	if (lb->mv[i].addr == UINT64_MAX)
		return 2;
	if (addr)
		*addr = lb->mv[i].addr;
	return 1;
}

/* t.mu held: NAME's link as the batch shows it: 0 none, 1 a hard link
 * (*addr), 2 another kind of link; *in_file, *was: FILE's (for a new
 * entry); or a negative h5_err */
static int resolve_locked(struct lbatch *lb, const char *name, uint64_t *addr, bool *in_file, uint64_t *was)
{
	size_t i = find_locked(lb, name, strlen(name));
	h5_link l;
	int rc;

	if (i != SIZE_MAX) {
		*in_file = lb->mv[i].in_file;
		*was = lb->mv[i].was;
		*addr = lb->mv[i].addr;
		return *addr == UINT64_MAX ? 0 : 1;
	}
	*was = *addr = UINT64_MAX;
	rc = h5_group_lookup(&l, lb->u.f, lb->u.addr, name);
	*in_file = rc == 0;
	if (rc == 0 && l.type == H5_LINK_HARD)
		*was = *addr = l.addr;
	if (rc == 0)
		rc = l.type == H5_LINK_HARD ? 1 : 2;
	else if (rc == H5_ERR_NOTFOUND)
		rc = 0;
	h5_link_clear(&l);
	h5_err_clear();
	return rc;
}

/* t.mu held, room made (grow): NAME's last change, addr (UINT64_MAX:
 * removed); in_file and was as resolve_locked found them; *copy, NAME's
 * copy made before (so that no call changes one name of two and fails),
 * taken (NULL) when a new entry keeps it */
static void set_locked(struct lbatch *lb, const char *name, uint64_t addr, bool in_file, uint64_t was, char **copy)
{
	size_t i = find_locked(lb, name, strlen(name));

	if (i != SIZE_MAX) {
		lb->mv_net += (addr != UINT64_MAX) - (lb->mv[i].addr != UINT64_MAX);
		lb->mv[i].addr = addr;
		return;
	}
	lb->mv_net += (addr != UINT64_MAX) - in_file;
	lb->mv[lb->nmv] = (struct lb_move){ .name = *copy, .addr = addr, .was = was, .in_file = in_file };
	*copy = NULL;
	lb->mv_bytes += strlen(name);
	index_put(lb, lb->nmv);
	__atomic_store_n(&lb->nmv, lb->nmv + 1, __ATOMIC_RELEASE);
}

/* The room the commit may take (h5_link_batch_room over the names of the
 * list: each at most one addition; asked again past twice the names it
 * was asked for), held from now: a full disk refuses this call, not the
 * commit. 0 or an errno (logged). */
static int reserve_locked(h5fs *fs, struct lbatch *lb, const char *op, const char *name)
{
	size_t len = strlen(name);
	int rc = 0;

	if (lb->nmv + 2 > lb->room_n || lb->mv_bytes + 2 * len > lb->room_bytes) {
		lb->room_n = 2 * (lb->nmv + 2);
		lb->room_bytes = 2 * (lb->mv_bytes + 2 * len) + 64 * lb->room_n;
		rc = h5_link_batch_room(&lb->need, lb->u.f, lb->u.addr, lb->room_n, lb->room_bytes);
		/* (a count's edit may move a v2 header's messages) */
		lb->need += 512 * (uint64_t)lb->room_n;
	}
	if (rc == 0)
		rc = h5_file_reserve_again(lb->u.f, &lb->reserved, lb->need);
	if (rc < 0) {
		lb->room_n = 0;
		return commit_refuse(fs, rc, op, lb->path, name);
	}
	return 0;
}

static void mbatch_free(struct lbatch *lb)
{
	for (size_t i = 0; i < lb->nmv; i++)
		free(lb->mv[i].name);
	free(lb->mv);
	free(lb->mv_idx);
	lb->mv = NULL;
	lb->mv_idx = NULL;
	lb->nmv = lb->mv_cap = lb->mv_idx_cap = 0;
}

/* The list emptied (committed, or lost), its memory kept */
static void clear_locked(struct lbatch *lb)
{
	for (size_t i = 0; i < lb->nmv; i++)
		free(lb->mv[i].name);
	if (lb->mv_idx)
		memset(lb->mv_idx, 0, lb->mv_idx_cap * sizeof(*lb->mv_idx));
	lb->mv_bytes = 0;
	lb->mv_net = 0;
	__atomic_store_n(&lb->nmv, 0, __ATOMIC_RELEASE);
}

/* ---- the commit ------------------------------------------------------------- */

static int mbatch_commit_locked(h5fs *fs, struct lbatch *lb, bool last)
{
	char **names = malloc((lb->nmv ? lb->nmv : 1) * sizeof(*names));
	uint64_t *addrs = malloc((lb->nmv ? lb->nmv : 1) * sizeof(*addrs));
	h5_link_gone *gone = malloc((lb->nmv ? lb->nmv : 1) * sizeof(*gone));
	size_t n = 0, ng = 0;
	int rc = 0, err;

	if (!names || !addrs || !gone) {
		free(names);
		free(addrs);
		free(gone);
		return ENOMEM;
	}
	/* the net changes: a name back to what FILE has (mv a b; mv b a's
	 * a, or a link's name unlinked again) is nothing to write */
	for (size_t i = 0; i < lb->nmv; i++) {
		const struct lb_move *m = &lb->mv[i];

		if (m->addr == UINT64_MAX ? !m->in_file : m->addr == m->was)
			continue;
		names[n] = m->name;
		addrs[n++] = m->addr;
	}
	if (n)
		rc = h5_link_change_batch(lb->u.f, lb->u.addr, names, addrs, n, gone, &ng);
	free(names);
	free(addrs);
	/* the datasets whose last name went (their nodes marked unlinked at
	 * the answer): their storage freed now, or kept while a descriptor
	 * reads them, as the ordered unlink does */
	for (size_t i = 0; rc == 0 && i < ng; i++)
		gone_keep(fs, lb->u.g, lb->u.f, gone[i].addr, gone[i].gone);
	free(gone);
	if (rc == 0) {
		if (n)
			__atomic_add_fetch(&lb->commits, 1, __ATOMIC_RELEASE);
		clear_locked(lb);
		lb_release_locked(fs, lb);
		return 0;
	}
	err = h5fs_errno(rc);
	h5fs_log(fs, LOG_ERR, "rename/link/unlink in %s: %zu names: the commit failed (%s)%s: %s", show_path(lb->path),
		 n, strerror(err), last || lb->fails + 1 >= LB_TRIES ? ", the changes are lost" : ", tried again later",
		 h5_err_msg());
	h5_err_clear();
	if (last || ++lb->fails >= LB_TRIES) {
		fs_lost_set(fs, err);
		clear_locked(lb);
		lb_release_locked(fs, lb);
	}
	lb->t.first_ns = lb->t.last_ns = h5fs_now_ns();
	return err;
}

/* ---- the calls ---------------------------------------------------------------- */

/* What a rename, link or unlink in p must commit first: new names or
 * removals, or moves of another group, or a full list. */
static bool move_needs_commit(const struct lbatch *lb, const struct node *p)
{
	return lb->count || lb->nrm ||
	       (lb->nmv && (lb->u.addr != p->addr || lb->u.f != p->f || lb->nmv >= LB_MAX_ITEMS));
}

/* A batch left empty (a call not for it, or refused) lets its group and
 * FILE's lock go (t.mu held). */
static void close_locked(h5fs *fs, struct lbatch *lb)
{
	if (!lb->nmv && !lb->count && !lb->nrm && lb->path) {
		free(lb->path);
		lb->path = NULL;
		h5_file_unreserve(lb->u.f, &lb->reserved);
		lb->room_n = 0;
		node_use_end(&lb->u);
		commit_end(fs, NULL, false);
	}
}

/* The batch for a change of p's names, t.mu taken, its group begun: 0;
 * -1 not for the batch (no batch, a form without one commit for many);
 * or an errno (t.mu let go). */
static int open_locked(struct lbatch **out, h5fs *fs, struct node *p)
{
	struct lbatch *lb = lbatch_get(fs);
	int err;

	*out = lb;
	if (!lb)
		return -1;
	pthread_mutex_lock(&lb->t.mu);
	if ((err = lb_drain_locked(fs, lb, move_needs_commit, p)) != 0)
		goto fail;
	if (lb->nmv)
		return 0;
	if ((err = lb_begin_locked(fs, lb, p)) != 0)
		goto fail;
	if (lb->u.f != fs_file(fs) || h5_link_change_batchable(lb->u.f, lb->u.addr) != 1 ||
	    h5_link_change_room(&lb->mv_room, lb->u.f, lb->u.addr) < 0) {
		h5_err_clear();
		err = -1;
		goto fail;
	}
	lb->mv_net = 0;
	return 0;
fail:
	close_locked(fs, lb);
	pthread_mutex_unlock(&lb->t.mu);
	return err;
}

static int done_locked(h5fs *fs, struct lbatch *lb, int err, size_t before)
{
	if (err == 0 && lb->nmv)
		commit_changed(&lb->t, before == 0);
	close_locked(fs, lb);
	pthread_mutex_unlock(&lb->t.mu);
	return err;
}

/* Whether the object at addr is one these calls batch: a dataset or a
 * named datatype (a file through the mount), *nlink its count in FILE */
static bool plain_object(h5_file *f, uint64_t addr, unsigned *nlink)
{
	h5_obj_info info;
	bool ok = h5_obj_info_get(&info, f, addr) == 0 &&
		  (info.kind == H5_OBJ_DATASET || info.kind == H5_OBJ_DATATYPE);

	h5_err_clear();
	*nlink = info.nlink ? info.nlink : 1;
	return ok;
}

/* t.mu held: the pending change of addr's count */
static int delta_locked(const struct lbatch *lb, uint64_t addr)
{
	int d = 0;

	for (size_t i = 0; i < lb->nmv; i++)
		d += (lb->mv[i].addr == addr) - (lb->mv[i].was == addr);
	return d;
}

int lbatch_rename(h5fs *fs, struct node *p, const char *name, const char *newname)
{
	struct lbatch *lb;
	uint64_t src, dst, was_s, was_d;
	bool in_s, in_d;
	char *c1 = NULL, *c2 = NULL;
	unsigned nl;
	size_t before;
	int err = open_locked(&lb, fs, p), r;

	if (err)
		return err;
	before = lb->nmv;
	r = resolve_locked(lb, name, &src, &in_s, &was_s);
	if (r == 0)
		err = ENOENT;
	else if (r != 1 || !plain_object(lb->u.f, src, &nl))
		err = -1;       /* a soft link, a directory: today's path */
	else if (resolve_locked(lb, newname, &dst, &in_d, &was_d) != 0)
		err = -1;       /* over a name (rename_keep, a directory, ...) */
	else if (!(c1 = strdup(name)) || !(c2 = strdup(newname)))
		err = ENOMEM;
	else if ((err = grow(lb)) == 0 && (err = reserve_locked(fs, lb, "rename", newname)) == 0) {
		set_locked(lb, name, UINT64_MAX, in_s, was_s, &c1);
		set_locked(lb, newname, src, in_d, was_d, &c2);
	}
	free(c1);
	free(c2);
	return done_locked(fs, lb, err, before);
}

int lbatch_link(h5fs *fs, struct node *p, uint64_t addr, const char *newname)
{
	struct lbatch *lb;
	uint64_t dst, was;
	bool in;
	char *c = NULL;
	unsigned nl;
	size_t before;
	int err = open_locked(&lb, fs, p), r;

	if (err)
		return err;
	before = lb->nmv;
	r = resolve_locked(lb, newname, &dst, &in, &was);
	if (r < 0 || !plain_object(lb->u.f, addr, &nl))
		err = -1;
	else if (r)
		err = EEXIST;
	else if (lb->mv_room != UINT64_MAX && lb->mv_net + 1 > (int64_t)lb->mv_room)
		err = -1;       /* a compact group at its limit: the ordered link moves it to dense storage */
	else if (!(c = strdup(newname)))
		err = ENOMEM;
	else if ((err = grow(lb)) == 0 && (err = reserve_locked(fs, lb, "link", newname)) == 0)
		set_locked(lb, newname, addr, in, was, &c);
	free(c);
	return done_locked(fs, lb, err, before);
}

int lbatch_unlink(h5fs *fs, struct node *p, const char *name, uint64_t *addr, bool *last,
		  bool (*may_take_last)(h5fs *fs, h5_file *f, uint64_t addr))
{
	struct lbatch *lb;
	uint64_t was;
	bool in;
	char *c = NULL;
	unsigned nl;
	size_t before;
	bool soft;
	int err, r;

	*last = false;
	err = open_locked(&lb, fs, p);
	if (err)
		return err;
	before = lb->nmv;
	r = resolve_locked(lb, name, addr, &in, &was);
	/* a soft or external link FILE has (no object counts it: *addr
	 * UINT64_MAX) goes as a name does (rm of symlinks was an ordered
	 * commit each, 1 ms) */
	soft = r == 2 && in;
	if (r == 0)
		err = ENOENT;
	else if (!soft && (r != 1 || !plain_object(lb->u.f, *addr, &nl)))
		err = -1;       /* a directory */
	else if (!soft && (*last = (int64_t)nl + delta_locked(lb, *addr) < 2) &&
		 (nl != 1 || delta_locked(lb, *addr) != 0 || !may_take_last(fs, lb->u.f, *addr)))
		err = -1;       /* a last name the batch cannot take (netCDF-4: its dimensions) */
	else if (!(c = strdup(name)))
		err = ENOMEM;
	else if ((err = grow(lb)) == 0 && (err = reserve_locked(fs, lb, "unlink", name)) == 0)
		set_locked(lb, name, UINT64_MAX, in, was, &c);
	free(c);
	return done_locked(fs, lb, err, before);
}

bool lbatch_moved(h5fs *fs, h5_file *f, uint64_t group, const char *name, uint64_t *addr)
{
	struct lbatch *lb = __atomic_load_n(&fs->lb, __ATOMIC_ACQUIRE);
	bool found = false;

	if (!lb || !__atomic_load_n(&lb->nmv, __ATOMIC_ACQUIRE))
		return false;
	pthread_mutex_lock(&lb->t.mu);
	if (lb->nmv && lb->u.f == f && lb->u.addr == group)
		found = mbatch_state_locked(lb, name, strlen(name), addr) == 1;
	pthread_mutex_unlock(&lb->t.mu);
	return found;
}

int lbatch_nlink(h5fs *fs, h5_file *f, uint64_t addr, unsigned *nlink)
{
	struct lbatch *lb = __atomic_load_n(&fs->lb, __ATOMIC_ACQUIRE);
	h5_obj_info info;
	int64_t c;
	int rc;

	/* FILE's count and the change pending read under t.mu, which a
	 * commit of the list holds from its first write to the list's
	 * clearing: read apart, a commit between them (the scheduler's
	 * timer, another request's barrier) gave the count before it and
	 * no change pending: an unlink's other name showed st_nlink 2 */
	if (lb)
		pthread_mutex_lock(&lb->t.mu);
	rc = h5_obj_info_get(&info, f, addr);
	c = rc < 0 ? 0 : (int64_t)info.nlink;
	if (c && lb && lb->nmv && lb->u.f == f)
		c += delta_locked(lb, addr);
	if (lb)
		pthread_mutex_unlock(&lb->t.mu);
	/* (a header that counts none says nothing: 0) */
	*nlink = rc < 0 || !info.nlink ? 0 : c > 0 ? (unsigned)c : 1;
	return rc < 0 ? rc : 0;
}

bool lbatch_nlink_moved(h5fs *fs, h5_file *f, uint64_t addr, uint64_t commits)
{
	struct lbatch *lb = __atomic_load_n(&fs->lb, __ATOMIC_ACQUIRE);
	bool moved;

	if (!lb)
		return false;
	if (__atomic_load_n(&lb->commits, __ATOMIC_ACQUIRE) != commits)
		return true;
	if (!__atomic_load_n(&lb->nmv, __ATOMIC_ACQUIRE))
		return false;
	pthread_mutex_lock(&lb->t.mu);
	/* (a commit that held t.mu meanwhile counted itself by now) */
	moved = lb->commits != commits || (lb->nmv && lb->u.f == f && delta_locked(lb, addr) != 0);
	pthread_mutex_unlock(&lb->t.mu);
	return moved;
}
