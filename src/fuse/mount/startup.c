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

#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdint.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>
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

bool startup_inside_h5fs(const char *path)
{
	FILE *fp = fopen("/proc/self/mountinfo", "re");
	char *line = NULL;
	size_t cap = 0, best = 0;
	bool h5 = false;

	if (!fp)
		return false;
	while (getline(&line, &cap, fp) > 0) {
		char *f[5], *save = NULL, *sep = strstr(line, " - "), *type;
		size_t n;
		int i;

		if (!sep)
			continue;
		*sep = 0;
		for (i = 0; i < 5 && (f[i] = strtok_r(i ? NULL : line, " ", &save)); i++)
			;
		type = strtok_r(sep + 3, " ", &save);
		if (i < 5 || !type)
			continue;
		unescape_mnt(f[4]);
		n = strlen(f[4]);
		/* the deepest mount above path (a later one on the same point: on top) */
		if (n >= best && strncmp(path, f[4], n) == 0 && (path[n] == '/' || (n == 1 && path[1]))) {
			best = n;
			h5 = strcmp(type, "fuse.h5fs") == 0;
		}
	}
	free(line);
	fclose(fp);
	return h5;
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

/* mkdir -p of the directories above path's last component (0700) */
static int make_dirs(char *path)
{
	for (char *p = path + 1; *p; p++) {
		if (*p != '/')
			continue;
		*p = '\0';
		if (mkdir(path, 0700) != 0 && errno != EEXIST) {
			*p = '/';
			return -1;
		}
		*p = '/';
	}
	return 0;
}

char *startup_state_log(const char *file)
{
	const char *state = getenv("XDG_STATE_HOME"), *home = getenv("HOME"), *base;
	char name[72], *path = NULL;
	uint64_t h = 1469598103934665603ull;    /* FNV-1a */
	size_t bl, k = 0;
	int n;

	for (const char *p = file; *p; p++)
		h = (h ^ (unsigned char)*p) * 1099511628211ull;
	/* the last component of a path or URL, "/"s at its end ignored */
	bl = strlen(file);
	while (bl > 1 && file[bl - 1] == '/')
		bl--;
	base = file + bl;
	while (base > file && base[-1] != '/')
		base--;
	for (; base < file + bl && k < 48; base++)
		name[k++] = isalnum((unsigned char)*base) || *base == '.' || *base == '-' || *base == '_' ? *base : '_';
	if (k == 0 || name[0] == '.')
		name[k++] = 'h';
	name[k] = '\0';
	if (!(state && state[0] == '/') && !(home && home[0] == '/'))
		return NULL;
	path = malloc(PATH_MAX);
	if (!path)
		return NULL;
	if (state && state[0] == '/')
		n = snprintf(path, PATH_MAX, "%s/h5fs/%s-%08x.log", state, name, (unsigned)(h ^ (h >> 32)));
	else
		n = snprintf(path, PATH_MAX, "%s/.local/state/h5fs/%s-%08x.log", home, name, (unsigned)(h ^ (h >> 32)));
	if (n < 0 || n >= PATH_MAX) {
		free(path);
		return NULL;
	}
	if (make_dirs(path) != 0) {
		free(path);
		return NULL;
	}
	return path;
}

/* A detached daemon is an orphan: its parent is the init of its PID
 * namespace, which may reap an exited child late - a container's or a VM
 * sandbox's init polls (the daemon exited in 0.035 s after umount and its
 * pid stayed, a zombie, 1.3-1.9 s more: issue 83 item 7), and a shell as
 * PID 1 never reaps. So the daemon gets a parent of its own: the process
 * that detached forks once more; the child serves the mount, and the
 * parent holds nothing (every descriptor closed: /dev/fuse's, FILE's) and
 * only waits for it, so the daemon's pid is gone the moment it exits.
 * The waiter names itself h5fs-reaper (its argv and comm) before the
 * daemon says it is up, so nothing counts it as a daemon; it is the one
 * init reaps later. */
static void reaper(pid_t pid, int argc, char **argv, int named)
{
	char done = 1;
	int st;

	if (argc > 0) {
		char *from = argv[0], *to = argv[argc - 1] + strlen(argv[argc - 1]);

		memset(from, 0, (size_t)(to - from));
		snprintf(from, (size_t)(to - from) + 1, "%s", "h5fs-reaper");
	}
	prctl(PR_SET_NAME, "h5fs-reaper", 0, 0, 0);
	if (write(named, &done, 1) != 1) {
		/* the daemon goes on when the pipe closes, below */
	}
#ifdef SYS_close_range
	if (syscall(SYS_close_range, 0u, ~0u, 0u) != 0)
#endif
	{
		long max = sysconf(_SC_OPEN_MAX);

		for (long fd = 0; fd < (max > 0 && max < 65536 ? max : 65536); fd++)
			close((int)fd);
	}
	while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
		;
	_exit(0);
}

int startup_daemonize(int argc, char **argv)
{
	int waiter[2], named[2] = { -1, -1 }, nullfd;
	char done = 1;
	pid_t pid;

	if (pipe(waiter) != 0) {
		fprintf(stderr, "h5fs: cannot detach: %s\n", strerror(errno));
		return -1;
	}
	pid = fork();
	if (pid < 0) {
		fprintf(stderr, "h5fs: cannot detach: %s\n", strerror(errno));
		return -1;
	}
	if (pid > 0) {
		/* the command returns once the daemon is up (or gone) */
		if (read(waiter[0], &done, 1) < 0) {
			/* its exit status is 0 either way, as libfuse's */
		}
		_exit(0);
	}
	if (setsid() == -1) {
		fprintf(stderr, "h5fs: cannot detach: setsid: %s\n", strerror(errno));
		return -1;
	}
	if (chdir("/") != 0) {
		/* as fuse_daemonize: nothing is opened by a relative path */
	}
	if (pipe(named) == 0 && (pid = fork()) > 0) {
		close(named[0]);
		reaper(pid, argc, argv, named[1]);
	}
	if (named[0] >= 0) {
		/* (no fork: a daemon without its waiter, as before) */
		close(named[1]);
		if (read(named[0], &done, 1) < 0) {
			/* the waiter is gone: go on */
		}
		close(named[0]);
	}
	nullfd = open("/dev/null", O_RDWR | O_CLOEXEC);
	if (nullfd >= 0) {
		dup2(nullfd, 0);
		dup2(nullfd, 1);
		dup2(nullfd, 2);
		if (nullfd > 2)
			close(nullfd);
	}
	if (write(waiter[1], &done, 1) != 1) {
		/* the command has exited already */
	}
	close(waiter[0]);
	close(waiter[1]);
	return 0;
}
