/*
 * main.c - h5fs: mount an HDF5 file as a directory tree.
 *
 *   h5fs [options] FILE MOUNTPOINT
 *
 * FILE is opened and its superblock and root group are checked before
 * anything is mounted, so a bad input fails with one line on stderr
 * ("h5fs: FILE: cause") and a non-zero exit status.
 */
#ifdef HAVE_CONFIG_H
#include <config.h>
#endif

#include "fuse_ops.h"

#include <errno.h>
#include <limits.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <syslog.h>

#ifndef PACKAGE_VERSION
#define PACKAGE_VERSION "unknown"
#endif

/* Upper bound for -o cache_size, in MiB (1 TiB): larger is surely a typo. */
#define CACHE_MIB_MAX 1048576UL

struct cli {
	char *file;
	char *cache_size;       /* -o cache_size=MiB, as given */
	char *xattr_mode;       /* -o xattr=text|raw */
	int read_only;
	int nonopts;
};

enum { KEY_HELP, KEY_VERSION, KEY_RO };

static const struct fuse_opt cli_spec[] = {
	FUSE_OPT_KEY("-h", KEY_HELP),
	FUSE_OPT_KEY("--help", KEY_HELP),
	FUSE_OPT_KEY("-V", KEY_VERSION),
	FUSE_OPT_KEY("--version", KEY_VERSION),
	FUSE_OPT_KEY("ro", KEY_RO),
	{ "cache_size=%s", offsetof(struct cli, cache_size), 0 },
	{ "xattr=%s", offsetof(struct cli, xattr_mode), 0 },
	FUSE_OPT_END
};

static void usage(FILE *out)
{
	fprintf(out,
		"usage: h5fs [options] FILE MOUNTPOINT\n"
		"\n"
		"Mount the HDF5 file FILE at MOUNTPOINT: groups become directories,\n"
		"datasets read-only files holding their raw bytes, soft and external\n"
		"links symlinks. Unmount with: fusermount3 -u MOUNTPOINT\n"
		"\n"
		"h5fs options:\n"
		"    -h, --help             print this help and exit\n"
		"    -V, --version          print the version and exit\n"
		"    -o ro                  mount read-only (this version never writes;\n"
		"                           every modification fails with EROFS)\n"
		"    -o cache_size=MiB      metadata + chunk cache budget (default %zu MiB)\n"
		"    -o xattr=text|raw      HDF5 attributes as user.* xattrs: readable text\n"
		"                           (default) or the bytes stored in the file\n"
		"\n",
		H5_DEFAULT_CACHE_BYTES >> 20);
}

static int cli_proc(void *data, const char *arg, int key, struct fuse_args *outargs)
{
	struct cli *c = data;

	(void)outargs;
	switch (key) {
	case KEY_HELP:
		usage(stdout);
		printf("FUSE options:\n");
		fuse_cmdline_help();
		fuse_lowlevel_help();
		exit(0);
	case KEY_VERSION:
		printf("h5fs %s\n", PACKAGE_VERSION);
		fuse_lowlevel_version();
		exit(0);
	case KEY_RO:
		c->read_only = 1;
		return 1;       /* keep: the kernel mounts it MS_RDONLY too */
	case FUSE_OPT_KEY_NONOPT:
		c->nonopts++;
		if (c->nonopts == 1) {
			c->file = strdup(arg);
			if (!c->file) {
				fprintf(stderr, "h5fs: out of memory\n");
				return -1;
			}
			return 0;
		}
		if (c->nonopts == 2)
			return 1;       /* the mountpoint, for fuse_parse_cmdline */
		fprintf(stderr, "h5fs: too many arguments: '%s' (see h5fs --help)\n", arg);
		return -1;
	default:
		return 1;
	}
}

/* The engine's message often starts with the path already ("FILE: No such
 * file"); print it once. */
static const char *cause_of(const char *file)
{
	const char *msg = h5_err_msg();
	size_t n = strlen(file);

	if (strncmp(msg, file, n) == 0 && msg[n] == ':' && msg[n + 1] == ' ')
		return msg + n + 2;
	return msg;
}

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

static int parse_cache_size(size_t *out, const char *s)
{
	char *end;
	unsigned long v;

	errno = 0;
	v = strtoul(s, &end, 10);
	if (errno || end == s || *end || s[0] == '-' || v == 0 || v > CACHE_MIB_MAX)
		return -1;
	*out = (size_t)v << 20;
	return 0;
}

int main(int argc, char **argv)
{
	struct fuse_args args = FUSE_ARGS_INIT(argc, argv);
	struct fuse_cmdline_opts copts;
	struct cli cli;
	h5_open_opts oopts;
	h5fs_config cfg;
	h5_file *f = NULL;
	h5fs *fs = NULL;
	struct fuse_session *se = NULL;
	char *fsname = NULL, *abs = NULL;
	int ret = 1, rc, mounted = 0, handlers = 0;

	memset(&cli, 0, sizeof(cli));
	memset(&copts, 0, sizeof(copts));
	memset(&oopts, 0, sizeof(oopts));
	memset(&cfg, 0, sizeof(cfg));
	if (fuse_opt_parse(&args, &cli, cli_spec, cli_proc) != 0)
		goto out;
	if (fuse_parse_cmdline(&args, &copts) != 0)
		goto out;
	if (copts.show_help || copts.show_version) {
		/* only reached for spellings we did not intercept */
		usage(stdout);
		ret = 0;
		goto out;
	}
	if (!cli.file || !copts.mountpoint) {
		fprintf(stderr, "h5fs: missing %s (usage: h5fs [options] FILE MOUNTPOINT; see h5fs --help)\n",
			cli.file ? "MOUNTPOINT" : "FILE and MOUNTPOINT");
		goto out;
	}
	oopts.cache_bytes = H5_DEFAULT_CACHE_BYTES;
	if (cli.cache_size && parse_cache_size(&oopts.cache_bytes, cli.cache_size) < 0) {
		fprintf(stderr, "h5fs: invalid -o cache_size=%s (MiB, 1..%lu)\n", cli.cache_size, CACHE_MIB_MAX);
		goto out;
	}

	if (cli.xattr_mode && strcmp(cli.xattr_mode, "text") != 0 && strcmp(cli.xattr_mode, "raw") != 0) {
		fprintf(stderr, "h5fs: invalid -o xattr=%s (text or raw)\n", cli.xattr_mode);
		goto out;
	}

	/* Open and check FILE before mounting anything. */
	rc = h5_file_open(&f, cli.file, &oopts);
	if (rc < 0) {
		fprintf(stderr, "h5fs: %s: %s\n", cli.file, cause_of(cli.file));
		goto out;
	}
	cfg.read_only = cli.read_only;
	cfg.use_syslog = !copts.foreground;
	cfg.debug = copts.debug;
	cfg.xattr_raw = cli.xattr_mode && strcmp(cli.xattr_mode, "raw") == 0;
	rc = h5fs_new(&fs, f, &cfg);
	if (rc < 0) {
		fprintf(stderr, "h5fs: %s: %s\n", cli.file, cause_of(cli.file));
		goto out;
	}
	f = NULL;       /* owned by fs now */

	/* Show FILE as the mount's source in /proc/mounts and df. */
	abs = realpath(cli.file, NULL);
	fsname = fsname_opt(abs ? abs : cli.file);
	if (!fsname) {
		fprintf(stderr, "h5fs: out of memory\n");
		goto out;
	}
	if (fuse_opt_add_arg(&args, "-o") != 0 || fuse_opt_add_arg(&args, fsname) != 0 ||
	    fuse_opt_add_arg(&args, "-odefault_permissions") != 0) {
		fprintf(stderr, "h5fs: out of memory\n");
		goto out;
	}

	se = fuse_session_new(&args, &h5fs_ll_ops, sizeof(h5fs_ll_ops), fs);
	if (!se)
		goto out;       /* libfuse printed why (e.g. unknown option) */
	if (fuse_set_signal_handlers(se) != 0)
		goto out;
	handlers = 1;
	if (fuse_session_mount(se, copts.mountpoint) != 0)
		goto out;       /* libfuse printed why (bad mountpoint, no /dev/fuse) */
	mounted = 1;
	if (cfg.use_syslog)
		openlog("h5fs", LOG_PID, LOG_DAEMON);
	if (fuse_daemonize(copts.foreground) != 0)
		goto out;
	if (copts.singlethread) {
		rc = fuse_session_loop(se);
	} else {
		struct fuse_loop_config lc;

		memset(&lc, 0, sizeof(lc));
		lc.clone_fd = copts.clone_fd;
		/* libfuse >= 3.12 leaves UINT_MAX here for "not given" and then
		 * complains about it: keep libfuse's traditional default. */
		lc.max_idle_threads = copts.max_idle_threads == UINT_MAX ? 10 : copts.max_idle_threads;
		rc = fuse_session_loop_mt(se, &lc);
	}
	ret = rc < 0 ? 1 : 0;
out:
	if (mounted)
		fuse_session_unmount(se);
	if (handlers)
		fuse_remove_signal_handlers(se);
	if (se)
		fuse_session_destroy(se);
	h5fs_free(fs);
	h5_file_close(f);
	free(fsname);
	free(abs);
	free(copts.mountpoint);
	free(cli.file);
	free(cli.cache_size);
	free(cli.xattr_mode);
	fuse_opt_free_args(&args);
	return ret;
}
