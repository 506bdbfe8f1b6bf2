/* related.c - files reached from FILE: the targets of external links and
 * the source files of virtual datasets.
 *
 * They are opened read-only on first use and kept in one table per top
 * file (the one that was mounted), found again by device and inode, so a
 * link back to FILE or to an already open file gives the same h5_file and
 * its objects keep one identity. They read through views of the top
 * file's cache: one budget for all files. Unreferenced files stay open
 * until more than RELATED_IDLE_MAX of them are idle; then the least
 * recently used is closed.
 *
 * Each file reached gets a number for its objects' inode numbers
 * (h5_file_id): its path's own (a hash of its real path or URL), so that
 * the numbers do not depend on the order the files were reached in (a
 * collection's index records a member's tree in one order and serves it
 * to a mount that reaches the files in another); only a file whose home
 * number another file of the same table holds takes the next free one
 * (h5_related_info.home says so): related_ids.c.
 *
 * Names are resolved as libhdf5 does (H5F_prefix_open_file): an absolute
 * name as it is; then each prefix of HDF5_EXT_PREFIX (external links) or
 * HDF5_VDS_PREFIX (virtual datasets) and of -o ext_prefix= ("${ORIGIN}" is
 * the directory of the file holding the link); then the directory of that
 * file. libhdf5 would then also try the current directory; a daemon has
 * none worth trying. Unlike libhdf5, a file outside the top file's
 * directory tree is refused unless -o ext_any: a hostile file must not
 * make a daemon running as root read any file. Candidates are opened by
 * the kernel beneath the tree's directory as opened at mount (beneath.c:
 * no symlink or ".." leading out, nothing a rename after the check could
 * redirect), and the descriptor opened is the file used.
 */
#define _GNU_SOURCE /* O_PATH */
#include "base.h"
#include "file.h"
#include "related.h"
#include "h5util.h"
#include "beneath.h"

#include <errno.h>
#include <fcntl.h>
#include <unistd.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#define RELATED_IDLE_MAX 32
#define NOFD_TRIES 8            /* opens tried again after the gate made room */

typedef struct rel_ent {
	char *path;             /* real path */
	dev_t dev;
	ino_t ino;
	h5_file *f;
	unsigned refs;
	uint64_t used;          /* clock of the last release */
} rel_ent;

/* Guards the creation of a top file's table (once per file). */
static pthread_mutex_t init_lock = PTHREAD_MUTEX_INITIALIZER;

struct h5_related {
	pthread_mutex_t lock;
	char *root_dir;         /* real path of the top file's directory */
	int root_fd;            /* that directory, opened (-1: remote) */
	bool own_root_fd;       /* opened here, not the mount's (h5_file.dir_fd) */
	rel_ent *ent;
	size_t n, cap;
	uint64_t clock;
	size_t idle_max;        /* idle files kept open (h5_open_opts.related_idle) */
	/* every file ever reached keeps its number (related_ids.c), so a
	 * file closed while idle and opened again gives its objects the same
	 * inode numbers, and every file reached is listed */
	struct rel_ids ids;
};

static int related_init(h5_file *top)
{
	struct h5_related *r;
	char *real, *slash;

	if (top->related)
		return 0;
	if (!top->real_path && !top->remote.cls)
		return h5_err_set(H5_ERR_UNSUPPORTED, "other files are only followed from a local or remote FILE");
	if (top->ext_root) {
		/* a collection's tree (h5_open_opts.ext_root): its real path */
		real = realpath(top->ext_root, NULL);
		if (!real)
			return h5_err_set(H5_ERR_IO, "%s: %s", top->ext_root, strerror(errno));
	} else {
		/* a remote FILE's "directory" is its URL up to the last '/' */
		real = strdup(top->real_path ? top->real_path : top->path);
		if (!real)
			return h5_err_set(H5_ERR_NOMEM, "out of memory");
		slash = strrchr(real, '/');
		if (slash == real)
			slash[1] = 0;
		else if (slash)
			*slash = 0;
	}
	r = calloc(1, sizeof(*r));
	if (!r) {
		free(real);
		return h5_err_set(H5_ERR_NOMEM, "out of memory");
	}
	pthread_mutex_init(&r->lock, NULL);
	r->root_dir = real;
	r->root_fd = -1;
	if ((top->real_path || top->ext_root) && top->dir_fd >= 0) {
		/* FILE's folder, or a collection's tree, taken at mount */
		r->root_fd = top->dir_fd;
	} else if (top->real_path || top->ext_root) {
		int rc = h5_open_path(&r->root_fd, real, O_PATH | O_DIRECTORY);

		r->own_root_fd = r->root_fd >= 0;
		if (rc != 0) {
			if (rc == H5_BENEATH_MISSING)
				rc = h5_err_set(H5_ERR_IO, "%s: %s", real, strerror(errno));
			free(real);
			free(r);
			return rc;
		}
	}
	r->idle_max = top->related_idle > 0 ? (size_t)top->related_idle : top->related_idle < 0 ? 0 : RELATED_IDLE_MAX;
	__atomic_store_n(&top->related, r, __ATOMIC_RELEASE);   /* h5_related_changed */
	return 0;
}

/* h5_file_open of another file for top (fd >= 0: the descriptor a local
 * one was found at, then owned here), through top's descriptor gate
 * (h5_open_opts.fd_gate; gated: asked already, before fd was opened).
 * On failure the gate is told the file is not kept. */
static int rel_file_open(h5_file **f, h5_file *top, int fd, const char *name, const h5_open_opts *o, bool gated)
{
	int rc;

	if (top->fd_gate && !gated) {
		rc = top->fd_gate(top->fd_gate_ud, H5_GATE_TAKE);
		if (rc < 0) {
			if (fd >= 0)
				close(fd);
			return h5_err_wrap(rc, "%.200s: ", name);
		}
	}
	rc = fd >= 0 ? h5_file_open_fd(f, fd, name, o) : h5_file_open(f, name, o);
	if (rc < 0 && top->fd_gate)
		top->fd_gate(top->fd_gate_ud, H5_GATE_GIVE);
	return rc;
}

static void rel_file_close(h5_file *top, h5_file *f)
{
	if (!f)
		return;
	h5_file_close(f);
	if (top->fd_gate)
		top->fd_gate(top->fd_gate_ud, H5_GATE_GIVE);
}

void h5_related_free(h5_file *top)
{
	struct h5_related *r = top->related;

	if (!r)
		return;
	for (size_t i = 0; i < r->n; i++) {
		rel_file_close(top, r->ent[i].f);
		free(r->ent[i].path);
	}
	free(r->ent);
	rel_ids_free(&r->ids);
	if (r->own_root_fd)
		close(r->root_fd);
	free(r->root_dir);
	pthread_mutex_destroy(&r->lock);
	free(r);
	top->related = NULL;
}

int h5_related_changed(h5_file *top)
{
	struct h5_related *r;
	int m = 0;

	/* the table is made on first use (related_init): asked on every read
	 * of a live mount, so no lock for a file that has none */
	r = __atomic_load_n(&top->related, __ATOMIC_ACQUIRE);
	if (!r)
		return 0;
	pthread_mutex_lock(&r->lock);
	for (size_t i = 0; i < r->n; i++)
		if (r->ent[i].f && r->ent[i].f != top)
			m |= h5_file_changed(r->ent[i].f, r->ent[i].path);
	pthread_mutex_unlock(&r->lock);
	return m;
}

void h5_file_related_each(h5_file *top, void (*fn)(void *arg, const char *path), void *arg)
{
	struct h5_related *r = __atomic_load_n(&top->related, __ATOMIC_ACQUIRE);

	if (!r)
		return;
	pthread_mutex_lock(&r->lock);
	for (size_t i = 0; i < r->n; i++)
		if (r->ent[i].f && r->ent[i].f != top && r->ent[i].path && r->ent[i].path[0] == '/')
			fn(arg, r->ent[i].path);
	pthread_mutex_unlock(&r->lock);
}

int h5_file_related_reached(h5_file *top, int (*fn)(void *arg, const h5_related_info *ri), void *arg)
{
	struct h5_related *r = __atomic_load_n(&top->related, __ATOMIC_ACQUIRE);
	int rc = 0;

	if (!r)
		return 0;
	pthread_mutex_lock(&r->lock);
	rc = rel_ids_each(&r->ids, fn, arg);
	pthread_mutex_unlock(&r->lock);
	return rc;
}

/* One candidate, opened: 1 when it does not exist (or is no regular
 * file), 0 with *fd and *real (what was opened) when it may be used,
 * H5_ERR_PERM when it lies outside the tree (or a symlink or ".." on its
 * way leads out). */
static int try_candidate(int *fd, char **real, const h5_file *top, const char *cand, bool any)
{
	const struct h5_related *r = top->related;
	const char *rel = cand[0] == '/' ? h5_path_beneath(cand, r->root_dir) : NULL;
	struct stat st;
	int d = -1, rc;

	*fd = -1;
	*real = NULL;
	if (any) {
		/* -o ext_any: any path, through io/ as every open */
		rc = h5_open_path(&d, cand, O_RDONLY | O_NONBLOCK);
		if (rc == H5_ERR_NOFD)
			return rc;
		if (rc != 0) {
			h5_err_clear();
			return 1;
		}
	} else if (!rel || r->root_fd < 0) {
		if (stat(cand, &st) < 0 || !S_ISREG(st.st_mode))
			return 1;
		return h5_err_set(H5_ERR_PERM, "\"%.200s\" lies outside the directory of FILE: not followed "
				  "(mount with -o ext_any to allow)", cand);
	} else {
		rc = h5_open_beneath(&d, r->root_fd, rel, O_RDONLY | O_NONBLOCK);
		if (rc != 0)
			return rc == H5_BENEATH_MISSING ? 1 : rc;
	}
	if (fstat(d, &st) < 0 || !S_ISREG(st.st_mode)) {
		close(d);
		return 1;
	}
	*real = h5_fd_real_path(d);
	if (!*real && !(*real = strdup(cand))) {
		close(d);
		return h5_err_set(H5_ERR_NOMEM, "out of memory");
	}
	*fd = d;
	return 0;
}

/* Try each prefix of a ':'-separated list. */
static int try_prefixes(int *fd, char **real, const h5_file *top, const char *list, const char *origin, size_t olen,
			const char *name, bool *refused)
{
	const char *p = list;

	while (p && *p) {
		size_t len = strcspn(p, ":");
		char *dir, *cand;
		int rc;

		if (len == 9 && memcmp(p, "${ORIGIN}", 9) == 0)
			dir = strndup(origin, olen);
		else if (len >= 9 && memcmp(p, "${ORIGIN}", 9) == 0) {
			dir = malloc(olen + len - 9 + 1);
			if (dir) {
				memcpy(dir, origin, olen);
				memcpy(dir + olen, p + 9, len - 9);
				dir[olen + len - 9] = 0;
			}
		} else {
			dir = strndup(p, len);
		}
		if (!dir)
			return h5_err_set(H5_ERR_NOMEM, "out of memory");
		cand = len ? h5_path_join(dir, name) : strdup(name);
		free(dir);
		if (!cand)
			return h5_err_set(H5_ERR_NOMEM, "out of memory");
		rc = try_candidate(fd, real, top, cand, top->ext_any);
		free(cand);
		/* no descriptor left is no missing file (a virtual dataset's
		 * source taken for missing reads as its fill value) */
		if (rc == 0 || rc == H5_ERR_NOFD)
			return rc;
		if (rc == H5_ERR_PERM)
			*refused = true;
		p += len;
		if (*p == ':')
			p++;
	}
	return 1;
}

static int resolve(int *fd, char **real, const h5_file *top, const h5_file *from, const char *name, int kind)
{
	const char *env = getenv((kind & H5_RELATED_VDS) ? "HDF5_VDS_PREFIX" : "HDF5_EXT_PREFIX");
	const char *fpath = from->real_path ? from->real_path : "";
	const char *slash = strrchr(fpath, '/');
	size_t olen = slash ? (size_t)(slash - fpath) : 1;
	const char *origin = slash ? fpath : ".";
	const char *base = name;
	bool refused = false;
	char *cand;
	int rc;

	if (name[0] == '/') {
		rc = try_candidate(fd, real, top, name, top->ext_any);
		if (rc <= 0 && rc != H5_ERR_PERM)
			return rc;
		refused = rc == H5_ERR_PERM;
		/* then the name without its directory, as libhdf5 does */
		base = strrchr(name, '/') + 1;
		if (!*base)
			goto missing;
	}
	if ((rc = try_prefixes(fd, real, top, env, origin, olen, base, &refused)) <= 0)
		return rc;
	if ((rc = try_prefixes(fd, real, top, top->ext_prefix, origin, olen, base, &refused)) <= 0)
		return rc;
	cand = h5_path_join_n(origin, olen, base, strlen(base));
	if (!cand)
		return h5_err_set(H5_ERR_NOMEM, "out of memory");
	rc = try_candidate(fd, real, top, cand, top->ext_any);
	free(cand);
	if (rc <= 0 && rc != H5_ERR_PERM)
		return rc;
	refused = refused || rc == H5_ERR_PERM;
missing:
	if (refused)
		return h5_err_set(H5_ERR_PERM, "\"%.200s\" lies outside the directory of FILE: not followed "
				  "(mount with -o ext_any to allow)", name);
	return 1;
}

/* Close the least recently used idle files beyond the allowance (lock held;
 * the files are returned to close outside it). */
static size_t trim_idle(struct h5_related *r, h5_file **dead, size_t max)
{
	size_t idle = 0, nd = 0;

	for (size_t i = 0; i < r->n; i++)
		idle += r->ent[i].refs == 0;
	while (idle > r->idle_max && nd < max) {
		size_t lru = SIZE_MAX;

		for (size_t i = 0; i < r->n; i++)
			if (r->ent[i].refs == 0 && (lru == SIZE_MAX || r->ent[i].used < r->ent[lru].used))
				lru = i;
		dead[nd++] = r->ent[lru].f;
		free(r->ent[lru].path);
		r->ent[lru] = r->ent[--r->n];
		idle--;
	}
	return nd;
}

/* ---- related files of a remote FILE ------------------------------------------
 * The class that opened the file naming them says where they are (its
 * resolve op: source_http.c joins the name to the directory of the URL,
 * for s3:// too), and they are opened with the same options (credentials,
 * endpoint). A file the server does not have (404) is missing: a
 * dangling link, or fill values for a virtual dataset. */

static int remote_open(h5_file **out, h5_file *top, h5_file *from, const char *name)
{
	struct h5_related *r = top->related;
	h5_file *f = NULL, *dead[4];
	char *url = NULL;
	size_t nd;
	uint32_t id = 0;
	int rc;
	/* the class of the file naming it says where it is */
	const h5_source_class *cls = from->remote.cls ? from->remote.cls : top->remote.cls;

	if (!cls->resolve)
		return h5_err_set(H5_ERR_UNSUPPORTED, "%s: its files name no other files", cls->name);
	rc = cls->resolve(&url, name, from->path, top->ext_any);
	if (rc != 0)
		return rc;
	pthread_mutex_lock(&r->lock);
	if (strcmp(url, top->path) == 0) {
		pthread_mutex_unlock(&r->lock);
		free(url);
		*out = top;
		return 0;
	}
	for (size_t i = 0; i < r->n; i++)
		if (strcmp(r->ent[i].path, url) == 0) {
			r->ent[i].refs++;
			*out = r->ent[i].f;
			pthread_mutex_unlock(&r->lock);
			free(url);
			return 0;
		}
	if (r->n == r->cap) {
		size_t nc = r->cap ? r->cap * 2 : 8;
		rel_ent *p = realloc(r->ent, nc * sizeof(*p));

		if (!p) {
			rc = h5_err_set(H5_ERR_NOMEM, "out of memory");
			goto out;
		}
		r->ent = p;
		r->cap = nc;
	}
	/* Opened under the lock: two threads never open one file twice. */
	{
		h5_open_opts o = { 0 };

		o.efl_any = top->efl_any;
		o.ext_any = top->ext_any;
		o.ctx = top->ctx;
		o.source_params = (const char *const *)top->remote.params;
		o.cache_bytes = top->remote.cache_bytes;
		rc = rel_file_open(&f, top, -1, url, &o, false);
	}
	if (rc == H5_ERR_NOTFOUND) {
		h5_err_clear();
		rc = 1;                 /* the server has no such file */
		goto out;
	}
	if (rc < 0) {
		h5_err_wrap(rc, "%.200s: ", name);
		goto out;
	}
	rc = rel_ids_number(&id, &r->ids, NULL, NULL, url);
	if (rc < 0)
		goto out;
	f->top = top;
	f->file_id = id;
	r->ent[r->n++] = (rel_ent){ .path = url, .f = f, .refs = 1 };
	url = NULL;
	*out = f;
	f = NULL;
out:
	nd = rc == 0 ? trim_idle(r, dead, 4) : 0;
	pthread_mutex_unlock(&r->lock);
	for (size_t i = 0; i < nd; i++)
		rel_file_close(top, dead[i]);
	rel_file_close(top, f);         /* opened, but not kept */
	free(url);
	return rc;
}

/* A local related file (h5_related_open). The gate was asked for one
 * descriptor before the candidates were opened; *took: it was handed on
 * (the file kept, or rel_file_open gave it back). */
static int local_open(h5_file **out, h5_file *top, h5_file *from, const char *name, int kind, bool *took)
{
	struct h5_related *r = top->related;
	struct stat st;
	char *real = NULL;
	h5_file *f = NULL, *dead[4];
	size_t nd = 0;
	uint32_t id = 0;
	int fd = -1, rc;

	/* Out of descriptors: the gate (a collection) closes an idle file
	 * and the open is tried again, a few times */
	for (int tries = 0;; tries++) {
		rc = resolve(&fd, &real, top, from, name, kind);
		if (rc != H5_ERR_NOFD || !top->fd_gate || tries == NOFD_TRIES ||
		    top->fd_gate(top->fd_gate_ud, H5_GATE_SHED) < 0)
			break;
	}
	if (rc != 0)
		return rc;
	if (fstat(fd, &st) < 0) {
		close(fd);
		free(real);
		return 1;
	}
	pthread_mutex_lock(&r->lock);
	/* FILE itself (the descriptor mounted, whatever its name leads to now) */
	if (top->real_path) {
		struct stat tst;

		if (fstat(h5_file_fd(top), &tst) == 0 && tst.st_dev == st.st_dev && tst.st_ino == st.st_ino) {
			pthread_mutex_unlock(&r->lock);
			close(fd);
			free(real);
			*out = top;
			return 0;
		}
	}
	for (size_t i = 0; i < r->n; i++)
		if (r->ent[i].dev == st.st_dev && r->ent[i].ino == st.st_ino) {
			r->ent[i].refs++;
			*out = r->ent[i].f;
			pthread_mutex_unlock(&r->lock);
			close(fd);
			free(real);
			return 0;
		}
	rc = rel_ids_number(&id, &r->ids, &st, real, NULL);
	if (rc < 0) {
		pthread_mutex_unlock(&r->lock);
		close(fd);
		free(real);
		return rc;
	}
	/* Opened under the lock: two threads never open one file twice. */
	{
		h5_open_opts o = { 0 };

		o.efl_any = top->efl_any;
		o.ctx = top->ctx;
		*took = true;
		rc = rel_file_open(&f, top, fd, real, &o, true);        /* fd: f's now */
	}
	if (rc < 0) {
		pthread_mutex_unlock(&r->lock);
		h5_err_wrap(rc, "%.200s: ", name);
		free(real);
		return rc;
	}
	f->top = top;
	f->file_id = id;
	if (r->n == r->cap) {
		size_t nc = r->cap ? r->cap * 2 : 8;
		rel_ent *p = realloc(r->ent, nc * sizeof(*p));

		if (!p) {
			pthread_mutex_unlock(&r->lock);
			rel_file_close(top, f);
			free(real);
			return h5_err_set(H5_ERR_NOMEM, "out of memory");
		}
		r->ent = p;
		r->cap = nc;
	}
	r->ent[r->n++] = (rel_ent){ .path = real, .dev = st.st_dev, .ino = st.st_ino, .f = f, .refs = 1 };
	nd = trim_idle(r, dead, 4);
	pthread_mutex_unlock(&r->lock);
	for (size_t i = 0; i < nd; i++)
		rel_file_close(top, dead[i]);
	*out = f;
	return 0;
}

int h5_related_open(h5_file **out, h5_file *from, const char *name, int kind)
{
	h5_file *top = from->top ? from->top : from;
	bool took = false;
	int rc;

	*out = NULL;
	if (!name || !*name)
		return h5_err_set(H5_ERR_FORMAT, "empty file name");
	pthread_mutex_lock(&init_lock);
	rc = related_init(top);
	pthread_mutex_unlock(&init_lock);
	if (rc < 0)
		return rc;
	if (top->remote.cls)
		return remote_open(out, top, from, name);
	/* asked before any candidate is opened: a collection's count of
	 * open descriptors (-o max_files) holds at every moment */
	if (top->fd_gate &&
	    (rc = top->fd_gate(top->fd_gate_ud, (kind & H5_RELATED_NOWAIT) ? H5_GATE_TRY : H5_GATE_TAKE)) < 0)
		return h5_err_wrap(rc, "%.200s: ", name);
	rc = local_open(out, top, from, name, kind, &took);
	if (!took && top->fd_gate)
		top->fd_gate(top->fd_gate_ud, H5_GATE_GIVE);
	return rc;
}

int h5_related_open_data(int *fd, h5_file *from, const char *name)
{
	h5_file *top = from->top ? from->top : from;
	char *cand = NULL, *real = NULL;
	const char *slash;
	int rc;

	*fd = -1;
	if (!from->real_path)
		return h5_err_set(H5_ERR_UNSUPPORTED, "external data files are only read next to a local FILE");
	pthread_mutex_lock(&init_lock);
	rc = related_init(top);
	pthread_mutex_unlock(&init_lock);
	if (rc < 0)
		return rc;
	/* beside the file naming it (its real place: the daemon has left the
	 * directory it was started in), an absolute name as it is */
	slash = strrchr(from->real_path, '/');
	cand = name[0] == '/' ? strdup(name)
			      : h5_path_join_n(from->real_path, slash > from->real_path ? (size_t)(slash - from->real_path) : 1,
					       name, strlen(name));
	if (!cand)
		return h5_err_set(H5_ERR_NOMEM, "out of memory");
	/* external data files follow -o efl_any, not -o ext_any */
	rc = try_candidate(fd, &real, top, cand, top->efl_any);
	if (rc == 1)
		rc = h5_err_set(H5_ERR_IO, "%.200s: missing, or not a regular file", cand);
	free(real);
	free(cand);
	return rc;
}

void h5_related_release(h5_file *f)
{
	h5_file *top, *dead[4];
	struct h5_related *r;
	size_t nd;

	if (!f || !f->top)
		return;         /* FILE itself is never closed here */
	top = f->top;
	r = top->related;
	pthread_mutex_lock(&r->lock);
	for (size_t i = 0; i < r->n; i++)
		if (r->ent[i].f == f && r->ent[i].refs > 0) {
			r->ent[i].refs--;
			r->ent[i].used = ++r->clock;
			break;
		}
	nd = trim_idle(r, dead, 4);
	pthread_mutex_unlock(&r->lock);
	for (size_t i = 0; i < nd; i++)
		rel_file_close(top, dead[i]);
}

/* ---- paths inside a file, links followed as libhdf5 follows them ------------ */

/* libhdf5's default limit of soft and external link traversals per path
 * (H5L_NUM_LINKS, the link access property "nlinks"): a loop of links ends
 * there as an error, as in libhdf5. */
#define LINK_HOPS_MAX 16

/* Where a walk stands: a group or object of file f (a reference held),
 * and the path by which it was reached in f ("" for the root). */
struct walk_at {
	h5_file *f;
	uint64_t addr;
	char *path;
};

static int walk_hop(unsigned *hops, const char *path)
{
	if (++*hops > LINK_HOPS_MAX)
		return h5_err_set(H5_ERR_LOOP, "more than %d soft or external links resolving \"%.200s\" "
				  "(a loop of links?)", LINK_HOPS_MAX, path);
	return 0;
}

/* Move `at` to `to` (taking over its reference and path). */
static void walk_move(struct walk_at *at, struct walk_at *to)
{
	h5_file_release_related(at->f);
	free(at->path);
	*at = *to;
	memset(to, 0, sizeof(*to));
}

static int walk_path(struct walk_at *out, const struct walk_at *from, const char *path, bool ext,
		     unsigned *hops);

/* Follow link l found in the group at `at`: soft links in the same file
 * (absolute, or relative to that group), external links (when ext) from
 * the root of the file they name. */
static int walk_link(struct walk_at *out, const struct walk_at *at, const h5_link *l, bool ext,
		     unsigned *hops)
{
	struct walk_at top = { 0 };
	h5_file *g = NULL;
	int rc;

	memset(out, 0, sizeof(*out));
	if (l->type == H5_LINK_SOFT && l->target) {
		rc = walk_hop(hops, l->target);
		if (rc < 0)
			return rc;
		return walk_path(out, at, l->target, ext, hops);
	}
	if (l->type != H5_LINK_EXTERNAL || !l->ext_file || !l->ext_path)
		return h5_err_set(H5_ERR_NOTFOUND, "link \"%.200s\" of type %d cannot be followed",
				  l->name ? l->name : "", (int)l->type);
	if (!ext)
		return h5_err_set(H5_ERR_NOTFOUND, "\"%.200s\" is an external link", l->name ? l->name : "");
	rc = walk_hop(hops, l->ext_path);
	if (rc < 0)
		return rc;
	rc = h5_related_open(&g, at->f, l->ext_file, H5_RELATED_EXT);
	if (rc == 1)
		return h5_err_set(H5_ERR_NOTFOUND, "file not found: %.200s", l->ext_file);
	if (rc < 0)
		return rc;
	top.f = g;
	top.addr = g->root_addr;
	top.path = (char *)"";
	rc = walk_path(out, &top, l->ext_path, ext, hops);
	h5_related_release(g);
	/* each hop of a chain names itself, but a loop would name one hop 16
	 * times: h5_link_follow names the first */
	if (rc < 0 && rc != H5_ERR_LOOP)
		return h5_err_wrap(rc, "%s::%s: ", l->ext_file, l->ext_path);
	return rc;
}

/* Walk path from the group `from` (absolute paths from its file's root):
 * 0 and *out, whose reference and path the caller releases. */
static int walk_path(struct walk_at *out, const struct walk_at *from, const char *path, bool ext,
		     unsigned *hops)
{
	struct walk_at at = { 0 }, next = { 0 };
	const char *p = path;
	h5_link l;
	int rc = 0;

	memset(out, 0, sizeof(*out));
	memset(&l, 0, sizeof(l));
	at.f = from->f;
	h5_file_hold_related(at.f);
	at.addr = path[0] == '/' ? from->f->root_addr : from->addr;
	at.path = strdup(path[0] == '/' ? "" : from->path);
	if (!at.path) {
		rc = h5_err_set(H5_ERR_NOMEM, "out of memory");
		goto out;
	}
	while (*p) {
		size_t len = strcspn(p, "/");
		char *comp;

		if (len == 0 || (len == 1 && p[0] == '.')) {
			p += len + (p[len] == '/');
			continue;
		}
		comp = strndup(p, len);
		if (!comp) {
			rc = h5_err_set(H5_ERR_NOMEM, "out of memory");
			goto out;
		}
		h5_link_clear(&l);
		rc = h5_group_lookup(&l, at.f, at.addr, comp);
		free(comp);
		if (rc < 0)
			goto out;
		if (l.type == H5_LINK_HARD) {
			char *np = h5_path_join_n(at.path, strlen(at.path), p, len);

			if (!np) {
				rc = h5_err_set(H5_ERR_NOMEM, "out of memory");
				goto out;
			}
			free(at.path);
			at.path = np;
			at.addr = l.addr;
		} else {
			rc = walk_link(&next, &at, &l, ext, hops);
			if (rc < 0)
				goto out;
			walk_move(&at, &next);
		}
		p += len + (p[len] == '/');
	}
	*out = at;
	memset(&at, 0, sizeof(at));
out:
	h5_link_clear(&l);
	h5_file_release_related(at.f);
	free(at.path);
	return rc;
}

int h5_path_lookup(uint64_t *addr, h5_file *f, const char *path)
{
	struct walk_at top = { f, f->root_addr, (char *)"" }, at;
	unsigned hops = 0;
	int rc = walk_path(&at, &top, path, false, &hops);

	if (rc < 0)
		return rc;
	*addr = at.addr;
	h5_file_release_related(at.f);
	free(at.path);
	return 0;
}

int h5_path_lookup_from(uint64_t *addr, h5_file *f, uint64_t group, const char *path)
{
	struct walk_at from = { f, group, (char *)"" }, at;
	unsigned hops = 0;
	int rc = walk_path(&at, &from, path, false, &hops);

	if (rc < 0)
		return rc;
	*addr = at.addr;
	h5_file_release_related(at.f);
	free(at.path);
	return 0;
}

int h5_link_follow(h5_file **gf, uint64_t *addr, char **fpath, h5_file *from, const h5_link *l)
{
	struct walk_at at = { from, 0, (char *)"" }, out;
	unsigned hops = 0;
	int rc;

	*gf = NULL;
	*fpath = NULL;
	if (l->type == H5_LINK_SOFT && (!l->target || l->target[0] != '/'))
		return h5_err_set(H5_ERR_INVAL, "only absolute soft links are followed from their file's root");
	rc = walk_link(&out, &at, l, true, &hops);
	if (rc == H5_ERR_LOOP && l->type == H5_LINK_EXTERNAL)
		return h5_err_wrap(rc, "%s::%s: ", l->ext_file, l->ext_path);
	if (rc < 0)
		return rc;
	*gf = out.f;
	*addr = out.addr;
	*fpath = out.path[0] ? out.path : NULL;
	if (!*fpath) {
		free(out.path);
		*fpath = strdup("/");
		if (!*fpath) {
			h5_file_release_related(*gf);
			*gf = NULL;
			return h5_err_set(H5_ERR_NOMEM, "out of memory");
		}
	}
	return 0;
}

/* ---- public wrappers ---------------------------------------------------------- */

int h5_file_open_related(h5_file **out, h5_file *from, const char *name)
{
	return h5_related_open(out, from, name, H5_RELATED_EXT);
}

void h5_file_release_related(h5_file *f)
{
	h5_related_release(f);
}

void h5_file_hold_related(h5_file *f)
{
	struct h5_related *r;

	if (!f || !f->top)
		return;
	r = f->top->related;
	pthread_mutex_lock(&r->lock);
	for (size_t i = 0; i < r->n; i++)
		if (r->ent[i].f == f) {
			r->ent[i].refs++;
			break;
		}
	pthread_mutex_unlock(&r->lock);
}

uint32_t h5_file_id(const h5_file *f)
{
	return f->file_id;
}
