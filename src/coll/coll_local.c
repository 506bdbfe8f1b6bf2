/* coll_local.c - the local-DIR collection backend (coll_backend.h): the
 * directory is held open and every path is reached from it with openat
 * and fstatat, so a DIR renamed while mounted is still the one shown. */
#include "coll_backend.h"
#include "h5util.h"
#include "h5errno.h"
#include "beneath.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

struct local {
	int dfd;                /* DIR */
	char *dir;              /* its real path: members open by it */
};

static bool local_matches(const char *spec)
{
	(void)spec;
	return true;
}

static int local_open(void **out, const char *spec, const h5_open_opts *oo)
{
	struct local *l = calloc(1, sizeof(*l));

	(void)oo;
	*out = NULL;
	if (!l)
		return ENOMEM;
	l->dfd = open(spec, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	l->dir = realpath(spec, NULL);
	if (l->dfd < 0 || !l->dir) {
		int e = errno ? errno : ENOMEM;

		if (l->dfd >= 0)
			close(l->dfd);
		free(l->dir);
		free(l);
		return e;
	}
	*out = l;
	return 0;
}

static void local_close(void *b)
{
	struct local *l = b;

	if (!l)
		return;
	close(l->dfd);
	free(l->dir);
	free(l);
}

static const char *rel(const char *path)
{
	return *path ? path : ".";
}

static void stat_of(struct coll_stat *cs, const struct stat *st)
{
	memset(cs, 0, sizeof(*cs));
	cs->is_dir = S_ISDIR(st->st_mode);
	cs->is_file = S_ISREG(st->st_mode);
	cs->size = (uint64_t)st->st_size;
	cs->mtime_ns = (int64_t)st->st_mtim.tv_sec * 1000000000LL + st->st_mtim.tv_nsec;
	cs->mode = st->st_mode & 07777;
	cs->uid = st->st_uid;
	cs->gid = st->st_gid;
	cs->ctime_ns = (int64_t)st->st_ctim.tv_sec * 1000000000LL + st->st_ctim.tv_nsec;
	cs->ino = (uint64_t)st->st_ino;
	cs->dev = (uint64_t)st->st_dev;
}

/* Symlinks in DIR are followed (stat, not lstat), as a user listing DIR
 * sees them; one leading nowhere is left out. */
static int local_stat(void *b, struct coll_stat *cs, const char *path)
{
	struct local *l = b;
	struct stat st;

	if (fstatat(l->dfd, rel(path), &st, 0) != 0)
		return errno;
	stat_of(cs, &st);
	return 0;
}

/* stamp false: a regular file by its d_type alone (no fstatat: a
 * thousand members were a thousand system calls before any was opened,
 * bench/README.md, issue 45); symlinks, folders and unknown types
 * stat'ed as always. */
static int list(void *b, struct coll_dirent **out, size_t *n, const char *path, bool stamp)
{
	struct local *l = b;
	struct coll_dirent *v = NULL;
	size_t cap = 0;
	struct dirent *de;
	DIR *d;
	int fd, e = 0;

	*out = NULL;
	*n = 0;
	fd = openat(l->dfd, rel(path), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return errno;
	d = fdopendir(fd);
	if (!d) {
		e = errno;
		close(fd);
		return e;
	}
	while ((errno = 0, de = readdir(d)) != NULL) {
		struct stat st;
		bool bare = !stamp && de->d_type == DT_REG;

		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
			continue;
		if (!bare && fstatat(dirfd(d), de->d_name, &st, 0) != 0)
			continue;       /* gone meanwhile, or a dangling symlink */
		if (*n == cap) {
			size_t ncap = cap ? cap * 2 : 64;
			struct coll_dirent *nv = realloc(v, ncap * sizeof(*nv));

			if (!nv) {
				e = ENOMEM;
				break;
			}
			v = nv;
			cap = ncap;
		}
		if (bare) {
			memset(&v[*n].st, 0, sizeof(v[*n].st));
			v[*n].st.is_file = true;
			v[*n].st.unstamped = true;
		} else {
			stat_of(&v[*n].st, &st);
		}
		v[*n].name = strdup(de->d_name);
		if (!v[*n].name) {
			e = ENOMEM;
			break;
		}
		(*n)++;
	}
	if (!e && errno)
		e = errno;
	closedir(d);
	if (e) {
		coll_dirents_free(v, *n);
		*n = 0;
		return e;
	}
	*out = v;
	return 0;
}

static int local_list(void *b, struct coll_dirent **out, size_t *n, const char *path)
{
	return list(b, out, n, path, true);
}

static int local_list_kinds(void *b, struct coll_dirent **out, size_t *n, const char *path)
{
	return list(b, out, n, path, false);
}

static char *full_path(const struct local *l, const char *path)
{
	return h5_path_join(l->dir, path);
}

static int local_open_source(void *b, h5_source **out, const char *path)
{
	h5_source_opts so;
	char *p;
	int rc;

	*out = NULL;
	/* the errno of a file gone or unreadable (the source says EIO) */
	if (faccessat(((struct local *)b)->dfd, rel(path), R_OK, 0) != 0)
		return errno;
	p = full_path(b, path);
	if (!p)
		return ENOMEM;
	memset(&so, 0, sizeof(so));
	rc = h5_source_open(out, p, &so);
	free(p);
	return rc < 0 ? h5fs_errno(rc) : 0;
}

/* The member opened from DIR's descriptor when no symlink is on its way:
 * its real path is then DIR's and its name, and the engine need not ask
 * the kernel (a readlink of /proc per member; bench/README.md, issue 45).
 * Otherwise (a symlink, no openat2) by its path, as the kernel resolves it. */
static int open_member_file(struct local *l, h5_file **out, const char *path, const char *p, h5_open_opts *o)
{
	int fd;

	o->real_path = NULL;
	if (h5_open_nolinks(&fd, l->dfd, path, o->writable ? O_RDWR : O_RDONLY) != 0)
		return h5_file_open(out, p, o);
	o->real_path = p;
	return h5_file_open_fd(out, fd, p, o);
}

static int local_open_member(void *b, h5_file **out, const char *path, const h5_open_opts *oo)
{
	struct local *l = b;
	char *p = full_path(l, path);
	h5_open_opts o = *oo;
	int rc;

	*out = NULL;
	if (!p)
		return ENOMEM;
	/* read-write (appends) where the file may be written, as a single
	 * FILE is (main.c: with lazy_lock, locked only while writing); a
	 * source that still locks at open (no lazy_lock) and finds the file
	 * locked opens it read-only */
	o.writable = oo->writable && faccessat(l->dfd, rel(path), W_OK, 0) == 0;
	rc = open_member_file(l, out, path, p, &o);
	if (rc == H5_ERR_BUSY && o.writable) {
		o.writable = 0;
		rc = open_member_file(l, out, path, p, &o);
	}
	rc = coll_member_checked(out, rc);
	free(p);
	if (rc == H5_ERR_FORMAT || rc == H5_ERR_CHECKSUM || rc == H5_ERR_UNSUPPORTED || rc == H5_ERR_LOOP ||
	    rc == H5_ERR_LIMIT)
		return EBADMSG; /* the file's bytes, not the moment */
	if (rc == H5_ERR_NOFD)
		return EMFILE;  /* the caller may close idle files and try again */
	return rc == H5_ERR_NOTHDF5 ? EMEDIUMTYPE : rc < 0 ? EIO : 0;
}

static bool local_may_write(void *b, const char *path)
{
	return faccessat(((struct local *)b)->dfd, rel(path), W_OK, 0) == 0;
}

static const char *local_tree(void *b)
{
	return ((struct local *)b)->dir;
}

const struct coll_backend coll_local = {
	.name = "local",
	.matches = local_matches,
	.open = local_open,
	.close = local_close,
	.list = local_list,
	.list_kinds = local_list_kinds,
	.stat = local_stat,
	.open_source = local_open_source,
	.open_member = local_open_member,
	.may_write = local_may_write,
	.tree = local_tree,
};
