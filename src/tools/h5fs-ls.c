/*
 * h5fs-ls - list an HDF5 file the way h5fs would show it, without mounting.
 *
 *   h5fs-ls [-R] [--json] [-o OPTIONS] FILE [PATH]
 *   h5fs-ls [-R] [--json] [--index PATH | --noindex] [-o OPTIONS] DIR | s3://BUCKET/[PREFIX/]
 *   h5fs-ls --refs [--url=URL] [--inline=N] [--split=MIB] [--strict]
 *           [--follow-external] FILE [PATH]     (chunk references: refs.c)
 *   h5fs-ls --refs --concat=DIM [...] FILE... | DIR | s3://BUCKET/PREFIX/
 *                                      (combined references: refs_concat.c)
 *   h5fs-ls --space [--json] [-o OPTIONS] FILE   (where its bytes go: ls_space.c)
 *
 * For each dataset: datatype (class, size, byte order), shape (and maximum
 * shape when it differs), storage layout (chunk shape and chunk index type
 * when chunked), filters, and the bytes allocated in the file against the
 * logical size with their ratio.  Uses libh5core only, so it shows exactly
 * what the engine understands. A collection (a directory, an S3 prefix)
 * is listed as h5fs DIR MNT shows it: folders, HDF5 members (with -R
 * their trees, paths below the member's), other files (collection.c
 * walks it).
 *
 * Exit status as h5fs (doc/h5fs-ls.1): 0 listed, 1 some object could not
 * be read, 2 usage, 3 cannot open FILE, 4 not HDF5 or unsupported,
 * 5 corrupt, 6 PATH not found.
 */
#ifdef HAVE_CONFIG_H
#include <config.h>
#endif

#include "h5core.h"
#include "json.h"
#include "collection.h"
#include "cls.h"
#include "ls_list.h"
#include "ls_space.h"
#include "linkvec.h"
#include "refs.h"
#include "refs_concat.h"
#include "source.h"
#include "tool_exit.h"

#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>

#ifndef PACKAGE_VERSION
#define PACKAGE_VERSION "unknown"
#endif

/* ---- collections (collection.c walks them) ------------------------------
 * With -R, a member's entries come from the collection's index (cls.h)
 * when it has them at the member's key (size, mtime, ETag): the member is
 * not opened. Else it is opened and listed, and what was printed of it is
 * recorded (not when some object gave an error: such a member is listed
 * anew each time, as a mount keeps it live). */

struct coll_lister {
	struct lister L;
	cindex *ix;             /* NULL: --noindex, or no -R */
	const char *root;       /* the index's key of the collection */
};

static void coll_folder(void *u, const char *path)
{
	struct lister *L = &((struct coll_lister *)u)->L;
	struct jb s = { 0 };

	ls_entry_begin(L, &s, path, "folder");
	if (L->json)
		jb_printf(&s, "}");
	ls_emit(L, &s);
	free(s.p);
}

static void coll_plain(void *u, const char *path, uint64_t size)
{
	struct lister *L = &((struct coll_lister *)u)->L;
	struct jb s = { 0 };

	ls_entry_begin(L, &s, path, "file");
	jb_printf(&s, L->json ? ", \"size\": %" PRIu64 "}" : " size=%" PRIu64, size);
	ls_emit(L, &s);
	free(s.p);
}

static void member_line(struct lister *L, const char *path, uint64_t size)
{
	struct jb s = { 0 };

	ls_entry_begin(L, &s, path, "hdf5");
	jb_printf(&s, L->json ? ", \"size\": %" PRIu64 "}" : " size=%" PRIu64, size);
	ls_emit(L, &s);
	free(s.p);
}

/* A member the index has listed at this key: its entries printed again. */
static int coll_listed(void *u, const char *path, const struct coll_stat *st)
{
	struct coll_lister *c = u;
	struct lister *L = &c->L;
	cindex_key k;
	char *body = NULL;
	size_t len = 0;
	unsigned nerr = 0;

	if (!c->ix)
		return 0;
	k = tool_key(c->root, path, st);
	if (cls_get(&body, &len, &nerr, c->ix, &k, L->json) != 0 || !len) {
		free(body);
		h5_err_clear();         /* a miss, or an index error: listed anew */
		return 0;
	}
	coll_progress_clear();
	if (!L->json) {
		fwrite(body, 1, len, stdout);
	} else {
		/* one entry per line, printed as ls_emit prints one */
		for (char *p = body, *e; p < body + len; p = e + 1) {
			e = memchr(p, '\n', (size_t)(body + len - p));
			if (!e)
				e = body + len;
			printf("%s\n    %.*s", L->first_json ? "" : ",", (int)(e - p), p);
			L->first_json = 0;
		}
	}
	L->nerr += (int)nerr;
	free(body);
	return 1;
}

/* A member: its line (or its error), then (opened: -R) its tree below
 * its path, as the mount shows it under the member's directory; kept in
 * the index unless an error in it may pass. */
static void coll_member(void *u, const char *path, const struct coll_stat *st, h5_file *f, int rc, bool transient)
{
	struct coll_lister *c = u;
	struct lister *L = &c->L;
	struct jb cap = { 0 };
	int nerr = L->nerr;

	L->cap = c->ix && (f || rc < 0) ? &cap : NULL;
	L->transient = 0;
	if (rc < 0) {
		ls_entry_error(L, path, "hdf5", rc);
		L->transient = transient;
	} else {
		member_line(L, path, st->size);
	}
	if (f) {
		L->f = f;
		L->nseen = 0;   /* hard links are per file */
		ls_list_object(L, path, h5_file_root(f), 1);
		L->f = NULL;
	}
	if (L->cap && !L->transient) {
		cindex_key k = tool_key(c->root, path, st);

		jb_done(&cap);
		if (!cap.nomem && cls_put(c->ix, &k, L->json, cap.p, cap.len, (unsigned)(L->nerr - nerr)) < 0) {
			coll_progress_clear();
			fprintf(stderr, "h5fs-ls: %s\n", h5_err_msg());
		}
		h5_err_clear();
	}
	L->cap = NULL;
	free(cap.p);
	free(cap.sb.p);
}

/* A folder that could not be listed: an entry; the top itself: the
 * command fails (stderr, exit 3) */
static void coll_error(void *u, const char *path, int rc)
{
	struct lister *L = &((struct coll_lister *)u)->L;

	if (*path)
		ls_entry_error(L, path, "folder", rc);
	else
		fprintf(stderr, "h5fs-ls: %s\n", h5_err_msg());
}

static void index_note(void *arg, const char *msg)
{
	(void)arg;
	coll_progress_clear();
	fprintf(stderr, "h5fs-ls: %s\n", msg);
}

/* index_path: --index (NULL: the default of the collection); noindex:
 * --noindex. The index serves -R only (without it no member is read). */
static int list_collection(struct lister *L0, const char *top, ls_coll_opts *co, const char *index_path,
			   int noindex)
{
	struct coll_lister c = { .L = *L0 };
	struct lister *L = &c.L;
	ls_visit v = { &c, coll_folder, coll_listed, coll_member, coll_plain, coll_error };
	tool_kinds tk = { 0 };
	char *root = NULL;
	int rc;

	if (co->recursive && !noindex && (root = coll_canonical(top)) != NULL) {
		char *path = index_path ? strdup(index_path) : NULL;

		if (!index_path && cindex_default_path(&path, root) < 0)
			path = NULL;
		if (!path || cindex_open(&c.ix, path, index_note, NULL) < 0) {
			fprintf(stderr, "h5fs-ls: %s; listing without an index\n", h5_err_msg());
			h5_err_clear();
			c.ix = NULL;
		}
		free(path);
		c.root = root;
		if (c.ix) {
			tool_kinds_load(&tk, c.ix, root, "h5fs-ls");
			co->tk = &tk;
		}
	}
	if (L->json) {
		struct jb s = { 0 };

		jb_str(&s, top, strlen(top));
		jb_done(&s);
		printf("{\"collection\": %s, \"entries\": [", s.p ? s.p : "\"\"");
		free(s.p);
	}
	rc = ls_coll_walk(top, co, &v);
	if (L->json)
		printf("%s]}\n", L->first_json ? "" : "\n");
	co->tk = NULL;
	tool_kinds_free(&tk);
	if (c.ix)
		cindex_close(c.ix);
	free(root);
	*L0 = c.L;
	if (rc < 0)
		return rc == H5_ERR_NOMEM ? TOOL_EXIT_PARTIAL : TOOL_EXIT_OPEN;
	return L->nerr ? TOOL_EXIT_PARTIAL : TOOL_EXIT_OK;
}

static void usage(FILE *out)
{
	fprintf(out,
		"usage: h5fs-ls [-R] [--json] [-o OPTIONS] FILE [PATH]\n"
		"       h5fs-ls [-R] [--json] [--index PATH|--noindex] [-o OPTIONS] DIR|s3://BUCKET/[PREFIX/]\n"
		"       h5fs-ls --refs [OPTIONS] FILE|URL [PATH]\n"
		"       h5fs-ls --refs --concat=DIM [OPTIONS] FILE... | DIR | s3://BUCKET/PREFIX/\n"
		"       h5fs-ls --space [--json] [-o OPTIONS] FILE|URL\n"
		"List the HDF5 file FILE (from PATH, default /) as h5fs shows it:\n"
		"per dataset its type, shape, layout, chunking, chunk index, filters and\n"
		"allocated vs logical size. A directory DIR or an S3 prefix is listed as\n"
		"h5fs DIR MNT shows it: folders, HDF5 members (by signature in DIR, by\n"
		"suffix under a prefix; -R: with their trees) and other files.\n"
		"  -R, --recursive   list sub-groups (and sub-folders, members' trees) too\n"
		"  --json            one JSON document instead of text\n"
		"  --index PATH      -R, --concat of a collection: the index file (default: the one\n"
		"                    h5fs uses); members it has at their size, mtime and\n"
		"                    ETag are listed from it, unopened\n"
		"  --noindex         -R, --concat of a collection: open every member, keep nothing\n"
		"  -o OPT[,OPT...]   options as h5fs's (remote FILEs and collections):\n"
		"  -o s3_endpoint=URL  S3 endpoint (default https://s3.REGION.amazonaws.com)\n"
		"  -o s3_region=R    S3 region for signing (default us-east-1)\n"
		"  -o s3_path_style  ENDPOINT/BUCKET/KEY instead of BUCKET.ENDPOINT/KEY\n"
		"  -o retries=N      retries of a failed remote request (default 4)\n"
		"  -o timeout=S      seconds a remote request may take (default 30)\n"
		"  -o h5_suffixes=LIST  names of HDF5 members of an S3 prefix, ':'-separated,\n"
		"                    any case (default " H5_SUFFIXES_DEFAULT ")\n"
		"  --refs            kerchunk (version 1) chunk references of every dataset\n"
		"                    for zarr/fsspec, instead of the listing\n"
		"  --url=URL         the URL written into references (default: FILE's\n"
		"                    absolute path or URL)\n"
		"  --inline=N        inline chunks smaller than N bytes (default 500)\n"
		"  --split=MIB       cut contiguous datasets in pieces of at most MIB MiB\n"
		"  --fill=exact      chunks never written of a dataset without _FillValue\n"
		"                    inline up to 64 MiB (default bounded: only while they\n"
		"                    take no more than its written chunks, else its fill\n"
		"                    value, which xarray masks)\n"
		"  --strict          exit 1 when a dataset had to be skipped\n"
		"  --follow-external follow external links (inside FILE's directory tree)\n"
		"  --concat=DIM      --refs of several files as one dataset along dimension\n"
		"                    DIM (a dimension scale's name) or axis DIM (a number):\n"
		"                    FILEs in the order given, or DIR's or the prefix's HDF5\n"
		"                    files by the first value of DIM's coordinate, else by\n"
		"                    path (--index, --noindex: as with -R)\n"
		"  --space           where FILE's bytes go: metadata, raw data, and the\n"
		"                    unreferenced bytes (space freed by changes, which\n"
		"                    neither libhdf5 nor h5fs reuses; h5repack reclaims it)\n"
		"  -h, --help        this help\n"
		"  -V, --version     print the version\n"
		"Exit status: 0 ok, 1 some objects unreadable, 2 usage, 3 cannot open FILE\n"
		"(or list DIR or the prefix),\n"
		"4 not HDF5 or unsupported, 5 corrupt, 6 PATH not found.\n");
}

int main(int argc, char **argv)
{
	struct lister L;
	refs_opts ro = { .inline_max = 500 };
	int refs = 0, space = 0, concat = 0;
	concat_opts co_cat = { 0 };
	char *url_alloc = NULL;
	const char *file = NULL, *path = "/";
	h5_open_opts oo = { 0 };
	char *params[TOOL_PARAMS + 1] = { NULL };
	size_t nparams = 0;
	char *suffixes = NULL;
	const char *index_path = NULL;
	int noindex = 0;
	h5_file *f = NULL;
	h5_ctx *ctx = NULL;
	uint64_t addr;
	struct stat st;
	char **inputs = argv + 1;      /* the arguments that are no options, gathered in place */
	int i, nargs = 0, ninputs = 0, rc, ret = TOOL_EXIT_PARTIAL;

	memset(&L, 0, sizeof(L));
	L.first_json = 1;
	for (i = 1; i < argc; i++) {
		if (strcmp(argv[i], "-R") == 0 || strcmp(argv[i], "--recursive") == 0) {
			L.recursive = 1;
		} else if (strcmp(argv[i], "--json") == 0) {
			L.json = 1;
		} else if (strcmp(argv[i], "-o") == 0 || (strncmp(argv[i], "-o", 2) == 0 && argv[i][2])) {
			char *arg = argv[i][2] ? argv[i] + 2 : i + 1 < argc ? argv[++i] : NULL;

			if (!arg || tool_parse_o("h5fs-ls", &oo, params, &nparams, &suffixes, arg) < 0) {
				usage(stderr);
				return TOOL_EXIT_USAGE;
			}
		} else if (strcmp(argv[i], "--refs") == 0) {
			refs = 1;
		} else if (strcmp(argv[i], "--space") == 0) {
			space = 1;
		} else if (strcmp(argv[i], "--noindex") == 0) {
			noindex = 1;
		} else if (strcmp(argv[i], "--index") == 0 || strncmp(argv[i], "--index=", 8) == 0) {
			index_path = argv[i][7] == '=' ? argv[i] + 8 : i + 1 < argc ? argv[++i] : NULL;
			if (!index_path || !*index_path) {
				fprintf(stderr, "h5fs-ls: --index needs a file\n");
				return TOOL_EXIT_USAGE;
			}
		} else if (strcmp(argv[i], "--fill=exact") == 0 || strcmp(argv[i], "--fill=bounded") == 0) {
			ro.fill_exact = argv[i][7] == 'e';
		} else if (strncmp(argv[i], "--url=", 6) == 0 && argv[i][6]) {
			ro.url = argv[i] + 6;
		} else if (strncmp(argv[i], "--inline=", 9) == 0 || strncmp(argv[i], "--split=", 8) == 0) {
			const char *v = strchr(argv[i], '=') + 1;
			char *end;
			unsigned long long n;

			errno = 0;
			n = strtoull(v, &end, 10);
			if (!*v || *end || errno || *v == '-' || (argv[i][2] == 's' && n > (UINT64_MAX >> 20))) {
				fprintf(stderr, "h5fs-ls: bad number in %s\n", argv[i]);
				return TOOL_EXIT_USAGE;
			}
			if (argv[i][2] == 'i')
				ro.inline_max = n;
			else
				ro.split_bytes = (uint64_t)n << 20;
		} else if (strncmp(argv[i], "--concat=", 9) == 0) {
			const char *v = argv[i] + 9;
			char *end;
			long n;

			if (!*v) {
				fprintf(stderr, "h5fs-ls: --concat needs a dimension name or number\n");
				return TOOL_EXIT_USAGE;
			}
			errno = 0;
			n = strtol(v, &end, 10);
			if (*v >= '0' && *v <= '9' && !*end && !errno && n < 32) {
				co_cat.axis = (int)n;
			} else if (*v >= '0' && *v <= '9' && strspn(v, "0123456789") == strlen(v)) {
				fprintf(stderr, "h5fs-ls: --concat=%s: no such axis (at most 31)\n", v);
				return TOOL_EXIT_USAGE;
			} else {
				co_cat.dim = v;
			}
			concat = 1;
		} else if (strcmp(argv[i], "--strict") == 0) {
			ro.strict = 1;
		} else if (strcmp(argv[i], "--follow-external") == 0) {
			ro.follow_external = 1;
		} else if (strcmp(argv[i], "-h") == 0 || strcmp(argv[i], "--help") == 0) {
			usage(stdout);
			return 0;
		} else if (strcmp(argv[i], "-V") == 0 || strcmp(argv[i], "--version") == 0) {
			printf("h5fs-ls %s\n", PACKAGE_VERSION);
			return 0;
		} else if (argv[i][0] == '-' && argv[i][1] && strcmp(argv[i], "--") != 0) {
			fprintf(stderr, "h5fs-ls: unknown option %s\n", argv[i]);
			usage(stderr);
			return TOOL_EXIT_USAGE;
		} else if (strcmp(argv[i], "--") == 0) {
			continue;
		} else {
			/* FILE [PATH], or --concat's inputs */
			inputs[ninputs++] = argv[i];
		}
	}
	if (!concat && ninputs > 2) {
		usage(stderr);
		return TOOL_EXIT_USAGE;
	}
	nargs = ninputs;
	file = ninputs ? inputs[0] : NULL;
	if (ninputs == 2)
		path = inputs[1];
	if (!file) {
		usage(stderr);
		return TOOL_EXIT_USAGE;
	}
	if (concat && (!refs || space || L.recursive || L.json || ro.url)) {
		fprintf(stderr, "h5fs-ls: --concat is an option of --refs (without %s)\n",
			!refs ? "--space, -R, --json, --url: add --refs" : space ? "--space" : L.recursive ? "-R"
			: L.json ? "--json" : "--url");
		return TOOL_EXIT_USAGE;
	}
	if (space && (refs || L.recursive || nargs > 1)) {
		fprintf(stderr, "h5fs-ls: --space reports on a whole FILE: no %s\n",
			refs ? "--refs" : L.recursive ? "-R" : "PATH");
		return TOOL_EXIT_USAGE;
	}
	/* HTTP has no listing standard: a URL naming a folder is no FILE */
	if ((strncasecmp(file, "http://", 7) == 0 || strncasecmp(file, "https://", 8) == 0) &&
	    file[strlen(file) - 1] == '/') {
		fprintf(stderr, "h5fs-ls: %s: an http(s) URL ending in '/' names no file, and HTTP has no "
			"listing to list it (use s3://BUCKET/PREFIX/ for an S3 prefix)\n", file);
		return TOOL_EXIT_USAGE;
	}
	/* one engine context for the run: every file it opens (FILE, the
	 * targets of external links, a collection's members) shares its
	 * cache and threads */
	rc = h5_ctx_new(&ctx, NULL);
	if (rc < 0) {
		fprintf(stderr, "h5fs-ls: %s\n", h5_err_msg());
		return TOOL_EXIT_PARTIAL;         /* out of memory */
	}
	oo.ctx = ctx;
	/* one pass over each file's metadata: its small reads from a few
	 * blocks read whole (io/source.h) */
	oo.meta_blocks = 1;
	if (concat) {
		/* the document (MiBs): a write(2) per 64 KiB, not per 4 KiB */
		static char outbuf[1 << 16];

		setvbuf(stdout, outbuf, _IOFBF, sizeof(outbuf));
		co_cat.ro = ro;
		co_cat.oo = &oo;
		co_cat.suffixes = suffixes;
		co_cat.index_path = index_path;
		co_cat.noindex = noindex;
		ret = refs_concat(inputs, ninputs, &co_cat);
		h5_ctx_free(ctx);
		return ret;
	}
	if (coll_is_collection(file)) {
		ls_coll_opts co = { &oo, suffixes, L.recursive, NULL };

		if (refs || space || nargs > 1) {
			fprintf(stderr, "h5fs-ls: %s: %s is for one FILE, not a collection\n", file,
				refs ? "--refs" : space ? "--space" : "PATH");
			h5_ctx_free(ctx);
			return TOOL_EXIT_USAGE;
		}
		ret = list_collection(&L, file, &co, index_path, noindex);
		free(L.seen);
		h5_ctx_free(ctx);
		return ret;
	}
	/* open(2) of a FIFO would wait for a writer */
	if (stat(file, &st) == 0 && !S_ISREG(st.st_mode) && !S_ISBLK(st.st_mode)) {
		fprintf(stderr, "h5fs-ls: %s: %s\n", file, S_ISDIR(st.st_mode) ? strerror(EISDIR) : "not a regular file");
		h5_ctx_free(ctx);
		return TOOL_EXIT_OPEN;
	}
	rc = h5_file_open(&f, file, &oo);
	/* a copy cut short: refused as libhdf5 and the mount refuse it, not
	 * listed with an error at every object */
	if (rc == 0 && (rc = h5_file_check_truncated(f)) < 0) {
		h5_file_close(f);
		f = NULL;
	}
	if (rc < 0) {
		fprintf(stderr, "h5fs-ls: %s: %s\n", file, tool_err_cause(file));
		h5_ctx_free(ctx);
		return tool_exit_for_open_error(rc, TOOL_EXIT_PARTIAL);
	}
	L.f = f;
	if (space) {
		ret = ls_space_print(f, file, L.json);
		goto out;
	}
	rc = ls_resolve(&addr, f, path, 0);
	if (rc < 0) {
		fprintf(stderr, "h5fs-ls: %s: %s: %s\n", file, path, h5_err_msg());
		ret = rc == H5_ERR_NOTFOUND ? TOOL_EXIT_NOPATH : TOOL_EXIT_PARTIAL;
		goto out;
	}
	if (refs) {
		if (!ro.url)
			ro.url = strstr(file, "://") ? file : (url_alloc = realpath(file, NULL)) ? url_alloc : file;
		ro.file = file;
		ret = refs_write(f, strcmp(path, "/") == 0 ? "/" : path, addr, &ro);
		goto out;
	}
	if (L.json) {
		printf("{\"file\": ");
		{
			struct jb s = { 0 };

			jb_str(&s, file, strlen(file));
			jb_done(&s);
			printf("%s", s.p ? s.p : "\"\"");
			free(s.p);
		}
		printf(", \"superblock_version\": %d, \"userblock\": %" PRIu64 ", \"entries\": [",
		       h5_file_sb_version(f), h5_file_userblock(f));
	}
	ls_list_object(&L, strcmp(path, "/") == 0 ? "/" : path, addr, 1);
	if (L.json)
		printf("%s]}\n", L.first_json ? "" : "\n");
	ret = L.nerr ? TOOL_EXIT_PARTIAL : TOOL_EXIT_OK;
out:
	free(url_alloc);
	free(L.seen);
	h5_file_close(f);
	h5_ctx_free(ctx);
	return ret;
}
