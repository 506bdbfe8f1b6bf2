/*
 * ll_inode.c - the inode table: nodes, names and paths, node lifetime.
 *
 * Mapping (README "How an HDF5 file is shown"):
 *   group          -> directory (0555 for a world-readable FILE)
 *   dataset        -> regular file (0444 likewise; owner-writable on a
 *                     read-write mount when it can grow or be overwritten): its raw bytes, C order,
 *                     as stored
 *   named datatype -> regular file, empty
 *   soft link      -> symlink, target rewritten relative to the link's
 *                     directory so it resolves inside the mount; an
 *                     absolute target is in its own file's namespace,
 *                     mapped to where that file's object is shown
 *                     (mount_target); one of another file that is not
 *                     shown there is followed and shown in place
 *   external link  -> the object it names, read from the other file
 *                     (engine related.c, chains followed as libhdf5 does);
 *                     when that file or object cannot be had, or lies
 *                     outside FILE's tree, the symlink "EXTFILE::/path"
 *                     (dangling) with a log line
 *   a hard (or external) link to the group it sits in, or to one of that
 *   group's ancestors on the path it is reached by
 *                  -> symlink "." / ".." / "../.." ..., so tools that walk
 *                     the tree see no directory cycle
 *
 * The tree is a function of the file alone: a directory is one node per
 * path (its node id from the (parent node, name) table, synth_ino, while
 * the kernel holds it), so whether a link leads up is decided along that
 * path's own ancestors, whatever the kernel looked up before; two nodes
 * of one group report one st_ino.
 *
 * Inode numbers: an object is identified by its object header address, so
 * ino = addr + 2 (the root group is FUSE_ROOT_ID), and every hard link to
 * one object shows the same st_ino. Objects of another file (reached by
 * external links) add that file's number (h5_file_id) << 48. Soft and
 * external links shown as symlinks have no header: they get numbers with
 * the top bit set, fixed per (parent, name) for the life of the mount.
 * FUSE node ids are st_ino for everything but directories, whose node
 * ids are such numbers too (one per path; st_ino stays the object's).
 *
 * Locking: fs->lock protects the tables only.  Engine calls (which may do
 * I/O and decompression) always run outside it; a node is built unlocked and
 * then inserted, and the loser of a race frees its copy.  Once in the table
 * a node changes only in its lookup count (under fs->lock) and, after
 * appends or a live FILE's refresh, its object's fields (under its own
 * lk, which readers of them hold shared; a directory's anchors, fpath,
 * a_mnt and a_file, never change); the kernel never sends FORGET for
 * an inode that still has requests in flight, so handlers use the node
 * pointer after dropping the lock.
 */
#include "ll.h"

#include "hash.h"

/* ---- hash tables (callers hold fs->lock) --------------------------------- */

/* Double a chained table when it is full; on allocation failure keep the
 * old one (longer chains, still correct). */
static void rehash(void ***tab, size_t *cap, size_t n, size_t next_off,
		   size_t (*bucket)(const void *e, size_t cap))
{
	size_t ncap = *cap * 2, i;
	void **nt;

	if (n < *cap)
		return;
	nt = calloc(ncap, sizeof(*nt));
	if (!nt)
		return;
	for (i = 0; i < *cap; i++) {
		void *e = (*tab)[i];

		while (e) {
			void **nextp = (void **)((char *)e + next_off);
			void *next = *nextp;
			size_t b = bucket(e, ncap);

			*nextp = nt[b];
			nt[b] = e;
			e = next;
		}
	}
	free(*tab);
	*tab = nt;
	*cap = ncap;
}

static size_t node_bucket(const void *e, size_t cap) { return hash_u64(((const struct node *)e)->ino, cap); }
static size_t synth_bucket(const void *e, size_t cap)
{
	const struct synth *s = e;

	return hash_name(s->parent, s->name, cap);
}
static size_t kind_bucket(const void *e, size_t cap) { return hash_u64(((const struct kind_ent *)e)->addr, cap); }

static struct node *node_find_locked(h5fs *fs, uint64_t ino)
{
	struct node *n = fs->nodes[hash_u64(ino, fs->nodes_cap)];

	while (n && n->ino != ino)
		n = n->next;
	return n;
}

void node_insert_locked(h5fs *fs, struct node *n)
{
	size_t b;

	rehash((void ***)&fs->nodes, &fs->nodes_cap, fs->nnodes, offsetof(struct node, next), node_bucket);
	b = hash_u64(n->ino, fs->nodes_cap);
	n->next = fs->nodes[b];
	fs->nodes[b] = n;
	fs->nnodes++;
}

static void node_remove_locked(h5fs *fs, struct node *n)
{
	struct node **pp = &fs->nodes[hash_u64(n->ino, fs->nodes_cap)];

	while (*pp && *pp != n)
		pp = &(*pp)->next;
	if (*pp) {
		*pp = n->next;
		fs->nnodes--;
	}
}

void node_free(struct node *n)
{
	if (!n)
		return;
	if (n->ds)
		h5_dataset_close(n->ds);
	xattr_cache_drop(n);
	h5_file_release_related(n->f);   /* FILE itself is not released */
	gen_release(n->gen);             /* last: it may close FILE */
	pcache_free(n->pc);
	pthread_rwlock_destroy(&n->lk);
	free(n->path);
	free(n->fpath);
	free(n->target);
	free(n);
}

/* The node for ino, or NULL. See the header comment for why the pointer
 * stays valid after the lock is dropped. */
struct node *node_get(h5fs *fs, fuse_ino_t ino)
{
	struct node *n;

	pthread_mutex_lock(&fs->lock);
	n = node_find_locked(fs, ino);
	pthread_mutex_unlock(&fs->lock);
	return n;
}

uint64_t synth_ino(h5fs *fs, uint64_t parent, const char *name)
{
	size_t b;
	struct synth *s;
	uint64_t ino = 0;

	pthread_mutex_lock(&fs->lock);
	b = hash_name(parent, name, fs->synth_cap);
	for (s = fs->synth[b]; s; s = s->next)
		if (s->parent == parent && strcmp(s->name, name) == 0) {
			ino = s->ino;
			goto out;
		}
	s = calloc(1, sizeof(*s));
	if (!s || !(s->name = strdup(name))) {
		free(s);
		goto out;
	}
	s->parent = parent;
	s->ino = H5FS_SYNTH_BIT | fs->next_synth++;
	ino = s->ino;
	rehash((void ***)&fs->synth, &fs->synth_cap, fs->nsynth, offsetof(struct synth, next), synth_bucket);
	b = hash_name(parent, name, fs->synth_cap);
	s->next = fs->synth[b];
	fs->synth[b] = s;
	fs->nsynth++;
out:
	pthread_mutex_unlock(&fs->lock);
	return ino;   /* 0 only when out of memory */
}

/* The (parent, name) number `old` given up (a live FILE's change left
 * its node stale, ll.c renew_synth): the name gets a new one, so the
 * kernel never sees one node id for two objects. 0: out of memory. */
uint64_t synth_renew(h5fs *fs, uint64_t parent, const char *name, uint64_t old)
{
	struct synth *s;
	uint64_t ino = 0;

	pthread_mutex_lock(&fs->lock);
	for (s = fs->synth[hash_name(parent, name, fs->synth_cap)]; s; s = s->next)
		if (s->parent == parent && strcmp(s->name, name) == 0) {
			if (s->ino == old)
				s->ino = H5FS_SYNTH_BIT | fs->next_synth++;
			ino = s->ino;
			break;
		}
	pthread_mutex_unlock(&fs->lock);
	return ino ? ino : synth_ino(fs, parent, name);
}

/* A directory's node id is for the kernel only (readdir and stat show
 * st_ino): when the kernel forgets the node, its entry goes too, so the
 * table holds the directories in use, not every path ever walked (a file
 * whose groups are linked many times over has very many paths). A later
 * lookup of the path gets a new number. */
static void synth_drop_locked(h5fs *fs, const struct node *n)
{
	const char *name = strrchr(n->path, '/');
	struct synth **pp;

	name = name ? name + 1 : n->path;
	pp = &fs->synth[hash_name(n->parent, name, fs->synth_cap)];
	while (*pp && (*pp)->ino != n->ino)
		pp = &(*pp)->next;
	if (*pp) {
		struct synth *s = *pp;

		*pp = s->next;
		fs->nsynth--;
		free(s->name);
		free(s);
	}
}

void kind_remember(h5fs *fs, uint64_t addr, h5_obj_kind kind)
{
	struct kind_ent *k;
	size_t b;

	pthread_mutex_lock(&fs->lock);
	if (fs->nkinds >= H5FS_KIND_MAP_MAX)
		goto out;
	for (k = fs->kinds[hash_u64(addr, fs->kinds_cap)]; k; k = k->next)
		if (k->addr == addr)
			goto out;
	k = malloc(sizeof(*k));
	if (!k)
		goto out;
	k->addr = addr;
	k->kind = kind;
	rehash((void ***)&fs->kinds, &fs->kinds_cap, fs->nkinds, offsetof(struct kind_ent, next), kind_bucket);
	b = hash_u64(addr, fs->kinds_cap);
	k->next = fs->kinds[b];
	fs->kinds[b] = k;
	fs->nkinds++;
out:
	pthread_mutex_unlock(&fs->lock);
}

/* A new generation of FILE (ll_live.c) may hold other kinds at the
 * addresses remembered. */
void kind_forget_all(h5fs *fs)
{
	pthread_mutex_lock(&fs->lock);
	for (size_t i = 0; i < fs->kinds_cap; i++) {
		struct kind_ent *k = fs->kinds[i];

		while (k) {
			struct kind_ent *next = k->next;

			free(k);
			k = next;
		}
		fs->kinds[i] = NULL;
	}
	fs->nkinds = 0;
	pthread_mutex_unlock(&fs->lock);
}

int kind_lookup(h5fs *fs, uint64_t addr, h5_obj_kind *kind)
{
	struct kind_ent *k;
	int found = 0;

	pthread_mutex_lock(&fs->lock);
	for (k = fs->kinds[hash_u64(addr, fs->kinds_cap)]; k; k = k->next)
		if (k->addr == addr) {
			*kind = k->kind;
			found = 1;
			break;
		}
	pthread_mutex_unlock(&fs->lock);
	return found;
}

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
		if ((uint64_t)cur->st.st_ino == ino)
			break;
		cur = cur->ino == FUSE_ROOT_ID ? NULL : node_find_locked(fs, cur->parent);
		depth++;
	}
	pthread_mutex_unlock(&fs->lock);
	return cur && depth < 4096 ? depth : -1;
}

/* "." for depth 0, else ".." repeated depth times. */
static char *updirs(int depth)
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

/* A link name can become a directory entry only if it is a single,
 * non-special path component the kernel accepts. */
bool name_ok(const char *name, size_t name_len)
{
	if (!name || name_len == 0 || name_len > H5FS_NAME_MAX)
		return false;
	if (strlen(name) != name_len)   /* embedded NUL */
		return false;
	if (strcmp(name, ".") == 0 || strcmp(name, "..") == 0)
		return false;
	return strchr(name, '/') == NULL;
}

char *path_join(const char *dir, const char *name)
{
	size_t dl = strlen(dir), nl = strlen(name);
	char *p = malloc(dl + nl + 2);

	if (!p)
		return NULL;
	memcpy(p, dir, dl);
	p[dl] = '/';
	memcpy(p + dl + 1, name, nl + 1);
	return p;
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

/* The symlink text for HDF5 soft link `target` stored in the group shown
 * at mount path `dir`: absolute targets are relative to the file's root,
 * relative ones to the link's group; the result is relative to dir. */
static char *symlink_text(const char *dir, const char *target)
{
	struct comps d = { 0 }, t = { 0 };
	size_t common = 0, i, len = 0;
	char *out = NULL, *p;

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
 * (ll_live.c passes the groups of a path it walks). */
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
		d->fpath = path_join(strcmp(p->fpath, "/") == 0 ? "" : p->fpath, name);
		d->a_mnt = p->a_mnt;
		d->a_file = p->a_file;
	}
	return d->fpath ? 0 : ENOMEM;
}

/* ---- nodes ----------------------------------------------------------------- */

/* Appends are possible: FILE is open read-write and the mount is not -o ro. */
bool fs_writable(const h5fs *fs)
{
	return fs->writable;   /* h5fs_new: !read_only && h5_file_writable(FILE) */
}

/* FILE's lock is held only while a write is under way (issue 33: a
 * mount that only reads, or is idle, must not keep libhdf5 - h5py, a
 * detector's own writer - out of its file). The first write takes
 * libhdf5's writer lock (flock LOCK_EX, never waiting: EBUSY with one
 * log line while another program has FILE open, libhdf5's readers hold
 * LOCK_SH); the last one gives it back once committed. While the lock was
 * not held, another program may have written FILE: the mount's view
 * (decoded metadata, an appender's rows) would then be stale and writing
 * from it could undo that program's work, so a FILE that changed since
 * this mount last held the lock (h5_file_changed_by_others: size, or
 * times and first bytes - libhdf5 opening FILE r+ and closing it moves
 * only the times) refuses writes with ESTALE (a read-write mount does not
 * reopen FILE: remount to append again). */
int fs_write_begin(h5fs *fs)
{
	int e = 0, rc;

	if (!fs_writable(fs))
		return EROFS;
	pthread_mutex_lock(&fs->wmu);
	if (fs->writers == 0) {
		rc = h5_file_lock(fs->f);
		if (rc == H5_ERR_BUSY) {
			if (!fs->busy_logged)
				h5fs_log(fs, LOG_NOTICE, "write refused (EBUSY): %s is locked by another program "
					 "(libhdf5 holds the lock while it has the file open); try again once "
					 "it closed the file", h5_file_path(fs->f));
			fs->busy_logged = true;
			e = EBUSY;
		} else if (rc < 0) {
			e = h5err_logged(fs, rc, "write lock", "", NULL, UINT64_MAX);
		} else if ((rc = h5_file_changed_by_others(fs->f)) != 0) {
			h5_file_unlock(fs->f);
			if (rc < 0) {
				e = h5err_logged(fs, rc, "write lock", "", NULL, UINT64_MAX);
				goto out;
			}
			if (!fs->stale_logged)
				h5fs_log(fs, LOG_ERR, "write refused (ESTALE): %s was changed by another program "
					 "since it was mounted; a read-write mount does not follow such "
					 "changes: unmount and mount again to write", h5_file_path(fs->f));
			fs->stale_logged = true;
			e = ESTALE;
		} else {
			fs->busy_logged = false;
		}
	}
	if (!e)
		fs->writers++;
out:
	pthread_mutex_unlock(&fs->wmu);
	return e;
}

void fs_write_end(h5fs *fs)
{
	pthread_mutex_lock(&fs->wmu);
	if (fs->writers > 0 && --fs->writers == 0)
		h5_file_unlock(fs->f);
	pthread_mutex_unlock(&fs->wmu);
}

static void stat_init_ts(h5fs *fs, struct stat *st, uint64_t ino, mode_t mode, struct timespec t)
{
	memset(st, 0, sizeof(*st));
	st->st_ino = ino;
	st->st_mode = mode;
	st->st_nlink = 1;
	st->st_uid = fs->uid;
	st->st_gid = fs->gid;
	st->st_blksize = H5FS_BLKSIZE;
	st->st_mtim = st->st_ctim = st->st_atim = t;
}

static void stat_init(h5fs *fs, struct stat *st, uint64_t ino, mode_t mode, int64_t mtime)
{
	stat_init_ts(fs, st, ino, mode, (struct timespec){ .tv_sec = (time_t)mtime });
}

/* FILE's mtime, to the nanosecond where the file has a stamp (a local
 * FILE): an object recording no time of its own shows it, and a live
 * mount's next generation moves it past a `touch`ed reference file
 * within the same second (find -newer, make). */
static struct timespec file_time(const h5_file *f)
{
	h5_file_stamp s;

	if (h5_file_stamp_get(&s, f) == 1)
		return (struct timespec){ .tv_sec = (time_t)(s.mtime_ns / 1000000000),
					  .tv_nsec = (long)(s.mtime_ns % 1000000000) };
	return (struct timespec){ .tv_sec = (time_t)h5_file_mtime(f) };
}

/* Build (unlocked) the node of the object whose header is at addr. */
int node_make_obj(struct node **out, h5fs *fs, h5_file *f, uint64_t addr, uint64_t nodeid,
			 const char *path)
{
	h5_obj_info info;
	struct node *n;
	uint64_t alloc = 0;
	struct timespec ft;
	int rc;

	*out = NULL;
	rc = h5_obj_info_get(&info, f, addr);
	if (rc < 0)
		return rc;
	n = calloc(1, sizeof(*n));
	if (!n)
		return h5_err_set(H5_ERR_NOMEM, "out of memory");
	pthread_rwlock_init(&n->lk, NULL);
	n->f = f;
	h5_file_hold_related(f);
	n->addr = addr;
	n->ino = nodeid;
	n->kind = info.kind;
	n->path = strdup(path);
	if (!n->path) {
		rc = h5_err_set(H5_ERR_NOMEM, "out of memory");
		goto out;
	}
	ft = info.has_mtime ? (struct timespec){ .tv_sec = (time_t)info.mtime } : file_time(f);
	switch (info.kind) {
	case H5_OBJ_GROUP:
		n->type = NT_DIR;
		/* st_nlink 1 = "subdirectory count unknown" (as btrfs does for
		 * find's leaf optimisation): counting would mean decoding every
		 * child header of every directory. */
		stat_init_ts(fs, &n->st, file_ino(f, addr), S_IFDIR | fs->dir_mode, ft);
		break;
	case H5_OBJ_DATASET: {
		int64_t dmt;

		n->type = NT_FILE;
		rc = h5_dataset_open(&n->ds, f, addr);
		if (rc < 0)
			goto out;
		if (h5_dataset_mtime(n->ds, &dmt) == 0)
			stat_init(fs, &n->st, file_ino(f, addr), S_IFREG | fs->file_mode, dmt);
		else
			stat_init_ts(fs, &n->st, file_ino(f, addr), S_IFREG | fs->file_mode, ft);
		n->view = h5_dataset_view(n->ds);
		n->st.st_size = (off_t)n->view->size(n->ds);
		alloc = h5_dataset_allocated(n->ds);
		/* datasets that can grow by `cat >>` are owner-writable on a
		 * writable mount (where the owner may read), also while
		 * another process holds FILE (write_busy): what is shown does
		 * not depend on who holds the lock */
		if ((fs_writable(fs) || fs->write_busy) && f == fs->f && h5_append_check(n->ds) == 0) {
			n->st.st_mode |= (fs->file_mode & S_IRUSR) >> 1;
			/* cat and cp size their writes by st_blksize: one
			 * FUSE write of the largest size (max_write) */
			n->st.st_blksize = H5FS_APPEND_BLKSIZE;
		} else if (fs_writable(fs) && f == fs->f && h5_overwrite_check(n->ds) == 0) {
			/* its bytes can be written (ll_overwrite.c) */
			n->st.st_mode |= (fs->file_mode & S_IRUSR) >> 1;
		}
		n->st.st_nlink = info.nlink ? info.nlink : 1;
		break;
	}
	default:
		/* named datatypes (and headers of no known kind): empty files */
		n->type = NT_FILE;
		stat_init_ts(fs, &n->st, file_ino(f, addr), S_IFREG | fs->file_mode, ft);
		n->st.st_nlink = info.nlink ? info.nlink : 1;
		break;
	}
	n->st.st_blocks = blocks_of(alloc);
	kind_remember(fs, file_ino(f, addr), info.kind);
out:
	if (rc < 0) {
		node_free(n);
		return rc;
	}
	*out = n;
	return 0;
}

/* A symlink node: a soft link, an external link that is not followed, or
 * (l NULL) a link up to an ancestor, `depth` levels up (ancestor_depth). */
int node_make_link(struct node **out, h5fs *fs, uint64_t ino, const char *path,
			  const char *dir, const h5_link *l, int depth)
{
	struct node *n = calloc(1, sizeof(*n));
	size_t need;

	*out = NULL;
	if (!n)
		return h5_err_set(H5_ERR_NOMEM, "out of memory");
	pthread_rwlock_init(&n->lk, NULL);
	n->addr = UINT64_MAX;
	n->ino = ino;
	n->type = NT_LINK;
	n->path = strdup(path);
	if (!l) {
		n->target = updirs(depth);
	} else if (l->type == H5_LINK_SOFT) {
		n->target = symlink_text(dir, l->target ? l->target : "");
	} else {
		const char *ef = l->ext_file ? l->ext_file : "";
		const char *ep = l->ext_path ? l->ext_path : "";

		need = strlen(ef) + strlen(ep) + 3;
		n->target = malloc(need);
		if (n->target)
			snprintf(n->target, need, "%s::%s", ef, ep);
	}
	if (!n->path || !n->target) {
		node_free(n);
		return h5_err_set(H5_ERR_NOMEM, "out of memory");
	}
	stat_init(fs, &n->st, ino, S_IFLNK | 0777, __atomic_load_n(&fs->file_mtime, __ATOMIC_RELAXED));
	n->st.st_size = (off_t)strlen(n->target);
	*out = n;
	return 0;
}

/* Insert a freshly built node, or take a reference on the one another
 * thread inserted meanwhile. Returns the node now in the table. */
struct node *node_publish(h5fs *fs, struct node *fresh)
{
	struct node *n;

	pthread_mutex_lock(&fs->lock);
	n = node_find_locked(fs, fresh->ino);
	if (!n) {
		node_insert_locked(fs, fresh);
		n = fresh;
		fresh = NULL;
	}
	n->nlookup++;
	pthread_mutex_unlock(&fs->lock);
	node_free(fresh);
	return n;
}

struct node *node_ref_existing(h5fs *fs, uint64_t ino)
{
	struct node *n;

	pthread_mutex_lock(&fs->lock);
	n = node_find_locked(fs, ino);
	if (n)
		n->nlookup++;
	pthread_mutex_unlock(&fs->lock);
	return n;
}

void node_unref(h5fs *fs, uint64_t ino, uint64_t count)
{
	struct node *n, *dead = NULL;

	pthread_mutex_lock(&fs->lock);
	n = node_find_locked(fs, ino);
	if (n) {
		n->nlookup = count < n->nlookup ? n->nlookup - count : 0;
		if (n->nlookup == 0 && ino != FUSE_ROOT_ID) {
			node_remove_locked(fs, n);
			/* a directory's number, or a dataset's shown under its
			 * (parent, name) number (ll.c show_object); a symlink
			 * keeps its number */
			if (n->type != NT_LINK && (n->ino & H5FS_SYNTH_BIT))
				synth_drop_locked(fs, n);
			if (n->busy)
				n->dead = true;   /* ll_live.c's sweep frees it */
			else
				dead = n;
		}
	}
	pthread_mutex_unlock(&fs->lock);
	node_free(dead);   /* closes the dataset outside the lock */
}
