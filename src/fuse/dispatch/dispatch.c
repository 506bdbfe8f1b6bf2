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
#include "dispatch_int.h"

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
int disp_target(struct target *t, h5fs_mount *m, uint64_t g)
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

void disp_target_end(h5fs_mount *m, struct target *t)
{
	if (t->s && !m->identity)
		slot_leave(m, t->s);
	t->s = NULL;
}

/* st_ino of a root's stat, made the mount's */
int disp_attr_out(h5fs_mount *m, struct stat *st, const struct target *t)
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
	/* conn->max_readahead starts at what the kernel offered (the mount's
	 * read_ahead_kb when it sent INIT, at mount time); the kernel keeps the
	 * smaller of this reply and the value now, which main.c raised before
	 * the session loop (startup_raise_readahead): ask for that window */
	if (conn->max_readahead < H5FS_READAHEAD_KB(m->cfg.max_read) * 1024u)
		conn->max_readahead = H5FS_READAHEAD_KB(m->cfg.max_read) * 1024u;
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
	/* File handles (name_to_handle_at, an NFS export) that open after
	 * the kernel dropped the inode: it asks LOOKUP of "." on the node id
	 * (member/export.c). A single-file mount only: a collection's
	 * numbers are resolved through its id map, which answers no "." */
	if (m->identity && (conn->capable & FUSE_CAP_EXPORT_SUPPORT))
		conn->want |= FUSE_CAP_EXPORT_SUPPORT;
	/* READDIRPLUS, adaptive (libfuse asks for both since we have the
	 * op): the kernel asks for it at a directory's first read and where
	 * lookups of its entries followed (du, ls -l, getfattr -R), so those
	 * walks make no LOOKUP round trip of their own per entry, and plain
	 * READDIR where none did (find, ls: no lookup per entry) (issue 64) */
	slots_start(m);     /* here: after fuse_daemonize's fork */
}

/* The entry of name in parent (global id; t: its slot entered, local
 * id): fe filled, one kernel reference made. Shared by LOOKUP and
 * READDIRPLUS. */
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
	.fsyncdir = op_fsyncdir,
	.open = op_open,
	.read = op_read,
	.release = op_release,
	.write = op_write,
	.flush = op_flush,
	.fsync = op_fsync,
	.fallocate = op_fallocate,
	.statfs = op_statfs,
	.listxattr = op_listxattr,
	.getxattr = op_getxattr,
	.setattr = op_setattr,
	.mknod = op_mknod,
	.mkdir = op_mkdir,
	.unlink = op_unlink,
	.rmdir = op_rmdir,
	.symlink = op_symlink,
	.rename = op_rename,
	.link = op_link,
	.create = op_create,
	.setxattr = op_setxattr,
	.removexattr = op_removexattr,
};

