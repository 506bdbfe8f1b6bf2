/*
 * h5fs-ls - list an HDF5 file the way h5fs would show it, without mounting.
 *
 *   h5fs-ls [-R] [--json] [-o OPTIONS] FILE [PATH]
 *   h5fs-ls [-R] [--json] [-o OPTIONS] DIR | s3://BUCKET/[PREFIX/]
 *   h5fs-ls --refs [--url=URL] [--inline=N] [--split=MIB] [--strict]
 *           [--follow-external] FILE [PATH]     (chunk references: refs.c)
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
#include "linkvec.h"
#include "refs.h"
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

/* Soft links followed while resolving PATH before giving up (a cycle). */
#define MAX_SOFT_HOPS 16


/* ---- the text of one entry ----------------------------------------------------
 * Built with json.c's writer (struct jb over h5util.h's string builder),
 * which also makes its JSON strings. */

/* ---- descriptions ---------------------------------------------------------------- */

static void shape_desc(struct jb *s, const h5_dataset_info *di, int json)
{
	unsigned i;

	if (di->shape == H5_SHAPE_NULL) {
		jb_printf(s, json ? "null" : "null");
		return;
	}
	if (di->shape == H5_SHAPE_SCALAR) {
		jb_printf(s, json ? "[]" : "scalar");
		return;
	}
	jb_printf(s, "[");
	for (i = 0; i < di->rank; i++)
		jb_printf(s, "%s%" PRIu64, i ? (json ? ", " : ",") : "", di->dims[i]);
	jb_printf(s, "]");
}

/* Maximum shape: "unlimited" (text) / null (JSON) for unlimited extents. */
static void maxshape_desc(struct jb *s, const h5_dataset_info *di, int json)
{
	unsigned i;

	jb_printf(s, "[");
	for (i = 0; i < di->rank; i++) {
		jb_printf(s, "%s", i ? (json ? ", " : ",") : "");
		if (di->maxdims[i] == UINT64_MAX)
			jb_printf(s, json ? "null" : "unlimited");
		else
			jb_printf(s, "%" PRIu64, di->maxdims[i]);
	}
	jb_printf(s, "]");
}

/* Compression ratio: logical bytes per allocated byte (1.00 for raw
 * storage; above 1 for compressed or sparse data). */
static void ratio_desc(struct jb *s, uint64_t logical, uint64_t allocated, int json)
{
	if (allocated == 0 || logical == 0)
		jb_printf(s, json ? "null" : "-");
	else
		jb_printf(s, "%.3f", (double)logical / (double)allocated);
}

/* ---- the listing --------------------------------------------------------------- */

struct lister {
	h5_file *f;
	int recursive;
	int json;
	int nerr;
	int first_json;
	uint64_t *seen;         /* group addresses already listed (-R) */
	size_t nseen, capseen;
};

static void emit(struct lister *L, struct jb *s)
{
	jb_done(s);
	coll_progress_clear();
	if (s->nomem) {
		fprintf(stderr, "h5fs-ls: out of memory\n");
		L->nerr++;
		return;
	}
	if (L->json) {
		printf("%s\n    %s", L->first_json ? "" : ",", s->p && *s->p ? s->p : "{}");
		L->first_json = 0;
	} else {
		printf("%s\n", s->p ? s->p : "");
	}
}

static void entry_begin(struct lister *L, struct jb *s, const char *path, const char *kind)
{
	if (L->json) {
		jb_printf(s, "{\"path\": ");
		jb_str(s, path, strlen(path));
		jb_printf(s, ", \"kind\": \"%s\"", kind);
	} else {
		jb_printf(s, "%-32s %-9s", path, kind);
	}
}

static void entry_error(struct lister *L, const char *path, const char *kind, int rc)
{
	struct jb s = { 0 };

	entry_begin(L, &s, path, kind);
	if (L->json) {
		jb_printf(&s, ", \"error\": ");
		jb_str(&s, h5_err_msg(), strlen(h5_err_msg()));
		jb_printf(&s, ", \"error_code\": \"%s\"}", h5_err_name(rc));
	} else {
		jb_printf(&s, " error: %s", h5_err_msg());
	}
	emit(L, &s);
	free(s.p);
	L->nerr++;
}

static void list_dataset(struct lister *L, const char *path, uint64_t addr)
{
	h5_dataset *d = NULL;
	h5_dataset_info di;
	struct jb s = { 0 };
	size_t i;
	int rc;

	rc = h5_dataset_open(&d, L->f, addr);
	if (rc == 0) {
		rc = h5_dataset_describe(&di, d);
		if (rc < 0)
			h5_dataset_close(d);
	}
	if (rc < 0) {
		entry_error(L, path, "dataset", rc);
		return;
	}
	entry_begin(L, &s, path, "dataset");
	if (L->json) {
		jb_printf(&s, ", \"addr\": %" PRIu64 ", \"dtype\": {\"class\": \"%s\", \"size\": %u, \"desc\": ",
			  addr, di.dtype_class, di.dtype_size);
		jb_str(&s, di.dtype_text, strlen(di.dtype_text));
		if (di.dtype_numpy) {
			/* as user.h5.dtype shows it: np.dtype() of it is h5py's dtype */
			jb_printf(&s, ", \"numpy\": ");
			jb_str(&s, di.dtype_numpy, strlen(di.dtype_numpy));
		}
		jb_printf(&s, "}, \"shape\": ");
		shape_desc(&s, &di, 1);
		if (di.has_maxshape) {
			jb_printf(&s, ", \"maxshape\": ");
			maxshape_desc(&s, &di, 1);
		}
		jb_printf(&s, ", \"layout\": \"%s\"", di.layout);
		if (di.index) {
			jb_printf(&s, ", \"chunk\": [");
			for (i = 0; i < di.chunk_rank; i++)
				jb_printf(&s, "%s%" PRIu64, i ? ", " : "", di.chunk[i]);
			jb_printf(&s, "], \"index\": \"%s\"", di.index);
		}
		if (di.n_external)
			jb_printf(&s, ", \"external_files\": %zu", di.n_external);
		if (di.nmappings) {
			jb_printf(&s, ", \"mappings\": [");
			for (i = 0; i < di.nmappings; i++) {
				const h5_mapping_info *m = &di.mappings[i];

				jb_printf(&s, "%s{\"file\": ", i ? ", " : "");
				jb_str(&s, m->file, strlen(m->file));
				jb_printf(&s, ", \"dataset\": ");
				jb_str(&s, m->dataset, strlen(m->dataset));
				jb_printf(&s, ", \"virtual\": ");
				jb_str(&s, m->virt_sel, strlen(m->virt_sel));
				jb_printf(&s, ", \"source\": ");
				jb_str(&s, m->src_sel, strlen(m->src_sel));
				jb_printf(&s, "}");
			}
			jb_printf(&s, "]");
		}
		jb_printf(&s, ", \"filters\": [");
		for (i = 0; i < di.nfilters; i++) {
			const h5_filter_info *fl = &di.filters[i];
			size_t j;

			jb_printf(&s, "%s{\"id\": %u, \"name\": ", i ? ", " : "", fl->id);
			jb_str(&s, fl->name ? fl->name : "", fl->name ? strlen(fl->name) : 0);
			jb_printf(&s, ", \"optional\": %s, \"available\": %s, \"cd\": [",
				  fl->optional ? "true" : "false", fl->available ? "true" : "false");
			for (j = 0; j < fl->ncd; j++)
				jb_printf(&s, "%s%" PRIu32, j ? ", " : "", fl->cd[j]);
			jb_printf(&s, "]}");
		}
		jb_printf(&s, "], \"logical_size\": %" PRIu64 ", \"allocated_size\": %" PRIu64
			  ", \"compression_ratio\": ", di.logical_size, di.allocated_size);
		ratio_desc(&s, di.logical_size, di.allocated_size, 1);
		jb_printf(&s, "}");
	} else {
		jb_printf(&s, " %s ", di.dtype_text);
		shape_desc(&s, &di, 0);
		if (di.has_maxshape) {
			jb_printf(&s, " max=");
			maxshape_desc(&s, &di, 0);
		}
		jb_printf(&s, " %s", di.layout);
		if (di.index) {
			jb_printf(&s, "[");
			for (i = 0; i < di.chunk_rank; i++)
				jb_printf(&s, "%s%" PRIu64, i ? "," : "", di.chunk[i]);
			jb_printf(&s, "] %s", di.index);
		}
		if (di.n_external)
			jb_printf(&s, " external(%zu files)", di.n_external);
		if (di.nmappings) {
			/* the first mappings: virtual selection <- FILE:DATASET source selection */
			jb_printf(&s, " mappings=%zu", di.nmappings);
			for (i = 0; i < di.nmappings && i < 4; i++) {
				const h5_mapping_info *m = &di.mappings[i];

				jb_printf(&s, "%s%s<-%s:%s:%s", i ? ";" : " ", m->virt_sel, m->file, m->dataset, m->src_sel);
			}
			if (di.nmappings > 4)
				jb_printf(&s, ";...");
		}
		for (i = 0; i < di.nfilters; i++) {
			const h5_filter_info *fl = &di.filters[i];

			jb_printf(&s, "%s%s(%u)%s", i ? "," : " filters=", fl->name ? fl->name : "?", fl->id,
				  fl->available ? "" : "!unavailable");
		}
		jb_printf(&s, " allocated=%" PRIu64 " logical=%" PRIu64 " ratio=", di.allocated_size,
			  di.logical_size);
		ratio_desc(&s, di.logical_size, di.allocated_size, 0);
	}
	emit(L, &s);
	free(s.p);
	h5_dataset_info_clear(&di);
	h5_dataset_close(d);
}

static void list_link(struct lister *L, const char *path, const h5_link *l)
{
	struct jb s = { 0 };

	if (l->type == H5_LINK_SOFT) {
		const char *t = l->target ? l->target : "";

		entry_begin(L, &s, path, "softlink");
		if (L->json) {
			jb_printf(&s, ", \"target\": ");
			jb_str(&s, t, strlen(t));
			jb_printf(&s, "}");
		} else {
			jb_printf(&s, " -> %s", t);
		}
	} else {
		const char *ef = l->ext_file ? l->ext_file : "", *ep = l->ext_path ? l->ext_path : "";
		h5_file *g = NULL;
		uint64_t taddr = 0;
		h5_obj_info info;
		const char *why = NULL;
		char *gpath = NULL;

		/* where it leads, followed as the daemon does (related.c:
		 * chains of links too) */
		if (h5_link_follow(&g, &taddr, &gpath, L->f, l) < 0 || h5_obj_info_get(&info, g, taddr) < 0)
			why = h5_err_msg();
		free(gpath);
		entry_begin(L, &s, path, "extlink");
		if (L->json) {
			jb_printf(&s, ", \"file\": ");
			jb_str(&s, ef, strlen(ef));
			jb_printf(&s, ", \"target\": ");
			jb_str(&s, ep, strlen(ep));
			if (why) {
				jb_printf(&s, ", \"unresolved\": ");
				jb_str(&s, why, strlen(why));
			} else {
				jb_printf(&s, ", \"resolved\": ");
				jb_str(&s, h5_file_path(g), strlen(h5_file_path(g)));
				jb_printf(&s, ", \"resolved_kind\": \"%s\"", info.kind == H5_OBJ_GROUP ? "group" :
					  info.kind == H5_OBJ_DATASET ? "dataset" : "other");
			}
			jb_printf(&s, "}");
		} else if (why) {
			jb_printf(&s, " -> %s::%s (not followed: %s)", ef, ep, why);
		} else {
			jb_printf(&s, " -> %s::%s => %s (%s)", ef, ep, h5_file_path(g),
				  info.kind == H5_OBJ_GROUP ? "group" : info.kind == H5_OBJ_DATASET ? "dataset" : "other");
		}
		h5_err_clear();
		h5_file_release_related(g);
	}
	emit(L, &s);
	free(s.p);
}

static int seen_add(struct lister *L, uint64_t addr)
{
	size_t i;

	for (i = 0; i < L->nseen; i++)
		if (L->seen[i] == addr)
			return 1;
	if (L->nseen == L->capseen) {
		size_t ncap = L->capseen ? L->capseen * 2 : 64;
		uint64_t *n = realloc(L->seen, ncap * sizeof(*n));

		if (!n)
			return 1;       /* out of memory: do not descend */
		L->seen = n;
		L->capseen = ncap;
	}
	L->seen[L->nseen++] = addr;
	return 0;
}

static void list_object(struct lister *L, const char *path, uint64_t addr, int top);

static void list_group(struct lister *L, const char *path, uint64_t addr)
{
	linkvec lv;
	size_t i;
	int rc;

	rc = linkvec_collect(&lv, L->f, addr);
	if (lv.nomem) {
		fprintf(stderr, "h5fs-ls: out of memory\n");
		L->nerr++;
		goto out;
	}
	if (rc < 0) {
		entry_error(L, path, "group", rc);
		goto out;
	}
	for (i = 0; i < lv.n; i++) {
		const h5_link *l = &lv.v[i];
		char *child = h5_path_join(path, l->name);

		if (!child) {
			L->nerr++;
			break;
		}
		if (strlen(l->name) != l->name_len)
			fprintf(stderr, "h5fs-ls: %s: link name contains NUL (h5fs hides it)\n", child);
		if (l->type == H5_LINK_HARD)
			list_object(L, child, l->addr, 0);
		else
			list_link(L, child, l);
		free(child);
	}
out:
	linkvec_clear(&lv);
}

static void list_object(struct lister *L, const char *path, uint64_t addr, int top)
{
	h5_obj_info info;
	struct jb s = { 0 };
	int rc;

	rc = h5_obj_info_get(&info, L->f, addr);
	if (rc < 0) {
		entry_error(L, path, "object", rc);
		return;
	}
	switch (info.kind) {
	case H5_OBJ_GROUP: {
		int again = seen_add(L, addr);

		if (!top) {
			entry_begin(L, &s, path, "group");
			if (L->json)
				jb_printf(&s, ", \"addr\": %" PRIu64 "%s}", addr,
					  again ? ", \"hardlink_to_listed\": true" : "");
			else if (again)
				jb_printf(&s, " (already listed: hard link)");
			emit(L, &s);
			free(s.p);
		}
		if (!again && (top || L->recursive))
			list_group(L, path, addr);
		break;
	}
	case H5_OBJ_DATASET:
		list_dataset(L, path, addr);
		break;
	default:
		entry_begin(L, &s, path, info.kind == H5_OBJ_DATATYPE ? "datatype" : "unknown");
		if (L->json)
			jb_printf(&s, ", \"addr\": %" PRIu64 "}", addr);
		emit(L, &s);
		free(s.p);
		break;
	}
}

/* Resolve PATH (absolute in the file; soft links followed) to an address. */
static int resolve(uint64_t *out, h5_file *f, const char *path, int hops)
{
	uint64_t cur = h5_file_root(f);
	char *copy = strdup(path), *save = NULL, *comp;
	int rc = 0;

	if (!copy)
		return h5_err_set(H5_ERR_NOMEM, "out of memory");
	for (comp = strtok_r(copy, "/", &save); comp; comp = strtok_r(NULL, "/", &save)) {
		h5_link l;

		if (strcmp(comp, ".") == 0)
			continue;
		rc = h5_group_lookup(&l, f, cur, comp);
		if (rc < 0)
			goto out;
		if (l.type == H5_LINK_HARD) {
			cur = l.addr;
		} else if (l.type == H5_LINK_SOFT && hops < MAX_SOFT_HOPS) {
			/* relative targets are relative to the root here: good
			 * enough for a command-line path, and documented */
			rc = resolve(&cur, f, l.target ? l.target : "", hops + 1);
		} else {
			rc = h5_err_set(H5_ERR_UNSUPPORTED, "%s: %s", comp,
					l.type == H5_LINK_SOFT ? "too many soft links" : "external link not followed");
		}
		h5_link_clear(&l);
		if (rc < 0)
			goto out;
	}
	*out = cur;
out:
	free(copy);
	return rc;
}

/* ---- collections (collection.c walks them) ------------------------------ */

static void coll_folder(void *u, const char *path)
{
	struct lister *L = u;
	struct jb s = { 0 };

	entry_begin(L, &s, path, "folder");
	if (L->json)
		jb_printf(&s, "}");
	emit(L, &s);
	free(s.p);
}

static void coll_plain(void *u, const char *path, uint64_t size)
{
	struct lister *L = u;
	struct jb s = { 0 };

	entry_begin(L, &s, path, "file");
	jb_printf(&s, L->json ? ", \"size\": %" PRIu64 "}" : " size=%" PRIu64, size);
	emit(L, &s);
	free(s.p);
}

/* A member: its line, then (opened: -R) its tree below its path, as the
 * mount shows it under the member's directory. */
static void coll_member(void *u, const char *path, uint64_t size, h5_file *f, int rc)
{
	struct lister *L = u;
	struct jb s = { 0 };

	if (rc < 0) {
		entry_error(L, path, "hdf5", rc);
		return;
	}
	entry_begin(L, &s, path, "hdf5");
	jb_printf(&s, L->json ? ", \"size\": %" PRIu64 "}" : " size=%" PRIu64, size);
	emit(L, &s);
	free(s.p);
	if (!f)
		return;
	L->f = f;
	L->nseen = 0;   /* hard links are per file */
	list_object(L, path, h5_file_root(f), 1);
	L->f = NULL;
}

/* A folder that could not be listed: an entry; the top itself: the
 * command fails (stderr, exit 3) */
static void coll_error(void *u, const char *path, int rc)
{
	struct lister *L = u;

	if (*path)
		entry_error(L, path, "folder", rc);
	else
		fprintf(stderr, "h5fs-ls: %s\n", h5_err_msg());
}

static int list_collection(struct lister *L, const char *top, const ls_coll_opts *co)
{
	ls_visit v = { L, coll_folder, coll_member, coll_plain, coll_error };
	int rc;

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
	if (rc < 0)
		return rc == H5_ERR_NOMEM ? TOOL_EXIT_PARTIAL : TOOL_EXIT_OPEN;
	return L->nerr ? TOOL_EXIT_PARTIAL : TOOL_EXIT_OK;
}

static void usage(FILE *out)
{
	fprintf(out,
		"usage: h5fs-ls [-R] [--json] [-o OPTIONS] FILE [PATH]\n"
		"       h5fs-ls [-R] [--json] [-o OPTIONS] DIR|s3://BUCKET/[PREFIX/]\n"
		"       h5fs-ls --refs [OPTIONS] FILE|URL [PATH]\n"
		"List the HDF5 file FILE (from PATH, default /) as h5fs shows it:\n"
		"per dataset its type, shape, layout, chunking, chunk index, filters and\n"
		"allocated vs logical size. A directory DIR or an S3 prefix is listed as\n"
		"h5fs DIR MNT shows it: folders, HDF5 members (by signature in DIR, by\n"
		"suffix under a prefix; -R: with their trees) and other files.\n"
		"  -R, --recursive   list sub-groups (and sub-folders, members' trees) too\n"
		"  --json            one JSON document instead of text\n"
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
		"  --strict          exit 1 when a dataset had to be skipped\n"
		"  --follow-external follow external links (inside FILE's directory tree)\n"
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
	int refs = 0;
	char *url_alloc = NULL;
	const char *file = NULL, *path = "/";
	h5_open_opts oo = { 0 };
	char *params[TOOL_PARAMS + 1] = { NULL };
	size_t nparams = 0;
	char *suffixes = NULL;
	h5_file *f = NULL;
	h5_ctx *ctx = NULL;
	uint64_t addr;
	struct stat st;
	int i, nargs = 0, rc, ret = TOOL_EXIT_PARTIAL;

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
		} else if (nargs == 0) {
			file = argv[i];
			nargs++;
		} else if (nargs == 1) {
			path = argv[i];
			nargs++;
		} else {
			usage(stderr);
			return TOOL_EXIT_USAGE;
		}
	}
	if (!file) {
		usage(stderr);
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
	if (coll_is_collection(file)) {
		ls_coll_opts co = { &oo, suffixes, L.recursive };

		if (refs || nargs > 1) {
			fprintf(stderr, "h5fs-ls: %s: %s is for one FILE, not a collection\n", file,
				refs ? "--refs" : "PATH");
			h5_ctx_free(ctx);
			return TOOL_EXIT_USAGE;
		}
		ret = list_collection(&L, file, &co);
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
		const char *msg = h5_err_msg();
		size_t n = strlen(file);

		if (strncmp(msg, file, n) == 0 && msg[n] == ':' && msg[n + 1] == ' ')
			msg += n + 2;
		fprintf(stderr, "h5fs-ls: %s: %s\n", file, msg);
		h5_ctx_free(ctx);
		return tool_exit_for_open_error(rc, TOOL_EXIT_PARTIAL);
	}
	L.f = f;
	rc = resolve(&addr, f, path, 0);
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
	list_object(&L, strcmp(path, "/") == 0 ? "/" : path, addr, 1);
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
