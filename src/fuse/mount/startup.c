/*
 * startup.c - what the h5fs command checks and says before it mounts
 * (main.c): whether MOUNTPOINT already is a FUSE mount, and libfuse's own
 * messages said as h5fs's ("h5fs: ...", an unknown option with a pointer
 * to --help) rather than as libfuse prints them.
 */
#ifdef HAVE_CONFIG_H
#include <config.h>
#endif

#include "startup.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/sysmacros.h>
#include <sys/types.h>

/* /proc/self/mountinfo's octal escapes (\040 for a space...) undone in place. */
static void unescape_mnt(char *s)
{
	char *o = s;

	for (; *s; s++) {
		if (s[0] == '\\' && s[1] >= '0' && s[1] <= '3' && s[2] >= '0' && s[2] <= '7' && s[3] >= '0' &&
		    s[3] <= '7') {
			*o++ = (char)((s[1] - '0') << 6 | (s[2] - '0') << 3 | (s[3] - '0'));
			s += 3;
		} else {
			*o++ = *s;
		}
	}
	*o = 0;
}

/* The last mount listed on mnt (a real path: the one on top): its type
 * and source ("TYPE of SOURCE", malloc'd, into *what) when it is a FUSE
 * file system, and its device (*dev, 0 when none is on mnt). Read from
 * /proc/self/mountinfo, never through the mount: a path walk into it holds
 * the mount for its length, and an unmount then fails with EBUSY. */
static void top_mount(const char *mnt, char **what, dev_t *dev)
{
	FILE *fp = fopen("/proc/self/mountinfo", "re");
	char *line = NULL;
	size_t cap = 0;

	*what = NULL;
	*dev = 0;
	if (!fp)
		return;
	/* "ID PARENT MAJ:MIN ROOT MOUNTPOINT OPTS [OPTIONAL...] - TYPE SOURCE SUPER" */
	while (getline(&line, &cap, fp) > 0) {
		char *f[5], *save = NULL, *sep = strstr(line, " - "), *type, *src;
		unsigned maj, mnr;
		int i;

		if (!sep)
			continue;
		*sep = 0;
		for (i = 0; i < 5 && (f[i] = strtok_r(i ? NULL : line, " ", &save)); i++)
			;
		type = strtok_r(sep + 3, " ", &save);
		src = strtok_r(NULL, " ", &save);
		if (i < 5 || !type || !src || sscanf(f[2], "%u:%u", &maj, &mnr) != 2)
			continue;
		unescape_mnt(f[4]);
		if (strcmp(f[4], mnt) != 0)
			continue;
		free(*what);    /* the last one listed is the one on top */
		*what = NULL;
		*dev = makedev(maj, mnr);
		if (strcmp(type, "fuse") == 0 || strncmp(type, "fuse.", 5) == 0) {
			size_t n = strlen(type) + strlen(src) + 5;

			unescape_mnt(src);
			if ((*what = malloc(n)))
				snprintf(*what, n, "%s of %s", type, src);
		}
	}
	free(line);
	fclose(fp);
}

char *startup_fuse_mount_on(const char *mnt)
{
	char *what;
	dev_t dev;

	top_mount(mnt, &what, &dev);
	return what;
}

void startup_raise_readahead(const char *mnt, unsigned kb)
{
	char *what, path[80];
	dev_t dev;
	unsigned long cur = 0;
	FILE *fp;

	top_mount(mnt, &what, &dev);
	if (!what)
		return;         /* not our mount (or mountinfo unreadable) */
	free(what);
	snprintf(path, sizeof(path), "/sys/class/bdi/%u:%u/read_ahead_kb", major(dev), minor(dev));
	fp = fopen(path, "re");
	if (!fp)
		return;
	if (fscanf(fp, "%lu", &cur) != 1)
		cur = 0;
	fclose(fp);
	if (cur >= kb)
		return;
	fp = fopen(path, "we");
	if (fp) {
		fprintf(fp, "%u\n", kb);
		fclose(fp);
	}
}

/* libfuse's own messages while it takes the mount options and mounts
 * (fuse_session_new, fuse_session_mount) are gathered here and then said
 * as ours (startup_say_fuse_log): "h5fs: ..." like every other line, and an
 * unknown option with the pointer to --help. */
static char fuse_said[1024];

static void gather_fuse_log(enum fuse_log_level level, const char *fmt, va_list ap)
{
	size_t n = strlen(fuse_said);

	(void)level;
	if (n < sizeof(fuse_said) - 1)
		vsnprintf(fuse_said + n, sizeof(fuse_said) - n, fmt, ap);
}

void startup_say_fuse_log(void)
{
	char *line, *save = NULL;

	fuse_set_log_func(NULL);        /* libfuse's own again */
	for (line = strtok_r(fuse_said, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		static const char unk[] = "unknown option(s): `";
		size_t n;

		if (strncmp(line, "fuse: ", 6) == 0)
			line += 6;
		n = strlen(line);
		if (strncmp(line, unk, sizeof(unk) - 1) == 0 && n > sizeof(unk) && line[n - 1] == '\'') {
			line[n - 1] = 0;
			line += sizeof(unk) - 1;
			fprintf(stderr, "h5fs: unknown option%s: %s (see h5fs --help for the options)\n",
				strpbrk(line + strspn(line, "-o "), ", ") ? "s" : "", line);
		} else {
			fprintf(stderr, "h5fs: %s\n", line);
		}
	}
	fuse_said[0] = 0;
}

void startup_gather_fuse_log(void)
{
	fuse_said[0] = 0;
	fuse_set_log_func(gather_fuse_log);
}
