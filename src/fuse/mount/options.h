/*
 * options.h - h5fs's command line: what the user asked for (struct cli),
 * everything main() sets up from it (struct daemon), and the parse that
 * fills both (options.c).
 */
#ifndef H5FS_OPTIONS_H
#define H5FS_OPTIONS_H

#include "fuse_ops.h"
#include "startup.h"

#include <stdbool.h>
#include <sys/stat.h>

struct cli {
	char *file;
	char *cache_size;       /* -o cache_size=MiB, as given */
	char *cache_mb;         /* -o cache_mb=MiB (the same; wins) */
	char *xattr_mode;       /* -o xattr=text|raw */
	char *uid, *gid, *umask;        /* -o uid=N, gid=N, umask=M, as given */
	char *mountpoint;       /* as given: resolved after FILE is checked */
	unsigned max_read;      /* -o max_read=N (a FUSE mount option) */
	int read_only;
	int read_write;         /* -o rw: asked for (a FILE that is not writable: said) */
	int verbose;
	int efl_any;            /* -o efl_any: follow any external file name */
	int ext_any;            /* -o ext_any: other files outside FILE's tree */
	char *ext_prefix;       /* -o ext_prefix=DIRS */
	/* the byte-source classes' options (-o s3_endpoint=URL, s3_region=R,
	 * s3_path_style, retries=N, timeout=S: the keys h5_source_param()
	 * owns), in order, NULL-terminated: h5_open_opts.source_params */
	char **params;
	size_t nparams;
	char *refresh;          /* -o refresh=SECONDS, as given */
	char *idle_commit;      /* -o idle_commit=SECONDS, as given */
	char *min_free;         /* -o min_free=SIZE|PCT%, as given */
	char *live;             /* -o live=fast|strict */
	char *compress;         /* -o compress=none|gzip[:LEVEL] */
	unsigned max_files;     /* -o max_files=N (a collection; 0: default) */
	char *index;            /* -o index=PATH (a collection's index file) */
	int noindex;            /* -o noindex */
	char *h5_suffixes;      /* -o h5_suffixes=.h5:.nxs (an S3 prefix's members) */
	int views_all;          /* -o views */
	char *views;            /* -o views=npy,tiff,... */
	char *logfile;          /* -o logfile=PATH */
	int nonopts;
};

/* Everything main() sets up, torn down in one place (daemon_free). */
struct daemon {
	struct fuse_args args;
	struct fuse_cmdline_opts copts;
	struct cli cli;
	h5_open_opts oopts;
	h5_ctx *ctx;            /* the mount's one engine context */
	h5fs_config cfg;
	h5_file *f;
	h5fs *fs;
	h5fs_mount *m;
	struct fuse_session *se;
	char *fsname, *abs, maxread_opt[32];
	int mounted, handlers;
	int log_fd;             /* -o logfile, or -1 */
	char *dir_name;         /* FILE's name in it (h5_open_opts.dir_name) */
	char *space_real;       /* FILE or DIR resolved (h5fs_config.space_path) */
	int dir_fd;             /* a local FILE's folder, opened at mount, or -1
				 * (h5_open_opts.dir_fd: FILE is only ever opened
				 * again from it, main.c open_local) */
	struct stat fst;
};

/* Options and arguments: -1 to go on, or the exit status (doc/h5fs.1). */
int opts_parse(struct daemon *D);
/* A remote FILE or S3 prefix (http://, https://, s3://). */
int is_url(const char *file);

#endif
