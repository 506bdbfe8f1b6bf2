/*
 * unmount.c - `h5fs -u MOUNTPOINT`: an unmount that returns once FILE is
 * final (issue 65).
 *
 * The kernel does not wait for a FUSE daemon at unmount (it sends DESTROY
 * only to fuseblk mounts): `fusermount3 -u` returns while h5fs still
 * commits what it answered earlier (new files' batch, attributes set in
 * quick succession, rows not committed yet) and gives FILE's lock back,
 * so a `cp FILE backup` or an h5py open right after it could miss changes
 * or meet "unable to lock file". This command:
 *   1. asks the mount's root for the daemon's process id (the xattr
 *      user.h5fs.pid, answered by the dispatcher and never listed);
 *   2. syncfs(2) on the mount: every write-behind committed and durable
 *      while the mount still answers (an error is reported here: this
 *      flush's, or one of a write-back refused earlier that no fsync
 *      collected - the kernel keeps it for the file system);
 *   3. unmounts (umount2 as root, else fusermount3 -u), tried again for
 *      up to 5 s while the kernel says the mount is busy (a descriptor
 *      closed a moment ago: its RELEASE is still under way);
 *   4. waits for that process to exit: it commits and closes FILE first.
 * Exit status 0 when FILE is final, 1 otherwise (with a message).
 */
#define _GNU_SOURCE /* syncfs */
#include <config.h>

#include "unmount.h"
#include "fuse_ops.h"
#include "tool_exit.h"
#include "startup.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <sys/xattr.h>
#include <time.h>
#include <unistd.h>

extern char **environ;

#define UNMOUNT_BUSY_MS 5000
#define UNMOUNT_EXIT_MS 120000

static int64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void sleep_ms(long ms)
{
	nanosleep(&(struct timespec){ ms / 1000, (ms % 1000) * 1000000 }, NULL);
}

/* The daemon serving mnt, or -1 (errno: not an h5fs mount). */
static pid_t daemon_pid(const char *mnt)
{
	char buf[32];
	ssize_t n = getxattr(mnt, H5FS_PID_XATTR, buf, sizeof(buf) - 1);
	long v;
	char *end;

	if (n <= 0)
		return -1;
	buf[n] = '\0';
	v = strtol(buf, &end, 10);
	if (*end || v <= 1)
		return -1;
	return (pid_t)v;
}

/* One unmount attempt: 0, or the errno (EBUSY: try again). */
static int unmount_once(const char *mnt)
{
	pid_t child;
	int st;
	char *argv[] = { "fusermount3", "-u", "-q", (char *)mnt, NULL };

	if (geteuid() == 0)
		return umount2(mnt, 0) == 0 ? 0 : errno;
	if (posix_spawnp(&child, "fusermount3", NULL, NULL, argv, environ) != 0)
		return ENOENT;
	while (waitpid(child, &st, 0) < 0)
		if (errno != EINTR)
			return ECHILD;
	/* fusermount3 says why only on stderr (-q: not even there): a
	 * failure is taken for "busy" and tried again until the deadline */
	return WIFEXITED(st) && WEXITSTATUS(st) == 0 ? 0 : EBUSY;
}

/* An exited process its parent has not reaped yet (a daemon started with
 * -f by a script): done too. */
static bool zombie(pid_t pid)
{
	char path[64], buf[256], *p;
	FILE *fp;
	bool z = false;

	snprintf(path, sizeof(path), "/proc/%ld/stat", (long)pid);
	fp = fopen(path, "r");
	if (!fp)
		return false;
	if (fgets(buf, sizeof(buf), fp) && (p = strrchr(buf, ')')) != NULL)
		z = p[1] == ' ' && (p[2] == 'Z' || p[2] == 'X');
	fclose(fp);
	return z;
}

/* Wait until pid has exited (a pidfd where the kernel has one). */
static int wait_exit(pid_t pid, int ms)
{
	int64_t end = now_ms() + ms;
#ifdef SYS_pidfd_open
	int fd = (int)syscall(SYS_pidfd_open, pid, 0);

	if (fd >= 0) {
		struct pollfd p = { .fd = fd, .events = POLLIN };
		int rc;

		do
			rc = poll(&p, 1, ms);
		while (rc < 0 && errno == EINTR && now_ms() < end);
		close(fd);
		return rc > 0 ? 0 : -1;
	}
#endif
	while ((kill(pid, 0) == 0 || errno == EPERM) && !zombie(pid)) {
		if (now_ms() >= end)
			return -1;
		sleep_ms(10);
	}
	return 0;
}

/* Why mnt is no h5fs mount to unmount (e: the pid xattr's errno: ENODATA
 * or ENOTSUP from another file system, ENOTCONN from a FUSE mount whose
 * daemon is gone), said as a user asks it: not errno's "No data
 * available". */
static void not_ours(const char *mnt, int e)
{
	char *real = realpath(mnt, NULL), *what = NULL;
	struct stat st;

	if (!real || stat(real, &st) != 0) {
		fprintf(stderr, "h5fs: -u %s: %s\n", mnt, strerror(e == ENOTCONN ? e : errno));
		free(real);
		return;
	}
	what = startup_fuse_mount_on(real);
	if (e == ENOTCONN)
		fprintf(stderr, "h5fs: %s: the daemon of this mount is gone (%s); fusermount3 -u %s removes it\n",
			mnt, strerror(e), mnt);
	else if (what && strncmp(what, "fuse.h5fs ", 10) == 0)
		fprintf(stderr, "h5fs: %s: its h5fs daemon does not answer (%s): fusermount3 -u %s unmounts it\n",
			mnt, strerror(e), mnt);
	else if (what)
		fprintf(stderr, "h5fs: %s is not an h5fs mount (it is a %s): nothing unmounted\n", mnt, what);
	else if (startup_inside_h5fs(real))
		fprintf(stderr, "h5fs: %s is not an h5fs mount, but a path inside one: give its mount point; "
			"nothing unmounted\n", mnt);
	else
		fprintf(stderr, "h5fs: %s is not an h5fs mount%s: nothing unmounted\n", mnt,
			S_ISDIR(st.st_mode) ? "" : " (not a directory)");
	free(what);
	free(real);
}

int h5fs_unmount_main(const char *mnt)
{
	pid_t pid = daemon_pid(mnt);
	int64_t end;
	int fd, e, ret = TOOL_EXIT_OK;

	if (pid < 0 && errno == ENOTCONN && unmount_once(mnt) == 0) {
		/* its daemon died (killed): the mount it left is removed, and
		 * FILE is what that daemon had committed */
		fprintf(stderr, "h5fs: %s: its daemon had died (changes it answered and had not yet committed may "
			"be lost): unmounted\n", mnt);
		return TOOL_EXIT_RUNTIME;
	}
	if (pid < 0) {
		not_ours(mnt, errno);
		return TOOL_EXIT_USAGE;
	}
	fd = open(mnt, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd >= 0) {
		if (syncfs(fd) < 0) {
			/* (the kernel's error of the file system since it was
			 * mounted: this flush's, or a write-back refused earlier,
			 * ENOSPC at the margin, that no fsync collected) */
			fprintf(stderr, "h5fs: %s: a change to it failed (now or earlier, not collected by an fsync): "
				"%s (the daemon's log says which)\n", mnt, strerror(errno));
			ret = TOOL_EXIT_RUNTIME;
		}
		close(fd);
	}
	end = now_ms() + UNMOUNT_BUSY_MS;
	while ((e = unmount_once(mnt)) == EBUSY && now_ms() < end)
		sleep_ms(100);
	if (e) {
		fprintf(stderr, "h5fs: unmounting %s: %s\n", mnt, strerror(e));
		return TOOL_EXIT_RUNTIME;
	}
	if (wait_exit(pid, UNMOUNT_EXIT_MS) < 0) {
		fprintf(stderr, "h5fs: %s is unmounted, but its daemon (process %ld) has not finished writing FILE "
			"after %d s\n", mnt, (long)pid, UNMOUNT_EXIT_MS / 1000);
		return TOOL_EXIT_RUNTIME;
	}
	return ret;
}
