/* beneath.c - opening a file by a name that must stay inside a directory
 * tree: the files FILE names (external storage, external link targets,
 * virtual dataset sources) and FILE itself when it is opened anew.
 *
 * Why not realpath() and a prefix check: between the check and the open a
 * user who owns a folder on the way swaps a component for a symlink, and
 * a daemon running as root then reads /etc/shadow for them. The kernel
 * resolves the whole name against a directory descriptor taken at mount
 * instead (openat2 RESOLVE_BENEATH: ".." and symlinks may not leave the
 * tree, absolute symlinks and /proc magic links are refused). Where the
 * kernel has no openat2 (before 5.6) each component is opened with
 * O_NOFOLLOW from the one before: no symlink at all, and no "..". */
#define _GNU_SOURCE
#include "base.h"
#include "beneath.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>
#include <linux/openat2.h>

/* Each component from the last directory opened, O_NOFOLLOW throughout. */
static int walk_nofollow(int dirfd, const char *rel, int flags)
{
	char comp[NAME_MAX + 1];
	const char *p = rel;
	int cur = dirfd, fd = -1;

	while (*p) {
		size_t len = strcspn(p, "/");
		const char *next = p + len + strspn(p + len, "/");
		bool last = *next == 0;

		if (len == 0 || len > NAME_MAX) {
			errno = len ? ENAMETOOLONG : ENOENT;
			goto fail;
		}
		memcpy(comp, p, len);
		comp[len] = 0;
		if (strcmp(comp, "..") == 0) {
			errno = EXDEV;
			goto fail;
		}
		fd = last ? openat(cur, comp, flags | O_NOFOLLOW | O_CLOEXEC)
			  : openat(cur, comp, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		if (cur != dirfd)
			close(cur);
		cur = dirfd;
		if (fd < 0)
			return -1;
		if (last)
			return fd;
		cur = fd;
		p = next;
	}
	errno = ENOENT;
fail:
	if (cur != dirfd)
		close(cur);
	return -1;
}

int h5_open_beneath(int *out, int dirfd, const char *rel, int flags)
{
	struct open_how how = {
		.flags = (uint64_t)(flags | O_CLOEXEC),
		.resolve = RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS,
	};
	int fd, e;

	*out = -1;
	while (*rel == '/')     /* relative to dirfd, whatever it was given as */
		rel++;
	if (!*rel)
		return H5_BENEATH_MISSING;
#ifdef SYS_openat2
	fd = (int)syscall(SYS_openat2, dirfd, rel, &how, sizeof(how));
	if (fd < 0 && (errno == ENOSYS || errno == EPERM))  /* no openat2; a seccomp filter */
		fd = walk_nofollow(dirfd, rel, flags);
#else
	(void)how;
	fd = walk_nofollow(dirfd, rel, flags);
#endif
	if (fd >= 0) {
		*out = fd;
		return 0;
	}
	e = errno;
	if (e == ENOENT || e == ENOTDIR)
		return H5_BENEATH_MISSING;
	/* EXDEV: ".." or a symlink out of the tree; ELOOP: a symlink where
	 * none may be (O_NOFOLLOW) or a loop */
	if (e == EMFILE || e == ENFILE)
		return h5_err_set(H5_ERR_NOFD, "%.200s: %s", rel, strerror(e));
	if (e == EXDEV || e == ELOOP)
		return h5_err_set(H5_ERR_PERM, "\"%.200s\" leads out of the directory of FILE (a symlink or \"..\"): "
				  "not followed", rel);
	return h5_err_set(e == EACCES ? H5_ERR_PERM : H5_ERR_IO, "%.200s: %s", rel, strerror(e));
}

int h5_open_nolinks(int *out, int dirfd, const char *rel, int flags)
{
	*out = -1;
#ifdef SYS_openat2
	struct open_how how = {
		.flags = (uint64_t)(flags | O_CLOEXEC),
		.resolve = RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS,
	};
	int fd;

	while (*rel == '/')
		rel++;
	if (!*rel)
		return H5_BENEATH_MISSING;
	fd = (int)syscall(SYS_openat2, dirfd, rel, &how, sizeof(how));
	if (fd >= 0) {
		*out = fd;
		return 0;
	}
	return errno == ENOENT ? H5_BENEATH_MISSING : H5_BENEATH_OTHER;
#else
	(void)dirfd;
	(void)rel;
	(void)flags;
	errno = ENOSYS;
	return H5_BENEATH_OTHER;
#endif
}

int h5_open_path(int *out, const char *path, int flags)
{
	int fd = open(path, flags | O_CLOEXEC), e;

	*out = -1;
	if (fd >= 0) {
		*out = fd;
		return 0;
	}
	e = errno;
	if (e == ENOENT || e == ENOTDIR)
		return H5_BENEATH_MISSING;
	if (e == EMFILE || e == ENFILE)
		h5_err_set(H5_ERR_NOFD, "%.200s: %s", path, strerror(e));
	else
		h5_err_set(e == EACCES ? H5_ERR_PERM : H5_ERR_IO, "%.200s: %s", path, strerror(e));
	errno = e;
	return e == EMFILE || e == ENFILE ? H5_ERR_NOFD : e == EACCES ? H5_ERR_PERM : H5_ERR_IO;
}

char *h5_fd_real_path(int fd)
{
	char link[64], buf[PATH_MAX];
	ssize_t n;

	snprintf(link, sizeof(link), "/proc/self/fd/%d", fd);
	n = readlink(link, buf, sizeof(buf) - 1);
	if (n <= 0 || buf[0] != '/')
		return NULL;
	buf[n] = 0;
	return strdup(buf);
}

const char *h5_path_beneath(const char *path, const char *dir)
{
	size_t n = strlen(dir);

	if (n == 1 && dir[0] == '/')
		return path[0] == '/' ? path + 1 : NULL;
	if (strncmp(path, dir, n) != 0)
		return NULL;
	if (path[n] == 0)
		return path + n;
	return path[n] == '/' ? path + n + 1 : NULL;
}
