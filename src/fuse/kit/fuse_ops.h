/*
 * fuse_ops.h - the h5fs FUSE low-level operations and the inode table.
 *
 * main.c opens the HDF5 file, builds an h5fs (h5fs_new) and hands
 * h5fs_ll_ops plus the h5fs to fuse_session_new(); everything that
 * translates FUSE requests into libh5core calls lives in the ll*.c files
 * (member/member.h says which does what).
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
#include "h5errno.h"

#include <sys/types.h>

/* The mount root's xattr naming the daemon's process id, for `h5fs -u`
 * (mount/unmount.c; answered by dispatch_io.c, never listed) */
#define H5FS_PID_XATTR "user.h5fs.pid"

typedef struct h5fs h5fs;

/* The kernel reads a FUSE file ahead in windows of the mount's
 * read_ahead_kb (its backing_dev_info, "0:MINOR"), 128 KiB by default;
 * INIT's reply can only lower that (the kernel keeps the smaller of the
 * two). So a sequential reader costs a request per 128 KiB, and we see one
 * chunk at a time. A window of 4 requests of max_read bytes means 8 times
 * fewer requests and several in flight, which our threads serve in
 * parallel: the daemon writes it between the mount and INIT
 * (startup_raise_readahead) and INIT's reply repeats it (op_init). Only
 * root may write it; for anyone else the default stays. */
#define H5FS_READAHEAD_KB(max_read) (4u * ((max_read) / 1024u))

/* -o idle_commit's default, seconds */
#define H5FS_IDLE_COMMIT_DEFAULT 5

typedef struct h5fs_config {
	int read_only;      /* mounted with -o ro */
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
	/* -o live=strict: a live FILE's reads are checked from the first one
	 * (else only once it has changed; live/live.c) */
	int live_strict;
	unsigned compress;       /* -o compress: new datasets compressed at level - 1 (0: none) */
	uint16_t compress_filter; /* ... through this filter (0: deflate) */
	const h5_open_opts *open_opts;
	/* Collections: the persistent index (-o index=PATH; NULL: the
	 * default file under $XDG_CACHE_HOME/h5fs/), or none (-o noindex). */
	const char *index_path;
	int noindex;
	/* -o h5_suffixes=: the names of an S3 prefix's HDF5 members (NULL:
	 * H5_SUFFIXES_DEFAULT; coll_s3.c) */
	const char *h5_suffixes;
	/* -o views[=LIST]: the views of datasets listed in directories
	 * (VW_BIT()s of src/common/views.h; 0: none, they are only looked up) */
	unsigned views;
	/* -o idle_commit=SECONDS: a write descriptor left open that has not
	 * written for this long is committed as fsync would and gives FILE's
	 * lock back (behind/write.c; 0: only fsync and close do) */
	unsigned idle_commit;
	/* -o min_free: free space the file system holding FILE keeps after
	 * every write's reserve (h5_open_opts; both 0: no margin) */
	uint64_t min_free_bytes;
	unsigned min_free_pct;
	/* FILE or DIR when local (NULL: remote): statfs reports the free
	 * space of the file system holding it (dispatch_io.c op_statfs) */
	const char *space_path;
} h5fs_config;

/* Build the filesystem state around an open file (which it then owns).
 * Reads the root group's object header so a file whose root is unreadable
 * is refused before anything is mounted. Returns 0 or a negative h5_err. */
int h5fs_new(h5fs **out, h5_file *f, const h5fs_config *cfg);
void h5fs_free(h5fs *fs);
/* The options it was made with. */
const h5fs_config *h5fs_cfg(const h5fs *fs);
/* The session notifications go to (appends drop the kernel's cached
 * attributes of a grown file); set once it exists, before the loop runs. */
void h5fs_set_session(h5fs *fs, struct fuse_session *se);
/* Stop the thread that watches a live FILE (it sends the session
 * notifications): before the session is unmounted and destroyed. */
void h5fs_stop_watching(h5fs *fs);

/* The mount: a table of roots (root.h) that h5fs_ll_ops serves, its
 * fuse_session_new() userdata. A single FILE is one root (it takes fs). */
typedef struct h5fs_mount h5fs_mount;
int h5fs_mount_single(h5fs_mount **out, h5fs *fs);
/* A collection: DIR's tree, each HDF5 file in it a directory (root_coll.c);
 * max_files: descriptors on files under DIR at most (0: the default). */
int h5fs_mount_collection(h5fs_mount **out, const char *dir, const h5fs_config *cfg, unsigned max_files);
/* -o max_files's default: half the soft RLIMIT_NOFILE, at most 1,024 */
unsigned h5fs_default_max_files(void);
void h5fs_mount_set_session(h5fs_mount *m, struct fuse_session *se);
/* Stop the threads that watch live files (they notify the session):
 * before the session is unmounted and destroyed. */
void h5fs_mount_stop(h5fs_mount *m);
void h5fs_mount_free(h5fs_mount *m);
/* The mount's node id of one of fs's (its kernel notifications), when fs
 * is one root of several. */
void h5fs_set_ino_map(h5fs *fs, uint64_t (*map)(void *ud, uint64_t local), void *ud);
/* fs is watched by its collection's one thread (the root op tick), not
 * a watcher thread of its own (-o refresh): before it is started. */
void h5fs_share_watch(h5fs *fs);
/* fs is a live FILE that has changed (a collection's member whose
 * indexed record went stale): its datasets are read without the page
 * cache, as after a change it saw itself (live/live.c). */
void h5fs_set_changed(h5fs *fs);
/* fs's FILE may be written by this mount but was opened read-only
 * (another process holds it): its growable datasets show the write bit
 * all the same (writes to them fail with EROFS while it lasts). Before
 * the first lookup. */
void h5fs_set_write_busy(h5fs *fs);
/* Log lines about fs start with label (a collection's member: its path). */
int h5fs_set_label(h5fs *fs, const char *label);
/* Where fs is mounted (resolved): an absolute symlink target below it
 * names an object of FILE (member/link.c). */
int h5fs_set_mountpoint(h5fs *fs, const char *path);
/* h5fs_log without a file: by the logging options of cfg. */
void h5fs_log_cfg(const h5fs_config *cfg, int prio, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

/* The one place where engine errors become errno values: h5fs_errno,
 * src/common/h5errno.h (included above). */

/* Where the process's log lines go (state/log.c; main.c sets it): appended
 * to log_fd (-o logfile=PATH, -1: none) with a time and the process id,
 * to syslog (a daemon, where /dev/log exists), and to stderr as
 * "h5fs: ..." (in the foreground, and before detaching). Until called:
 * stderr alone. */
void h5fs_log_to(int log_fd, int use_syslog, int use_stderr);
/* A daemon with no syslog: its lines appended to the file at path (log.c
 * opens it: 0 or an errno), which is bounded - past max bytes it becomes
 * path.1 (one old file kept, an older one dropped) and a new one begins. */
int h5fs_log_to_state(const char *path, uint64_t max);

/* One log line at syslog priority prio, where h5fs_log_to says. Errors, warnings and notices (what a
 * user should know, e.g. why a write was refused) are always logged,
 * LOG_INFO with verbose (or debug), LOG_DEBUG with debug. */
void h5fs_log(const h5fs *fs, int prio, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
/* A change answered success was lost (state/log.c; the pager LOST): noted for
 * the exit status of the process (a collection's member may be closed
 * before unmount), and whether any was. */
void h5fs_lost_note(void);
int h5fs_lost_any(void);

extern const struct fuse_lowlevel_ops h5fs_ll_ops;

#endif
