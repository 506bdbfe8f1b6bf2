/*
 * fuse_ops.h - the h5fs FUSE low-level operations and the inode table.
 *
 * main.c opens the HDF5 file, builds an h5fs (h5fs_new) and hands
 * h5fs_ll_ops plus the h5fs to fuse_session_new(); everything that
 * translates FUSE requests into libh5core calls lives in the ll*.c files
 * (ll.h says which does what).
 */
#ifndef H5FS_FUSE_OPS_H
#define H5FS_FUSE_OPS_H

#ifndef FUSE_USE_VERSION
/* 3.4 API: fuse_session_loop_mt with struct fuse_loop_config, present in
 * every libfuse3 from 3.4 on (Debian bullseye 3.10 .. trixie 3.17). */
#define FUSE_USE_VERSION 34
#endif
#include <fuse_lowlevel.h>

#include "h5core.h"

#include <sys/types.h>

typedef struct h5fs h5fs;

typedef struct h5fs_config {
	int read_only;      /* mounted with -o ro */
	int use_syslog;     /* daemonized: log to syslog instead of stderr */
	int debug;          /* -o debug or -d: log debug messages too */
	int verbose;        /* -o verbose: log informational messages too */
	/* Ownership and permissions shown (-o uid=, gid=, umask=). Unset:
	 * FILE's owner and group; files get FILE's read bits, directories
	 * those read bits plus the matching search bits. */
	int uid_set, gid_set, umask_set;
	uid_t uid;
	gid_t gid;
	mode_t umask;       /* files 0444 & ~umask, directories 0555 & ~umask */
	int xattr_raw;      /* -o xattr=raw: attribute values as stored bytes */
	unsigned max_read;  /* -o max_read as mounted (INIT must repeat it); 0 none */
	/* -o refresh=SECONDS: how often FILE is looked at for changes (0: the
	 * view stays as mounted); open_opts: how to open it again. */
	unsigned refresh;
	const h5_open_opts *open_opts;
} h5fs_config;

/* Build the filesystem state around an open file (which it then owns).
 * Reads the root group's object header so a file whose root is unreadable
 * is refused before anything is mounted. Returns 0 or a negative h5_err. */
int h5fs_new(h5fs **out, h5_file *f, const h5fs_config *cfg);
void h5fs_free(h5fs *fs);
/* The session notifications go to (appends drop the kernel's cached
 * attributes of a grown file); set once it exists, before the loop runs. */
void h5fs_set_session(h5fs *fs, struct fuse_session *se);
/* Stop the thread that watches a live FILE (it sends the session
 * notifications): before the session is unmounted and destroyed. */
void h5fs_stop_watching(h5fs *fs);

/* The one place where engine errors become errno values. */
int h5fs_errno(int h5err);

/* One log line at syslog priority prio: to syslog when cfg.use_syslog,
 * else to stderr as "h5fs: ...". Errors, warnings and notices (what a
 * user should know, e.g. why a write was refused) are always logged,
 * LOG_INFO with verbose (or debug), LOG_DEBUG with debug. */
void h5fs_log(const h5fs *fs, int prio, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

extern const struct fuse_lowlevel_ops h5fs_ll_ops;

#endif
