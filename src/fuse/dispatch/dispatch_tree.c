/*
 * dispatch_tree.c - the handlers of the tree: LOOKUP, FORGET, GETATTR,
 * READLINK and directories, each a translation of ids (dispatch.c) around
 * one root operation (root.h) and one reply.
 */
#include "dispatch_int.h"

/* dh: READDIRPLUS's lookup of entry i of that listing (root.h
 * lookup_listed), else NULL */
static int entry_of(struct fuse_entry_param *fe, h5fs_mount *m, const struct target *t, fuse_ino_t parent,
		    const char *name, void *dh, size_t i)
{
	struct root_entry e;
	struct target mt;
	int err;

	memset(fe, 0, sizeof(*fe));
	if (dh && t->s->ops->lookup_listed)
		err = t->s->ops->lookup_listed(t->s->r, &e, t->local, name, dh, i);
	else
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
		err = disp_attr_out(m, &fe->attr, t);
	}
	if (err && t->s->ops->forget)
		t->s->ops->forget(t->s->r, e.ino, 1);
	return err;
}

int disp_entry_of(struct fuse_entry_param *fe, h5fs_mount *m, const struct target *t, fuse_ino_t parent,
		  const char *name)
{
	return entry_of(fe, m, t, parent, name, NULL, 0);
}

static void op_lookup_gated(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	h5fs_mount *m = fuse_req_userdata(req);
	struct fuse_entry_param fe;
	struct target t;
	int err = disp_name_long(m, "lookup", name);

	if (!err)
		err = disp_target(&t, m, parent);
	if (err) {
		fuse_reply_err(req, err);
		return;
	}
	err = disp_entry_of(&fe, m, &t, parent, name);
	disp_target_end(m, &t);
	if (err)
		fuse_reply_err(req, err);
	else
		fuse_reply_entry(req, &fe);
}

/* (its reply carries entries: counted by the notification gate,
 * kit/notify.h) */
void op_lookup(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	unsigned tok = notify_reply_begin();

	op_lookup_gated(req, parent, name);
	notify_reply_end(tok);
}

/* No request: a FORGET only gives back references, never opens a
 * member (one that was closed dropped its nodes with it). */
void disp_forget(h5fs_mount *m, uint64_t g, uint64_t n)
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

void op_forget(fuse_req_t req, fuse_ino_t ino, uint64_t nlookup)
{
	disp_forget(fuse_req_userdata(req), ino, nlookup);
	fuse_reply_none(req);
}

void op_forget_multi(fuse_req_t req, size_t count, struct fuse_forget_data *forgets)
{
	size_t i;

	for (i = 0; i < count; i++)
		disp_forget(fuse_req_userdata(req), forgets[i].ino, forgets[i].nlookup);
	fuse_reply_none(req);
}

void op_getattr(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
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
	err = disp_target(&t, m, ino);
	if (!err)
		err = t.s->ops->getattr(t.s->r, &st, &timeout, t.local);
	if (!err)
		err = disp_attr_out(m, &st, &t);
	disp_target_end(m, &t);
	if (err)
		fuse_reply_err(req, err);
	else
		fuse_reply_attr(req, &st, timeout);
}

void op_readlink(fuse_req_t req, fuse_ino_t ino)
{
	h5fs_mount *m = fuse_req_userdata(req);
	char *target_text = NULL;
	struct target t;
	int err = disp_target(&t, m, ino);

	if (!err)
		err = t.s->ops->readlink ? t.s->ops->readlink(t.s->r, &target_text, t.local) : EINVAL;
	disp_target_end(m, &t);
	if (err)
		fuse_reply_err(req, err);
	else
		fuse_reply_readlink(req, target_text);
	free(target_text);
}

void op_opendir(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	h5fs_mount *m = fuse_req_userdata(req);
	struct dhandle *h = calloc(1, sizeof(*h));
	bool keep = false;
	struct target t;
	int err = h ? disp_target(&t, m, ino) : ENOMEM;

	if (!err) {
		err = t.s->ops->opendir(t.s->r, &h->dh, &keep, t.local);
		if (!err) {
			h->s = t.s;
			h->g = ino;
			h->local = t.local;
			h->n.dir = true;
			slot_pin(m, t.s, &h->n);
		}
		disp_target_end(m, &t);
	}
	if (err) {
		free(h);
		fuse_reply_err(req, err);
		return;
	}
	fi->fh = (uint64_t)(uintptr_t)h;
	fi->keep_cache = keep;
	fi->cache_readdir = keep;
	if (fuse_reply_open(req, fi) != 0)
		handle_close(m, &h->n, NULL);   /* interrupted: no releasedir will come */
}

static void op_readdir_gated(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off, struct fuse_file_info *fi)
{
	h5fs_mount *m = fuse_req_userdata(req);
	struct dhandle *h = (struct dhandle *)(uintptr_t)fi->fh;
	char *buf;
	size_t pos = 0;
	uint64_t i;
	bool listed = false;
	int err = 0;

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
			int r = h->s->ops->readdir(h->s->r, &d, h->dh, (size_t)(i - 2));

			if (r) {
				/* (a listing made at the first readdir: its error
				 * comes before any entry of it) */
				if (r != ENOENT && !listed)
					err = r;
				break;
			}
			listed = true;
			name = d.name;
			st.st_mode = d.type;
			st.st_ino = dispatch_global(m, h->s->idx, d.ino, h->g, d.name, false);
		}
		len = fuse_add_direntry(req, buf + pos, size - pos, name, &st, (off_t)(i + 1));
		if (len > size - pos)
			break;
		pos += len;
	}
	if (err)
		fuse_reply_err(req, err);
	else
		fuse_reply_buf(req, buf, pos);
	free(buf);
}

void op_readdir(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off, struct fuse_file_info *fi)
{
	unsigned tok = notify_reply_begin();

	op_readdir_gated(req, ino, size, off, fi);
	notify_reply_end(tok);
}

/* READDIRPLUS: each entry with its lookup made here, as
 * LOOKUP would make it, so a walk (find, getfattr -R, ls -l) saves a
 * round trip per entry. An entry that does not fit gives its reference
 * back; one whose lookup fails (gone since the listing) goes without
 * attributes (node id 0: the kernel makes nothing of it). */
static void op_readdirplus_gated(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off, struct fuse_file_info *fi)
{
	h5fs_mount *m = fuse_req_userdata(req);
	struct dhandle *h = (struct dhandle *)(uintptr_t)fi->fh;
	struct target t;
	char *buf;
	size_t pos = 0;
	uint64_t i;
	bool listed = false;
	int err;

	if (!h) {
		fuse_reply_err(req, EBADF);
		return;
	}
	buf = malloc(size ? size : 1);
	/* a single FILE's one slot is always open (disp_target) */
	err = !buf ? ENOMEM : m->identity ? 0 : slot_enter(m, h->s);
	if (err) {
		free(buf);
		fuse_reply_err(req, err);
		return;
	}
	t.s = h->s;
	t.local = h->local;
	if (h->s->ops->batch_begin)
		h->s->ops->batch_begin(h->s->r);
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
			int r = h->s->ops->readdir(h->s->r, &d, h->dh, (size_t)(i - 2));

			if (r) {
				if (r != ENOENT && !listed)
					err = r;
				break;
			}
			listed = true;
			name = d.name;
			if (entry_of(&fe, m, &t, ino, name, h->dh, (size_t)(i - 2)) != 0) {
				h5_err_clear();
				memset(&fe, 0, sizeof(fe));
				fe.attr.st_mode = d.type;
				fe.attr.st_ino = dispatch_global(m, h->s->idx, d.ino, h->g, d.name, false);
			}
		}
		len = fuse_add_direntry_plus(req, buf + pos, size - pos, name, &fe, (off_t)(i + 1));
		if (len > size - pos) {
			if (fe.ino)
				disp_forget(m, fe.ino, 1);
			break;
		}
		pos += len;
	}
	if (h->s->ops->batch_end)
		h->s->ops->batch_end(h->s->r);
	disp_target_end(m, &t);
	if (err)
		fuse_reply_err(req, err);
	else
		fuse_reply_buf(req, buf, pos);
	free(buf);
}

void op_readdirplus(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off, struct fuse_file_info *fi)
{
	unsigned tok = notify_reply_begin();

	op_readdirplus_gated(req, ino, size, off, fi);
	notify_reply_end(tok);
}

/* fsync of a directory: its root's changes made durable (and an error
 * of one answered earlier, node/node.c fs_lost). syncfs(2) does not
 * reach a FUSE daemon (the kernel sends FUSE_SYNCFS to virtiofs only). */
void op_fsyncdir(fuse_req_t req, fuse_ino_t ino, int datasync, struct fuse_file_info *fi)
{
	h5fs_mount *m = fuse_req_userdata(req);
	struct dhandle *h = (struct dhandle *)(uintptr_t)fi->fh;
	struct slot *s = m->identity ? m->slots[0] : h ? h->s : NULL;
	uint64_t local = !m->identity && h ? h->local : ino;

	(void)datasync;
	fuse_reply_err(req, !s ? EBADF : s->ops->fsyncdir ? s->ops->fsyncdir(s->r, local) : 0);
}

void op_releasedir(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	h5fs_mount *m = fuse_req_userdata(req);
	struct dhandle *h = (struct dhandle *)(uintptr_t)fi->fh;

	(void)ino;
	if (h)
		handle_close(m, &h->n, NULL);
	fuse_reply_err(req, 0);
}

int disp_name_long(h5fs_mount *m, const char *op, const char *name)
{
	size_t n = strlen(name);

	if (n <= H5FS_NAME_MAX)
		return 0;
	h5fs_log_cfg(&m->cfg, LOG_NOTICE, "%s of a %zu-byte name (%.32s...): ENAMETOOLONG: names are at most %d bytes",
		     op, n, name, H5FS_NAME_MAX);
	return ENAMETOOLONG;
}
