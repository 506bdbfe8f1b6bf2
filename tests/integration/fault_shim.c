/*
 * fault_shim.c - an LD_PRELOAD library for the daemon (test_durable.py):
 * the Nth pwrite or fsync of one file fails, as a failing disk would.
 *
 *   H5FS_FAULT_FILE   the file's path (as realpath gives it)
 *   H5FS_FAULT_OP     "pwrite" or "fsync" (fsync and fdatasync count)
 *   H5FS_FAULT_N      which call of that kind on that file fails (1: the
 *                     first); it and every later one (a dead disk stays
 *                     dead)
 *   H5FS_FAULT_ERRNO  the errno (default EIO)
 *   H5FS_FAULT_ONCE   "1": only the Nth call fails, the later ones pass
 *                     (a one-shot error: a transient fault, a full disk
 *                     that had room again)
 *
 * A call on the file is known by its descriptor's /proc/self/fd link.
 * Writes of other files (the log, /dev/fuse) pass untouched.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <unistd.h>

static long counter;

static int is_target(int fd)
{
	const char *want = getenv("H5FS_FAULT_FILE");
	char link[64], path[PATH_MAX];
	ssize_t n;

	if (!want)
		return 0;
	snprintf(link, sizeof(link), "/proc/self/fd/%d", fd);
	n = readlink(link, path, sizeof(path) - 1);
	if (n < 0)
		return 0;
	path[n] = 0;
	return strcmp(path, want) == 0;
}

/* This call of kind op on fd fails (errno set): 1. */
static int fails(const char *op, int fd)
{
	const char *kind = getenv("H5FS_FAULT_OP"), *nth = getenv("H5FS_FAULT_N"), *e = getenv("H5FS_FAULT_ERRNO");

	if (!kind || !nth || strcmp(kind, op) != 0 || !is_target(fd))
		return 0;
	long c = __atomic_add_fetch(&counter, 1, __ATOMIC_SEQ_CST);
	const char *once = getenv("H5FS_FAULT_ONCE");

	if (c < atol(nth) || (once && strcmp(once, "1") == 0 && c > atol(nth)))
		return 0;
	errno = e ? atoi(e) : EIO;
	return 1;
}

ssize_t pwrite(int fd, const void *buf, size_t n, off_t off)
{
	static ssize_t (*real)(int, const void *, size_t, off_t);

	if (!real)
		real = (ssize_t (*)(int, const void *, size_t, off_t))dlsym(RTLD_NEXT, "pwrite");
	return fails("pwrite", fd) ? -1 : real(fd, buf, n, off);
}

ssize_t pwrite64(int fd, const void *buf, size_t n, off_t off)
{
	static ssize_t (*real)(int, const void *, size_t, off_t);

	if (!real)
		real = (ssize_t (*)(int, const void *, size_t, off_t))dlsym(RTLD_NEXT, "pwrite64");
	return fails("pwrite", fd) ? -1 : real(fd, buf, n, off);
}

int fsync(int fd)
{
	static int (*real)(int);

	if (!real)
		real = (int (*)(int))dlsym(RTLD_NEXT, "fsync");
	return fails("fsync", fd) ? -1 : real(fd);
}

int fdatasync(int fd)
{
	static int (*real)(int);

	if (!real)
		real = (int (*)(int))dlsym(RTLD_NEXT, "fdatasync");
	return fails("fsync", fd) ? -1 : real(fd);
}
