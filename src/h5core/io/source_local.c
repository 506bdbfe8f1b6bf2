/* source_local.c - a local file as a byte source: positional reads and
 * writes on a descriptor, fsync, an exclusive flock while open for
 * writing (from open to close, or with lazy_lock only while the caller
 * writes: the lock op), and the descriptor itself for the FUSE side to
 * splice from.
 *
 * Metadata blocks (h5_source_opts.meta_blocks): opening an HDF5 file and
 * walking its objects reads a superblock, object headers, heaps and
 * B-tree nodes of a few dozen to a few thousand bytes each, most of them
 * in the file's first few KiB. Each was a pread: 15 system calls for a
 * small file, a few microseconds each in a VM, the better part of a scan
 * of many small files (h5fs-ls --refs --concat, bench/README.md). With
 * meta_blocks, reads of up to META_SMALL bytes are served from up to
 * META_SLOTS blocks of META_BLOCK bytes, each read whole with one pread
 * when first touched (least recently used replaced); larger reads go to
 * the file as before. Read-only sources only: nothing invalidates a block. */
#define _GNU_SOURCE /* sync_file_range */
#include "base.h"
#include "source.h"
#include "source_impl.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdlib.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#define META_BLOCK ((uint64_t)8192)
#define META_SLOTS 8
#define META_SMALL 4096

struct meta_block {
	uint64_t off;           /* a multiple of META_BLOCK */
	size_t len;             /* bytes read (less at the end of the file) */
	uint64_t used;          /* clock of the last use: LRU */
	uint8_t *buf;           /* NULL: empty slot */
};

typedef struct local_source {
	h5_source base;         /* first: the h5_source the engine sees */
	int fd;
	bool meta;              /* meta_blocks (above) */
	pthread_mutex_t meta_mu;        /* the engine's threads read at once */
	uint64_t clock;
	struct meta_block blk[META_SLOTS];
} local_source;

/* A full disk (or quota) is the user's to fix, not an I/O fault: ENOSPC. */
static int write_err(int e)
{
	return e == ENOSPC || e == EDQUOT ? H5_ERR_NOSPC : H5_ERR_IO;
}

static int pread_all(local_source *l, uint64_t off, void *buf, size_t len)
{
	size_t done = 0;

	while (done < len) {
		ssize_t n = pread(l->fd, (uint8_t *)buf + done, len - done, (off_t)(off + done));

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return h5_err_set(H5_ERR_IO, "read at 0x%llx: %s", (unsigned long long)(off + done),
					  strerror(errno));
		if (n == 0)
			return h5_err_set(H5_ERR_FORMAT, "unexpected end of file at 0x%llx",
					  (unsigned long long)(off + done));
		done += (size_t)n;
	}
	return 0;
}

/* The block at boff, read whole if not held (NULL: no memory or a read
 * error: the caller reads directly, and reports any error as before). */
static struct meta_block *meta_get(local_source *l, uint64_t boff)
{
	struct meta_block *b = NULL, *victim = &l->blk[0];
	ssize_t n;

	for (int i = 0; i < META_SLOTS; i++) {
		if (l->blk[i].buf && l->blk[i].off == boff) {
			b = &l->blk[i];
			break;
		}
		if (!l->blk[i].buf || (victim->buf && l->blk[i].used < victim->used))
			victim = &l->blk[i];
	}
	if (!b) {
		if (!victim->buf && !(victim->buf = malloc(META_BLOCK)))
			return NULL;
		do
			n = pread(l->fd, victim->buf, META_BLOCK, (off_t)boff);
		while (n < 0 && errno == EINTR);
		if (n <= 0) {
			free(victim->buf);
			victim->buf = NULL;
			return NULL;
		}
		b = victim;
		b->off = boff;
		b->len = (size_t)n;
	}
	b->used = ++l->clock;
	return b;
}

/* A small read from the blocks: 1 done, 0 not possible (past a block's
 * end: the end of the file, or a block not read) - read directly. */
static int meta_read(local_source *l, uint64_t off, uint8_t *buf, size_t len)
{
	size_t done = 0;
	int ok = 1;

	pthread_mutex_lock(&l->meta_mu);
	while (done < len) {
		uint64_t at = off + done, boff = at - at % META_BLOCK;
		struct meta_block *b = meta_get(l, boff);
		size_t in, n;

		if (!b || at - boff >= b->len) {
			ok = 0;
			break;
		}
		in = (size_t)(at - boff);
		n = b->len - in < len - done ? b->len - in : len - done;
		memcpy(buf + done, b->buf + in, n);
		done += n;
	}
	pthread_mutex_unlock(&l->meta_mu);
	return ok;
}

static int local_read(h5_source *s, uint64_t off, void *buf, size_t len)
{
	local_source *l = (local_source *)s;

	if (l->meta && len <= META_SMALL && off <= UINT64_MAX - len && meta_read(l, off, buf, len))
		return 0;
	return pread_all(l, off, buf, len);
}

static int local_write(h5_source *s, uint64_t off, const void *buf, size_t len)
{
	local_source *l = (local_source *)s;
	size_t done = 0;

	while (done < len) {
		ssize_t n = pwrite(l->fd, (const uint8_t *)buf + done, len - done, (off_t)(off + done));

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return h5_err_set(n < 0 ? write_err(errno) : H5_ERR_IO, "write at 0x%llx: %s",
					  (unsigned long long)(off + done), n < 0 ? strerror(errno) : "short write");
		done += (size_t)n;
	}
	return 0;
}

static int local_sync(h5_source *s)
{
	local_source *l = (local_source *)s;

	if (fsync(l->fd) < 0)
		return h5_err_set(write_err(errno), "fsync: %s", strerror(errno));
	return 0;
}

/* Start writeback early, so the fsync of a commit finds less to do. */
static void local_sync_hint(h5_source *s, uint64_t off, uint64_t len)
{
	(void)sync_file_range(((local_source *)s)->fd, (off64_t)off, (off64_t)len, SYNC_FILE_RANGE_WRITE);
}

static int local_truncate(h5_source *s, uint64_t size)
{
	if (ftruncate(((local_source *)s)->fd, (off_t)size) < 0)
		return h5_err_set(write_err(errno), "ftruncate: %s", strerror(errno));
	return 0;
}

/* posix_fallocate: fallocate(2) where the file system has it (ext4, xfs,
 * tmpfs), else glibc writes zeros into the holes. */
static int local_allocate(h5_source *s, uint64_t off, uint64_t len)
{
	int e = posix_fallocate(((local_source *)s)->fd, (off_t)off, (off_t)len);

	if (e)
		return h5_err_set(write_err(e), "allocating %llu bytes at 0x%llx: %s", (unsigned long long)len,
				  (unsigned long long)off, strerror(e));
	return 0;
}

static int local_punch(h5_source *s, uint64_t off, uint64_t len)
{
	if (fallocate(((local_source *)s)->fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, (off_t)off, (off_t)len) < 0)
		return h5_err_set(errno == EOPNOTSUPP || errno == ENOSYS ? H5_ERR_UNSUPPORTED : write_err(errno),
				  "punching %llu bytes at 0x%llx: %s", (unsigned long long)len,
				  (unsigned long long)off, strerror(errno));
	return 0;
}

static int local_size(h5_source *s, uint64_t *out)
{
	struct stat st;

	if (fstat(((local_source *)s)->fd, &st) < 0)
		return h5_err_set(H5_ERR_IO, "fstat: %s", strerror(errno));
	*out = (uint64_t)st.st_size;
	return 0;
}

/* libhdf5 (H5FD_sec2_lock, 1.10 and later) takes flock(LOCK_EX | LOCK_NB)
 * on a file it opens for writing and LOCK_SH on one it reads, for as long
 * as it has it open: either makes this fail at once with EWOULDBLOCK. */
static int local_lock(h5_source *s, int on)
{
	local_source *l = (local_source *)s;

	if (flock(l->fd, on ? LOCK_EX | LOCK_NB : LOCK_UN) == 0)
		return 0;
	if (on && errno == EWOULDBLOCK)
		return h5_err_set(H5_ERR_BUSY, "locked by another process");
	return h5_err_set(H5_ERR_IO, "flock: %s", strerror(errno));
}

static int local_fd(const h5_source *s)
{
	return ((const local_source *)s)->fd;
}

static void local_close(h5_source *s)
{
	local_source *l = (local_source *)s;

	if (l->fd >= 0)
		close(l->fd); /* also drops the flock */
	if (l->meta) {
		for (int i = 0; i < META_SLOTS; i++)
			free(l->blk[i].buf);
		pthread_mutex_destroy(&l->meta_mu);
	}
	free(l);
}

static const h5_source_ops local_ops = {
	.name = "local",
	.read = local_read,
	.write = local_write,
	.sync = local_sync,
	.sync_hint = local_sync_hint,
	.truncate = local_truncate,
	.allocate = local_allocate,
	.punch = local_punch,
	.size = local_size,
	.fd = local_fd,
	.close = local_close,
	.lock = local_lock,
};

static const h5_source_ops local_ro_ops = {
	.name = "local",
	.read = local_read,
	.size = local_size,
	.fd = local_fd,
	.close = local_close,
};

/* Make l a source over its descriptor l->fd (opened by the caller): the
 * kind of file checked, the lock taken. name only for messages. */
static int local_setup(local_source *l, const char *name, const h5_source_opts *opts)
{
	struct stat st;
	bool writable = opts->writable;

	l->base.ops = writable ? &local_ops : &local_ro_ops;
	l->base.writable = writable;
	if (fstat(l->fd, &st) < 0)
		return h5_err_set(H5_ERR_IO, "%s: %s", name, strerror(errno));
	if (!S_ISREG(st.st_mode) && (opts->data_file || !S_ISBLK(st.st_mode)))
		return h5_err_set(opts->data_file ? H5_ERR_IO : H5_ERR_NOTHDF5, "%s: not a regular file", name);
	if (writable && !opts->lazy_lock && flock(l->fd, LOCK_EX | LOCK_NB) < 0)
		return h5_err_set(H5_ERR_BUSY, "%s: locked by another process (%s)", name, strerror(errno));
	l->base.size = (uint64_t)st.st_size;
	l->base.mtime = (int64_t)st.st_mtime;
	l->base.has_stat = true;
	l->base.dev = (uint64_t)st.st_dev;
	l->base.ino = (uint64_t)st.st_ino;
	l->base.mtime_ns = (int64_t)st.st_mtim.tv_sec * 1000000000 + st.st_mtim.tv_nsec;
	l->base.ctime_ns = (int64_t)st.st_ctim.tv_sec * 1000000000 + st.st_ctim.tv_nsec;
	if (opts->meta_blocks && !writable && !opts->data_file) {
		pthread_mutex_init(&l->meta_mu, NULL);
		l->meta = true;
	}
	return 0;
}

static int local_open(h5_source **out, const char *path, const h5_source_opts *opts)
{
	local_source *l;
	bool writable = opts->writable;
	int rc = 0;

	*out = NULL;
	l = calloc(1, sizeof(*l));
	if (!l)
		return h5_err_set(H5_ERR_NOMEM, "out of memory");
	l->fd = open(path, (writable ? O_RDWR : O_RDONLY) | O_CLOEXEC | (opts->data_file ? O_NONBLOCK : 0));
	if (l->fd < 0) {
		rc = h5_err_set(errno == EMFILE || errno == ENFILE ? H5_ERR_NOFD :
				errno == EROFS || errno == EACCES ? (writable ? H5_ERR_ROFS : H5_ERR_IO) : H5_ERR_IO,
				"%s: %s", path, strerror(errno));
		goto out;
	}
	rc = local_setup(l, path, opts);
out:
	if (rc < 0) {
		local_close(&l->base);
		return rc;
	}
	*out = &l->base;
	return 0;
}

int h5_source_local_adopt(h5_source **out, int fd, const char *name, const h5_source_opts *opts)
{
	local_source *l;
	int rc;

	*out = NULL;
	l = calloc(1, sizeof(*l));
	if (!l) {
		close(fd);
		return h5_err_set(H5_ERR_NOMEM, "out of memory");
	}
	l->fd = fd;
	rc = local_setup(l, name, opts);
	if (rc < 0) {
		local_close(&l->base);
		return rc;
	}
	*out = &l->base;
	return 0;
}

const h5_source_class h5_source_local_class = {
	.name = "local",
	.matches = NULL,        /* every name: the last class */
	.open = local_open,
};
