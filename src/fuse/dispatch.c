/*
 * dispatch.c - the FUSE handlers over a table of roots (root.h).
 *
 * A request's node id is translated to (root slot, local id), the root's
 * operation is called, the ids in its result translated back, and the one
 * reply made here. A single-FILE mount has one slot and translates
 * nothing (global = local: st_ino stays the header address + 2). A
 * collection (root_coll.c) numbers every (slot, local id) it hands to the
 * kernel from one counter; the map is kept for the mount's life (about 64
 * bytes per object ever shown), so a number is never given to another
 * object and need not carry a generation.
 *
 * Member slots of a collection are opened on first use and closed when
 * idle (dispatch_slot.c). A member opened anew is a new epoch: its local
 * ids are not the old ones, so a global id of an older epoch is resolved
 * again by the (parent, name) it was looked up by, the path walked from
 * the member's top, which is always local FUSE_ROOT_ID. Local ids below
 * 2^48 (an object's header address + 2 in the member's own file) mean
 * the same object in every epoch and keep their global number.
 */
#include "dispatch.h"

#include <sys/statvfs.h>

/* ---- the id map (idmap.c) -------------------------------------------------- */

/* The global number of (slot, local) in the slot's current epoch, made
 * when new (parent, name: how it was reached, for resolving it again; 0
 * and NULL for numbers that are only st_ino). made: a lookup's, whose
 * node the root now holds. 0: out of memory. */
uint64_t dispatch_global(h5fs_mount *m, uint32_t slot, uint64_t local, uint64_t parent, const char *name,
			 bool made)
{
	struct gid *x;
	uint64_t g;

	if (m->identity)
		return local;
	pthread_mutex_lock(&m->mu);
	x = idmap_get(&m->ids, slot, local, m->slots[slot]->epoch, parent, name, made);
	g = x ? x->g : 0;
	pthread_mutex_unlock(&m->mu);
	return g;
}

/* For a member's kernel notifications (h5fs_set_ino_map): 0 when the
 * kernel was never told the number. */
uint64_t dispatch_ino_out(void *ud, uint64_t local)
{
	struct slot *s = ud;
	h5fs_mount *m = s->m;
	struct gid *x;
	uint64_t g;

	if (m->identity)
		return local;
	pthread_mutex_lock(&m->mu);
	x = idmap_by_local(&m->ids, s->idx, local, s->epoch);
	g = x ? x->g : 0;
	pthread_mutex_unlock(&m->mu);
	return g;
}

/* The slot of g, entered, when it is open in the epoch g was resolved in
 * (FORGET: a closed member dropped its nodes). */
struct slot *slot_if_open(h5fs_mount *m, uint64_t g, uint64_t *local)
{
	struct gid *x;
	struct slot *s = NULL;

	pthread_mutex_lock(&m->mu);
	x = idmap_by_global(&m->ids, g);
	if (x) {
		s = m->slots[x->slot];
		if (s->r && !s->opening && (x->epoch == s->epoch || x->local == FUSE_ROOT_ID)) {
			s->busy++;
			m->inflight++;
			*local = x->local;
		} else {
			s = NULL;
		}
	}
	pthread_mutex_unlock(&m->mu);
	return s;
}

/* g is a member's top: its stat as the folder root made it. */
bool slot_top_attr(h5fs_mount *m, uint64_t g, struct stat *st, double *timeout)
{
	struct gid *x;
	bool top = false;

	pthread_mutex_lock(&m->mu);
	x = idmap_by_global(&m->ids, g);
	if (x && x->local == FUSE_ROOT_ID && m->slots[x->slot]->path) {
		*st = m->slots[x->slot]->top;
		*timeout = m->slots[x->slot]->top_timeout;
		top = true;
	}
	pthread_mutex_unlock(&m->mu);
	return top;
}

/* ---- a request's target -------------------------------------------------- */

/* Resolve global g in its slot's current epoch (the slot in use): its
 * local id, or an errno. Walks up by (parent, name) for ids of an older
 * epoch; each lookup made on the way counts one kernel reference in the
 * member, which the kernel's FORGET of g gives back. */
static int resolve(uint64_t *local, h5fs_mount *m, struct slot *s, uint64_t g, int depth)
{
	struct gid *x;
	uint64_t parent, plocal, epoch;
	char *name;
	struct root_entry e;
	int err;

	pthread_mutex_lock(&m->mu);
	x = idmap_by_global(&m->ids, g);
	if (!x) {
		pthread_mutex_unlock(&m->mu);
		return ESTALE;
	}
	epoch = s->epoch;
	if (x->epoch == epoch || x->local == FUSE_ROOT_ID) {
		*local = x->local;
		pthread_mutex_unlock(&m->mu);
		return 0;
	}
	parent = x->parent;
	name = x->name ? strdup(x->name) : NULL;
	pthread_mutex_unlock(&m->mu);
	if (!name || !parent || depth > 4096) {
		free(name);
		return ESTALE;
	}
	err = resolve(&plocal, m, s, parent, depth + 1);
	if (!err)
		err = s->ops->lookup(s->r, &e, plocal, name);
	free(name);
	if (err)
		return err == ENOENT ? ESTALE : err;
	pthread_mutex_lock(&m->mu);
	idmap_rebind(&m->ids, x, e.ino, epoch);
	pthread_mutex_unlock(&m->mu);
	*local = e.ino;
	return 0;
}

/* The slot and local id of node id g, the slot held for the request
 * (target_end): 0 or an errno. */
static int target(struct target *t, h5fs_mount *m, uint64_t g)
{
	struct gid *x;
	int err;

	memset(t, 0, sizeof(*t));
	if (m->identity) {
		t->s = m->slots[0];
		t->local = g;
		return 0;
	}
	pthread_mutex_lock(&m->mu);
	x = idmap_by_global(&m->ids, g);
	t->s = x ? m->slots[x->slot] : NULL;
	if (t->s && t->s->r && !t->s->opening) {
		/* as slot_enter does: a changed member is closed here, and the
		 * request then takes the slow path (the lock was let go) */
		slot_check_changed_locked(m, t->s);
		x = idmap_by_global(&m->ids, g);
		t->s = x ? m->slots[x->slot] : NULL;
	}
	if (t->s && t->s->r && !t->s->opening && (x->epoch == t->s->epoch || x->local == FUSE_ROOT_ID)) {
		/* the common case, entered in one hold of the lock (slot_enter
		 * and resolve would take it twice more: 4 per request, with
		 * every thread of the pool on this one mutex) */
		t->s->busy++;
		m->inflight++;
		slot_touch_locked(m, t->s);
		t->local = x->local;
		pthread_mutex_unlock(&m->mu);
		return 0;
	}
	pthread_mutex_unlock(&m->mu);
	if (!t->s)
		return ESTALE;
	err = slot_enter(m, t->s);
	if (err) {
		t->s = NULL;
		return err;
	}
	err = resolve(&t->local, m, t->s, g, 0);
	if (err) {
		slot_leave(m, t->s);
		t->s = NULL;
	}
	return err;
}

static void target_end(h5fs_mount *m, struct target *t)
{
	if (t->s && !m->identity)
		slot_leave(m, t->s);
	t->s = NULL;
}

/* st_ino of a root's stat, made the mount's */
static int attr_out(h5fs_mount *m, struct stat *st, const struct target *t)
{
	uint64_t g = dispatch_global(m, t->s->idx, (uint64_t)st->st_ino, 0, NULL, false);

	if (!g)
		return ENOMEM;
	st->st_ino = (ino_t)g;
	return 0;
}

/* A read window mapped to files is answered from their descriptors:
 * libfuse splices the pages into /dev/fuse when the kernel allows it
 * (else it preads them into one buffer itself). */
void reply_extents(fuse_req_t req, const h5_extent *ext, size_t n)
{
	struct fuse_bufvec one = FUSE_BUFVEC_INIT(0), *bv = &one;
	size_t i;

	if (n > 1) {
		bv = calloc(1, sizeof(*bv) + (n - 1) * sizeof(bv->buf[0]));
		if (!bv) {
			fuse_reply_err(req, ENOMEM);
			return;
		}
	}
	bv->count = n;
	bv->idx = 0;
	bv->off = 0;
	for (i = 0; i < n; i++) {
		bv->buf[i].size = (size_t)ext[i].len;
		bv->buf[i].flags = FUSE_BUF_IS_FD | FUSE_BUF_FD_SEEK;
		bv->buf[i].mem = NULL;
		bv->buf[i].fd = ext[i].fd;
		bv->buf[i].pos = (off_t)ext[i].file_off;
	}
	/* on failure libfuse has answered with the errno (or the request was
	 * interrupted): nothing left to do */
	fuse_reply_data(req, bv, FUSE_BUF_SPLICE_MOVE);
	if (bv != &one)
		free(bv);
}

/* ---- the handlers ------------------------------------------------------------ */

static void op_init(void *userdata, struct fuse_conn_info *conn)
{
	h5fs_mount *m = userdata;

	/* libfuse derives max_pages, and so the largest read the kernel sends
	 * us, from max_write; it clamps this to its own buffer size (1 MiB on
	 * current kernels). */
	conn->max_write = 1U << 20;
	/* libfuse wants the max_read mount option (main.c) repeated here */
	if (m->cfg.max_read)
		conn->max_read = m->cfg.max_read;
	/* conn->max_readahead starts at the kernel's maximum: keep it. */
	/* Reads of plain bytes are answered by splicing FILE's pages into
	 * the reply (op_read): no copy through our memory. */
	if (conn->capable & FUSE_CAP_SPLICE_WRITE)
		conn->want |= FUSE_CAP_SPLICE_WRITE;
	if (conn->capable & FUSE_CAP_SPLICE_MOVE)
		conn->want |= FUSE_CAP_SPLICE_MOVE;
#ifdef FUSE_CAP_DIRECT_IO_ALLOW_MMAP
	/* libfuse 3.16 and kernel 6.6: descriptors read with direct_io (a
	 * read-write mount's appendable datasets, a live FILE's rewritten
	 * ones while old descriptors are open) can be mapped too (numpy.memmap);
	 * without it (Debian's libfuse 3.14) such a mapping fails with ENODEV */
	if (conn->capable & FUSE_CAP_DIRECT_IO_ALLOW_MMAP)
		conn->want |= FUSE_CAP_DIRECT_IO_ALLOW_MMAP;
#endif
	/* READDIRPLUS (libfuse asks for it, adaptively, since we have the
	 * op) in collections only: a single FILE's listing stays as it was */
	if (m->identity)
		conn->want &= ~(unsigned)(FUSE_CAP_READDIRPLUS | FUSE_CAP_READDIRPLUS_AUTO);
	slots_start(m);     /* here: after fuse_daemonize's fork */
}

/* The entry of name in parent (global id; t: its slot entered, local
 * id): fe filled, one kernel reference made. Shared by LOOKUP and
 * READDIRPLUS. */
static int entry_of(struct fuse_entry_param *fe, h5fs_mount *m, const struct target *t, fuse_ino_t parent,
		    const char *name)
{
	struct root_entry e;
	struct target mt;
	int err;

	memset(fe, 0, sizeof(*fe));
	err = t->s->ops->lookup(t->s->r, &e, t->local, name);
	if (err)
		return err;
	/* st_ino: the mount's number of what the root calls it; a folder's
	 * HDF5 file shows the folder root's own (known without opening it,
	 * so readdir gives it too) */
	fe->ino = dispatch_global(m, t->s->idx, e.ino, parent, name, true);
	fe->generation = e.generation;
	fe->attr = e.attr;
	fe->attr_timeout = fe->entry_timeout = e.timeout;
	if (!fe->ino) {
		err = ENOMEM;
	} else if (e.member) {
		/* the top of its member root, which opens at the first lookup
		 * inside it: stat answers from the folder's stat till then */
		fe->attr.st_ino = (ino_t)fe->ino;
		err = slot_member(&mt, m, e.ino, &fe->attr, e.timeout);
		if (!err && !(fe->ino = dispatch_global(m, mt.s->idx, FUSE_ROOT_ID, 0, NULL, false)))
			err = ENOMEM;
		fe->generation = 0;
		return err;
	} else if (!m->identity) {
		err = attr_out(m, &fe->attr, t);
	}
	if (err && t->s->ops->forget)
		t->s->ops->forget(t->s->r, e.ino, 1);
	return err;
}

static void op_lookup(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	h5fs_mount *m = fuse_req_userdata(req);
	struct fuse_entry_param fe;
	struct target t;
	int err = target(&t, m, parent);

	if (err) {
		fuse_reply_err(req, err);
		return;
	}
	err = entry_of(&fe, m, &t, parent, name);
	target_end(m, &t);
	if (err)
		fuse_reply_err(req, err);
	else
		fuse_reply_entry(req, &fe);
}

/* No request: a FORGET only gives back references, never opens a
 * member (one that was closed dropped its nodes with it). */
static void forget_one(h5fs_mount *m, uint64_t g, uint64_t n)
{
	struct slot *s;
	uint64_t local = g;

	if (m->identity) {
		m->slots[0]->ops->forget(m->slots[0]->r, g, n);
		return;
	}
	s = slot_if_open(m, g, &local);
	if (!s)
		return;
	s->ops->forget(s->r, local, n);
	slot_leave(m, s);
}

static void op_forget(fuse_req_t req, fuse_ino_t ino, uint64_t nlookup)
{
	forget_one(fuse_req_userdata(req), ino, nlookup);
	fuse_reply_none(req);
}

static void op_forget_multi(fuse_req_t req, size_t count, struct fuse_forget_data *forgets)
{
	size_t i;

	for (i = 0; i < count; i++)
		forget_one(fuse_req_userdata(req), forgets[i].ino, forgets[i].nlookup);
	fuse_reply_none(req);
}

static void op_getattr(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	h5fs_mount *m = fuse_req_userdata(req);
	struct stat st;
	double timeout = 0;
	struct target t;
	int err;

	(void)fi;
	/* a member's top: the folder's stat of it, without opening it */
	if (!m->identity && slot_top_attr(m, ino, &st, &timeout)) {
		fuse_reply_attr(req, &st, timeout);
		return;
	}
	err = target(&t, m, ino);
	if (!err)
		err = t.s->ops->getattr(t.s->r, &st, &timeout, t.local);
	if (!err)
		err = attr_out(m, &st, &t);
	target_end(m, &t);
	if (err)
		fuse_reply_err(req, err);
	else
		fuse_reply_attr(req, &st, timeout);
}

static void op_readlink(fuse_req_t req, fuse_ino_t ino)
{
	h5fs_mount *m = fuse_req_userdata(req);
	char *target_text = NULL;
	struct target t;
	int err = target(&t, m, ino);

	if (!err)
		err = t.s->ops->readlink ? t.s->ops->readlink(t.s->r, &target_text, t.local) : EINVAL;
	target_end(m, &t);
	if (err)
		fuse_reply_err(req, err);
	else
		fuse_reply_readlink(req, target_text);
	free(target_text);
}

/* An open directory: its root's listing, held in its slot (a member
 * with open directories is not closed). */
struct dhandle {
	struct slot *s;
	void *dh;
	uint64_t g;
	uint64_t local;         /* the directory's (the slot is pinned: same epoch) */
};

static void op_opendir(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	h5fs_mount *m = fuse_req_userdata(req);
	struct dhandle *h = calloc(1, sizeof(*h));
	bool keep = false;
	struct target t;
	int err = h ? target(&t, m, ino) : ENOMEM;

	if (!err) {
		err = t.s->ops->opendir(t.s->r, &h->dh, &keep, t.local);
		if (!err) {
			h->s = t.s;
			h->g = ino;
			h->local = t.local;
			slot_pin(m, t.s);
		}
		target_end(m, &t);
	}
	if (err) {
		free(h);
		fuse_reply_err(req, err);
		return;
	}
	fi->fh = (uint64_t)(uintptr_t)h;
	fi->keep_cache = keep;
	fi->cache_readdir = keep;
	if (fuse_reply_open(req, fi) != 0) {
		h->s->ops->releasedir(h->s->r, h->dh);   /* interrupted: no releasedir will come */
		slot_unpin(m, h->s);
		free(h);
	}
}

static void op_readdir(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off, struct fuse_file_info *fi)
{
	h5fs_mount *m = fuse_req_userdata(req);
	struct dhandle *h = (struct dhandle *)(uintptr_t)fi->fh;
	char *buf;
	size_t pos = 0;
	uint64_t i;

	if (!h) {
		fuse_reply_err(req, EBADF);
		return;
	}
	buf = malloc(size ? size : 1);
	if (!buf) {
		fuse_reply_err(req, ENOMEM);
		return;
	}
	/* offsets: 0 ".", 1 "..", 2+i entry i; each entry's d_off is the next */
	for (i = off < 0 ? 0 : (uint64_t)off;; i++) {
		struct root_dirent d;
		struct stat st;
		const char *name;
		size_t len;

		memset(&st, 0, sizeof(st));
		if (i == 0) {
			name = ".";
			st.st_ino = ino;
			st.st_mode = S_IFDIR;
		} else if (i == 1) {
			/* the parent is not tracked (a group may have several) */
			name = "..";
			st.st_ino = FUSE_ROOT_ID;
			st.st_mode = S_IFDIR;
		} else {
			if (h->s->ops->readdir(h->s->r, &d, h->dh, (size_t)(i - 2)) != 0)
				break;
			name = d.name;
			st.st_mode = d.type;
			st.st_ino = dispatch_global(m, h->s->idx, d.ino, h->g, d.name, false);
		}
		len = fuse_add_direntry(req, buf + pos, size - pos, name, &st, (off_t)(i + 1));
		if (len > size - pos)
			break;
		pos += len;
	}
	fuse_reply_buf(req, buf, pos);
	free(buf);
}

/* READDIRPLUS (collections): each entry with its lookup made here, as
 * LOOKUP would make it, so a walk (find, getfattr -R, ls -l) saves a
 * round trip per entry. An entry that does not fit gives its reference
 * back; one whose lookup fails (gone since the listing) goes without
 * attributes (node id 0: the kernel makes nothing of it). */
static void op_readdirplus(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off, struct fuse_file_info *fi)
{
	h5fs_mount *m = fuse_req_userdata(req);
	struct dhandle *h = (struct dhandle *)(uintptr_t)fi->fh;
	struct target t;
	char *buf;
	size_t pos = 0;
	uint64_t i;
	int err;

	if (!h) {
		fuse_reply_err(req, EBADF);
		return;
	}
	buf = malloc(size ? size : 1);
	err = buf ? slot_enter(m, h->s) : ENOMEM;
	if (err) {
		free(buf);
		fuse_reply_err(req, err);
		return;
	}
	t.s = h->s;
	t.local = h->local;
	for (i = off < 0 ? 0 : (uint64_t)off;; i++) {
		struct fuse_entry_param fe;
		struct root_dirent d;
		const char *name;
		size_t len;

		memset(&fe, 0, sizeof(fe));
		if (i < 2) {
			/* "." and "..": no lookup (the kernel takes none for them) */
			name = i == 0 ? "." : "..";
			fe.attr.st_ino = i == 0 ? ino : FUSE_ROOT_ID;
			fe.attr.st_mode = S_IFDIR;
		} else {
			if (h->s->ops->readdir(h->s->r, &d, h->dh, (size_t)(i - 2)) != 0)
				break;
			name = d.name;
			if (entry_of(&fe, m, &t, ino, name) != 0) {
				h5_err_clear();
				memset(&fe, 0, sizeof(fe));
				fe.attr.st_mode = d.type;
				fe.attr.st_ino = dispatch_global(m, h->s->idx, d.ino, h->g, d.name, false);
			}
		}
		len = fuse_add_direntry_plus(req, buf + pos, size - pos, name, &fe, (off_t)(i + 1));
		if (len > size - pos) {
			if (fe.ino)
				forget_one(m, fe.ino, 1);
			break;
		}
		pos += len;
	}
	target_end(m, &t);
	fuse_reply_buf(req, buf, pos);
	free(buf);
}

static void op_releasedir(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	h5fs_mount *m = fuse_req_userdata(req);
	struct dhandle *h = (struct dhandle *)(uintptr_t)fi->fh;

	(void)ino;
	if (h) {
		h->s->ops->releasedir(h->s->r, h->dh);
		slot_unpin(m, h->s);
	}
	free(h);
	fuse_reply_err(req, 0);
}

/* An open file: the root's handle (fi->fh as the root set it) and the
 * slot it is held in. */
struct fhandle {
	struct slot *s;
	uint64_t fh;
	uint64_t local;
};

static void fi_root(struct fuse_file_info *rfi, const struct fuse_file_info *fi, const struct fhandle *h)
{
	*rfi = *fi;
	rfi->fh = h->fh;
}

static void op_open(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	h5fs_mount *m = fuse_req_userdata(req);
	struct fuse_file_info rfi = *fi;
	struct fhandle *h;
	struct target t;
	int err;

	if (m->identity) {
		/* one root: its handle is the request's, as before */
		err = m->slots[0]->ops->open(m->slots[0]->r, fi, ino);
		if (err)
			fuse_reply_err(req, err);
		else if (fuse_reply_open(req, fi) != 0)
			m->slots[0]->ops->release(m->slots[0]->r, ino, fi);   /* interrupted */
		return;
	}
	h = calloc(1, sizeof(*h));
	err = h ? target(&t, m, ino) : ENOMEM;
	if (!err) {
		rfi.fh = 0;
		err = t.s->ops->open(t.s->r, &rfi, t.local);
		if (!err) {
			h->s = t.s;
			h->fh = rfi.fh;
			h->local = t.local;
			slot_pin(m, t.s);
		}
		target_end(m, &t);
	}
	if (err) {
		free(h);
		fuse_reply_err(req, err);
		return;
	}
	fi->direct_io = rfi.direct_io;
	fi->keep_cache = rfi.keep_cache;
	fi->fh = (uint64_t)(uintptr_t)h;
	if (fuse_reply_open(req, fi) != 0) {
		rfi.fh = h->fh;
		h->s->ops->release(h->s->r, h->local, &rfi);    /* interrupted */
		slot_unpin(m, h->s);
		free(h);
	}
}

/* The slot, local id and root's file info of an open file: every root
 * op on an open handle goes through here. */
static struct slot *handle_of(h5fs_mount *m, uint64_t *local, struct fuse_file_info *rfi, uint64_t ino,
			      const struct fuse_file_info *fi)
{
	struct fhandle *h = (struct fhandle *)(uintptr_t)fi->fh;

	*rfi = *fi;
	*local = ino;
	if (m->identity)
		return m->slots[0];
	if (!h)
		return NULL;
	fi_root(rfi, fi, h);
	*local = h->local;
	return h->s;
}

static void op_read(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off, struct fuse_file_info *fi)
{
	h5fs_mount *m = fuse_req_userdata(req);
	struct fuse_file_info rfi;
	struct root_read a;
	uint64_t local;
	struct slot *s = handle_of(m, &local, &rfi, ino, fi);
	int err;

	memset(&a, 0, sizeof(a));
	if (!s) {
		fuse_reply_err(req, EBADF);
		return;
	}
	a.tid = fuse_req_ctx(req)->pid;
	err = s->ops->read(s->r, &a, local, size, off, &rfi);
	if (err)
		fuse_reply_err(req, err);
	else if (a.next)
		reply_extents(req, a.ext, a.next);
	else if (a.niov)
		fuse_reply_iov(req, a.iov, a.niov);
	else
		fuse_reply_buf(req, (const char *)a.buf, a.len);
	if (s->ops->read_done)
		s->ops->read_done(s->r, &a);
}

static void op_write(fuse_req_t req, fuse_ino_t ino, const char *buf, size_t size, off_t off,
		     struct fuse_file_info *fi)
{
	h5fs_mount *m = fuse_req_userdata(req);
	struct fuse_file_info rfi;
	uint64_t local;
	struct slot *s = handle_of(m, &local, &rfi, ino, fi);

	if (!s)
		fuse_reply_err(req, EBADF);
	else if (!s->ops->write)
		fuse_reply_err(req, EROFS);
	else
		s->ops->write(s->r, req, local, buf, size, off, &rfi);
}

static void op_flush(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	h5fs_mount *m = fuse_req_userdata(req);
	struct fuse_file_info rfi;
	uint64_t local;
	struct slot *s = handle_of(m, &local, &rfi, ino, fi);

	fuse_reply_err(req, !s ? EBADF : s->ops->flush ? s->ops->flush(s->r, local, &rfi) : 0);
}

static void op_fsync(fuse_req_t req, fuse_ino_t ino, int datasync, struct fuse_file_info *fi)
{
	h5fs_mount *m = fuse_req_userdata(req);
	struct fuse_file_info rfi;
	uint64_t local;
	struct slot *s = handle_of(m, &local, &rfi, ino, fi);

	(void)datasync;
	fuse_reply_err(req, !s ? EBADF : s->ops->fsync ? s->ops->fsync(s->r, local, &rfi) : 0);
}

static void op_release(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	h5fs_mount *m = fuse_req_userdata(req);
	struct fhandle *h = (struct fhandle *)(uintptr_t)fi->fh;
	struct fuse_file_info rfi;
	uint64_t local;
	struct slot *s = handle_of(m, &local, &rfi, ino, fi);

	if (s)
		s->ops->release(s->r, local, &rfi);
	if (s && !m->identity) {
		slot_unpin(m, s);
		free(h);
	}
	fuse_reply_err(req, 0);
}

static void op_xattr(fuse_req_t req, fuse_ino_t ino, const char *name, size_t size)
{
	h5fs_mount *m = fuse_req_userdata(req);
	char *buf = NULL;
	size_t len = 0;
	struct target t;
	int err = target(&t, m, ino);

	if (!err && size && !(buf = malloc(size)))
		err = ENOMEM;
	if (!err && name)
		err = t.s->ops->getxattr ? t.s->ops->getxattr(t.s->r, buf, size, &len, t.local, name) : ENODATA;
	else if (!err)
		err = t.s->ops->listxattr ? t.s->ops->listxattr(t.s->r, buf, size, &len, t.local) : 0;
	target_end(m, &t);
	if (err)
		fuse_reply_err(req, err);
	else if (size == 0)
		fuse_reply_xattr(req, len);
	else if (len > size)
		fuse_reply_err(req, ERANGE);
	else
		fuse_reply_buf(req, buf, len);
	free(buf);
}

static void op_listxattr(fuse_req_t req, fuse_ino_t ino, size_t size)
{
	op_xattr(req, ino, NULL, size);
}

static void op_getxattr(fuse_req_t req, fuse_ino_t ino, const char *name, size_t size)
{
	op_xattr(req, ino, name, size);
}

static void op_statfs(fuse_req_t req, fuse_ino_t ino)
{
	h5fs_mount *m = fuse_req_userdata(req);
	struct statvfs sv;
	uint64_t bytes = 0, objects = 0;

	(void)ino;
	slots_usage(m, &bytes, &objects);
	memset(&sv, 0, sizeof(sv));
	sv.f_bsize = H5FS_BLKSIZE;
	sv.f_frsize = 512;
	sv.f_blocks = (fsblkcnt_t)((bytes + 511) / 512);
	sv.f_files = (fsfilcnt_t)objects;
	sv.f_namemax = H5FS_NAME_MAX;
	sv.f_flag = ST_RDONLY;
	fuse_reply_statfs(req, &sv);
}

static void op_setattr(fuse_req_t req, fuse_ino_t ino, struct stat *attr, int to_set, struct fuse_file_info *fi)
{
	h5fs_mount *m = fuse_req_userdata(req);
	struct target t;
	bool w = false;

	(void)attr; (void)fi;
	/* datasets only grow by appending: truncate is not permitted */
	if ((to_set & FUSE_SET_ATTR_SIZE) && target(&t, m, ino) == 0) {
		w = t.s->ops->writable && t.s->ops->writable(t.s->r);
		target_end(m, &t);
	}
	fuse_reply_err(req, w ? EPERM : EROFS);
}

const struct fuse_lowlevel_ops h5fs_ll_ops = {
	.init = op_init,
	.lookup = op_lookup,
	.forget = op_forget,
	.forget_multi = op_forget_multi,
	.getattr = op_getattr,
	.readlink = op_readlink,
	.opendir = op_opendir,
	.readdir = op_readdir,
	.readdirplus = op_readdirplus,
	.releasedir = op_releasedir,
	.open = op_open,
	.read = op_read,
	.release = op_release,
	.write = op_write,
	.flush = op_flush,
	.fsync = op_fsync,
	.statfs = op_statfs,
	.listxattr = op_listxattr,
	.getxattr = op_getxattr,
	.setattr = op_setattr,
	.mknod = op_mknod,
	.mkdir = op_mkdir,
	.unlink = op_unlink,
	.rmdir = op_unlink,
	.symlink = op_symlink,
	.rename = op_rename,
	.link = op_link,
	.create = op_create,
	.setxattr = op_setxattr,
	.removexattr = op_removexattr,
};
