/*
 * main.c - h5fs: mount an HDF5 file as a directory tree.
 *
 *   h5fs [options] FILE MOUNTPOINT
 *
 * FILE is opened and its superblock and root group are checked before
 * anything is mounted, so a bad input fails with one line on stderr
 * ("h5fs: FILE: cause") and an exit status naming the class of failure
 * (doc/h5fs.1, EXIT STATUS).
 *
 * mount(8) and fstab reach us through mount.fuse3, which runs
 * "h5fs FILE MOUNTPOINT -o OPTS" with generic mount options in OPTS (rw,
 * dev, suid, noatime...): libfuse takes those; options that only mean
 * something to mount(8) are accepted and ignored here.
 */
#ifdef HAVE_CONFIG_H
#define _GNU_SOURCE /* O_PATH */
#include <config.h>
#endif

#include "initio.h"
#include "notify.h"
#include "options.h"
#include "source.h"
#include "tool_exit.h"
#include "unmount.h"
#include "views.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <malloc.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <grp.h>
#include <pwd.h>
#include <pthread.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <syslog.h>
#include <unistd.h>

#ifndef PACKAGE_VERSION
#define PACKAGE_VERSION "unknown"
#endif


/* 1000 KiB (see where it is used) */
#define H5FS_MAX_READ 1024000u

/* "fsname=PATH" with ',' and '\\' escaped as libfuse's option parser expects. */
static char *fsname_opt(const char *path)
{
	static const char pfx[] = "fsname=";
	size_t n = strlen(path), i;
	char *s = malloc(sizeof(pfx) + 2 * n), *p;

	if (!s)
		return NULL;
	memcpy(s, pfx, sizeof(pfx) - 1);
	p = s + sizeof(pfx) - 1;
	for (i = 0; i < n; i++) {
		if (path[i] == ',' || path[i] == '\\')
			*p++ = '\\';
		*p++ = path[i];
	}
	*p = '\0';
	return s;
}

static int open_failure_status(int rc)
{
	return tool_exit_for_open_error(rc, TOOL_EXIT_RUNTIME);
}

/* -o max_files for a collection, and the soft RLIMIT_NOFILE raised to
 * the hard one, so the descriptors FUSE, the engine and a thousand
 * members' files take fit. The default is taken from the soft limit as
 * it was (half of it, at most 1024); a max_files the limit cannot hold is
 * lowered, with a line on stderr: to what is left above DAEMON_FDS, or
 * with a limit below that (ulimit -n 40) to half the limit - the daemon
 * needs fewer than DAEMON_FDS when few requests run at once, and when the
 * kernel refuses a descriptor anyway an idle member is closed and the
 * open tried again (dispatch_slot.c slots_shed). 1 made a virtual
 * dataset whose sources are other members unreadable (issue 45). */
#define MEMBER_FDS 1
#define DAEMON_FDS 64

static unsigned collection_max_files(const struct daemon *D)
{
	unsigned mf = D->cli.max_files ? D->cli.max_files : h5fs_default_max_files();
	struct rlimit rl;

	if (getrlimit(RLIMIT_NOFILE, &rl) != 0)
		return mf;
	if (rl.rlim_cur < rl.rlim_max) {
		rl.rlim_cur = rl.rlim_max;
		if (setrlimit(RLIMIT_NOFILE, &rl) != 0)
			getrlimit(RLIMIT_NOFILE, &rl);
	}
	if (rl.rlim_cur != RLIM_INFINITY && (rlim_t)mf * MEMBER_FDS + DAEMON_FDS > rl.rlim_cur) {
		unsigned fit = rl.rlim_cur > 2 * DAEMON_FDS ? (unsigned)((rl.rlim_cur - DAEMON_FDS) / MEMBER_FDS)
			       : rl.rlim_cur >= 4 ? (unsigned)(rl.rlim_cur / 2) : 2;

		fprintf(stderr, "h5fs: -o max_files=%u does not fit in the open-file limit %llu: %u\n", mf,
			(unsigned long long)rl.rlim_cur, fit);
		mf = fit;
	}
	return mf;
}

/* Is path at or under dir (both real paths)? */
static int path_under(const char *path, const char *dir)
{
	size_t n = strlen(dir);

	if (n == 1)
		return 1;       /* "/" */
	return strncmp(path, dir, n) == 0 && (path[n] == '/' || path[n] == 0);
}

/* DIR as a collection (root_coll.c): -1 to go on, or the exit status. A
 * MOUNTPOINT inside DIR would show the mount inside itself (a walk that
 * never ends): refused. */
static int check_mountpoint(struct daemon *D);

static int open_collection(struct daemon *D)
{
	char *rdir = realpath(D->cli.file, NULL), *rmnt = realpath(D->cli.mountpoint, NULL);
	int rc, ret = -1;

	if (rdir && rmnt && path_under(rmnt, rdir)) {
		fprintf(stderr, "h5fs: %s: the mountpoint %s lies inside this directory, so the mount would show "
			"itself: choose a mountpoint outside it\n", D->cli.file, D->cli.mountpoint);
		ret = TOOL_EXIT_OPEN;
		goto out;
	}
	D->oopts.writable = !D->cli.read_only;
	D->cfg.index_path = D->cli.index;
	D->cfg.noindex = D->cli.noindex;
	rc = h5fs_mount_collection(&D->m, D->cli.file, &D->cfg, collection_max_files(D));
	if (rc < 0) {
		fprintf(stderr, "h5fs: %s: %s\n", D->cli.file, tool_err_cause(D->cli.file));
		ret = open_failure_status(rc);
	}
out:
	free(rdir);
	free(rmnt);
	return ret;
}

/* A local FILE, opened through its folder: the real one (a FILE named
 * through a symlink mounts the symlink's target), opened once here and
 * kept, so that every later open of FILE (a new generation of a live
 * mount, live.c) goes through it, never through a path that a symlink
 * swapped in since could redirect (doc/h5fs.1 SECURITY). FILE itself is
 * opened with O_NOFOLLOW from there. */
static int open_local(struct daemon *D)
{
	char *real = realpath(D->cli.file, NULL), *slash;
	int fd = -1, rc;

	if (!real)
		return h5_err_set(H5_ERR_IO, "%s: %s", D->cli.file,
				  strerror(errno));
	slash = strrchr(real, '/');
	*slash = 0;
	D->dir_fd = open(slash == real ? "/" : real, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (D->dir_fd < 0) {
		rc = h5_err_set(H5_ERR_IO, "%s: %s", D->cli.file, strerror(errno));
		goto out;
	}
	/* O_NONBLOCK: a FIFO put there since the stat must not hang us */
	fd = openat(D->dir_fd, slash + 1, (D->oopts.writable ? O_RDWR : O_RDONLY) | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK);
	if (fd < 0) {
		rc = h5_err_set(errno == EROFS || errno == EACCES ? (D->oopts.writable ? H5_ERR_ROFS : H5_ERR_IO)
								  : H5_ERR_IO, "%s: %s", D->cli.file, strerror(errno));
		goto out;
	}
	/* reads block as a regular file's do (O_NONBLOCK is only for the open) */
	(void)fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK);
	D->dir_name = strdup(slash + 1);
	if (!D->dir_name) {
		close(fd);
		rc = h5_err_set(H5_ERR_NOMEM, "out of memory");
		goto out;
	}
	D->oopts.dir_fd = &D->dir_fd;
	D->oopts.dir_name = D->dir_name;
	rc = h5_file_open_fd(&D->f, fd, D->cli.file, &D->oopts);
out:
	free(real);
	return rc;
}

/* FILE opened and checked, the mount state built, the mountpoint
 * checked: before anything is mounted (a bad FILE is one stderr line and
 * an exit status, never a half-mounted directory). -1 to go on. */
static int open_file(struct daemon *D)
{
	int ret = TOOL_EXIT_USAGE, rc;
	size_t flen = strlen(D->cli.file);

	/* HTTP has no listing standard: a URL naming a directory cannot be
	 * a collection (an s3:// prefix can) */
	if ((strncmp(D->cli.file, "http://", 7) == 0 || strncmp(D->cli.file, "https://", 8) == 0) &&
	    D->cli.file[flen - 1] == '/') {
		fprintf(stderr, "h5fs: %s: a URL ending in '/' names a directory, and HTTP has no standard "
			"listing of one: mount one file's URL, or an s3:// prefix\n", D->cli.file);
		return TOOL_EXIT_OPEN;
	}

	/* Open and check FILE before mounting anything. Only regular files and
	 * block devices are opened: open(2) of a FIFO would wait for a writer. */
	D->cfg.read_only = D->cli.read_only;
	/* (resolved now: the daemon's working directory becomes /) */
	D->space_real = strstr(D->cli.file, "://") ? NULL : realpath(D->cli.file, NULL);
	D->cfg.space_path = D->space_real;
	D->cfg.debug = D->copts.debug;
	D->cfg.verbose = D->cli.verbose;
	D->cfg.xattr_raw = D->cli.xattr_mode && strcmp(D->cli.xattr_mode, "raw") == 0;
	D->cfg.max_read = D->cli.max_read ? D->cli.max_read : H5FS_MAX_READ;  /* see D->maxread_opt */
	if (stat(D->cli.file, &D->fst) == 0 && !S_ISREG(D->fst.st_mode) && !S_ISBLK(D->fst.st_mode) &&
	    !S_ISDIR(D->fst.st_mode)) {
		fprintf(stderr, "h5fs: %s: %s\n", D->cli.file, "not a regular file");
		ret = TOOL_EXIT_OPEN;
		return ret;
	}
	/* One context for everything the mount opens (FILE, the files it
	 * links to, the generations of a live FILE; every member of a
	 * collection): one cache of -o cache_mb (when not given, the
	 * engine's default, whose metadata share is capped), one set of decoding
	 * threads (started at the first read, so after fuse_daemonize
	 * forks). */
	rc = h5_ctx_new(&D->ctx, &(h5_ctx_opts){ .cache_bytes = D->cli.cache_mb || D->cli.cache_size ?
									D->oopts.cache_bytes : 0 });
	if (rc < 0) {
		fprintf(stderr, "h5fs: %s\n", h5_err_msg());
		return TOOL_EXIT_RUNTIME;
	}
	D->oopts.ctx = D->ctx;
	/* a directory, or an S3 prefix (s3://BUCKET/ or .../PREFIX/, ending
	 * in '/'): a collection (coll_s3.c lists it) */
	if (S_ISDIR(D->fst.st_mode) || (strncasecmp(D->cli.file, "s3://", 5) == 0 && D->cli.file[flen - 1] == '/')) {
		ret = open_collection(D);
		return ret >= 0 ? ret : check_mountpoint(D);
	}
	/* Read-write (for appends, README "Appending") unless -o ro or FILE is
	 * not writable. FILE's lock is taken only while a write is under way
	 * (lazy_lock, node/node.c fs_write_begin), so mounting never waits for
	 * or keeps out libhdf5. A FILE without any write bit counts as
	 * read-only even for root, who access(W_OK) would let through: chmod
	 * a-w is how people protect a file. */
	D->oopts.writable = !D->cli.read_only && access(D->cli.file, W_OK) == 0 &&
			 (D->fst.st_mode & (S_IWUSR | S_IWGRP | S_IWOTH)) != 0;
	D->oopts.min_free_bytes = D->cfg.min_free_bytes;
	D->oopts.min_free_pct = D->cfg.min_free_pct;
	/* A read-only FILE's small metadata reads (object headers, heaps,
	 * B-tree nodes) served from a few 8 KiB blocks read whole: a cold walk
	 * made a pread per object header, a fifth of the daemon's CPU in a VM
	 * (issue 70). A live FILE's change is a new generation, opened anew
	 * with blocks of its own; a generation's reads are checked against
	 * FILE's stamp as before (live/live.c), so a block read before a
	 * change is never answered as the new version's. */
	D->oopts.meta_blocks = !D->oopts.writable;
	/* -o rw asked for what cannot be: said (stderr before detaching,
	 * the logfile), as mount(8) says "write-protected, mounted
	 * read-only" (issue 63) */
	if (D->cli.read_write && !D->cli.read_only && !D->oopts.writable) {
		if (is_url(D->cli.file))
			h5fs_log_cfg(&D->cfg, LOG_WARNING, "%s: -o rw: a remote FILE is read-only: mounted read-only",
				     D->cli.file);
		else
			h5fs_log_cfg(&D->cfg, LOG_WARNING, "%s: -o rw: FILE is not writable (mode %04o%s): mounted "
				     "read-only; chmod u+w it to write through the mount", D->cli.file,
				     (unsigned)(D->fst.st_mode & 07777),
				     (D->fst.st_mode & (S_IWUSR | S_IWGRP | S_IWOTH)) ? ", not by this user" : "");
	}
	rc = is_url(D->cli.file) ? h5_file_open(&D->f, D->cli.file, &D->oopts) : open_local(D);
	/* a copy cut short mounts, then fails every listing: refused here,
	 * as libhdf5 refuses it */
	if (rc == 0 && (rc = h5_file_check_truncated(D->f)) < 0) {
		h5_file_close(D->f);
		D->f = NULL;
	}
	if (rc < 0) {
		fprintf(stderr, "h5fs: %s: %s\n", D->cli.file, tool_err_cause(D->cli.file));
		ret = open_failure_status(rc);
		return ret;
	}
	rc = h5fs_new(&D->fs, D->f, &D->cfg);
	if (rc < 0) {
		fprintf(stderr, "h5fs: %s: %s\n", D->cli.file, tool_err_cause(D->cli.file));
		ret = open_failure_status(rc);
		return ret;
	}
	/* one notice (stderr before detaching, the logfile): a server that
	 * ignores Range (python3 -m http.server) cost a whole download */
	if (h5_file_downloaded(D->f))
		h5fs_log_cfg(&D->cfg, LOG_NOTICE, "%s: the server ignores Range requests: downloaded whole (%llu "
			     "bytes) into a temporary file and read from there; a server that honours Range "
			     "(nginx, S3) is read only where asked", D->cli.file,
			     (unsigned long long)h5_file_downloaded(D->f));
	D->f = NULL;       /* owned by D->fs now */
	rc = h5fs_mount_single(&D->m, D->fs);
	if (rc < 0) {
		fprintf(stderr, "h5fs: %s\n", h5_err_msg());
		return TOOL_EXIT_RUNTIME;
	}
	/* (the mount owns fs now) */
	ret = check_mountpoint(D);
	/* symlink(2) targets into the mount become HDF5 paths */
	if (ret < 0 && h5fs_set_mountpoint(D->fs, D->copts.mountpoint) < 0) {
		fprintf(stderr, "h5fs: %s\n", h5_err_msg());
		return TOOL_EXIT_RUNTIME;
	}
	return ret;
}

/* The mountpoint resolved and checked: -1 to go on, or the exit status. */
static int check_mountpoint(struct daemon *D)
{
	int ret;

	/* libfuse would resolve it in fuse_parse_cmdline, before FILE is even
	 * looked at; here a bad mountpoint is a mount failure. */
	D->copts.mountpoint = realpath(D->cli.mountpoint, NULL);
	if (!D->copts.mountpoint) {
		int e = errno;

		/* ENOTCONN: a FUSE daemon died and left its mount behind */
		fprintf(stderr, "h5fs: mountpoint %s: %s%s\n", D->cli.mountpoint, strerror(e),
			e == ENOTCONN ? " (a dead mount: fusermount3 -u it first)" : "");
		ret = TOOL_EXIT_MOUNT;
		return ret;
	}
	/* FUSE would mount over a regular file too, with the root group then
	 * shown as a file: refuse. */
	if (stat(D->copts.mountpoint, &D->fst) == 0 && !S_ISDIR(D->fst.st_mode)) {
		fprintf(stderr, "h5fs: mountpoint %s: %s\n", D->cli.mountpoint, strerror(ENOTDIR));
		ret = TOOL_EXIT_MOUNT;
		return ret;
	}
	/* The kernel would stack a second mount over the first, hiding it
	 * until the second is unmounted: refuse over a FUSE mount (another
	 * h5fs most likely). Other file systems' mount roots (a container's
	 * volume, a tmpfs) are fine places to mount on. */
	{
		char *what = startup_fuse_mount_on(D->copts.mountpoint);

		if (what) {
			fprintf(stderr, "h5fs: mountpoint %s: already a mount (%s): unmount it first "
				"(h5fs -u %s)\n", D->cli.mountpoint, what, D->cli.mountpoint);
			free(what);
			return TOOL_EXIT_MOUNT;
		}
	}
	return -1;
}
/* Whether the notice of where a daemon's messages go here (no syslog)
 * was given to this user since boot, for this log file (its name: tag,
 * NULL when they are lost): a marker, h5fs-nosyslog[-TAG] in
 * $XDG_RUNTIME_DIR (the user's own tmpfs, emptied at logout and boot),
 * else /tmp/h5fs-nosyslog[-TAG]-UID owned by the user; made now when it
 * was not (issue 57: every mount said it). No marker can be made: said
 * each time. */
static bool nosyslog_said(const char *tag)
{
	const char *dir = getenv("XDG_RUNTIME_DIR");
	const char *t = tag ? strrchr(tag, '/') : NULL;
	char path[PATH_MAX];
	struct stat st;
	int fd, n;

	t = t ? t + 1 : tag;
	if (dir && dir[0] == '/')
		n = snprintf(path, sizeof(path), "%s/h5fs-nosyslog%s%s", dir, t ? "-" : "", t ? t : "");
	else
		n = snprintf(path, sizeof(path), "/tmp/h5fs-nosyslog%s%s-%u", t ? "-" : "", t ? t : "",
			     (unsigned)getuid());
	if (n < 0 || (size_t)n >= sizeof(path))
		return false;
	fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd >= 0) {
		close(fd);
		return false;           /* made now: say it this once */
	}
	return errno == EEXIST && lstat(path, &st) == 0 && S_ISREG(st.st_mode) && st.st_uid == getuid();
}


/* the command line, which a detached daemon's waiter overwrites with its
 * own name (startup_daemonize) */
static int main_argc;
static char **main_argv;

/* The bound of a state log file before it is rotated: 1 MiB, or
 * H5FS_LOG_MAX bytes (tests) */
static uint64_t log_max(void)
{
	const char *v = getenv("H5FS_LOG_MAX");
	char *end;
	unsigned long long n;

	if (!v || !*v)
		return 1u << 20;
	n = strtoull(v, &end, 10);
	return *end || n < 256 ? 1u << 20 : (uint64_t)n;
}

/* Mount and serve until unmounted or signalled: the exit status. */
static int run(struct daemon *D)
{
	int ret = TOOL_EXIT_RUNTIME, rc;

	/* Show FILE as the mount's source in /proc/mounts and df. */
	D->abs = realpath(D->cli.file, NULL);
	D->fsname = fsname_opt(D->abs ? D->abs : D->cli.file);
	if (!D->fsname) {
		fprintf(stderr, "h5fs: out of memory\n");
		return ret;
	}
	/* Reads are answered by splicing FILE's pages through a pipe (op_read)
	 * that an unprivileged process - or root without CAP_SYS_RESOURCE -
	 * cannot grow past pipe-max-size, 1 MiB by default; libfuse falls back
	 * to copying a reply that might not fit. A pipe also holds the reply
	 * header and a page more per piece when FILE's bytes are not page
	 * aligned, so requests stop 24 KiB short of 1 MiB unless the user
	 * chose a max_read; INIT must repeat the value (op_init). */
	snprintf(D->maxread_opt, sizeof(D->maxread_opt), "-omax_read=%u", D->cfg.max_read);
	if (fuse_opt_add_arg(&D->args, D->maxread_opt) != 0) {
		fprintf(stderr, "h5fs: out of memory\n");
		return ret;
	}
	if (fuse_opt_add_arg(&D->args, "-o") != 0 || fuse_opt_add_arg(&D->args, D->fsname) != 0 ||
	    fuse_opt_add_arg(&D->args, "-odefault_permissions") != 0) {
		fprintf(stderr, "h5fs: out of memory\n");
		return ret;
	}

	/* A remote FILE is never written: the kernel mounts it read-only too
	 * (EROFS at once, "ro" in /proc/mounts) */
	if (is_url(D->cli.file) && !D->cli.read_only && fuse_opt_add_arg(&D->args, "-oro") != 0) {
		fprintf(stderr, "h5fs: out of memory\n");
		return ret;
	}

	startup_gather_fuse_log();
	D->se = fuse_session_new(&D->args, &h5fs_ll_ops, sizeof(h5fs_ll_ops), D->m);
	startup_say_fuse_log();
	if (!D->se) {
		/* said why: an unknown option, or out of memory */
		ret = TOOL_EXIT_USAGE;
		return ret;
	}
	h5fs_mount_set_session(D->m, D->se);
	if (fuse_set_signal_handlers(D->se) != 0)
		return ret;
	D->handlers = 1;
	startup_gather_fuse_log();
	rc = fuse_session_mount(D->se, D->copts.mountpoint);
	startup_say_fuse_log();
	if (rc != 0) {
		/* said why (bad mountpoint, no /dev/fuse, not allowed) */
		ret = TOOL_EXIT_MOUNT;
		return ret;
	}
	D->mounted = 1;
	/* now, before the session loop answers INIT: from /proc/self/mountinfo,
	 * not a stat() of the mountpoint from a thread - a path walk into the
	 * mount, which holds it: an unmount right after the mount (a short
	 * script, a test under load) failed with EBUSY */
	startup_raise_readahead(D->copts.mountpoint, H5FS_READAHEAD_KB(D->cfg.max_read));
	rc = initio_attach(D->se);
	if (rc != 0)
		h5fs_log_cfg(&D->cfg, LOG_NOTICE, "cannot ask the kernel for mappings of direct_io files (%s): "
			     "mapping a dataset that grows on a read-write mount fails with ENODEV", strerror(-rc));
	/* Until here messages went to stderr (and -o logfile). A daemon's go
	 * to syslog where there is one; in a container without /dev/log to
	 * a file of the user's state directory (a file per FILE, bounded),
	 * which is said now, while stderr is still read. */
	if (!D->copts.foreground) {
		struct stat ls;
		int have_syslog = stat("/dev/log", &ls) == 0 && S_ISSOCK(ls.st_mode);
		char *state = NULL;
		int e = 0;

		if (have_syslog) {
			openlog("h5fs", LOG_PID, LOG_DAEMON);
		} else if (D->log_fd < 0) {
			state = startup_state_log(D->abs ? D->abs : D->cli.file);
			e = state ? h5fs_log_to_state(state, log_max()) : ENOENT;
			if (e == 0 && !nosyslog_said(state))
				fprintf(stderr, "h5fs: no syslog here (/dev/log is missing): h5fs's messages (why a "
					"change was refused, why a read gave EIO) go to %s (said once per FILE until "
					"reboot; -f or -o logfile=PATH puts them elsewhere)\n", state);
			else if (e && !nosyslog_said(NULL))
				fprintf(stderr, "h5fs: no syslog here (/dev/log is missing) and no state directory "
					"($XDG_STATE_HOME or ~/.local/state/h5fs: %s): once detached, h5fs's messages "
					"(why a read gave EIO) are lost; mount with -f, or -o logfile=PATH, to keep them "
					"(said once until reboot)\n", strerror(e));
		}
		if (startup_daemonize(main_argc, main_argv) != 0) {
			free(state);
			return ret;
		}
		if (!state || e)
			h5fs_log_to(D->log_fd, have_syslog, 0);
		free(state);
	} else if (fuse_daemonize(1) != 0) {
		return ret;
	}
	/* every notification goes through one thread (kit/notify.h), started
	 * after fuse_daemonize: a thread does not survive its fork, and one
	 * holding the allocator's lock then left it held in the daemon (the
	 * ASan build's daemons hung in their first malloc) */
	rc = notify_start(D->se);
	if (rc != 0) {
		h5fs_log_cfg(&D->cfg, LOG_ERR, "cannot start the notification thread: %s", strerror(rc));
		return TOOL_EXIT_RUNTIME;
	}
	h5fs_log_cfg(&D->cfg, LOG_INFO, "%s mounted at %s", D->abs ? D->abs : D->cli.file, D->copts.mountpoint);
	if (D->copts.singlethread) {
		rc = fuse_session_loop(D->se);
	} else {
		struct fuse_loop_config lc;

		memset(&lc, 0, sizeof(lc));
		lc.clone_fd = D->copts.clone_fd;
		/* libfuse >= 3.12 leaves UINT_MAX here for "not given" and then
		 * complains about it: keep libfuse's traditional default. */
		lc.max_idle_threads = D->copts.max_idle_threads == UINT_MAX ? 10 : D->copts.max_idle_threads;
		rc = fuse_session_loop_mt(D->se, &lc);
	}
	/* A signal (SIGTERM, SIGINT, SIGHUP) ends the loop with its number: that
	 * and fusermount3 -u are both clean unmounts. Requests in flight are
	 * finished first (libfuse only cancels workers while they wait). */
	if (rc > 0)
		h5fs_log_cfg(&D->cfg, LOG_INFO, "signal %d: unmounting %s", rc, D->copts.mountpoint);
	else if (rc == 0)
		h5fs_log_cfg(&D->cfg, LOG_INFO, "%s unmounted", D->copts.mountpoint);
	else
		h5fs_log_cfg(&D->cfg, LOG_ERR, "session failed: %s; unmounting %s", strerror(-rc), D->copts.mountpoint);
	return rc < 0 ? TOOL_EXIT_RUNTIME : TOOL_EXIT_OK;
}

static void daemon_free(struct daemon *D)
{
	h5fs_mount_stop(D->m);          /* its watchers notify the session */
	notify_stop();                  /* what they queued is issued first */
	if (D->m)
		D->fs = NULL;           /* the mount's */
	if (D->mounted)
		fuse_session_unmount(D->se);
	if (D->handlers)
		fuse_remove_signal_handlers(D->se);
	if (D->se)
		fuse_session_destroy(D->se);
	h5fs_mount_free(D->m);          /* and the fs of its roots */
	h5fs_free(D->fs);
	h5_file_close(D->f);
	h5_ctx_free(D->ctx);            /* after every file of the mount */
	if (D->dir_fd >= 0)
		close(D->dir_fd);       /* after every file opened from it */
	free(D->dir_name);
	free(D->space_real);
	free(D->fsname);
	free(D->abs);
	free(D->copts.mountpoint);
	free(D->cli.file);
	free(D->cli.cache_size);
	free(D->cli.cache_mb);
	free(D->cli.xattr_mode);
	free(D->cli.mountpoint);
	free(D->cli.uid);
	free(D->cli.gid);
	free(D->cli.umask);
	free(D->cli.refresh);
	free(D->cli.idle_commit);
	free(D->cli.min_free);
	free(D->cli.live);
	free(D->cli.compress);
	free(D->cli.ext_prefix);
	for (size_t i = 0; i < D->cli.nparams; i++)
		free(D->cli.params[i]);
	free(D->cli.params);
	free(D->cli.h5_suffixes);
	free(D->cli.views);
	free(D->cli.index);
	free(D->cli.logfile);
	if (D->log_fd >= 0)
		close(D->log_fd);
	fuse_opt_free_args(&D->args);
}

int main(int argc, char **argv)
{
	struct daemon d;
	int ret;

	main_argc = argc;
	main_argv = argv;
	/* Chunks are decoded into 1 MiB-class buffers by many threads; glibc
	 * gives every thread its own arena and keeps what is freed there, so
	 * the daemon's resident memory grew far past the cache budget (peak
	 * RSS with -o cache_size=64 after a full read and random reads of a
	 * compressed GiB: 137 MiB with glibc's default, 99 with two arenas,
	 * 86 with one, at the same speed: decoding, not malloc, is the work).
	 * glibc's own MALLOC_ARENA_MAX, when set, is left to decide. */
	if (!getenv("MALLOC_ARENA_MAX"))
		mallopt(M_ARENA_MAX, 1);
	/* h5fs -u MOUNTPOINT: unmount, and return once FILE is final */
	if (argc >= 2 && strcmp(argv[1], "-u") == 0) {
		if (argc != 3) {
			fprintf(stderr, "usage: h5fs -u MOUNTPOINT\n");
			return TOOL_EXIT_USAGE;
		}
		return h5fs_unmount_main(argv[2]);
	}
	memset(&d, 0, sizeof(d));
	d.log_fd = -1;
	d.dir_fd = -1;
	d.args = (struct fuse_args)FUSE_ARGS_INIT(argc, argv);
	ret = opts_parse(&d);
	if (ret < 0)
		ret = open_file(&d);
	if (ret < 0)
		ret = run(&d);
	daemon_free(&d);
	/* a change answered success and then lost (write-behind: an I/O
	 * error after the answer) fails the unmount, as it failed fsync */
	if (ret == TOOL_EXIT_OK && h5fs_lost_any())
		ret = TOOL_EXIT_RUNTIME;
	return ret;
}
