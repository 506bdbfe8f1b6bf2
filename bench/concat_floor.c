/* concat_floor: the least h5fs-ls --refs --concat can do per member of a
 * local DIR on this machine, for bench/concat_bench.py: list DIR (one
 * getdents loop), then per regular file openat, fstat, one pread of its
 * first 8 KiB (the superblock, root group and, in the bench's files, the
 * dataset's header and B-tree: what h5fs-ls reads of a member) and close,
 * in one thread; print nothing but a count. No parsing, no document: what
 * is left of h5fs-ls's time beyond this (and beyond its own process start)
 * is its work.
 *
 *   concat_floor DIR
 *
 * Built by the bench: cc -O2 -o concat_floor concat_floor.c
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <fcntl.h>
#include <stdio.h>
#include <sys/stat.h>
#include <unistd.h>

int main(int argc, char **argv)
{
	static char buf[8192];
	unsigned long files = 0, bytes = 0;
	struct dirent *de;
	DIR *d;

	if (argc != 2 || !(d = opendir(argv[1]))) {
		fprintf(stderr, "usage: concat_floor DIR\n");
		return 2;
	}
	while ((de = readdir(d)) != NULL) {
		struct stat st;
		ssize_t n;
		int fd;

		if (de->d_type != DT_REG)
			continue;
		fd = openat(dirfd(d), de->d_name, O_RDONLY | O_CLOEXEC);
		if (fd < 0)
			continue;
		if (fstat(fd, &st) == 0 && (n = pread(fd, buf, sizeof(buf), 0)) > 0) {
			files++;
			bytes += (unsigned long)n;
		}
		close(fd);
	}
	closedir(d);
	printf("%lu files, %lu bytes\n", files, bytes);
	return 0;
}
