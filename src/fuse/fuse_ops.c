/*
 * fuse_ops.c - FUSE low-level operations on top of libh5core.
 *
 * Mapping (README "How an HDF5 file is shown"):
 *   group          -> directory (0555 for a world-readable FILE)
 *   dataset        -> regular file (0444 likewise): its raw bytes, C order,
 *                     as stored
 *   named datatype -> regular file, empty
 *   soft link      -> symlink, target rewritten relative to the link's
 *                     directory so it resolves inside the mount
 *   external link  -> the object it names, read from the other file
 *                     (engine related.c); when that file or object cannot
 *                     be had, or lies outside FILE's tree, the symlink
 *                     "EXTFILE::/path" (dangling) with a log line
 *   a hard (or external) link to the group it sits in, or to one of that
 *                  -> symlink "." / ".." / "../.." ..., so tools that walk
 *                     group's ancestors the tree see no directory cycle
 *
 * Inode numbers: an object is identified by its object header address, so
 * ino = addr + 2 (the root group is FUSE_ROOT_ID), and every hard link to
 * one object shows the same st_ino. Objects of another file (reached by
 * external links) add that file's number (h5_file_id) << 48. Soft and
 * external links shown as symlinks have no header: they get numbers with
 * the top bit set, fixed per (parent, name) for the life of the mount.
 *
 * Locking: fs->lock protects the tables only.  Engine calls (which may do
 * I/O and decompression) always run outside it; a node is built unlocked and
 * then inserted, and the loser of a race frees its copy.  A node is immutable
 * once in the table except for its lookup count, and the kernel never sends
 * FORGET for an inode that still has requests in flight, so handlers use the
 * node pointer after dropping the lock.
 */
#ifdef HAVE_CONFIG_H
#include <config.h>
#endif

#include "fuse_ops.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <syslog.h>
#include <unistd.h>

/* Nothing below the mount changes while it is mounted (the engine opens
 * FILE read-only), so the kernel may cache names and attributes for long. */
#define H5FS_TIMEOUT 3600.0
#define H5FS_SYNTH_BIT ((uint64_t)1 << 63)
#define H5FS_NAME_MAX 255
/* The kind map only speeds up readdir; stop growing it on huge files. */
#define H5FS_KIND_MAP_MAX ((size_t)1 << 22)
#define H5FS_BLKSIZE 131072
#define H5FS_APPEND_BLKSIZE (1 << 20)  /* = max_write (op_init) */

enum node_type { NT_DIR, NT_FILE, NT_LINK };

struct node {
	struct node *next;      /* hash chain */
	uint64_t ino;
	uint64_t nlookup;
	uint64_t addr;          /* object header address; UINT64_MAX for links */
	h5_file *f;             /* the file of the object: FILE, or one reached by
				 * an external link (a reference held, node_free) */
	uint64_t parent;        /* directories: the parent of the last lookup */
	h5_obj_kind kind;
	enum node_type type;
	char *path;             /* path of the first lookup ("" = root): logs, symlinks */
	char *target;           /* NT_LINK: readlink text */
	h5_dataset *ds;         /* datasets: opened once, closed when forgotten */
	struct wqueue *wq;      /* the write order of its write handles (under fs->lock) */
	struct stat st;
};

/* (parent ino, name) -> synthetic ino, kept for the whole mount so a
 * symlink keeps its number across FORGET and shows it in readdir too. */
struct synth {
	struct synth *next;
	uint64_t parent;
	char *name;
	uint64_t ino;
};

/* object header address -> h5_obj_kind, for readdir's d_type. */
struct kind_ent {
	struct kind_ent *next;
	uint64_t addr;
	h5_obj_kind kind;
};

/* A node of a circular list with a sentinel (struct h5fs: open handles). */
struct hlink {
	struct hlink *prev, *next;
};

struct h5fs {
	h5_file *f;
	h5fs_config cfg;
	uid_t uid;
	gid_t gid;
	mode_t file_mode;       /* permission bits of datasets and named datatypes */
	mode_t dir_mode;        /* permission bits of groups */
	uint64_t root_addr;
	int64_t file_mtime;
	uint64_t file_size;
	pthread_mutex_t lock;
	struct node **nodes;
	size_t nodes_cap, nnodes;
	struct synth **synth;
	size_t synth_cap, nsynth;
	uint64_t next_synth;
	struct kind_ent **kinds;
	size_t kinds_cap, nkinds;
	/* appends replace a node's ds and st: readers of either hold it shared */
	pthread_rwlock_t ds_lock;
	/* Open directory snapshots and write handles (under lock): when FILE
	 * is unmounted while some are open, the kernel drops their pending
	 * RELEASE requests, so h5fs_free() frees what is left. */
	struct hlink open_dirs, open_wfiles;
	struct fuse_session *se;        /* for notify_inval_inode (h5fs_set_session) */
};

/* ---- errors and logging ------------------------------------------------- */

int h5fs_errno(int h5err)
{
	switch (h5err) {
	case H5_OK: return 0;
	case H5_ERR_NOMEM: return ENOMEM;
	case H5_ERR_NOTFOUND: return ENOENT;
	case H5_ERR_RANGE: return ERANGE;
	case H5_ERR_INVAL: return EINVAL;
	case H5_ERR_PERM: return EPERM;
	case H5_ERR_ROFS: return EROFS;
	case H5_ERR_BUSY: return EBUSY;
	case H5_ERR_NOSPC: return ENOSPC;
	/* Corruption, checksum failures, cycles, limits and features the engine
	 * cannot decode (e.g. a filter not compiled in) all mean "these bytes
	 * cannot be produced": EIO, with the reason in the log. */
	case H5_ERR_IO:
	case H5_ERR_FORMAT:
	case H5_ERR_CHECKSUM:
	case H5_ERR_UNSUPPORTED:
	case H5_ERR_NOTHDF5:
	case H5_ERR_LOOP:
	case H5_ERR_LIMIT:
	default:
		return EIO;
	}
}

static void fs_vlog(const h5fs *fs, int prio, const char *fmt, va_list ap)
{
	if (prio >= LOG_DEBUG ? !fs->cfg.debug : prio >= LOG_INFO && !(fs->cfg.verbose || fs->cfg.debug))
		return;
	if (fs->cfg.use_syslog) {
		vsyslog(prio, fmt, ap);
	} else {
		char line[1024];
		int n;

		/* one write per line, so lines of concurrent threads never mix */
		memcpy(line, "h5fs: ", 6);
		n = vsnprintf(line + 6, sizeof(line) - 7, fmt, ap);
		if (n < 0)
			return;
		n = n > (int)sizeof(line) - 8 ? (int)sizeof(line) - 8 : n;
		line[6 + n] = '\n';
		if (write(STDERR_FILENO, line, (size_t)n + 7) < 0) {
			/* nowhere left to report it */
		}
	}
}

void h5fs_log(const h5fs *fs, int prio, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	fs_vlog(fs, prio, fmt, ap);
	va_end(ap);
}

static void fs_log(const h5fs *fs, int prio, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static void fs_log(const h5fs *fs, int prio, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	fs_vlog(fs, prio, fmt, ap);
	va_end(ap);
}

static const char *show_path(const char *p)
{
	return p && *p ? p : "/";
}

/* Reply with the errno for an engine error; every EIO is logged, once, with
 * the object (mount path, and its object header address when known: addr
 * UINT64_MAX if not) and the engine's message (read in the thread that
 * failed). */
static void reply_h5err_obj(h5fs *fs, fuse_req_t req, int rc, const char *op, const char *path,
			    const char *name, uint64_t addr)
{
	int e = h5fs_errno(rc);
	char where[48] = "";
	const char *dir = name ? (path ? path : "") : show_path(path);   /* "/x", not "//x" */

	if (addr != UINT64_MAX)
		snprintf(where, sizeof(where), " (object header 0x%llx)", (unsigned long long)addr);
	if (e == EIO)
		fs_log(fs, LOG_ERR, "%s %s%s%s%s: EIO: %s", op, dir, name ? "/" : "",
		       name ? name : "", where, h5_err_msg());
	else
		fs_log(fs, LOG_DEBUG, "%s %s%s%s%s: %s (%s)", op, dir, name ? "/" : "",
		       name ? name : "", where, strerror(e), h5_err_msg());
	fuse_reply_err(req, e);
}

static void reply_h5err(h5fs *fs, fuse_req_t req, int rc, const char *op, const char *path,
			const char *name)
{
	reply_h5err_obj(fs, req, rc, op, path, name, UINT64_MAX);
}

/* ---- hash tables (callers hold fs->lock) --------------------------------- */

static size_t hash_u64(uint64_t v, size_t cap)
{
	v ^= v >> 33;
	v *= 0xff51afd7ed558ccdULL;
	v ^= v >> 33;
	return (size_t)(v & (cap - 1));
}

static size_t hash_name(uint64_t parent, const char *name, size_t cap)
{
	uint64_t h = 1469598103934665603ULL ^ parent;

	for (; *name; name++)
		h = (h ^ (uint8_t)*name) * 1099511628211ULL;
	return hash_u64(h, cap);
}

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

static void node_insert_locked(h5fs *fs, struct node *n)
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

static void node_free(struct node *n)
{
	if (!n)
		return;
	if (n->ds)
		h5_dataset_close(n->ds);
	h5_file_release_related(n->f);   /* FILE itself is not released */
	free(n->path);
	free(n->target);
	free(n);
}

/* The node for ino, or NULL. See the header comment for why the pointer
 * stays valid after the lock is dropped. */
static struct node *node_get(h5fs *fs, fuse_ino_t ino)
{
	struct node *n;

	pthread_mutex_lock(&fs->lock);
	n = node_find_locked(fs, ino);
	pthread_mutex_unlock(&fs->lock);
	return n;
}

static uint64_t synth_ino(h5fs *fs, uint64_t parent, const char *name)
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

static void kind_remember(h5fs *fs, uint64_t addr, h5_obj_kind kind)
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

static int kind_lookup(h5fs *fs, uint64_t addr, h5_obj_kind *kind)
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

/* st_ino of the object whose header is at addr. */
static uint64_t obj_ino(const h5fs *fs, uint64_t addr)
{
	return addr == fs->root_addr ? FUSE_ROOT_ID : addr + 2;
}

/* st_ino of the object at addr in file f (FILE or a related file). */
static uint64_t file_ino(const h5fs *fs, h5_file *f, uint64_t addr)
{
	uint32_t id = h5_file_id(f);

	return id == 0 ? obj_ino(fs, addr) : ((uint64_t)id << 48) | ((addr + 2) & (((uint64_t)1 << 48) - 1));
}

/* The FUSE node id for a hard link to addr. The kernel refuses a lookup
 * that answers FUSE_ROOT_ID (a link back to the root group is a directory
 * cycle), so such links get a node id of their own while still reporting
 * st_ino 1, which lets find and du recognise the loop. */
static uint64_t link_nodeid(const h5fs *fs, uint64_t addr)
{
	return addr + 2;
}

static uint64_t file_nodeid(const h5fs *fs, h5_file *f, uint64_t addr)
{
	return h5_file_id(f) == 0 ? link_nodeid(fs, addr) : file_ino(fs, f, addr);
}

/* How many levels above dir (0: dir itself) the directory whose st_ino is
 * ino lies, along the parents of the last lookups, or -1: a link to it from
 * dir would be a directory cycle, which the kernel refuses (ELOOP). */
static int ancestor_depth(h5fs *fs, const struct node *dir, uint64_t ino)
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
static bool name_ok(const char *name, size_t name_len)
{
	if (!name || name_len == 0 || name_len > H5FS_NAME_MAX)
		return false;
	if (strlen(name) != name_len)   /* embedded NUL */
		return false;
	if (strcmp(name, ".") == 0 || strcmp(name, "..") == 0)
		return false;
	return strchr(name, '/') == NULL;
}

static char *path_join(const char *dir, const char *name)
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

/* ---- nodes ----------------------------------------------------------------- */

/* Appends are possible: FILE is open read-write and the mount is not -o ro. */
static bool fs_writable(const h5fs *fs)
{
	return !fs->cfg.read_only && h5_file_writable(fs->f);
}

static void stat_init(h5fs *fs, struct stat *st, uint64_t ino, mode_t mode, int64_t mtime)
{
	memset(st, 0, sizeof(*st));
	st->st_ino = ino;
	st->st_mode = mode;
	st->st_nlink = 1;
	st->st_uid = fs->uid;
	st->st_gid = fs->gid;
	st->st_blksize = H5FS_BLKSIZE;
	st->st_mtime = (time_t)mtime;
	st->st_ctime = (time_t)mtime;
	st->st_atime = (time_t)mtime;
}

/* Build (unlocked) the node of the object whose header is at addr. */
static int node_make_obj(struct node **out, h5fs *fs, h5_file *f, uint64_t addr, uint64_t nodeid,
			 const char *path)
{
	h5_obj_info info;
	struct node *n;
	uint64_t alloc = 0;
	int64_t mtime;
	int rc;

	*out = NULL;
	rc = h5_obj_info_get(&info, f, addr);
	if (rc < 0)
		return rc;
	n = calloc(1, sizeof(*n));
	if (!n)
		return h5_err_set(H5_ERR_NOMEM, "out of memory");
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
	mtime = info.has_mtime ? info.mtime : fs->file_mtime;
	switch (info.kind) {
	case H5_OBJ_GROUP:
		n->type = NT_DIR;
		/* st_nlink 1 = "subdirectory count unknown" (as btrfs does for
		 * find's leaf optimisation): counting would mean decoding every
		 * child header of every directory. */
		stat_init(fs, &n->st, file_ino(fs, f, addr), S_IFDIR | fs->dir_mode, mtime);
		break;
	case H5_OBJ_DATASET: {
		int64_t dmt;

		n->type = NT_FILE;
		rc = h5_dataset_open(&n->ds, f, addr);
		if (rc < 0)
			goto out;
		if (h5_dataset_mtime(n->ds, &dmt) == 0)
			mtime = dmt;
		stat_init(fs, &n->st, file_ino(fs, f, addr), S_IFREG | fs->file_mode, mtime);
		n->st.st_size = (off_t)h5_dataset_size(n->ds);
		alloc = h5_dataset_allocated(n->ds);
		/* datasets that can grow by `cat >>` are owner-writable on a
		 * writable mount (where the owner may read) */
		if (f == fs->f && fs_writable(fs) && h5_append_check(n->ds) == 0) {
			n->st.st_mode |= (fs->file_mode & S_IRUSR) >> 1;
			/* cat and cp size their writes by st_blksize: one
			 * FUSE write of the largest size (max_write) */
			n->st.st_blksize = H5FS_APPEND_BLKSIZE;
		}
		n->st.st_nlink = info.nlink ? info.nlink : 1;
		break;
	}
	default:
		/* named datatypes (and headers of no known kind): empty files */
		n->type = NT_FILE;
		stat_init(fs, &n->st, file_ino(fs, f, addr), S_IFREG | fs->file_mode, mtime);
		n->st.st_nlink = info.nlink ? info.nlink : 1;
		break;
	}
	n->st.st_blocks = (blkcnt_t)(alloc / 512 + (alloc % 512 != 0));
	kind_remember(fs, file_ino(fs, f, addr), info.kind);
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
static int node_make_link(struct node **out, h5fs *fs, uint64_t ino, const char *path,
			  const char *dir, const h5_link *l, int depth)
{
	struct node *n = calloc(1, sizeof(*n));
	size_t need;

	*out = NULL;
	if (!n)
		return h5_err_set(H5_ERR_NOMEM, "out of memory");
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
	stat_init(fs, &n->st, ino, S_IFLNK | 0777, fs->file_mtime);
	n->st.st_size = (off_t)strlen(n->target);
	*out = n;
	return 0;
}

/* Insert a freshly built node, or take a reference on the one another
 * thread inserted meanwhile. Returns the node now in the table. */
static struct node *node_publish(h5fs *fs, struct node *fresh)
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

static struct node *node_ref_existing(h5fs *fs, uint64_t ino)
{
	struct node *n;

	pthread_mutex_lock(&fs->lock);
	n = node_find_locked(fs, ino);
	if (n)
		n->nlookup++;
	pthread_mutex_unlock(&fs->lock);
	return n;
}

static void node_unref(h5fs *fs, uint64_t ino, uint64_t count)
{
	struct node *n, *dead = NULL;

	pthread_mutex_lock(&fs->lock);
	n = node_find_locked(fs, ino);
	if (n) {
		n->nlookup = count < n->nlookup ? n->nlookup - count : 0;
		if (n->nlookup == 0 && ino != FUSE_ROOT_ID) {
			node_remove_locked(fs, n);
			dead = n;
		}
	}
	pthread_mutex_unlock(&fs->lock);
	node_free(dead);   /* closes the dataset outside the lock */
}

/* ---- setup ------------------------------------------------------------------ */

int h5fs_new(h5fs **out, h5_file *f, const h5fs_config *cfg)
{
	h5fs *fs;
	struct node *root = NULL;
	struct stat fst;
	int rc;

	*out = NULL;
	fs = calloc(1, sizeof(*fs));
	if (!fs)
		return h5_err_set(H5_ERR_NOMEM, "out of memory");
	fs->f = f;
	fs->cfg = *cfg;
	fs->root_addr = h5_file_root(f);
	fs->file_mtime = h5_file_mtime(f);
	/* Defaults follow FILE: whoever may read FILE may read the mount (the
	 * kernel enforces it: main.c mounts with default_permissions). Nothing
	 * is writable or executable; directories are searchable where FILE is
	 * readable. In-memory images (no FILE) show the caller's, 0444/0555. */
	fs->uid = getuid();
	fs->gid = getgid();
	fs->file_mode = 0444;
	if (stat(h5_file_path(f), &fst) == 0) {
		fs->file_size = (uint64_t)fst.st_size;
		fs->uid = fst.st_uid;
		fs->gid = fst.st_gid;
		fs->file_mode = fst.st_mode & 0444;
	}
	fs->dir_mode = fs->file_mode | (fs->file_mode >> 2);   /* r -> r-x */
	if (cfg->umask_set) {
		fs->file_mode = 0444 & ~cfg->umask;
		fs->dir_mode = 0555 & ~cfg->umask;
	}
	if (cfg->uid_set)
		fs->uid = cfg->uid;
	if (cfg->gid_set)
		fs->gid = cfg->gid;
	fs->next_synth = 1;
	pthread_mutex_init(&fs->lock, NULL);
	pthread_rwlock_init(&fs->ds_lock, NULL);
	fs->open_dirs.prev = fs->open_dirs.next = &fs->open_dirs;
	fs->open_wfiles.prev = fs->open_wfiles.next = &fs->open_wfiles;
	fs->nodes_cap = fs->synth_cap = fs->kinds_cap = 1024;
	fs->nodes = calloc(fs->nodes_cap, sizeof(*fs->nodes));
	fs->synth = calloc(fs->synth_cap, sizeof(*fs->synth));
	fs->kinds = calloc(fs->kinds_cap, sizeof(*fs->kinds));
	if (!fs->nodes || !fs->synth || !fs->kinds) {
		rc = h5_err_set(H5_ERR_NOMEM, "out of memory");
		goto out;
	}
	rc = node_make_obj(&root, fs, f, fs->root_addr, FUSE_ROOT_ID, "");
	if (rc < 0) {
		h5_err_wrap(rc, "root group at 0x%llx: ", (unsigned long long)fs->root_addr);
		goto out;
	}
	if (root->type != NT_DIR) {
		rc = h5_err_set(H5_ERR_FORMAT, "root object at 0x%llx is not a group",
				(unsigned long long)fs->root_addr);
		goto out;
	}
	root->nlookup = 1;   /* never forgotten */
	node_insert_locked(fs, root);
	root = NULL;
out:
	node_free(root);
	if (rc < 0) {
		fs->f = NULL;    /* the caller keeps the file on failure */
		h5fs_free(fs);
		return rc;
	}
	*out = fs;
	return 0;
}

static void handles_free(h5fs *fs);

void h5fs_free(h5fs *fs)
{
	size_t i;

	if (!fs)
		return;
	handles_free(fs);
	for (i = 0; fs->nodes && i < fs->nodes_cap; i++) {
		struct node *n = fs->nodes[i];

		while (n) {
			struct node *next = n->next;

			node_free(n);
			n = next;
		}
	}
	for (i = 0; fs->synth && i < fs->synth_cap; i++) {
		struct synth *s = fs->synth[i];

		while (s) {
			struct synth *next = s->next;

			free(s->name);
			free(s);
			s = next;
		}
	}
	for (i = 0; fs->kinds && i < fs->kinds_cap; i++) {
		struct kind_ent *k = fs->kinds[i];

		while (k) {
			struct kind_ent *next = k->next;

			free(k);
			k = next;
		}
	}
	free(fs->nodes);
	free(fs->synth);
	free(fs->kinds);
	pthread_mutex_destroy(&fs->lock);
	pthread_rwlock_destroy(&fs->ds_lock);
	if (fs->f)
		h5_file_close(fs->f);
	free(fs);
}

/* ---- operations ---------------------------------------------------------------- */

static void op_init(void *userdata, struct fuse_conn_info *conn)
{
	h5fs *fs = userdata;

	/* libfuse derives max_pages, and so the largest read the kernel sends
	 * us, from max_write; it clamps this to its own buffer size (1 MiB on
	 * current kernels). */
	conn->max_write = 1U << 20;
	/* libfuse wants the max_read mount option (main.c) repeated here */
	if (fs->cfg.max_read)
		conn->max_read = fs->cfg.max_read;
	/* conn->max_readahead starts at the kernel's maximum: keep it. */
	/* Reads of plain bytes are answered by splicing FILE's pages into
	 * the reply (op_read): no copy through our memory. */
	if (conn->capable & FUSE_CAP_SPLICE_WRITE)
		conn->want |= FUSE_CAP_SPLICE_WRITE;
	if (conn->capable & FUSE_CAP_SPLICE_MOVE)
		conn->want |= FUSE_CAP_SPLICE_MOVE;
}

static void reply_entry_node(fuse_req_t req, const struct node *n)
{
	struct fuse_entry_param e;

	memset(&e, 0, sizeof(e));
	e.ino = n->ino;
	e.generation = 0;   /* inode numbers are never reused; the root must be 0 */
	e.attr = n->st;
	e.attr_timeout = H5FS_TIMEOUT;
	e.entry_timeout = H5FS_TIMEOUT;
	fuse_reply_entry(req, &e);
}

/* Follow an external link of file `from`: 0 with *gf (a reference held)
 * and *addr, or a negative h5_err whose message says why it stays a
 * symlink (no such file or object, outside FILE's tree, unreadable). */
static int ext_resolve(h5_file **gf, uint64_t *addr, h5_file *from, const h5_link *l)
{
	h5_file *g = NULL;
	int rc;

	*gf = NULL;
	if (!l->ext_file || !l->ext_path)
		return h5_err_set(H5_ERR_FORMAT, "external link without a file or path");
	rc = h5_file_open_related(&g, from, l->ext_file);
	if (rc == 1)
		return h5_err_set(H5_ERR_NOTFOUND, "file %s not found", l->ext_file);
	if (rc < 0)
		return rc;
	rc = h5_path_lookup(addr, g, l->ext_path);
	if (rc < 0) {
		h5_file_release_related(g);
		return h5_err_wrap(rc, "%s::%s: ", l->ext_file, l->ext_path);
	}
	*gf = g;
	return 0;
}

static void op_lookup(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	h5fs *fs = fuse_req_userdata(req);
	struct node *p = node_get(fs, parent), *n = NULL, *fresh = NULL;
	h5_link l;
	char *path = NULL;
	int rc;

	memset(&l, 0, sizeof(l));
	if (!p) {
		fuse_reply_err(req, ESTALE);
		return;
	}
	if (p->type != NT_DIR) {
		fuse_reply_err(req, ENOTDIR);
		return;
	}
	if (!name_ok(name, strlen(name))) {
		fuse_reply_err(req, ENOENT);
		return;
	}
	rc = h5_group_lookup(&l, p->f, p->addr, name);
	if (rc < 0) {
		reply_h5err(fs, req, rc, "lookup", p->path, name);
		return;
	}
	/* Names readdir would skip must not be reachable by lookup either. */
	if (!name_ok(l.name, l.name_len) || strcmp(l.name, name) != 0) {
		fuse_reply_err(req, ENOENT);
		goto out;
	}
	path = path_join(p->path, name);
	if (!path) {
		fuse_reply_err(req, ENOMEM);
		goto out;
	}
	switch (l.type) {
	case H5_LINK_EXTERNAL:
	case H5_LINK_HARD: {
		h5_file *tf = p->f;
		uint64_t taddr = l.addr;
		int depth;

		if (l.type == H5_LINK_EXTERNAL) {
			rc = ext_resolve(&tf, &taddr, p->f, &l);
			if (rc < 0) {
				fs_log(fs, LOG_NOTICE, "lookup %s: external link not followed, shown as a symlink: %s",
				       show_path(path), h5_err_msg());
				goto as_symlink;
			}
		}
		/* a link up to this group or an ancestor: a symlink there */
		depth = ancestor_depth(fs, p, file_ino(fs, tf, taddr));
		if (depth >= 0) {
			if (tf != p->f || l.type == H5_LINK_EXTERNAL)
				h5_file_release_related(tf);
			goto as_symlink;
		}
		n = node_ref_existing(fs, file_nodeid(fs, tf, taddr));
		if (!n) {
			rc = node_make_obj(&fresh, fs, tf, taddr, file_nodeid(fs, tf, taddr), path);
			if (rc < 0) {
				if (l.type == H5_LINK_EXTERNAL)
					h5_file_release_related(tf);
				reply_h5err_obj(fs, req, rc, "lookup", p->path, name, taddr);
				goto out;
			}
			n = node_publish(fs, fresh);
		}
		if (l.type == H5_LINK_EXTERNAL)
			h5_file_release_related(tf);   /* the node holds its own */
		if (n->type == NT_DIR) {
			/* the kernel keeps one dentry per directory: where it was
			 * looked up last is where it is (ancestor_depth) */
			pthread_mutex_lock(&fs->lock);
			n->parent = p->ino;
			pthread_mutex_unlock(&fs->lock);
		}
		break;
	}
	case H5_LINK_SOFT:
	as_symlink: {
		uint64_t ino = synth_ino(fs, p->ino, name);
		int depth = -1;

		if (!ino) {
			fuse_reply_err(req, ENOMEM);
			goto out;
		}
		n = node_ref_existing(fs, ino);
		if (n)
			break;
		if (l.type == H5_LINK_HARD || (l.type == H5_LINK_EXTERNAL && rc == 0)) {
			h5_file *tf = p->f;
			uint64_t taddr = l.addr;

			if (l.type == H5_LINK_EXTERNAL && ext_resolve(&tf, &taddr, p->f, &l) < 0)
				tf = NULL;
			if (tf) {
				depth = ancestor_depth(fs, p, file_ino(fs, tf, taddr));
				if (l.type == H5_LINK_EXTERNAL)
					h5_file_release_related(tf);
			}
		}
		rc = node_make_link(&fresh, fs, ino, path, p->path, depth >= 0 ? NULL : &l, depth);
		if (rc < 0) {
			reply_h5err(fs, req, rc, "lookup", p->path, name);
			goto out;
		}
		n = node_publish(fs, fresh);
		break;
	}
	default:
		/* user-defined link types (65..255) have no meaning to us */
		fs_log(fs, LOG_INFO, "lookup %s/%s: link type %d not shown", show_path(p->path), name,
		       (int)l.type);
		fuse_reply_err(req, ENOENT);
		goto out;
	}
	reply_entry_node(req, n);
out:
	free(path);
	h5_link_clear(&l);
}

static void op_forget(fuse_req_t req, fuse_ino_t ino, uint64_t nlookup)
{
	node_unref(fuse_req_userdata(req), ino, nlookup);
	fuse_reply_none(req);
}

static void op_forget_multi(fuse_req_t req, size_t count, struct fuse_forget_data *forgets)
{
	h5fs *fs = fuse_req_userdata(req);
	size_t i;

	for (i = 0; i < count; i++)
		node_unref(fs, forgets[i].ino, forgets[i].nlookup);
	fuse_reply_none(req);
}

static void op_getattr(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	h5fs *fs = fuse_req_userdata(req);
	struct node *n = node_get(fs, ino);
	struct stat st;

	(void)fi;
	if (!n) {
		fuse_reply_err(req, ESTALE);
		return;
	}
	pthread_rwlock_rdlock(&fs->ds_lock);   /* an append may be updating st */
	st = n->st;
	pthread_rwlock_unlock(&fs->ds_lock);
	fuse_reply_attr(req, &st, H5FS_TIMEOUT);
}

static void op_readlink(fuse_req_t req, fuse_ino_t ino)
{
	h5fs *fs = fuse_req_userdata(req);
	struct node *n = node_get(fs, ino);

	if (!n) {
		fuse_reply_err(req, ESTALE);
		return;
	}
	if (n->type != NT_LINK) {
		fuse_reply_err(req, EINVAL);
		return;
	}
	/* The kernel takes at most PATH_MAX - 1 bytes: /dev/fuse refuses a
	 * longer reply, and the caller would see an EIO nobody logged. */
	if (strlen(n->target) >= PATH_MAX) {
		fs_log(fs, LOG_WARNING, "readlink %s: target of %zu bytes is longer than PATH_MAX",
		       show_path(n->path), strlen(n->target));
		fuse_reply_err(req, ENAMETOOLONG);
		return;
	}
	fuse_reply_readlink(req, n->target);
}

/* A directory listing, taken at opendir so that readdir offsets stay
 * meaningful however the kernel splits the reads. */
struct dent {
	char *name;
	uint64_t ino;
	uint64_t addr;          /* hard links: to find the kind */
	unsigned char dtype;    /* DT_* */
	h5_link *link;          /* external links: file and path, to follow */
};

struct dirsnap {
	struct hlink link;      /* first: fs->open_dirs */
	size_t n, cap;
	struct dent *e;
	size_t skipped;
	int nomem;
};

static void handle_add(h5fs *fs, struct hlink *list, struct hlink *h)
{
	pthread_mutex_lock(&fs->lock);
	h->prev = list;
	h->next = list->next;
	list->next->prev = h;
	list->next = h;
	pthread_mutex_unlock(&fs->lock);
}

static void handle_del(h5fs *fs, struct hlink *h)
{
	pthread_mutex_lock(&fs->lock);
	h->prev->next = h->next;
	h->next->prev = h->prev;
	h->prev = h->next = h;
	pthread_mutex_unlock(&fs->lock);
}

static void dirsnap_free(struct dirsnap *d)
{
	size_t i;

	if (!d)
		return;
	for (i = 0; i < d->n; i++) {
		free(d->e[i].name);
		if (d->e[i].link) {
			h5_link_clear(d->e[i].link);
			free(d->e[i].link);
		}
	}
	free(d->e);
	free(d);
}

static int dirsnap_cb(const h5_link *l, void *ud)
{
	struct dirsnap *d = ud;
	struct dent *e;

	if (!name_ok(l->name, l->name_len) ||
	    (l->type != H5_LINK_HARD && l->type != H5_LINK_SOFT && l->type != H5_LINK_EXTERNAL)) {
		d->skipped++;
		return 0;
	}
	if (d->n == d->cap) {
		size_t ncap = d->cap ? d->cap * 2 : 64;
		struct dent *ne = realloc(d->e, ncap * sizeof(*ne));

		if (!ne) {
			d->nomem = 1;
			return 1;
		}
		d->e = ne;
		d->cap = ncap;
	}
	e = &d->e[d->n];
	memset(e, 0, sizeof(*e));
	e->name = strdup(l->name);
	if (!e->name) {
		d->nomem = 1;
		return 1;
	}
	e->addr = l->type == H5_LINK_HARD ? l->addr : UINT64_MAX;
	e->dtype = l->type == H5_LINK_HARD ? DT_UNKNOWN : DT_LNK;
	if (l->type == H5_LINK_EXTERNAL) {
		e->link = calloc(1, sizeof(*e->link));
		if (!e->link || (l->ext_file && !(e->link->ext_file = strdup(l->ext_file))) ||
		    (l->ext_path && !(e->link->ext_path = strdup(l->ext_path)))) {
			d->n++;
			d->nomem = 1;
			return 1;
		}
		e->link->type = H5_LINK_EXTERNAL;
	}
	d->n++;
	return 0;
}

static unsigned char kind_dtype(h5_obj_kind k)
{
	return k == H5_OBJ_GROUP ? DT_DIR : DT_REG;
}

static void op_opendir(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	h5fs *fs = fuse_req_userdata(req);
	struct node *n = node_get(fs, ino);
	struct dirsnap *d;
	size_t i;
	int rc;

	if (!n) {
		fuse_reply_err(req, ESTALE);
		return;
	}
	if (n->type != NT_DIR) {
		fuse_reply_err(req, ENOTDIR);
		return;
	}
	d = calloc(1, sizeof(*d));
	if (!d) {
		fuse_reply_err(req, ENOMEM);
		return;
	}
	rc = h5_group_iterate(n->f, n->addr, dirsnap_cb, d);
	if (d->nomem) {
		fuse_reply_err(req, ENOMEM);
		goto fail;
	}
	if (rc < 0) {
		reply_h5err_obj(fs, req, rc, "readdir", n->path, NULL, n->addr);
		goto fail;
	}
	if (d->skipped)
		fs_log(fs, LOG_WARNING, "readdir %s: %zu link(s) with names that cannot be shown were skipped",
		       show_path(n->path), d->skipped);
	/* Hard links: d_type from the kind (cached per address; one header
	 * decode the first time) so find/ls need not stat every entry. A child
	 * that cannot be decoded stays DT_UNKNOWN: its lookup reports the EIO. */
	for (i = 0; i < d->n; i++) {
		struct dent *e = &d->e[i];
		h5_file *tf = n->f;
		uint64_t taddr = e->addr;
		h5_obj_kind k;

		/* external links that lead somewhere show what they lead to */
		if (e->link && ext_resolve(&tf, &taddr, n->f, e->link) < 0) {
			h5_err_clear();
			tf = NULL;
			taddr = UINT64_MAX;
		}
		if (taddr != UINT64_MAX && ancestor_depth(fs, n, file_ino(fs, tf, taddr)) >= 0) {
			taddr = UINT64_MAX;      /* a link up the tree: a symlink */
			e->dtype = DT_LNK;
		}
		if (taddr != UINT64_MAX) {
			h5_obj_info info;
			uint64_t key = file_ino(fs, tf, taddr);

			e->ino = key;
			if (kind_lookup(fs, key, &k)) {
				e->dtype = kind_dtype(k);
			} else if (h5_obj_info_get(&info, tf, taddr) == 0) {
				kind_remember(fs, key, info.kind);
				e->dtype = kind_dtype(info.kind);
			}
		} else {
			e->ino = synth_ino(fs, n->ino, e->name);
		}
		if (e->link && tf)
			h5_file_release_related(tf);
		if (!e->ino) {
			fuse_reply_err(req, ENOMEM);
			goto fail;
		}
	}
	fi->fh = (uint64_t)(uintptr_t)d;
	fi->keep_cache = 1;
	fi->cache_readdir = 1;
	handle_add(fs, &fs->open_dirs, &d->link);
	if (fuse_reply_open(req, fi) != 0) {
		handle_del(fs, &d->link);
		dirsnap_free(d);   /* interrupted: no releasedir will come */
	}
	return;
fail:
	dirsnap_free(d);
}

static void op_readdir(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
		       struct fuse_file_info *fi)
{
	struct dirsnap *d = (struct dirsnap *)(uintptr_t)fi->fh;
	char *buf;
	size_t pos = 0;
	uint64_t i;

	if (!d) {
		fuse_reply_err(req, EBADF);
		return;
	}
	buf = malloc(size ? size : 1);
	if (!buf) {
		fuse_reply_err(req, ENOMEM);
		return;
	}
	/* offsets: 0 ".", 1 "..", 2+i entry i; each entry's d_off is the next */
	for (i = off < 0 ? 0 : (uint64_t)off; i < d->n + 2; i++) {
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
			const struct dent *e = &d->e[i - 2];

			name = e->name;
			st.st_ino = e->ino;
			st.st_mode = (mode_t)DTTOIF(e->dtype);
		}
		len = fuse_add_direntry(req, buf + pos, size - pos, name, &st, (off_t)(i + 1));
		if (len > size - pos)
			break;
		pos += len;
	}
	fuse_reply_buf(req, buf, pos);
	free(buf);
}

static void op_releasedir(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	struct dirsnap *d = (struct dirsnap *)(uintptr_t)fi->fh;

	(void)ino;
	if (d)
		handle_del(fuse_req_userdata(req), &d->link);
	dirsnap_free(d);
	fuse_reply_err(req, 0);
}

/* ---- appending: the write path (README "Appending", doc/APPEND.md) -----------------
 * A dataset that can grow along dimension 0 opens for writing on a writable
 * mount. Writes at its end go to the engine's appender, which streams whole
 * rows to the file and commits them every 64 MiB or 1 s, on fsync() and at
 * close (doc/APPEND.md); whenever rows were committed the node gets a
 * freshly opened dataset (size, allocation, mtime) under fs->ds_lock and
 * the kernel's cached attributes are dropped, so stat shows the new size at
 * once. Write handles are direct_io: the kernel caches no bytes that are
 * not rows yet.
 *
 * Write-behind (doc/APPEND.md "When a write's errors are reported"): the
 * kernel sends one file's writes one at a time and waits for each reply, so
 * a write is answered as soon as it is checked, and then applied by the
 * same worker, its request buffer still held: the writer prepares its next
 * bytes while the engine stores these. The writes of a dataset's handles
 * are applied in the order they were accepted (tickets); at most WQ_EARLY
 * of them are answered before they are applied, the others wait as before
 * (libfuse's other workers stay free for readers). The offset check runs
 * against the rows the stream will hold once every accepted write is
 * applied (vrows, and each handle's vplen). An error applying a write that
 * was answered already is logged and kept in its handle: the handle's next
 * write, fsync and close fail with it. flush, fsync and release first wait
 * until every accepted write is applied. */
#define WQ_EARLY 4

struct wqueue {
	pthread_mutex_t mu;
	pthread_cond_t cv;      /* turn moved, or early dropped */
	uint64_t next, turn;    /* tickets handed out / applied */
	unsigned early;         /* writes answered, not applied yet */
	uint64_t vrows;         /* stream rows once every accepted write is applied */
	uint64_t row_bytes;
	uint64_t seen;          /* committed size the node shows (under apply) */
	pthread_mutex_t apply;  /* engine calls on the node's appenders and wfile_refresh */
	unsigned refs;          /* write handles (under fs->lock) */
};

struct wfile {
	struct hlink link;      /* first: fs->open_wfiles */
	h5_appender *a;
	struct node *n;         /* the kernel holds the inode while it is open */
	struct wqueue *q;       /* n->wq */
	bool append;            /* opened with O_APPEND */
	/* under q->mu */
	uint64_t vplen;         /* its partial row once every accepted write is applied */
	int err;                /* errno of a write answered before it failed */
};

void h5fs_set_session(h5fs *fs, struct fuse_session *se)
{
	fs->se = se;
}

/* Show what the appender committed. Called (under q->apply) after every
 * operation that may have committed rows, whether or not it succeeded. */
static void wfile_refresh(h5fs *fs, struct wfile *w, fuse_ino_t ino)
{
	h5_dataset *nd = NULL, *old;
	uint64_t alloc;
	int64_t mt;

	if (h5_append_committed(w->a) == w->q->seen)
		return;
	if (h5_dataset_open(&nd, fs->f, w->n->addr) < 0) {
		fs_log(fs, LOG_ERR, "append %s: reopening the dataset: %s", show_path(w->n->path), h5_err_msg());
		return;
	}
	alloc = h5_dataset_allocated(nd);
	pthread_rwlock_wrlock(&fs->ds_lock);
	old = w->n->ds;
	w->n->ds = nd;
	w->n->st.st_size = (off_t)h5_dataset_size(nd);
	w->n->st.st_blocks = (blkcnt_t)(alloc / 512 + (alloc % 512 != 0));
	if (h5_dataset_mtime(nd, &mt) == 0)
		w->n->st.st_mtime = w->n->st.st_ctime = (time_t)mt;
	pthread_rwlock_unlock(&fs->ds_lock);
	h5_dataset_close(old);
	w->q->seen = h5_append_committed(w->a);
	/* attributes only (offset -1): invalidating pages here could wait on
	 * pages a pending write request holds locked. A changed size makes
	 * the kernel drop the file's cached pages itself. */
	if (fs->se)
		fuse_lowlevel_notify_inval_inode(fs->se, ino, -1, 0);
}

static void wq_free(struct wqueue *q)
{
	pthread_mutex_destroy(&q->mu);
	pthread_mutex_destroy(&q->apply);
	pthread_cond_destroy(&q->cv);
	free(q);
}

/* Wait until every write accepted so far is applied. */
static void wq_drain(struct wqueue *q)
{
	uint64_t t;

	pthread_mutex_lock(&q->mu);
	t = q->next;
	while (q->turn < t)
		pthread_cond_wait(&q->cv, &q->mu);
	pthread_mutex_unlock(&q->mu);
}

/* w joins its node's queue, made by the node's first write handle. The rows
 * the stream holds are taken from the engine once nothing is in flight: w's
 * appender may have a fresh stream (an earlier one failed). */
static int wq_attach(h5fs *fs, struct wfile *w)
{
	struct wqueue *q, *fresh = calloc(1, sizeof(*fresh));

	if (!fresh)
		return ENOMEM;
	pthread_mutex_init(&fresh->mu, NULL);
	pthread_mutex_init(&fresh->apply, NULL);
	pthread_cond_init(&fresh->cv, NULL);
	fresh->row_bytes = h5_append_row_bytes(w->a);
	fresh->seen = h5_append_committed(w->a);
	pthread_mutex_lock(&fs->lock);
	q = w->n->wq;
	if (!q) {
		q = w->n->wq = fresh;
		fresh = NULL;
	}
	q->refs++;
	pthread_mutex_unlock(&fs->lock);
	if (fresh)
		wq_free(fresh);
	w->q = q;
	pthread_mutex_lock(&q->mu);
	while (q->turn < q->next)
		pthread_cond_wait(&q->cv, &q->mu);
	q->vrows = h5_append_size(w->a) / q->row_bytes;   /* a new handle has no partial row */
	pthread_mutex_unlock(&q->mu);
	return 0;
}

/* w leaves its queue (drained: flush or release ran); the last handle frees it. */
static void wq_detach(h5fs *fs, struct wfile *w)
{
	struct wqueue *q = w->q;
	bool last;

	pthread_mutex_lock(&fs->lock);
	last = --q->refs == 0;
	if (last)
		w->n->wq = NULL;
	pthread_mutex_unlock(&fs->lock);
	if (last)
		wq_free(q);
	w->q = NULL;
}

/* The error of a write answered before it failed, or 0. */
static int wfile_err(struct wfile *w)
{
	int e;

	pthread_mutex_lock(&w->q->mu);
	e = w->err;
	pthread_mutex_unlock(&w->q->mu);
	return e;
}

static void wfile_open(fuse_req_t req, h5fs *fs, struct node *n, struct fuse_file_info *fi)
{
	struct wfile *w;
	bool is_ds;
	int rc;

	/* files reached by external links are opened read-only */
	if (!fs_writable(fs) || n->f != fs->f) {
		fuse_reply_err(req, EROFS);
		return;
	}
	if (fi->flags & O_TRUNC) {
		fs_log(fs, LOG_DEBUG, "open %s with O_TRUNC: datasets only grow", show_path(n->path));
		fuse_reply_err(req, EPERM);
		return;
	}
	/* n->ds is replaced by wfile_refresh() under ds_lock after appends */
	pthread_rwlock_rdlock(&fs->ds_lock);
	is_ds = n->type == NT_FILE && n->ds;
	pthread_rwlock_unlock(&fs->ds_lock);
	if (!is_ds) {
		fuse_reply_err(req, EPERM);
		return;
	}
	w = calloc(1, sizeof(*w));
	if (!w) {
		fuse_reply_err(req, ENOMEM);
		return;
	}
	rc = h5_append_open(&w->a, fs->f, n->addr);
	if (rc < 0) {
		int e = h5fs_errno(rc);

		fs_log(fs, e == EIO ? LOG_ERR : LOG_NOTICE, "open %s for writing (object header 0x%llx): %s%s",
		       show_path(n->path), (unsigned long long)n->addr, e == EIO ? "EIO: " : "", h5_err_msg());
		free(w);
		fuse_reply_err(req, e);
		return;
	}
	w->n = n;
	w->append = (fi->flags & O_APPEND) != 0;
	rc = wq_attach(fs, w);
	if (rc) {
		h5_append_close(w->a, NULL);
		free(w);
		fuse_reply_err(req, rc);
		return;
	}
	fi->fh = (uint64_t)(uintptr_t)w;
	fi->direct_io = 1;
	handle_add(fs, &fs->open_wfiles, &w->link);
	if (fuse_reply_open(req, fi) != 0) {
		handle_del(fs, &w->link);
		h5_append_close(w->a, NULL);   /* interrupted: no release will come */
		wq_detach(fs, w);
		free(w);
	}
}

static void op_write(fuse_req_t req, fuse_ino_t ino, const char *buf, size_t size, off_t off,
		     struct fuse_file_info *fi)
{
	h5fs *fs = fuse_req_userdata(req);
	struct wfile *w = (struct wfile *)(uintptr_t)fi->fh;
	struct wqueue *q;
	uint64_t end, t;
	bool early;
	int rc, e;

	if (!w) {
		fuse_reply_err(req, EBADF);
		return;
	}
	q = w->q;
	pthread_mutex_lock(&q->mu);
	e = w->err;
	/* Rows only go at the end: O_APPEND writes wherever the kernel thinks
	 * the end is (its size may lag behind bytes of an unfinished row);
	 * others must write exactly at the end, accepted writes included. */
	end = q->vrows * q->row_bytes + w->vplen;
	if (!e && (off < 0 || (!w->append && (uint64_t)off != end)))
		e = EPERM;
	if (e) {
		pthread_mutex_unlock(&q->mu);
		if (e == EPERM)
			fs_log(fs, LOG_DEBUG, "write %s at %lld: only appending at %llu is possible",
			       show_path(w->n->path), (long long)off, (unsigned long long)end);
		fuse_reply_err(req, e);
		return;
	}
	t = q->next++;
	w->vplen += size;       /* what h5_append_write will do with the bytes */
	q->vrows += w->vplen / q->row_bytes;
	w->vplen %= q->row_bytes;
	early = q->early < WQ_EARLY;
	if (early)
		q->early++;
	pthread_mutex_unlock(&q->mu);
	if (early)
		fuse_reply_write(req, size);

	pthread_mutex_lock(&q->mu);
	while (q->turn != t)
		pthread_cond_wait(&q->cv, &q->mu);
	pthread_mutex_unlock(&q->mu);
	pthread_mutex_lock(&q->apply);
	rc = h5_append_write(w->a, buf, size);
	if (rc < 0) {
		if (early)
			fs_log(fs, LOG_ERR, "append %s (object header 0x%llx): %s: reported by the next write, "
			       "fsync or close", show_path(w->n->path), (unsigned long long)w->n->addr, h5_err_msg());
		else
			reply_h5err_obj(fs, req, rc, "append", w->n->path, NULL, w->n->addr);
	}
	wfile_refresh(fs, w, ino);
	pthread_mutex_unlock(&q->apply);
	pthread_mutex_lock(&q->mu);
	if (rc < 0) {
		/* the stream did not take the bytes: the handle takes no more */
		if (!w->err)
			w->err = h5fs_errno(rc);
	}
	if (early)
		q->early--;
	q->turn++;
	pthread_cond_broadcast(&q->cv);
	pthread_mutex_unlock(&q->mu);
	if (!early && rc == 0)
		fuse_reply_write(req, size);
}

/* close() (and fsync()) commit every complete row, durably. At close a trailing
 * partial row is dropped and reported as EINVAL. */
static void op_flush(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	h5fs *fs = fuse_req_userdata(req);
	struct wfile *w = (struct wfile *)(uintptr_t)fi->fh;
	size_t partial;
	int rc, e;

	if (!w) {
		fuse_reply_err(req, 0);
		return;
	}
	wq_drain(w->q);
	pthread_mutex_lock(&w->q->apply);
	rc = h5_append_flush(w->a);
	wfile_refresh(fs, w, ino);
	e = rc < 0 ? 0 : wfile_err(w);
	partial = rc < 0 || e ? 0 : h5_append_pending(w->a);
	if (partial) {
		fs_log(fs, LOG_NOTICE, "append %s: %zu trailing bytes are not a whole row of %llu bytes: "
		       "not appended", show_path(w->n->path), partial,
		       (unsigned long long)h5_append_row_bytes(w->a));
		h5_append_discard(w->a);
		pthread_mutex_lock(&w->q->mu);
		w->vplen = 0;
		pthread_mutex_unlock(&w->q->mu);
		e = EINVAL;
	}
	pthread_mutex_unlock(&w->q->apply);
	if (rc < 0)
		reply_h5err_obj(fs, req, rc, "append", w->n->path, NULL, w->n->addr);
	else
		fuse_reply_err(req, e);
}

static void op_fsync(fuse_req_t req, fuse_ino_t ino, int datasync, struct fuse_file_info *fi)
{
	h5fs *fs = fuse_req_userdata(req);
	struct wfile *w = (struct wfile *)(uintptr_t)fi->fh;
	int rc;

	(void)datasync;
	if (!w) {
		fuse_reply_err(req, 0);   /* nothing of ours is unwritten */
		return;
	}
	wq_drain(w->q);
	pthread_mutex_lock(&w->q->apply);
	rc = h5_append_flush(w->a);    /* committed rows are on disk (fsync'd) */
	wfile_refresh(fs, w, ino);
	pthread_mutex_unlock(&w->q->apply);
	if (rc < 0) {
		reply_h5err_obj(fs, req, rc, "fsync", w->n->path, NULL, w->n->addr);
		return;
	}
	fuse_reply_err(req, wfile_err(w));
}

/* Handles whose release never came (FILE unmounted while they were
 * open): free them at exit, after the session loop. */
static void handles_free(h5fs *fs)
{
	if (!fs->open_dirs.next)
		return;         /* h5fs_new failed before the lists existed */
	while (fs->open_dirs.next != &fs->open_dirs) {
		struct dirsnap *d = (struct dirsnap *)(void *)fs->open_dirs.next;

		handle_del(fs, &d->link);
		dirsnap_free(d);
	}
	while (fs->open_wfiles.next != &fs->open_wfiles) {
		struct wfile *w = (struct wfile *)(void *)fs->open_wfiles.next;

		handle_del(fs, &w->link);
		h5_append_close(w->a, NULL);
		wq_detach(fs, w);
		free(w);
	}
}

static void wfile_release(h5fs *fs, struct wfile *w, fuse_ino_t ino)
{
	size_t partial = 0;
	int rc;

	handle_del(fs, &w->link);
	/* flush normally applied everything; bytes written after it (through
	 * a dup'd descriptor closed later) are handled the same way here, but
	 * release cannot report errors any more: they are logged */
	wq_drain(w->q);
	pthread_mutex_lock(&w->q->apply);
	rc = h5_append_flush(w->a);
	wfile_refresh(fs, w, ino);
	if (rc < 0)
		fs_log(fs, LOG_ERR, "append %s: %s", show_path(w->n->path), h5_err_msg());
	rc = h5_append_close(w->a, &partial);
	pthread_mutex_unlock(&w->q->apply);
	if (rc < 0 && partial)
		fs_log(fs, LOG_NOTICE, "append %s: %zu trailing bytes dropped at release", show_path(w->n->path),
		       partial);
	wq_detach(fs, w);
	free(w);
}

static void op_open(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	h5fs *fs = fuse_req_userdata(req);
	struct node *n = node_get(fs, ino);

	if (!n) {
		fuse_reply_err(req, ESTALE);
		return;
	}
	if (n->type == NT_DIR) {
		fuse_reply_err(req, EISDIR);
		return;
	}
	/* Writing means appending rows (wfile_open). */
	if ((fi->flags & O_ACCMODE) != O_RDONLY || (fi->flags & O_TRUNC)) {
		wfile_open(req, fs, n, fi);
		return;
	}
	/* A dataset that can grow (owner's write bit on a read-write mount,
	 * wfile_open) is read without the page cache: a short read while an
	 * append is being applied would leave a zero-filled page cached inside
	 * the new size (tests/stress/append_race.py). Anything else cannot
	 * change while mounted, so the page cache stays valid across opens. */
	if (fs_writable(fs) && (n->st.st_mode & S_IWUSR))
		fi->direct_io = 1;
	else
		fi->keep_cache = 1;
	fuse_reply_open(req, fi);
}

/* A read window mapped to FILE (h5_dataset_extents) is answered from
 * FILE's descriptor: libfuse splices the pages into /dev/fuse when the
 * kernel allows it (else it preads them into one buffer itself). A window
 * needing more pieces than this is read the ordinary way. */
#define H5FS_MAX_EXTENTS 64

static void reply_extents(fuse_req_t req, const h5_extent *ext, size_t n)
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

static void op_read(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
		    struct fuse_file_info *fi)
{
	h5fs *fs = fuse_req_userdata(req);
	struct node *n = node_get(fs, ino);
	uint64_t fsize, len;
	uint8_t *buf;
	int rc;

	(void)fi;
	if (!n) {
		fuse_reply_err(req, ESTALE);
		return;
	}
	if (off < 0) {
		fuse_reply_err(req, EINVAL);
		return;
	}
	/* an append may replace n->ds and n->st meanwhile (wfile_refresh) */
	pthread_rwlock_rdlock(&fs->ds_lock);
	fsize = (uint64_t)n->st.st_size;
	if (!n->ds || (uint64_t)off >= fsize || size == 0) {
		pthread_rwlock_unlock(&fs->ds_lock);
		fuse_reply_buf(req, NULL, 0);
		return;
	}
	len = fsize - (uint64_t)off;
	if (len > size)
		len = size;
	/* Plain bytes of FILE (contiguous storage, unfiltered chunks): the
	 * extents stay valid after the lock is dropped, since an append
	 * writes new bytes elsewhere and never rewrites bytes in use. */
	if (h5_file_fd(n->f) >= 0) {
		h5_extent ext[H5FS_MAX_EXTENTS];
		size_t next = 0;

		if (h5_dataset_extents(ext, H5FS_MAX_EXTENTS, &next, n->ds, (uint64_t)off, (size_t)len) == 0 &&
		    next > 0) {
			pthread_rwlock_unlock(&fs->ds_lock);
			reply_extents(req, ext, next);
			return;
		}
		h5_err_clear();  /* not mappable: read it (which reports real errors) */
	}
	buf = malloc((size_t)len);
	if (!buf) {
		pthread_rwlock_unlock(&fs->ds_lock);
		fuse_reply_err(req, ENOMEM);
		return;
	}
	rc = h5_dataset_read(n->ds, buf, (uint64_t)off, (size_t)len);
	pthread_rwlock_unlock(&fs->ds_lock);
	if (rc < 0) {
		char what[64];

		snprintf(what, sizeof(what), "read [%lld+%llu]", (long long)off, (unsigned long long)len);
		reply_h5err_obj(fs, req, rc, what, n->path, NULL, n->addr);
	} else {
		fuse_reply_buf(req, (const char *)buf, (size_t)len);
	}
	free(buf);
}

static void op_release(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	if (fi->fh)   /* only write handles (wfile_open) carry one */
		wfile_release(fuse_req_userdata(req), (struct wfile *)(uintptr_t)fi->fh, ino);
	fuse_reply_err(req, 0);
}

static void op_statfs(fuse_req_t req, fuse_ino_t ino)
{
	h5fs *fs = fuse_req_userdata(req);
	struct statvfs sv;

	(void)ino;
	memset(&sv, 0, sizeof(sv));
	sv.f_bsize = H5FS_BLKSIZE;
	sv.f_frsize = 512;
	sv.f_blocks = (fsblkcnt_t)((fs->file_size + 511) / 512);
	pthread_mutex_lock(&fs->lock);
	sv.f_files = (fsfilcnt_t)fs->nnodes;
	pthread_mutex_unlock(&fs->lock);
	sv.f_namemax = H5FS_NAME_MAX;
	sv.f_flag = ST_RDONLY;
	fuse_reply_statfs(req, &sv);
}

/* ---- extended attributes ---------------------------------------------------------
 * HDF5 attributes shown as xattrs (names and text rules: h5_xattr_list and
 * h5_xattr_get in the engine, doc/h5fs.1 ATTRIBUTES).  xattr_list fills buf
 * with the NUL-separated names (or only measures when buf is NULL); xattr_get
 * copies one value.  Both return 0 or a negative errno; *len is always the
 * full length, so a size query (size 0) and the read after it agree and the
 * caller answers ERANGE when size is too small.  Symlinks have none. */

static int xattr_errno(h5fs *fs, const struct node *n, int rc, const char *op, const char *name)
{
	int e = rc == H5_ERR_NOTFOUND ? ENODATA : h5fs_errno(rc);

	if (e == EIO)
		fs_log(fs, LOG_ERR, "%s %s%s%s (object header 0x%llx): EIO: %s", op, show_path(n->path),
		       name ? " " : "", name ? name : "", (unsigned long long)n->addr, h5_err_msg());
	return -e;
}

static int xattr_list(h5fs *fs, const struct node *n, char *buf, size_t size, size_t *len)
{
	char *list = NULL;
	int rc;

	*len = 0;
	if (n->type == NT_LINK || n->addr == UINT64_MAX)
		return 0;
	rc = h5_xattr_list(&list, len, n->f, n->addr);
	if (rc < 0)
		return xattr_errno(fs, n, rc, "listxattr", NULL);
	if (buf && *len <= size)
		memcpy(buf, list, *len);
	free(list);
	return 0;
}

static int xattr_get(h5fs *fs, const struct node *n, const char *name, char *buf, size_t size,
		     size_t *len)
{
	void *val = NULL;
	int rc;

	*len = 0;
	if (n->type == NT_LINK || n->addr == UINT64_MAX)
		return -ENODATA;
	rc = h5_xattr_get(&val, len, n->f, n->addr, name, fs->cfg.xattr_raw);
	if (rc < 0)
		return xattr_errno(fs, n, rc, "getxattr", name);
	if (buf && *len <= size)
		memcpy(buf, val, *len);
	free(val);
	return 0;
}

static void op_listxattr(fuse_req_t req, fuse_ino_t ino, size_t size)
{
	h5fs *fs = fuse_req_userdata(req);
	struct node *n = node_get(fs, ino);
	char *buf = NULL;
	size_t len = 0;
	int rc;

	if (!n) {
		fuse_reply_err(req, ESTALE);
		return;
	}
	if (size) {
		buf = malloc(size);
		if (!buf) {
			fuse_reply_err(req, ENOMEM);
			return;
		}
	}
	rc = xattr_list(fs, n, buf, size, &len);
	if (rc < 0)
		fuse_reply_err(req, -rc);
	else if (size == 0)
		fuse_reply_xattr(req, len);
	else if (len > size)
		fuse_reply_err(req, ERANGE);
	else
		fuse_reply_buf(req, buf, len);
	free(buf);
}

static void op_getxattr(fuse_req_t req, fuse_ino_t ino, const char *name, size_t size)
{
	h5fs *fs = fuse_req_userdata(req);
	struct node *n = node_get(fs, ino);
	char *buf = NULL;
	size_t len = 0;
	int rc;

	if (!n) {
		fuse_reply_err(req, ESTALE);
		return;
	}
	if (size) {
		buf = malloc(size);
		if (!buf) {
			fuse_reply_err(req, ENOMEM);
			return;
		}
	}
	rc = xattr_get(fs, n, name, buf, size, &len);
	if (rc < 0)
		fuse_reply_err(req, -rc);
	else if (size == 0)
		fuse_reply_xattr(req, len);
	else if (len > size)
		fuse_reply_err(req, ERANGE);
	else
		fuse_reply_buf(req, buf, len);
	free(buf);
}

/* ---- everything that would modify the file -------------------------------------- */

static void op_setattr(fuse_req_t req, fuse_ino_t ino, struct stat *attr, int to_set,
		       struct fuse_file_info *fi)
{
	h5fs *fs = fuse_req_userdata(req);

	(void)ino; (void)attr; (void)fi;
	/* datasets only grow by appending: truncate is not permitted */
	fuse_reply_err(req, (to_set & FUSE_SET_ATTR_SIZE) && fs_writable(fs) ? EPERM : EROFS);
}

static void op_mknod(fuse_req_t req, fuse_ino_t parent, const char *name, mode_t mode, dev_t rdev)
{
	(void)parent; (void)name; (void)mode; (void)rdev;
	fuse_reply_err(req, EROFS);
}

static void op_mkdir(fuse_req_t req, fuse_ino_t parent, const char *name, mode_t mode)
{
	(void)parent; (void)name; (void)mode;
	fuse_reply_err(req, EROFS);
}

static void op_unlink(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	(void)parent; (void)name;
	fuse_reply_err(req, EROFS);
}

static void op_symlink(fuse_req_t req, const char *link, fuse_ino_t parent, const char *name)
{
	(void)link; (void)parent; (void)name;
	fuse_reply_err(req, EROFS);
}

static void op_rename(fuse_req_t req, fuse_ino_t parent, const char *name, fuse_ino_t newparent,
		      const char *newname, unsigned int flags)
{
	(void)parent; (void)name; (void)newparent; (void)newname; (void)flags;
	fuse_reply_err(req, EROFS);
}

static void op_link(fuse_req_t req, fuse_ino_t ino, fuse_ino_t newparent, const char *newname)
{
	(void)ino; (void)newparent; (void)newname;
	fuse_reply_err(req, EROFS);
}

static void op_create(fuse_req_t req, fuse_ino_t parent, const char *name, mode_t mode,
		      struct fuse_file_info *fi)
{
	(void)parent; (void)name; (void)mode; (void)fi;
	fuse_reply_err(req, EROFS);
}

/* Attributes are read-only in this version whatever the mount mode:
 * ENOTSUP says "this filesystem cannot do that" rather than "mounted ro". */
static void op_setxattr(fuse_req_t req, fuse_ino_t ino, const char *name, const char *value,
			size_t size, int flags)
{
	(void)ino; (void)name; (void)value; (void)size; (void)flags;
	fuse_reply_err(req, ENOTSUP);
}

static void op_removexattr(fuse_req_t req, fuse_ino_t ino, const char *name)
{
	(void)ino; (void)name;
	fuse_reply_err(req, ENOTSUP);
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
