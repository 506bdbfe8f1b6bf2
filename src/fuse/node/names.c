/*
 * names.c - names and paths of the single-file mount: inode numbers of
 * objects, what a soft or external link is shown as (link_place,
 * link_shown, mount_target), and a directory's anchors in another file.
 * The mapping itself is described in node.c's header comment.
 */
#include "node.h"

/* ---- names and paths ------------------------------------------------------ */

/* st_ino of the object whose header is at addr of FILE's generation f:
 * f's own root, not the mount's current one (a live refresh switches
 * that while lookups in an older generation still run). */
static uint64_t obj_ino(const h5_file *f, uint64_t addr)
{
	return addr == h5_file_root(f) ? FUSE_ROOT_ID : addr + 2;
}

/* st_ino of the object at addr in file f (FILE or a related file). */
uint64_t file_ino(const h5_file *f, uint64_t addr)
{
	uint32_t id = h5_file_id(f);

	return id == 0 ? obj_ino(f, addr) : ((uint64_t)id << 48) | ((addr + 2) & (((uint64_t)1 << 48) - 1));
}

/* The FUSE node id of a dataset or named datatype at addr of f: its
 * st_ino, except that FILE's root group object, were it one, would not
 * answer FUSE_ROOT_ID (directories have node ids per path, do_lookup). */
uint64_t file_nodeid(const h5fs *fs, h5_file *f, uint64_t addr)
{
	return h5_file_id(f) == 0 ? addr + 2 : file_ino(f, addr);
}

/* How many levels above dir (0: dir itself) the directory whose st_ino is
 * ino lies, along dir's path, or -1: a link to it from dir would be a
 * directory cycle, which the kernel refuses (ELOOP). */
int ancestor_depth(h5fs *fs, const struct node *dir, uint64_t ino)
{
	const struct node *cur = dir;
	int depth = 0;

	pthread_mutex_lock(&fs->lock);
	while (cur && depth < 4096) {
		if ((uint64_t)__atomic_load_n(&cur->st.st_ino, __ATOMIC_ACQUIRE) == ino)
			break;
		cur = cur->ino == FUSE_ROOT_ID ? NULL : node_find_locked(fs, cur->parent);
		depth++;
	}
	pthread_mutex_unlock(&fs->lock);
	return cur && depth < 4096 ? depth : -1;
}

int ancestor_chain(h5fs *fs, const struct node *dir, uint64_t *inos, int max)
{
	const struct node *cur = dir;
	int n = 0;

	pthread_mutex_lock(&fs->lock);
	while (cur && n < max) {
		inos[n++] = (uint64_t)__atomic_load_n(&cur->st.st_ino, __ATOMIC_ACQUIRE);
		cur = cur->ino == FUSE_ROOT_ID ? NULL : node_find_locked(fs, cur->parent);
	}
	pthread_mutex_unlock(&fs->lock);
	return cur ? -1 : n;
}

/* "." for depth 0, else ".." repeated depth times. */
char *updirs(int depth)
{
	char *t = malloc(depth ? (size_t)depth * 3 : 2);

	if (!t)
		return NULL;
	if (depth == 0)
		return strcpy(t, ".");
	for (int i = 0; i < depth; i++)
		memcpy(t + 3 * i, i + 1 < depth ? "../" : "..\0", 3);
	return t;
}

struct comps {
	size_t n, cap;
	const char **s;
	size_t *len;
};

static int comps_push(struct comps *c, const char *s, size_t len)
{
	if (c->n == c->cap) {
		size_t ncap = c->cap ? c->cap * 2 : 16;
		const char **ns = realloc(c->s, ncap * sizeof(*ns));
		size_t *nl;

		if (!ns)
			return -1;
		c->s = ns;
		nl = realloc(c->len, ncap * sizeof(*nl));
		if (!nl)
			return -1;
		c->len = nl;
		c->cap = ncap;
	}
	c->s[c->n] = s;
	c->len[c->n] = len;
	c->n++;
	return 0;
}

/* Split p on '/', resolving "." and ".." lexically; ".." at the top is
 * dropped, so the result can never climb above the mount root. */
static int comps_add_path(struct comps *c, const char *p)
{
	while (*p) {
		const char *e = strchr(p, '/');
		size_t len = e ? (size_t)(e - p) : strlen(p);

		if (len == 0 || (len == 1 && p[0] == '.')) {
			/* empty or "." */
		} else if (len == 2 && p[0] == '.' && p[1] == '.') {
			if (c->n)
				c->n--;
		} else if (comps_push(c, p, len) < 0) {
			return -1;
		}
		p += len;
		if (*p == '/')
			p++;
	}
	return 0;
}

bool path_has_dotdot(const char *t)
{
	for (;;) {
		size_t n = strcspn(t, "/");

		if (n == 2 && t[0] == '.' && t[1] == '.')
			return true;
		if (!t[n])
			return false;
		t += n + 1;
	}
}

/* The symlink text for HDF5 soft link `target` stored in the group shown
 * at mount path `dir`: absolute targets are relative to the file's root,
 * relative ones to the link's group; the result is relative to dir. A
 * relative value without ".." means the same to the kernel from dir as
 * to libhdf5 from the group: it is the text, as written (ln -s ./a/./b
 * reads back ./a/./b: member/link.c stores it so). */
char *symlink_text(const char *dir, const char *target)
{
	struct comps d = { 0 }, t = { 0 };
	size_t common = 0, i, len = 0;
	char *out = NULL, *p;

	if (target[0] && target[0] != '/' && !path_has_dotdot(target))
		return strdup(target);
	if (comps_add_path(&d, dir) < 0)
		goto out;
	if (target[0] != '/' && comps_add_path(&t, dir) < 0)
		goto out;
	if (comps_add_path(&t, target) < 0)
		goto out;
	while (common < d.n && common < t.n && d.len[common] == t.len[common] &&
	       memcmp(d.s[common], t.s[common], d.len[common]) == 0)
		common++;
	for (i = common; i < d.n; i++)
		len += 3;
	for (i = common; i < t.n; i++)
		len += t.len[i] + 1;
	out = malloc(len + 2);
	if (!out)
		goto out;
	p = out;
	for (i = common; i < d.n; i++) {
		memcpy(p, "../", 3);
		p += 3;
	}
	for (i = common; i < t.n; i++) {
		memcpy(p, t.s[i], t.len[i]);
		p += t.len[i];
		*p++ = '/';
	}
	if (p == out)
		*p++ = '.';        /* the link points at its own directory */
	else
		p--;               /* drop the trailing '/' */
	*p = '\0';
out:
	free(d.s);
	free(d.len);
	free(t.s);
	free(t.len);
	return out;
}

unsigned path_ncomps(const char *p)
{
	struct comps c = { 0 };
	unsigned n = comps_add_path(&c, p) < 0 ? 0 : (unsigned)c.n;

	free(c.s);
	free(c.len);
	return n;
}

/* The absolute mount path ("/x/y", "/" for the root) at which the object
 * at absolute path `target` of dir's file is shown, or NULL when it is not
 * shown where that file is (or out of memory). FILE's root is the mount's;
 * another file is shown from its anchor down (struct node, fpath). */
char *mount_target(const struct node *dir, const char *target)
{
	struct comps t = { 0 }, fp = { 0 }, mp = { 0 };
	char *out = NULL, *q;
	size_t i, len = 2;

	if (!dir->fpath)
		return strdup(target);
	if (comps_add_path(&t, target) < 0 || comps_add_path(&fp, dir->fpath) < 0 ||
	    comps_add_path(&mp, dir->path) < 0 || t.n < dir->a_file || fp.n < dir->a_file || mp.n < dir->a_mnt)
		goto out;
	for (i = 0; i < dir->a_file; i++)
		if (t.len[i] != fp.len[i] || memcmp(t.s[i], fp.s[i], t.len[i]) != 0)
			goto out;
	for (i = 0; i < dir->a_mnt; i++)
		len += mp.len[i] + 1;
	for (i = dir->a_file; i < t.n; i++)
		len += t.len[i] + 1;
	out = malloc(len);
	if (!out)
		goto out;
	q = out;
	for (i = 0; i < dir->a_mnt; i++) {
		*q++ = '/';
		memcpy(q, mp.s[i], mp.len[i]);
		q += mp.len[i];
	}
	for (i = dir->a_file; i < t.n; i++) {
		*q++ = '/';
		memcpy(q, t.s[i], t.len[i]);
		q += t.len[i];
	}
	if (q == out)
		*q++ = '/';
	*q = '\0';
out:
	free(t.s);
	free(t.len);
	free(fp.s);
	free(fp.len);
	free(mp.s);
	free(mp.len);
	return out;
}

/* Where link l of directory p (whose file, in the generation read, is pf)
 * leads when it is shown in place: an external link (chains followed,
 * engine h5_link_follow), or an absolute soft link of another file whose
 * target is not shown where that file is (mount_target). 0 with *tf (a
 * reference held), *taddr and *fpath (the path in *tf, malloc'd); 1 for a
 * soft link shown as a symlink that resolves in the mount; or a negative
 * h5_err whose message says why it stays a symlink (no such file or
 * object, outside FILE's tree, a loop). p: only its anchors and path
 * (live/live.c passes the groups of a path it walks). */
int link_place(h5_file **tf, uint64_t *taddr, char **fpath, const struct node *p, h5_file *pf, const h5_link *l)
{
	*tf = NULL;
	*fpath = NULL;
	if (l->type == H5_LINK_SOFT) {
		char *m;

		if (!p->fpath || !l->target || l->target[0] != '/')
			return 1;
		m = mount_target(p, l->target);
		if (m) {
			free(m);
			return 1;
		}
	}
	return h5_link_follow(tf, taddr, fpath, pf, l);
}

/* The link a name of directory p (file pf) shows as a symlink, given
 * link_place's answer rc: *shown borrows l's strings and *mtarget (to
 * free). 0, or ENOMEM. */
int link_shown(h5_link *shown, char **mtarget, const struct node *p, h5_file *pf, const h5_link *l, int rc)
{
	*shown = *l;
	*mtarget = NULL;
	if (l->type == H5_LINK_SOFT && rc == 1 && p->fpath && l->target && l->target[0] == '/') {
		/* in its own file's namespace, where that file is shown */
		shown->target = *mtarget = mount_target(p, l->target);
		if (!*mtarget)
			return ENOMEM;
	} else if (l->type == H5_LINK_SOFT && rc < 0) {
		/* dangling in another file: say which */
		shown->type = H5_LINK_EXTERNAL;
		shown->ext_file = (char *)h5_file_path(pf);
		shown->ext_path = l->target;
	}
	return 0;
}

/* The anchors of group d of file tf, shown as `name` (mount path `path`)
 * in directory p, in a generation whose FILE is top: a group of another
 * file is shown from where that file is (a followed link's target, fpath,
 * is a new anchor; a hard link keeps p's). 0, or ENOMEM. */
int dir_anchor(struct node *d, h5_file *top, const struct node *p, h5_file *tf, const char *name, const char *path,
	       const char *fpath)
{
	if (tf == top || (!fpath && !p->fpath))
		return 0;
	if (fpath) {
		d->fpath = strdup(fpath);
		d->a_mnt = path_ncomps(path);
		d->a_file = path_ncomps(fpath);
	} else {
		d->fpath = h5_path_join(p->fpath, name);
		d->a_mnt = p->a_mnt;
		d->a_file = p->a_file;
	}
	return d->fpath ? 0 : ENOMEM;
}
