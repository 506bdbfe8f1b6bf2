/* fuse_meta_floor: the fastest a FUSE file system can take the metadata
 * calls of bench/meta_ops_bench.py (mkdir, setxattr, rmdir, create, rename,
 * link, unlink, utime) on this machine: one round trip each, the tree kept
 * in memory (names, modes, link counts, times; xattr values discarded, only
 * their count kept so a removexattr/getxattr could answer), nothing stored.
 * Whatever h5fs does per call (the change made in FILE, its commit) costs
 * on top of this.
 *
 * Set up as h5fs is: the same multithreaded low-level loop (floor_common.c),
 * default_permissions, entry and attribute timeouts of 1 s (h5fs's default
 * -o refresh), one mutex around the tree.
 *
 *   fuse_meta_floor MNT        (foreground; fusermount3 -u MNT)
 *
 * The root holds one directory, `g`, as the bench's fixture does.
 *
 * Built by bench/meta_ops_bench.py:
 *   cc -O2 fuse_meta_floor.c floor_common.c $(pkg-config --cflags --libs fuse3)
 */
#define _GNU_SOURCE
#include "floor_common.h"

#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define MAX_INO (1 << 18)
#define HBITS 18
#define NAMELEN 64

/* an inode; its names are `dent`s (hard links give one inode two) */
static struct ino {
	mode_t mode;
	unsigned nlink;
	struct timespec atime, mtime, ctime;
	unsigned nxattr;
} inos[MAX_INO];
static fuse_ino_t next_ino = 2;

/* a directory entry, hashed by (parent, name) with open chaining */
struct dent {
	struct dent *next;
	fuse_ino_t parent, ino;
	char name[NAMELEN];
};
static struct dent *hash[1u << HBITS];
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;

static unsigned hkey(fuse_ino_t parent, const char *name)
{
	uint32_t h = 2166136261u ^ (uint32_t)parent;

	for (; *name; name++)
		h = (h ^ (unsigned char)*name) * 16777619u;
	return h & ((1u << HBITS) - 1);
}

static struct dent **find(fuse_ino_t parent, const char *name)
{
	struct dent **p = &hash[hkey(parent, name)];

	for (; *p; p = &(*p)->next)
		if ((*p)->parent == parent && strcmp((*p)->name, name) == 0)
			return p;
	return p;
}

static int add(fuse_ino_t parent, const char *name, fuse_ino_t ino)
{
	struct dent **p = find(parent, name);
	struct dent *d;

	if (*p)
		return EEXIST;
	if (strlen(name) >= NAMELEN)
		return ENAMETOOLONG;
	d = calloc(1, sizeof(*d));
	if (!d)
		return ENOMEM;
	d->parent = parent;
	d->ino = ino;
	strcpy(d->name, name);
	*p = d;
	return 0;
}

static fuse_ino_t new_ino(mode_t mode)
{
	struct timespec now;
	fuse_ino_t ino;

	if (next_ino >= MAX_INO)
		return 0;
	ino = next_ino++;
	clock_gettime(CLOCK_REALTIME, &now);
	inos[ino] = (struct ino){ .mode = mode, .nlink = S_ISDIR(mode) ? 2 : 1, .atime = now, .mtime = now,
				  .ctime = now };
	return ino;
}

static void fill(fuse_ino_t ino, struct stat *st)
{
	memset(st, 0, sizeof(*st));
	st->st_ino = ino;
	st->st_mode = inos[ino].mode;
	st->st_nlink = inos[ino].nlink;
	st->st_uid = getuid();
	st->st_gid = getgid();
	st->st_atim = inos[ino].atime;
	st->st_mtim = inos[ino].mtime;
	st->st_ctim = inos[ino].ctime;
}

static void reply_entry(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	struct fuse_entry_param e;

	memset(&e, 0, sizeof(e));
	e.ino = ino;
	e.attr_timeout = e.entry_timeout = 1.0;
	fill(ino, &e.attr);
	if (fi)
		fuse_reply_create(req, &e, fi);
	else
		fuse_reply_entry(req, &e);
}

static void op_lookup(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	struct dent *d;

	pthread_mutex_lock(&mu);
	d = *find(parent, name);
	if (d)
		reply_entry(req, d->ino, NULL);
	else
		fuse_reply_err(req, ENOENT);
	pthread_mutex_unlock(&mu);
}

static void op_getattr(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	struct stat st;

	(void)fi;
	pthread_mutex_lock(&mu);
	fill(ino, &st);
	pthread_mutex_unlock(&mu);
	fuse_reply_attr(req, &st, 1.0);
}

static void op_setattr(fuse_req_t req, fuse_ino_t ino, struct stat *attr, int to_set, struct fuse_file_info *fi)
{
	struct timespec now;
	struct stat st;

	(void)fi;
	clock_gettime(CLOCK_REALTIME, &now);
	pthread_mutex_lock(&mu);
	if (to_set & FUSE_SET_ATTR_ATIME)
		inos[ino].atime = attr->st_atim;
	if (to_set & FUSE_SET_ATTR_MTIME)
		inos[ino].mtime = attr->st_mtim;
	if (to_set & FUSE_SET_ATTR_ATIME_NOW)
		inos[ino].atime = now;
	if (to_set & FUSE_SET_ATTR_MTIME_NOW)
		inos[ino].mtime = now;
	if (to_set & FUSE_SET_ATTR_MODE)
		inos[ino].mode = (inos[ino].mode & S_IFMT) | (attr->st_mode & 07777);
	inos[ino].ctime = now;
	fill(ino, &st);
	pthread_mutex_unlock(&mu);
	fuse_reply_attr(req, &st, 1.0);
}

static void make(fuse_req_t req, fuse_ino_t parent, const char *name, mode_t mode, struct fuse_file_info *fi)
{
	fuse_ino_t ino;
	int err;

	pthread_mutex_lock(&mu);
	ino = new_ino(mode);
	err = ino ? add(parent, name, ino) : ENOSPC;
	if (!err) {
		if (S_ISDIR(mode))
			inos[parent].nlink++;
		reply_entry(req, ino, fi);
	}
	pthread_mutex_unlock(&mu);
	if (err)
		fuse_reply_err(req, err);
}

static void op_mkdir(fuse_req_t req, fuse_ino_t parent, const char *name, mode_t mode)
{
	make(req, parent, name, S_IFDIR | (mode & 07777), NULL);
}

static void op_create(fuse_req_t req, fuse_ino_t parent, const char *name, mode_t mode, struct fuse_file_info *fi)
{
	make(req, parent, name, S_IFREG | (mode & 07777), fi);
}

static void op_open(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	(void)ino;
	fuse_reply_open(req, fi);
}

static void op_release(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	(void)ino;
	(void)fi;
	fuse_reply_err(req, 0);
}

static void drop(fuse_req_t req, fuse_ino_t parent, const char *name, int dir)
{
	struct dent **p, *d;
	int err = 0;

	pthread_mutex_lock(&mu);
	p = find(parent, name);
	d = *p;
	if (!d)
		err = ENOENT;
	else if (dir != S_ISDIR(inos[d->ino].mode))
		err = dir ? ENOTDIR : EISDIR;
	else {
		*p = d->next;
		inos[d->ino].nlink -= dir ? 2 : 1;
		if (dir)
			inos[parent].nlink--;
		free(d);
	}
	pthread_mutex_unlock(&mu);
	fuse_reply_err(req, err);
}

static void op_rmdir(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	drop(req, parent, name, 1);
}

static void op_unlink(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	drop(req, parent, name, 0);
}

static void op_rename(fuse_req_t req, fuse_ino_t parent, const char *name, fuse_ino_t newparent,
		      const char *newname, unsigned int flags)
{
	struct dent **p, *d, **q;
	int err = 0;

	pthread_mutex_lock(&mu);
	p = find(parent, name);
	d = *p;
	if (!d || flags)
		err = d ? EINVAL : ENOENT;
	else if (*find(newparent, newname))
		err = EEXIST; /* the bench renames to free names only */
	else if (strlen(newname) >= NAMELEN)
		err = ENAMETOOLONG;
	else {
		*p = d->next;
		d->parent = newparent;
		strcpy(d->name, newname);
		q = find(newparent, newname);
		d->next = NULL;
		*q = d;
	}
	pthread_mutex_unlock(&mu);
	fuse_reply_err(req, err);
}

static void op_link(fuse_req_t req, fuse_ino_t ino, fuse_ino_t newparent, const char *newname)
{
	int err;

	pthread_mutex_lock(&mu);
	err = add(newparent, newname, ino);
	if (!err) {
		inos[ino].nlink++;
		reply_entry(req, ino, NULL);
	}
	pthread_mutex_unlock(&mu);
	if (err)
		fuse_reply_err(req, err);
}

static void op_setxattr(fuse_req_t req, fuse_ino_t ino, const char *name, const char *value, size_t size,
			int flags)
{
	(void)name;
	(void)value;
	(void)size;
	(void)flags;
	pthread_mutex_lock(&mu);
	inos[ino].nxattr++;
	pthread_mutex_unlock(&mu);
	fuse_reply_err(req, 0);
}

static void op_getxattr(fuse_req_t req, fuse_ino_t ino, const char *name, size_t size)
{
	(void)ino;
	(void)name;
	(void)size;
	fuse_reply_err(req, ENODATA);
}

static void op_listxattr(fuse_req_t req, fuse_ino_t ino, size_t size)
{
	(void)ino;
	floor_reply_xattr(req, "", 0, size);
}

static const struct fuse_lowlevel_ops ops = {
	.lookup = op_lookup,
	.getattr = op_getattr,
	.setattr = op_setattr,
	.mkdir = op_mkdir,
	.rmdir = op_rmdir,
	.create = op_create,
	.open = op_open,
	.release = op_release,
	.unlink = op_unlink,
	.rename = op_rename,
	.link = op_link,
	.setxattr = op_setxattr,
	.getxattr = op_getxattr,
	.listxattr = op_listxattr,
};

int main(int argc, char **argv)
{
	fuse_ino_t g;

	if (argc != 2) {
		fprintf(stderr, "usage: %s MOUNTPOINT\n", argv[0]);
		return 2;
	}
	inos[1] = (struct ino){ .mode = S_IFDIR | 0755, .nlink = 2 };
	clock_gettime(CLOCK_REALTIME, &inos[1].mtime);
	g = new_ino(S_IFDIR | 0755);
	if (add(1, "g", g) != 0)
		return 1;
	inos[1].nlink++;
	return floor_run(argv[0], &ops, "default_permissions", argv[1], NULL);
}
