/* source_local.c - a local file as a byte source: positional reads and
 * writes on a descriptor, fsync, an exclusive flock while open for
 * writing (from open to close, or with lazy_lock only while the caller
 * writes: the lock op), and the descriptor itself for the FUSE side to
 * splice from. */
#define _GNU_SOURCE /* sync_file_range */
#include "base.h"
#include "source.h"
#include "source_impl.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

typedef struct local_source {
	h5_source base;         /* first: the h5_source the engine sees */
	int fd;
} local_source;

/* A full disk (or quota) is the user's to fix, not an I/O fault: ENOSPC. */
static int write_err(int e)
{
	return e == ENOSPC || e == EDQUOT ? H5_ERR_NOSPC : H5_ERR_IO;
}

static int local_read(h5_source *s, uint64_t off, void *buf, size_t len)
{
	local_source *l = (local_source *)s;
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
		rc = h5_err_set(errno == EROFS || errno == EACCES ? (writable ? H5_ERR_ROFS : H5_ERR_IO) : H5_ERR_IO,
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
