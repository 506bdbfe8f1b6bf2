/* fuse_write_floor: the fastest a FUSE file system can take the write
 * benchmarks on this machine (bench/write_bench.py; bench/README.md, "write
 * floor"): the write twin of fuse_read_floor.c. Every byte written is
 * discarded, so whatever h5fs does to store them costs on top of this.
 *
 * It serves a root directory holding `data` (SIZE bytes, written in place
 * by `dd conv=notrunc`), the directory `g` (cp into a group) and whatever
 * is created (np.save's NAME.npy, cp's file): names and sizes only. Set up
 * as h5fs sets up its write handles: direct_io, max_write 1 MiB (libfuse
 * derives max_pages from it), the same multithreaded loop (floor_common.c).
 * Writes arrive through write_buf with the request left in libfuse's pipe
 * (FUSE_CAP_SPLICE_READ) and are drained by splicing the pipe to /dev/null:
 * no copy in user space. fsync, flush and release answer at once.
 *
 *   fuse_write_floor -f SIZE MNT     (h5fs's -f FILE MNT; SIZE: bytes of data)
 *   fuse_write_floor -c SIZE MNT     the same, but every request read into
 *                                    memory (the `write` op: libfuse copies
 *                                    it into its buffer, as h5fs gets it)
 *   fuse_write_floor -p SIZE MNT FILE  the store floor, h5fs's way: each
 *                                    request read into memory and pwritten
 *                                    into FILE at its offset; fsync(2) of
 *                                    any file fsyncs FILE
 *   fuse_write_floor -s SIZE MNT FILE  the store floor, spliced: the request
 *                                    left in libfuse's pipe and spliced
 *                                    into FILE at its offset (the write
 *                                    path issue 44 proposes); fsync as -p
 *
 * Built by bench/run.sh and write_bench.py:
 *   cc -O2 fuse_write_floor.c floor_common.c $(pkg-config --cflags --libs fuse3)
 */
#define _GNU_SOURCE
#include "floor_common.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define BLKSIZE (1 << 20)
#define MAX_FILES 65536 /* cp -r of 1,000 and 16,384 files (copytree_bench.py --small; 18 MB) */
#define DATA_INO 2
#define G_INO 3

/* the tree: inodes 1 (root), 2 (data), 3 (g), then what is created */
static struct {
	char name[256];
	fuse_ino_t parent;
	off_t size;
	int dir;
} files[MAX_FILES];
static int nfiles;
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static int null_fd = -1;
static int copy_mode;    /* -c, -p */
static int store_fd = -1;       /* -p, -s: FILE */

static void fill_stat(fuse_ino_t ino, struct stat *st)
{
	memset(st, 0, sizeof(*st));
	st->st_ino = ino;
	st->st_blksize = BLKSIZE;
	if (files[ino].dir) {
		st->st_mode = S_IFDIR | 0755;
		st->st_nlink = 2;
	} else {
		st->st_mode = S_IFREG | 0644;
		st->st_nlink = 1;
		st->st_size = files[ino].size;
	}
}

static fuse_ino_t add(fuse_ino_t parent, const char *name, off_t size, int dir)
{
	fuse_ino_t ino = (fuse_ino_t)nfiles;

	if (nfiles >= MAX_FILES || strlen(name) >= sizeof(files[0].name))
		return 0;
	snprintf(files[ino].name, sizeof(files[ino].name), "%s", name);
	files[ino].parent = parent;
	files[ino].size = size;
	files[ino].dir = dir;
	nfiles++;
	return ino;
}

static fuse_ino_t find(fuse_ino_t parent, const char *name)
{
	for (int i = 1; i < nfiles; i++)
		if (files[i].parent == parent && strcmp(files[i].name, name) == 0)
			return (fuse_ino_t)i;
	return 0;
}

static void reply_entry(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	struct fuse_entry_param e;

	memset(&e, 0, sizeof(e));
	e.ino = ino;
	fill_stat(ino, &e.attr);
	if (fi)
		fuse_reply_create(req, &e, fi);
	else
		fuse_reply_entry(req, &e);
}

static void op_init(void *userdata, struct fuse_conn_info *conn)
{
	(void)userdata;
	conn->max_write = BLKSIZE;
	if (!copy_mode && (conn->capable & FUSE_CAP_SPLICE_READ))
		conn->want |= FUSE_CAP_SPLICE_READ;
	else
		conn->want &= ~(unsigned)FUSE_CAP_SPLICE_READ;
}

static void op_lookup(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	fuse_ino_t ino;

	pthread_mutex_lock(&mu);
	ino = find(parent, name);
	if (ino)
		reply_entry(req, ino, NULL);
	else
		fuse_reply_err(req, ENOENT);
	pthread_mutex_unlock(&mu);
}

static void op_getattr(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	struct stat st;

	(void)fi;
	pthread_mutex_lock(&mu);
	fill_stat(ino, &st);
	pthread_mutex_unlock(&mu);
	fuse_reply_attr(req, &st, 0);
}

/* truncate (O_TRUNC, np.save's open "wb") and the times (cp -p) */
static void op_setattr(fuse_req_t req, fuse_ino_t ino, struct stat *attr, int to_set, struct fuse_file_info *fi)
{
	struct stat st;

	(void)fi;
	pthread_mutex_lock(&mu);
	if (to_set & FUSE_SET_ATTR_SIZE)
		files[ino].size = attr->st_size;
	fill_stat(ino, &st);
	pthread_mutex_unlock(&mu);
	fuse_reply_attr(req, &st, 0);
}

static void op_open(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	if (files[ino].dir) {
		fuse_reply_err(req, EISDIR);
		return;
	}
	fi->direct_io = 1;
	fuse_reply_open(req, fi);
}

static void op_create(fuse_req_t req, fuse_ino_t parent, const char *name, mode_t mode, struct fuse_file_info *fi)
{
	fuse_ino_t ino;

	(void)mode;
	pthread_mutex_lock(&mu);
	ino = find(parent, name);
	if (!ino)
		ino = add(parent, name, 0, 0);
	if (!ino) {
		pthread_mutex_unlock(&mu);
		fuse_reply_err(req, ENOSPC);
		return;
	}
	fi->direct_io = 1;
	reply_entry(req, ino, fi);
	pthread_mutex_unlock(&mu);
}

static void grow(fuse_ino_t ino, off_t end)
{
	pthread_mutex_lock(&mu);
	if (files[ino].size < end)
		files[ino].size = end;
	pthread_mutex_unlock(&mu);
}

static void op_write(fuse_req_t req, fuse_ino_t ino, const char *buf, size_t size, off_t off,
		     struct fuse_file_info *fi)
{
	(void)fi;
	for (size_t done = 0; store_fd >= 0 && done < size;) {
		ssize_t k = pwrite(store_fd, buf + done, size - done, off + (off_t)done);

		if (k <= 0) {
			fuse_reply_err(req, k < 0 ? errno : EIO);
			return;
		}
		done += (size_t)k;
	}
	grow(ino, off + (off_t)size);
	fuse_reply_write(req, size);
}

/* The request's bytes still in libfuse's pipe: spliced to /dev/null (a
 * small request libfuse has copied already is just dropped). */
static void op_write_buf(fuse_req_t req, fuse_ino_t ino, struct fuse_bufvec *bv, off_t off,
			 struct fuse_file_info *fi)
{
	size_t size = fuse_buf_size(bv), left = size;
	struct fuse_buf *b = &bv->buf[bv->idx];

	(void)fi;
	if (bv->count == 1 && !(b->flags & FUSE_BUF_IS_FD) && store_fd >= 0) {
		op_write(req, ino, b->mem, size, off, fi);      /* a small one libfuse copied */
		return;
	}
	if (bv->count == 1 && (b->flags & FUSE_BUF_IS_FD)) {
		while (left > 0) {
			loff_t at = off + (off_t)(size - left);
			ssize_t k = store_fd >= 0 ? splice(b->fd, NULL, store_fd, &at, left, SPLICE_F_MOVE)
						  : splice(b->fd, NULL, null_fd, NULL, left, SPLICE_F_MOVE);

			if (k <= 0) {
				fuse_reply_err(req, k < 0 ? errno : EIO);
				return;
			}
			left -= (size_t)k;
		}
	}
	grow(ino, off + (off_t)size);
	fuse_reply_write(req, size);
}

static void op_mkdir(fuse_req_t req, fuse_ino_t parent, const char *name, mode_t mode)
{
	fuse_ino_t ino;

	(void)mode;
	pthread_mutex_lock(&mu);
	ino = find(parent, name) ? 0 : add(parent, name, 0, 1);
	if (ino)
		reply_entry(req, ino, NULL);
	else
		fuse_reply_err(req, EEXIST);
	pthread_mutex_unlock(&mu);
}

static void op_fsync(fuse_req_t req, fuse_ino_t ino, int datasync, struct fuse_file_info *fi)
{
	(void)ino;
	(void)datasync;
	(void)fi;
	fuse_reply_err(req, store_fd >= 0 && fsync(store_fd) < 0 ? errno : 0);
}

static void op_flush(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	(void)ino;
	(void)fi;
	fuse_reply_err(req, 0);
}

static void op_release(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	op_flush(req, ino, fi);
}

static struct fuse_lowlevel_ops ops = {
	.init = op_init,
	.lookup = op_lookup,
	.getattr = op_getattr,
	.setattr = op_setattr,
	.open = op_open,
	.create = op_create,
	.write = op_write,
	.write_buf = op_write_buf,
	.mkdir = op_mkdir,
	.fsync = op_fsync,
	.flush = op_flush,
	.release = op_release,
};

int main(int argc, char **argv)
{
	char *end;
	long long size;
	bool store = argc == 5 && (strcmp(argv[1], "-p") == 0 || strcmp(argv[1], "-s") == 0);

	if (!store && (argc != 4 || (strcmp(argv[1], "-f") != 0 && strcmp(argv[1], "-c") != 0))) {
		fprintf(stderr, "usage: %s -f|-c SIZE MOUNTPOINT\n       %s -p|-s SIZE MOUNTPOINT FILE\n", argv[0],
			argv[0]);
		return 2;
	}
	if (store) {
		store_fd = open(argv[4], O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
		if (store_fd < 0) {
			perror(argv[4]);
			return 1;
		}
	}
	size = strtoll(argv[2], &end, 10);
	if (*end || size < 0) {
		fprintf(stderr, "%s: SIZE: bytes of `data`, not %s\n", argv[0], argv[2]);
		return 2;
	}
	copy_mode = strcmp(argv[1], "-c") == 0 || strcmp(argv[1], "-p") == 0;
	if (copy_mode)
		ops.write_buf = NULL;
	null_fd = open("/dev/null", O_WRONLY | O_CLOEXEC);
	if (null_fd < 0) {
		perror("/dev/null");
		return 1;
	}
	files[FUSE_ROOT_ID].dir = 1;   /* inode 0 unused */
	nfiles = 2;
	add(FUSE_ROOT_ID, "data", (off_t)size, 0);
	add(FUSE_ROOT_ID, "g", 0, 1);
	return floor_run(argv[0], &ops, NULL, argv[3], NULL);
}
