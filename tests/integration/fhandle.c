/*
 * fhandle.c - file handles through a mount, for test_mv_ln.py (issue 72
 * item 7; what xfstests' src/open_by_handle.c does in generic/426, 467,
 * 477):
 *   fhandle save PATH HFILE    name_to_handle_at(PATH) written to HFILE
 *   fhandle open MNT HFILE     open_by_handle_at(MNT's fd, HFILE's handle):
 *                              a file's bytes (up to 1 MiB) on stdout, a
 *                              directory's names one a line; exit 0, or
 *                              the errno's name on stdout and exit 3
 *   fhandle drop               echo 2 > /proc/sys/vm/drop_caches (after
 *                              sync): the kernel lets go of unused inodes
 *                              and names, so it has to ask the daemon (2:
 *                              not the page cache, which the machine's
 *                              other programs keep)
 * Exit 1: a usage or I/O error (on stderr); 77: no permission for handles
 * or drop_caches (not root).
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

struct fh {
	struct file_handle h;
	unsigned char id[MAX_HANDLE_SZ];
};

static int save(const char *path, const char *out)
{
	struct fh fh;
	int mnt_id, fd;

	memset(&fh, 0, sizeof(fh));
	fh.h.handle_bytes = MAX_HANDLE_SZ;
	if (name_to_handle_at(AT_FDCWD, path, &fh.h, &mnt_id, 0) < 0) {
		fprintf(stderr, "name_to_handle_at %s: %s\n", path, strerror(errno));
		return errno == EPERM ? 77 : 1;
	}
	fd = open(out, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	if (fd < 0 || write(fd, &fh, sizeof(fh)) != (ssize_t)sizeof(fh) || close(fd) < 0) {
		fprintf(stderr, "%s: %s\n", out, strerror(errno));
		return 1;
	}
	return 0;
}

static int show(int fd)
{
	static char buf[1 << 20];
	DIR *d;
	struct dirent *e;
	ssize_t n;
	size_t got = 0;

	d = fdopendir(dup(fd));
	if (d) {
		while ((e = readdir(d)))
			if (strcmp(e->d_name, ".") && strcmp(e->d_name, ".."))
				printf("%s\n", e->d_name);
		closedir(d);
		return 0;
	}
	while (got < sizeof(buf) && (n = read(fd, buf + got, sizeof(buf) - got)) > 0)
		got += (size_t)n;
	fwrite(buf, 1, got, stdout);
	return 0;
}

static int open_handle(const char *mnt, const char *in)
{
	struct fh fh;
	int mfd, fd, hfd = open(in, O_RDONLY);

	if (hfd < 0 || read(hfd, &fh, sizeof(fh)) != (ssize_t)sizeof(fh)) {
		fprintf(stderr, "%s: %s\n", in, strerror(errno));
		return 1;
	}
	close(hfd);
	mfd = open(mnt, O_RDONLY | O_DIRECTORY);
	if (mfd < 0) {
		fprintf(stderr, "%s: %s\n", mnt, strerror(errno));
		return 1;
	}
	fd = open_by_handle_at(mfd, &fh.h, O_RDONLY);
	if (fd < 0) {
		if (errno == EPERM)
			return 77;
		printf("%s\n", errno == ESTALE ? "ESTALE" : errno == ENOENT ? "ENOENT" : strerror(errno));
		return 3;
	}
	show(fd);
	close(fd);
	close(mfd);
	return 0;
}

static int drop(void)
{
	int fd;

	sync();
	fd = open("/proc/sys/vm/drop_caches", O_WRONLY);
	if (fd < 0)
		return errno == EACCES || errno == EPERM || errno == EROFS ? 77 : 1;
	if (write(fd, "2\n", 2) != 2) {
		fprintf(stderr, "drop_caches: %s\n", strerror(errno));
		close(fd);
		return 1;
	}
	close(fd);
	return 0;
}

int main(int argc, char **argv)
{
	if (argc == 4 && strcmp(argv[1], "save") == 0)
		return save(argv[2], argv[3]);
	if (argc == 4 && strcmp(argv[1], "open") == 0)
		return open_handle(argv[2], argv[3]);
	if (argc == 2 && strcmp(argv[1], "drop") == 0)
		return drop();
	fprintf(stderr, "usage: fhandle save PATH HFILE | open MNT HFILE | drop\n");
	return 1;
}
