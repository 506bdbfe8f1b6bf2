/*
 * options.c - h5fs's options and arguments: libfuse's option parser with
 * our keys, the options mount(8) passes that mean nothing here, the help
 * text, and the checks of each value (opts_parse). Called once by main().
 */
#ifdef HAVE_CONFIG_H
#include <config.h>
#endif

#include "options.h"
#include "source.h"
#include "tool_exit.h"
#include "views.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <malloc.h>
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
/* Upper bound for -o cache_mb (cache_size), in MiB (1 TiB): larger is surely a typo. */
#define CACHE_MIB_MAX 1048576UL




enum { KEY_HELP, KEY_VERSION, KEY_RO, KEY_RW, KEY_VERBOSE };

/* Options of mount(8) and fstab that mount.fuse3 passes on (or a user
 * copies from an fstab line) and that mean nothing to a read-only FUSE
 * daemon (no access times are ever updated here); "x-*" and "comment=*"
 * belong to userspace tools such as systemd. */
static const char *const ignored_opts[] = {
	"nofail", "_netdev", "auto", "noauto", "user", "nouser", "users", "owner", "group",
	"defaults", "atime", "relatime", "norelatime", "strictatime", "nostrictatime", "lazytime",
	"nolazytime", "diratime", "nodiratime", "iversion", "noiversion", "mand", "nomand",
	"silent", "loud",
	"nonempty",     /* fuse 2: mounting over a non-empty directory is always allowed now */
	NULL
};

static int ignored_opt(const char *arg)
{
	size_t i;

	if (strncmp(arg, "x-", 2) == 0 || strncmp(arg, "comment=", 8) == 0)
		return 1;
	for (i = 0; ignored_opts[i]; i++)
		if (strcmp(arg, ignored_opts[i]) == 0)
			return 1;
	return 0;
}

static const struct fuse_opt cli_spec[] = {
	FUSE_OPT_KEY("-h", KEY_HELP),
	FUSE_OPT_KEY("--help", KEY_HELP),
	FUSE_OPT_KEY("-V", KEY_VERSION),
	FUSE_OPT_KEY("--version", KEY_VERSION),
	FUSE_OPT_KEY("ro", KEY_RO),
	FUSE_OPT_KEY("rw", KEY_RW),
	{ "cache_size=%s", offsetof(struct cli, cache_size), 0 },
	{ "cache_mb=%s", offsetof(struct cli, cache_mb), 0 },
	{ "xattr=%s", offsetof(struct cli, xattr_mode), 0 },
	{ "uid=%s", offsetof(struct cli, uid), 0 },
	{ "gid=%s", offsetof(struct cli, gid), 0 },
	{ "umask=%s", offsetof(struct cli, umask), 0 },
	{ "max_read=%u", offsetof(struct cli, max_read), 0 },
	FUSE_OPT_KEY("verbose", KEY_VERBOSE),
	{ "efl_any", offsetof(struct cli, efl_any), 1 },
	{ "ext_any", offsetof(struct cli, ext_any), 1 },
	{ "ext_prefix=%s", offsetof(struct cli, ext_prefix), 0 },
	{ "refresh=%s", offsetof(struct cli, refresh), 0 },
	{ "idle_commit=%s", offsetof(struct cli, idle_commit), 0 },
	{ "min_free=%s", offsetof(struct cli, min_free), 0 },
	{ "live=%s", offsetof(struct cli, live), 0 },
	{ "compress=%s", offsetof(struct cli, compress), 0 },
	{ "max_files=%u", offsetof(struct cli, max_files), 0 },
	{ "index=%s", offsetof(struct cli, index), 0 },
	{ "noindex", offsetof(struct cli, noindex), 1 },
	{ "h5_suffixes=%s", offsetof(struct cli, h5_suffixes), 0 },
	{ "views", offsetof(struct cli, views_all), 1 },
	{ "views=%s", offsetof(struct cli, views), 0 },
	{ "logfile=%s", offsetof(struct cli, logfile), 0 },
	FUSE_OPT_END
};

static void usage(FILE *out)
{
	fprintf(out,
		"usage: h5fs [options] FILE MOUNTPOINT\n"
		"       h5fs [options] DIR MOUNTPOINT\n"
		"       h5fs [options] s3://BUCKET/[PREFIX/] MOUNTPOINT\n"
		"\n"
		"Mount the HDF5 file FILE at MOUNTPOINT: groups become directories,\n"
		"datasets files holding their raw bytes, soft and external links\n"
		"symlinks, attributes extended attributes. Read-write when FILE is\n"
		"writable (-o ro: read-only): appends (cat >>), writes in place (dd\n"
		"conv=notrunc), setfattr, mkdir, rm, mv, ln -s, np.save and cp make\n"
		"their changes in FILE (man h5fs, MODIFYING).\n"
		"Mount the directory DIR (a collection): its folders as directories,\n"
		"each HDF5 file in it as a directory showing that file as above, other\n"
		"files as read-only files. An S3 prefix likewise: its folders, objects\n"
		"with an HDF5 suffix as directories, other objects as read-only files.\n"
		"Unmount with: h5fs -u MOUNTPOINT (returns once FILE is final;\n"
		"fusermount3 -u returns before h5fs has closed FILE)\n"
		"\n"
		"General options:\n"
		"    -h, --help             print this help and exit\n"
		"    -V, --version          print the versions of h5fs and libfuse and exit\n"
		"    -f                     stay in the foreground, log to stderr\n"
		"                           (default: run as a daemon, log to syslog;\n"
		"                           where there is none, to ${XDG_STATE_HOME:-\n"
		"                           ~/.local/state}/h5fs/FILE-HASH.log, 1 MiB\n"
		"                           and one older .1, named once at mount)\n"
		"    -o logfile=PATH        append h5fs's messages (why a read gave EIO,\n"
		"                           why a write was refused) to PATH too\n"
		"    -d, -o debug           debug: stay in the foreground, log h5fs's debug\n"
		"                           messages and every FUSE request\n"
		"    -s                     single-threaded (default: a pool of threads)\n"
		"    -o clone_fd            one /dev/fuse descriptor per thread\n"
		"    -o max_idle_threads=N  idle threads kept for reuse (default 10)\n"
		"\n"
		"h5fs options:\n"
		"    -o ro                  mount and open FILE read-only: no appends\n"
		"                           (default: read-write when FILE is writable)\n"
		"    -o rw                  read-write, and say so when FILE is not\n"
		"                           writable (then mounted read-only)\n"
		"    -o cache_mb=MiB        budget of the caches: decoded metadata (object\n"
		"                           headers, indexes: a quarter at most, 128 MiB\n"
		"                           with the default budget) and chunks; a walk of\n"
		"                           many objects keeps ~60 bytes a name the kernel\n"
		"                           holds beyond it (default: 1/16 of the memory,\n"
		"                           256 to 2048 MiB; here %zu MiB)\n"
		"    -o cache_size=MiB      the same as cache_mb (its older name)\n"
		"    -o xattr=text|raw      HDF5 attributes as user.* xattrs: readable text\n"
		"                           (default) or the bytes stored in the file\n"
		"    -o uid=N               owner of every entry (default: FILE's owner)\n"
		"    -o gid=N               group of every entry (default: FILE's group)\n"
		"    -o umask=M             octal; files get 0444 & ~M, directories\n"
		"                           0555 & ~M (default: files get FILE's read bits,\n"
		"                           directories those plus the matching search bits)\n"
		"    -o refresh=SECONDS     show changes of FILE made by other processes:\n"
		"                           look at it on every inotify event and at\n"
		"                           least this often (default 1; 0: the view\n"
		"                           stays as mounted; a read-write mount\n"
		"                           follows them between its own writes)\n"
		"    -o idle_commit=SECONDS a read-write mount commits what a descriptor\n"
		"                           left open wrote once it has not written\n"
		"                           for this long, and gives FILE's lock back\n"
		"                           so that libhdf5 programs can open it\n"
		"                           (default 5; 0: only fsync and close commit)\n"
		"    -o min_free=SIZE|PCT%%  a read-write mount refuses (ENOSPC) a write\n"
		"                           that would leave the file system holding\n"
		"                           FILE less free space than this (SIZE: bytes,\n"
		"                           or with K, M, G, T; default: the smaller of\n"
		"                           5%% and 1G; 0: none); rm, rmdir and mv still\n"
		"                           work on a file system at the margin\n"
		"    -o live=fast|strict    fast (default): reads cost what a frozen\n"
		"                           mount's do until FILE first changes; a read\n"
		"                           overlapping that first change may mix its\n"
		"                           two versions. strict: every read is checked\n"
		"                           from the first (no read ever mixes versions)\n"
		"    -o compress=NAME[:N]   new datasets (np.save, cp into a read-write\n"
		"                           mount) chunked as h5py guesses and compressed:\n"
		"                           gzip at level N (default 4, as h5py's \"gzip\"),\n"
		"                           zstd[:1-22], bzip2[:1-9], blosc[:0-9] (lz4,\n"
		"                           shuffle), lz4, lzf, bitshuffle (+lz4), as the\n"
		"                           HDF5 plugins write them; none (default): as\n"
		"                           h5py, not compressed\n"
		"    -o views[=LIST]        list the views of datasets (NAME.npy, NAME.csv,\n"
		"                           NAME.tiff, NAME.png, NAME.frames/) in directories:\n"
		"                           all, or a LIST of npy,csv,tiff,png,frames (they are\n"
		"                           always there to open, only not listed)\n"
		"    -o verbose             also log informational messages\n"
		"    -o efl_any             read external data files named by absolute\n"
		"                           paths or with \"..\" (default: refused, EIO)\n"
		"    -o ext_any             follow external links and virtual dataset\n"
		"                           sources outside FILE's directory tree\n"
		"                           (default: refused)\n"
		"    -o ext_prefix=DIRS     ':'-separated directories searched first for\n"
		"                           those files (also HDF5_EXT_PREFIX,\n"
		"                           HDF5_VDS_PREFIX)\n"
		"    -o max_files=N         DIR: files under DIR open at once, at most\n"
		"                           (default: half the open-file limit, at\n"
		"                           most 1024; here %u)\n"
		"    -o index=PATH          DIR: keep the tree, stat data and xattrs of\n"
		"                           every HDF5 file in the SQLite database PATH, so\n"
		"                           a remount answers from it without opening\n"
		"                           unchanged files (default: a file under\n"
		"                           $XDG_CACHE_HOME/h5fs/ or ~/.cache/h5fs/)\n"
		"    -o noindex             DIR: no index\n"
		"\n"
		"Remote FILEs (http://, https://, s3://BUCKET/KEY; always read-only) and S3\n"
		"prefixes (s3://BUCKET/PREFIX/, a collection: one listing per folder):\n"
		"    -o s3_endpoint=URL     S3 endpoint (default https://s3.REGION.amazonaws.com)\n"
		"    -o s3_region=R         S3 region for signing (default us-east-1)\n"
		"    -o s3_path_style       ENDPOINT/BUCKET/KEY instead of BUCKET.ENDPOINT/KEY\n"
		"                           (always for an endpoint with a port or an IP)\n"
		"    -o retries=N           retries of a failed request (default 4)\n"
		"    -o timeout=S           seconds for one request (default 30)\n"
		"    -o cache_max=MiB       a server that ignores Range (python3 -m\n"
		"                           http.server): FILE is downloaded once into a\n"
		"                           temporary file ($TMPDIR, else /var/tmp) if at\n"
		"                           most this large (default 1024)\n"
		"    -o h5_suffixes=LIST    names of an S3 prefix's HDF5 members, ':'-separated,\n"
		"                           any case (default " H5_SUFFIXES_DEFAULT ")\n"
		"\n"
		"Mount options:\n"
		"    -o allow_other         allow access by all users (default: only the\n"
		"                           user who mounted)\n"
		"    -o allow_root          allow access by that user and root\n"
		"    -o auto_unmount        unmount when h5fs exits for any reason\n"
		"    -o default_permissions always on: the kernel checks the modes shown\n"
		"    -o OPT                 generic mount options (rw, nodev, nosuid,\n"
		"                           noexec, noatime, ...) go to the kernel; fstab-only\n"
		"                           ones (nofail, _netdev, auto, noauto, user, users,\n"
		"                           defaults, x-*, comment=*) are ignored\n"
		"\n"
		"Exit status: 0 unmounted cleanly, 1 runtime error, 2 usage, 3 cannot open\n"
		"FILE or DIR, 4 not HDF5 or unsupported, 5 corrupt, 6 mount failed.\n",
		h5_default_cache_bytes() >> 20, h5fs_default_max_files());
}

/* Keeps arg, a byte-source class's option, for h5_open_opts.source_params. */
static int cli_param_add(struct cli *c, const char *arg)
{
	char **p = realloc(c->params, (c->nparams + 2) * sizeof(*p));

	if (!p) {
		fprintf(stderr, "h5fs: out of memory\n");
		return -1;
	}
	c->params = p;
	if (!(p[c->nparams] = strdup(arg))) {
		fprintf(stderr, "h5fs: out of memory\n");
		return -1;
	}
	p[++c->nparams] = NULL;
	return 0;
}

/* arg a kind of view (after -o views=K1): true, and c->views holds it
 * too (NULL when out of memory). */
static bool views_more(struct cli *c, const char *arg)
{
	unsigned m;
	char *n;

	if (strchr(arg, '=') || vw_parse_list(&m, arg) < 0)
		return false;
	n = malloc(strlen(c->views) + strlen(arg) + 2);
	if (n)
		sprintf(n, "%s,%s", c->views, arg);
	else
		fprintf(stderr, "h5fs: out of memory\n");
	free(c->views);
	c->views = n;
	return true;
}

static int cli_proc(void *data, const char *arg, int key, struct fuse_args *outargs)
{
	struct cli *c = data;

	(void)outargs;
	switch (key) {
	case KEY_HELP:
		usage(stdout);
		exit(TOOL_EXIT_OK);
	case KEY_VERSION:
		/* libfuse's lines come from fusermount3, another process
		 * writing to our stdout: ours first */
		printf("h5fs %s\n", PACKAGE_VERSION);
		fflush(stdout);
		fuse_lowlevel_version();
		exit(TOOL_EXIT_OK);
	case KEY_RO:
		c->read_only = 1;
		return 1;       /* keep: the kernel mounts it MS_RDONLY too */
	case KEY_RW:
		c->read_write = 1;
		return 1;       /* (the kernel's default) */
	case KEY_VERBOSE:
		c->verbose = 1;
		return 0;
	case FUSE_OPT_KEY_OPT:
		/* -o views=npy,tiff: the option parser cut the list at its
		 * commas; the names after the first come here one by one */
		if (c->views && views_more(c, arg))
			return c->views ? 0 : -1;
		/* an option of a byte-source class (remote FILEs): theirs to
		 * parse, each class its own (source_http.c, source_s3.c) */
		switch (h5_source_param(arg)) {
		case 0:
			break;
		case 1:
			return cli_param_add(c, arg);
		default:
			fprintf(stderr, "h5fs: %s\n", h5_err_msg());
			return -1;
		}
		return ignored_opt(arg) ? 0 : 1;
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
		if (c->nonopts == 2) {
			c->mountpoint = strdup(arg);
			if (!c->mountpoint) {
				fprintf(stderr, "h5fs: out of memory\n");
				return -1;
			}
			return 0;
		}
		fprintf(stderr, "h5fs: too many arguments: '%s' (see h5fs --help)\n", arg);
		return -1;
	default:
		return 1;
	}
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

/* -o uid=/gid=: a number, or a user/group name. */
static int parse_id(unsigned long *out, const char *s, int is_group)
{
	char *end;
	unsigned long v;

	if (s[0] >= '0' && s[0] <= '9') {
		errno = 0;
		v = strtoul(s, &end, 10);
		/* (uid_t)-1 means "unchanged" to chown(2): not an owner */
		if (errno || *end || v >= (unsigned long)(uid_t)-1)
			return -1;
		*out = v;
		return 0;
	}
	if (is_group) {
		const struct group *g = getgrnam(s);

		if (!g)
			return -1;
		*out = g->gr_gid;
	} else {
		const struct passwd *pw = getpwnam(s);

		if (!pw)
			return -1;
		*out = pw->pw_uid;
	}
	return 0;
}

static int parse_umask(mode_t *out, const char *s)
{
	char *end;
	unsigned long v;

	errno = 0;
	v = strtoul(s, &end, 8);
	if (errno || end == s || *end || s[0] == '-' || v > 0777)
		return -1;
	*out = (mode_t)v;
	return 0;
}

/* Exit status for an engine error met while opening and checking FILE. */

/* A remote FILE or S3 prefix (http://, https://, s3://): the byte-source
 * classes' options (-o timeout=, retries=, s3_*) mean something only then. */
int is_url(const char *file)
{
	return strstr(file, "://") != NULL;
}

/* Options and arguments: -1 to go on, or the exit status. */
int opts_parse(struct daemon *D)
{
	int ret = TOOL_EXIT_USAGE;

	if (fuse_opt_parse(&D->args, &D->cli, cli_spec, cli_proc) != 0)
		return ret;
	if (fuse_parse_cmdline(&D->args, &D->copts) != 0)
		return ret;
	if (D->copts.show_help || D->copts.show_version) {
		/* only reached for spellings we did not intercept */
		usage(stdout);
		ret = TOOL_EXIT_OK;
		return ret;
	}
	if (!D->cli.file || !D->cli.mountpoint) {
		fprintf(stderr, "h5fs: missing %s (usage: h5fs [options] FILE MOUNTPOINT; see h5fs --help)\n",
			D->cli.file ? "MOUNTPOINT" : "FILE and MOUNTPOINT");
		return ret;
	}
	/* an option that would silently do nothing is refused, as an
	 * unknown one is */
	if (D->cli.nparams && !is_url(D->cli.file)) {
		fprintf(stderr, "h5fs: -o %s is for remote FILEs only (http://, https://, s3://), and %s is local "
			"(see h5fs --help)\n", D->cli.params[0], D->cli.file);
		return ret;
	}
	D->oopts.cache_bytes = h5_default_cache_bytes();
	D->oopts.lazy_lock = 1;         /* FILE locked only while writing */
	if (D->cli.logfile) {
		/* opened before detaching (which changes to "/"), kept open:
		 * a rotated file keeps receiving until remount */
		D->log_fd = open(D->cli.logfile, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
		if (D->log_fd < 0) {
			fprintf(stderr, "h5fs: -o logfile=%s: %s\n", D->cli.logfile, strerror(errno));
			return ret;
		}
		h5fs_log_to(D->log_fd, 0, 1);
	}
	D->oopts.efl_any = D->cli.efl_any;
	D->oopts.ext_any = D->cli.ext_any;
	D->oopts.ext_prefix = D->cli.ext_prefix;
	D->oopts.source_params = (const char *const *)D->cli.params;
	if (D->cli.cache_size && parse_cache_size(&D->oopts.cache_bytes, D->cli.cache_size) < 0) {
		fprintf(stderr, "h5fs: invalid -o cache_size=%s (MiB, 1..%lu)\n", D->cli.cache_size, CACHE_MIB_MAX);
		return ret;
	}
	/* cache_mb (issue 64's name) wins over cache_size when both are given */
	if (D->cli.cache_mb && parse_cache_size(&D->oopts.cache_bytes, D->cli.cache_mb) < 0) {
		fprintf(stderr, "h5fs: invalid -o cache_mb=%s (MiB, 1..%lu)\n", D->cli.cache_mb, CACHE_MIB_MAX);
		return ret;
	}

	if (D->cli.xattr_mode && strcmp(D->cli.xattr_mode, "text") != 0 && strcmp(D->cli.xattr_mode, "raw") != 0) {
		fprintf(stderr, "h5fs: invalid -o xattr=%s (text or raw)\n", D->cli.xattr_mode);
		return ret;
	}
	D->cfg.refresh = 1;
	if (D->cli.refresh) {
		char *end;
		unsigned long v;

		errno = 0;
		v = strtoul(D->cli.refresh, &end, 10);
		if (errno || end == D->cli.refresh || *end || D->cli.refresh[0] == '-' || v > 86400) {
			fprintf(stderr, "h5fs: invalid -o refresh=%s (seconds, 0..86400)\n", D->cli.refresh);
			return ret;
		}
		D->cfg.refresh = (unsigned)v;
	}
	D->cfg.idle_commit = H5FS_IDLE_COMMIT_DEFAULT;
	if (D->cli.idle_commit) {
		char *end;
		unsigned long v;

		errno = 0;
		v = strtoul(D->cli.idle_commit, &end, 10);
		if (errno || end == D->cli.idle_commit || *end || D->cli.idle_commit[0] == '-' || v > 86400) {
			fprintf(stderr, "h5fs: invalid -o idle_commit=%s (seconds, 0..86400)\n", D->cli.idle_commit);
			return ret;
		}
		D->cfg.idle_commit = (unsigned)v;
	}
	/* the host's margin (issue 65): ext4 keeps 5% for root; here the
	 * smaller of 5% and 1 GiB unless said otherwise */
	D->cfg.min_free_bytes = (uint64_t)1 << 30;
	D->cfg.min_free_pct = 5;
	if (D->cli.min_free) {
		const char *s = D->cli.min_free;
		char *end;
		unsigned long long v;
		unsigned shift = 0;

		errno = 0;
		v = strtoull(s, &end, 10);
		if (*end && !end[1])
			shift = *end == 'K' || *end == 'k' ? 10 : *end == 'M' ? 20 : *end == 'G' ? 30 : *end == 'T' ? 40 : 0;
		if (errno || end == s || s[0] == '-' || (*end && !(shift || (*end == '%' && v <= 100))) ||
		    (*end && end[1]) || (shift && v > (UINT64_MAX >> shift))) {
			fprintf(stderr, "h5fs: invalid -o min_free=%s (bytes, with K, M, G or T, or a percentage "
				"such as 5%%; 0: none)\n", s);
			return ret;
		}
		if (*end == '%') {
			D->cfg.min_free_pct = (unsigned)v;
			D->cfg.min_free_bytes = 0;
		} else {
			D->cfg.min_free_bytes = (uint64_t)v << shift;
			D->cfg.min_free_pct = 0;
		}
	}
	if (D->cli.live && strcmp(D->cli.live, "fast") != 0 && strcmp(D->cli.live, "strict") != 0) {
		fprintf(stderr, "h5fs: invalid -o live=%s (fast or strict)\n", D->cli.live);
		return ret;
	}
	D->cfg.live_strict = D->cli.live && strcmp(D->cli.live, "strict") == 0;
	if (D->cli.compress && strcmp(D->cli.compress, "none") != 0 &&
	    h5_dataset_compress_parse(&D->cfg.compress_filter, &D->cfg.compress, D->cli.compress) < 0) {
		fprintf(stderr, "h5fs: invalid -o compress=%s: %s (none, gzip[:0-9], zstd[:1-22], bzip2[:1-9], "
			"blosc[:0-9], lz4, lzf or bitshuffle)\n", D->cli.compress, h5_err_msg());
		return ret;
	}
	D->cfg.open_opts = &D->oopts;
	D->cfg.h5_suffixes = D->cli.h5_suffixes;
	if (D->cli.views_all || D->cli.views) {
		if (vw_parse_list(&D->cfg.views, D->cli.views) < 0) {
			fprintf(stderr, "h5fs: invalid -o views=%s (all, or npy,csv,tiff,png,frames)\n", D->cli.views);
			return ret;
		}
	}
	if (D->cli.uid) {
		unsigned long v;

		if (parse_id(&v, D->cli.uid, 0) < 0) {
			fprintf(stderr, "h5fs: invalid -o uid=%s (a user id or name)\n", D->cli.uid);
			return ret;
		}
		D->cfg.uid = (uid_t)v;
		D->cfg.uid_set = 1;
	}
	if (D->cli.gid) {
		unsigned long v;

		if (parse_id(&v, D->cli.gid, 1) < 0) {
			fprintf(stderr, "h5fs: invalid -o gid=%s (a group id or name)\n", D->cli.gid);
			return ret;
		}
		D->cfg.gid = (gid_t)v;
		D->cfg.gid_set = 1;
	}
	if (D->cli.umask) {
		if (parse_umask(&D->cfg.umask, D->cli.umask) < 0) {
			fprintf(stderr, "h5fs: invalid -o umask=%s (octal, 0..777)\n", D->cli.umask);
			return ret;
		}
		D->cfg.umask_set = 1;
	}

	return -1;
}

