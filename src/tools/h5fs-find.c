/*
 * h5fs-find - find(1) for HDF5 collections (issue 35; doc/h5fs-find.1):
 *
 *   h5fs-find DIR|s3://BUCKET/PREFIX/ [options] [tests]
 *
 * prints the entries a mount of the collection shows (folders, other
 * files, HDF5 files as directories and their groups, datasets and links)
 * that pass the tests (find_expr.h), one path per line relative to the
 * top, sorted bytewise. It answers from the collection's index, the one
 * a mount uses (cindex.h; its catalog ccat.h), after bringing it up to
 * date: the collection is listed (kinds from the index: no signature
 * read for a known file), members whose catalog is missing or stale
 * (size, mtime, ETag) are read on every core and recorded, catalogs of
 * files gone are dropped; then every catalog is read back and tested.
 * --noindex reads every member and keeps nothing.
 */
#define _GNU_SOURCE /* asprintf */
#include <config.h>

#include "ccat.h"
#include "cindex.h"
#include "coll_walk.h"
#include "collection.h"
#include "find_expr.h"
#include "json.h"
#include "tool_exit.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#define PROG "h5fs-find"
#define STORE_BATCH 256         /* catalogs per transaction */

/* ---- the listing of the collection ---------------------------------------- */

struct member {
	char *path;
	struct coll_stat st;
	ccat_member *cat;       /* read this run (stale or missing), else NULL */
	bool fresh;             /* the index has its catalog at this stamp */
	bool transient;         /* cat says it could not be read this time (a
				 * remote error): answered from, not recorded */
};

struct run {
	const struct coll_backend *be;
	void *b;
	h5_open_opts oo;
	char *root;             /* canonical: the index's key */
	cindex *ix;             /* NULL: --noindex */
	/* what the walk found */
	char **folders, **plain;
	size_t nfolders, nplain, capf, capp;
	struct member *m;
	size_t nm, capm;
	unsigned long nerr;
	bool nomem;
	tool_kinds tk;          /* the kind cache (collection.h) */
	/* the reading of members */
	size_t next;            /* the next member to read (mu) */
	size_t nread, toread;
	pthread_mutex_t mu;
	/* matches */
	struct hit { char *path; char *json; } *hits;
	size_t nhits, caph;
	int json, print0;
	fx *expr;
};

static int push_str(char ***v, size_t *n, size_t *cap, const char *s)
{
	if (*n == *cap) {
		size_t ncap = *cap ? *cap * 2 : 64;
		char **nv = realloc(*v, ncap * sizeof(*nv));

		if (!nv)
			return -1;
		*v = nv;
		*cap = ncap;
	}
	if (!((*v)[*n] = strdup(s)))
		return -1;
	(*n)++;
	return 0;
}

static void w_folder(void *u, const char *path, const struct coll_stat *st)
{
	struct run *r = u;

	(void)st;
	if (push_str(&r->folders, &r->nfolders, &r->capf, path) < 0)
		r->nomem = true;
	coll_progress_tick(r->nfolders, r->nplain + r->nm, r->nm, "listing");
}

static void w_file(void *u, const char *path, const struct coll_stat *st, bool hdf5)
{
	struct run *r = u;

	if (!hdf5) {
		if (push_str(&r->plain, &r->nplain, &r->capp, path) < 0)
			r->nomem = true;
	} else {
		if (r->nm == r->capm) {
			size_t ncap = r->capm ? r->capm * 2 : 64;
			struct member *nv = realloc(r->m, ncap * sizeof(*nv));

			if (!nv) {
				r->nomem = true;
				return;
			}
			r->m = nv;
			r->capm = ncap;
		}
		memset(&r->m[r->nm], 0, sizeof(r->m[r->nm]));
		r->m[r->nm].st = *st;
		if (!(r->m[r->nm].path = strdup(path)))
			r->nomem = true;
		else
			r->nm++;
	}
	coll_progress_tick(r->nfolders, r->nplain + r->nm, r->nm, "listing");
}

static void w_error(void *u, const char *path, int e)
{
	struct run *r = u;

	coll_progress_clear();
	if (*path) {
		fprintf(stderr, PROG ": %s: %s\n", path, *h5_err_msg() ? h5_err_msg() : strerror(e));
		r->nerr++;
	}
	h5_err_clear();
}

static cindex_key key_of(const struct run *r, const char *path, const struct coll_stat *st)
{
	return tool_key(r->root, path, st);
}

/* The walk's kind hooks: the shared kind cache (collection.h). */
static int w_kind(void *u, const char *path, const struct coll_stat *st)
{
	return tool_kind(&((struct run *)u)->tk, path, st);
}

static void w_set_kind(void *u, const char *path, const struct coll_stat *st, bool hdf5)
{
	tool_kind_set(&((struct run *)u)->tk, path, st, hdf5);
}

/* ---- bringing the catalogs up to date ---------------------------------------- */

static int member_cmp(const void *a, const void *b)
{
	return strcmp(((const struct member *)a)->path, ((const struct member *)b)->path);
}

static struct member *member_of(struct run *r, const char *path)
{
	size_t lo = 0, hi = r->nm;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		int c = strcmp(r->m[mid].path, path);

		if (!c)
			return &r->m[mid];
		if (c < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return NULL;
}

struct gone {
	char **v;
	size_t n, cap;
	bool nomem;
};

struct stamps {
	struct run *r;
	struct gone g;
};

/* A catalog the index has: fresh when the member is still there with
 * that stamp; gone when the member is not. */
static void stamp_cb(void *arg, const cindex_key *k)
{
	struct stamps *s = arg;
	struct member *m = member_of(s->r, k->member);

	if (!m) {
		if (push_str(&s->g.v, &s->g.n, &s->g.cap, k->member) < 0)
			s->g.nomem = true;
		return;
	}
	m->fresh = m->st.size == k->size && m->st.mtime_ns == k->mtime_ns && !strcmp(m->st.etag, k->etag);
}

/* One member read: opened read-only (a GET for an object), walked, closed. */
static void read_member(struct run *r, struct member *m)
{
	h5_file *f = NULL;
	int e;

	h5_err_clear();
	e = r->be->open_member(r->b, &f, m->path, &r->oo);
	if (!e && ccat_read(&m->cat, f) < 0)
		e = ENOMEM;
	h5_file_close(f);
	if (e && !m->cat && (m->cat = calloc(1, sizeof(*m->cat)))) {
		/* not HDF5 after all, or corrupt: remembered as such at this
		 * stamp (a remount or the next run does not read it again);
		 * an object that could not be fetched (EIO of a remote
		 * backend: the network, the server) is read again next time */
		m->transient = e != ENOMEM && e != EMEDIUMTYPE && strcmp(r->be->name, "local") != 0;
		if (asprintf(&m->cat->error, "cannot be opened as HDF5: %s",
			     *h5_err_msg() ? h5_err_msg() : strerror(e)) < 0)
			m->cat->error = NULL;
	}
	h5_err_clear();
}

static void *reader(void *arg)
{
	struct run *r = arg;

	for (;;) {
		struct member *m = NULL;

		pthread_mutex_lock(&r->mu);
		while (r->next < r->nm && r->m[r->next].fresh)
			r->next++;
		if (r->next < r->nm)
			m = &r->m[r->next++];
		pthread_mutex_unlock(&r->mu);
		if (!m)
			return NULL;
		read_member(r, m);
		pthread_mutex_lock(&r->mu);
		r->nread++;
		pthread_mutex_unlock(&r->mu);
	}
}

static unsigned cores(void)
{
	long n = sysconf(_SC_NPROCESSORS_ONLN);
	const char *e = getenv("H5FS_FIND_JOBS");

	if (e && atoi(e) > 0)
		return (unsigned)atoi(e);
	return n > 0 ? (unsigned)(n > 64 ? 64 : n) : 1;
}

/* Read every member that needs it, on every core; this thread keeps the
 * progress line. */
static void read_members(struct run *r)
{
	unsigned n = cores(), started = 0;
	pthread_t *t = calloc(n, sizeof(*t));

	r->next = 0;
	r->nread = 0;
	for (size_t i = 0; i < r->nm; i++)
		r->toread += !r->m[i].fresh;
	if (!r->toread) {
		free(t);
		return;
	}
	for (unsigned i = 0; t && i < n && i < r->toread; i++)
		if (pthread_create(&t[i], NULL, reader, r) == 0)
			started++;
	if (!started) {
		reader(r);
	} else {
		for (;;) {
			size_t done;

			pthread_mutex_lock(&r->mu);
			done = r->nread;
			pthread_mutex_unlock(&r->mu);
			if (done >= r->toread)
				break;
			if (isatty(STDERR_FILENO)) {
				char doing[64];

				snprintf(doing, sizeof(doing), "%zu of %zu HDF5 files read", done, r->toread);
				coll_progress_tick(r->nfolders, r->nplain + r->nm, r->nm, doing);
			}
			usleep(50000);
		}
		for (unsigned i = 0; i < started; i++)
			pthread_join(t[i], NULL);
	}
	free(t);
}

/* Record what was read (in batches: one transaction each) and drop the
 * catalogs of members gone. Errors are one line: the answer is still
 * given from what was read. */
static void store(struct run *r, struct gone *g)
{
	cindex_key *k = calloc(STORE_BATCH, sizeof(*k));
	ccat_member **v = calloc(STORE_BATCH, sizeof(*v));
	size_t n = 0;
	int rc = 0;

	if (!k || !v) {
		r->nomem = true;
		goto out;
	}
	for (size_t i = 0; i <= r->nm && rc == 0; i++) {
		if (i < r->nm && r->m[i].cat && !r->m[i].transient) {
			k[n] = key_of(r, r->m[i].path, &r->m[i].st);
			v[n++] = r->m[i].cat;
		}
		if (n && (n == STORE_BATCH || i == r->nm)) {
			rc = ccat_store(r->ix, k, v, n);
			n = 0;
		}
	}
	if (rc == 0 && g->n)
		rc = ccat_forget(r->ix, r->root, (const char *const *)g->v, g->n);
	if (rc < 0) {
		coll_progress_clear();
		fprintf(stderr, PROG ": %s (answering without recording)\n", h5_err_msg());
		h5_err_clear();
	}
out:
	free(k);
	free(v);
}

/* ---- the tests and the answer ------------------------------------------------- */

static const char *cat_attr_name(const void *arg, size_t i)
{
	return ((const ccat_obj *)arg)->attrs[i].name;
}

static const char *cat_attr_value(const void *arg, size_t i)
{
	return ((const ccat_obj *)arg)->attrs[i].value;
}

static const char *last_name(const char *path)
{
	const char *s = strrchr(path, '/');

	return s ? s + 1 : path;
}

static const char *const TYPE_WORD[] = { "group", "dataset", "datatype", "softlink", "extlink" };

static void json_shape(struct jb *b, const char *shape)
{
	if (!strcmp(shape, "null")) {
		jb_printf(b, "null");
		return;
	}
	jb_printf(b, "[");
	for (const char *p = shape; *p;) {
		size_t n = strcspn(p, ",");

		jb_printf(b, "%s%.*s", p == shape ? "" : ", ", (int)n, p);
		if (!strncmp(p, "inf", 3))
			break;  /* shape has no inf; maxshape would */
		p += n + (p[n] == ',');
	}
	jb_printf(b, "]");
}

static void hit(struct run *r, const char *path, const char *type, const ccat_obj *o, const char *error)
{
	struct hit *h;

	if (r->nhits == r->caph) {
		size_t ncap = r->caph ? r->caph * 2 : 256;
		struct hit *nv = realloc(r->hits, ncap * sizeof(*nv));

		if (!nv) {
			r->nomem = true;
			return;
		}
		r->hits = nv;
		r->caph = ncap;
	}
	h = &r->hits[r->nhits];
	h->json = NULL;
	if (!(h->path = strdup(path))) {
		r->nomem = true;
		return;
	}
	if (r->json) {
		struct jb b = { 0 };

		jb_printf(&b, "{\"path\": ");
		jb_str(&b, path, strlen(path));
		jb_printf(&b, ", \"type\": \"%s\"", type);
		if (o && o->dtype) {
			jb_printf(&b, ", \"dtype\": ");
			jb_str(&b, o->dtype, strlen(o->dtype));
		}
		if (o && o->shape) {
			jb_printf(&b, ", \"shape\": ");
			json_shape(&b, o->shape);
		}
		if (o && o->target) {
			jb_printf(&b, ", \"target\": ");
			jb_str(&b, o->target, strlen(o->target));
		}
		if (error) {
			jb_printf(&b, ", \"error\": ");
			jb_str(&b, error, strlen(error));
		}
		if (o && (o->type == CCAT_GROUP || o->type == CCAT_DATASET || o->type == CCAT_DATATYPE)) {
			jb_printf(&b, ", \"attributes\": {");
			for (uint32_t i = 0; i < o->nattrs; i++) {
				jb_printf(&b, "%s", i ? ", " : "");
				jb_str(&b, o->attrs[i].name, strlen(o->attrs[i].name));
				jb_printf(&b, ": ");
				jb_str(&b, o->attrs[i].value, o->attrs[i].len);
			}
			jb_printf(&b, "}");
		}
		jb_printf(&b, "}");
		jb_done(&b);
		if (b.nomem) {
			free(b.p);
			free(h->path);
			r->nomem = true;
			return;
		}
		h->json = b.p;
	}
	r->nhits++;
}

static void test_plain(struct run *r, const char *path, char type, const char *word)
{
	fx_entry x = { .path = path, .name = last_name(path), .type = type, .ndim = -1 };

	if (fx_eval(r->expr, &x))
		hit(r, path, word, NULL, NULL);
}

/* A member's entries: the file itself (its root group: a directory
 * with the root's attributes) and every object below. */
static void test_member(void *arg, const char *mpath, ccat_member *m)
{
	struct run *r = arg;
	char *full = NULL;

	if (m->error) {
		coll_progress_clear();
		fprintf(stderr, PROG ": %s: %s\n", mpath, m->error);
	}
	if (!m->n)
		test_plain(r, mpath, 'd', "hdf5");
	for (size_t i = 0; i < m->n && !r->nomem; i++) {
		const ccat_obj *o = &m->v[i];
		fx_entry x = { .ndim = o->ndim, .dtype = o->type == CCAT_DATASET ? o->dtype : NULL,
			       .shape = o->type == CCAT_DATASET ? o->shape : NULL, .nattrs = o->nattrs,
			       .attrs_arg = o, .attr_name = cat_attr_name, .attr_value = cat_attr_value };

		if (*o->path) {
			free(full);
			if (!(full = h5_path_join(mpath, o->path))) {
				r->nomem = true;
				break;
			}
			x.path = full;
		} else {
			x.path = mpath;
		}
		x.name = last_name(x.path);
		x.type = o->type == CCAT_GROUP ? 'd' : o->type >= CCAT_SOFTLINK ? 'l' : 'f';
		if (fx_eval(r->expr, &x))
			hit(r, x.path, *o->path ? TYPE_WORD[o->type] : "hdf5", o, *o->path ? NULL : m->error);
	}
	free(full);
	ccat_member_free(m);
}

/* A catalog read back from the index: tested when it is the catalog of
 * a member listed now (not one gone meanwhile, nor the old catalog of a
 * member this run could not read: that one is tested from memory). */
static void test_indexed(void *arg, const char *mpath, ccat_member *m)
{
	struct run *r = arg;
	struct member *x = member_of(r, mpath);

	if (!x || x->transient) {
		ccat_member_free(m);
		return;
	}
	test_member(arg, mpath, m);
}

static int hit_cmp(const void *a, const void *b)
{
	return strcmp(((const struct hit *)a)->path, ((const struct hit *)b)->path);
}

/* ---- the command ----------------------------------------------------------------- */

static void usage(FILE *out)
{
	fprintf(out,
		"usage: h5fs-find DIR|s3://BUCKET/[PREFIX/] [options] [tests]\n"
		"Print the entries a mount of the collection shows that pass the tests\n"
		"(ANDed; -o, !, ( ) as in find), one path per line relative to the top,\n"
		"sorted. Answers from the collection's index (the one h5fs DIR MNT uses),\n"
		"bringing it up to date first.\n"
		"tests:\n"
		"  -name GLOB        the entry's name\n"
		"  -path GLOB        its path relative to the top ('*' crosses '/')\n"
		"  -type d|f|l       d folders, HDF5 files, groups; f datasets, named\n"
		"                    datatypes, other files; l soft and external links\n"
		"  -attr NAME        has HDF5 attribute NAME\n"
		"  -attr NAME=GLOB   ... whose text (as getfattr shows it) matches GLOB\n"
		"  -dtype GLOB       a dataset whose user.h5.dtype matches (<f8, |S10, ...)\n"
		"  -ndim N           a dataset of N dimensions\n"
		"  -shape GLOB       a dataset whose user.h5.shape matches (100,3 or 100,*)\n"
		"  -true, -false\n"
		"options:\n"
		"  -print0           end each path with a NUL instead of a newline\n"
		"  --json            one JSON object per line (path, type, dtype, shape,\n"
		"                    attributes)\n"
		"  --index PATH      the index file (default: the one h5fs uses)\n"
		"  --noindex         read every HDF5 file, keep nothing\n"
		"  -O OPT[,OPT...]   h5fs's -o options of remote collections (s3_endpoint=,\n"
		"                    s3_region=, s3_path_style, retries=, timeout=,\n"
		"                    h5_suffixes=)\n"
		"  -h, --help, -V, --version\n"
		"Exit status: 0 it ran (with or without a match), 1 out of memory, 2 usage,\n"
		"3 the collection cannot be listed.\n");
}

static void free_run(struct run *r)
{
	for (size_t i = 0; i < r->nfolders; i++)
		free(r->folders[i]);
	for (size_t i = 0; i < r->nplain; i++)
		free(r->plain[i]);
	for (size_t i = 0; i < r->nm; i++) {
		free(r->m[i].path);
		ccat_member_free(r->m[i].cat);
	}
	for (size_t i = 0; i < r->nhits; i++) {
		free(r->hits[i].path);
		free(r->hits[i].json);
	}
	tool_kinds_free(&r->tk);
	free(r->folders);
	free(r->plain);
	free(r->m);
	free(r->hits);
	free(r->root);
	fx_free(r->expr);
	if (r->ix)
		cindex_close(r->ix);
	if (r->b)
		r->be->close(r->b);
	pthread_mutex_destroy(&r->mu);
}

static void index_note(void *arg, const char *msg)
{
	(void)arg;
	coll_progress_clear();
	fprintf(stderr, PROG ": %s\n", msg);
}

int main(int argc, char **argv)
{
	struct run r = { 0 };
	char *params[TOOL_PARAMS + 1] = { NULL };
	char **words = calloc((size_t)argc + 1, sizeof(*words));
	char *suffixes = NULL, err[256];
	const char *top = NULL, *index_path = NULL;
	size_t nparams = 0;
	int nwords = 0, noindex = 0, ret = TOOL_EXIT_OK;
	h5_ctx *ctx = NULL;
	struct stamps st = { .r = &r };
	coll_visit v = { .u = &r, .folder = w_folder, .file = w_file, .error = w_error };

	pthread_mutex_init(&r.mu, NULL);
	if (!words) {
		fprintf(stderr, PROG ": out of memory\n");
		return TOOL_EXIT_RUNTIME;
	}
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];

		if (fx_is_expr_word(a)) {
			/* a test and its argument, or an operator */
			words[nwords++] = argv[i];
			if (a[0] == '-' && strcmp(a, "-o") && strcmp(a, "-or") && strcmp(a, "-a") && strcmp(a, "-and") &&
			    strcmp(a, "-not") && strcmp(a, "-true") && strcmp(a, "-false") && i + 1 < argc)
				words[nwords++] = argv[++i];
		} else if (!strcmp(a, "-print0")) {
			r.print0 = 1;
		} else if (!strcmp(a, "-print")) {
			continue;
		} else if (!strcmp(a, "--json")) {
			r.json = 1;
		} else if (!strcmp(a, "--noindex")) {
			noindex = 1;
		} else if (!strcmp(a, "--index") || !strncmp(a, "--index=", 8)) {
			index_path = a[7] == '=' ? a + 8 : i + 1 < argc ? argv[++i] : NULL;
			if (!index_path || !*index_path) {
				fprintf(stderr, PROG ": --index needs a file\n");
				ret = TOOL_EXIT_USAGE;
				goto out;
			}
		} else if (!strcmp(a, "-O") || !strncmp(a, "--options=", 10)) {
			char *arg = a[1] == 'O' ? (i + 1 < argc ? argv[++i] : NULL) : (char *)a + 10;

			if (!arg || tool_parse_o(PROG, &r.oo, params, &nparams, &suffixes, arg) < 0) {
				ret = TOOL_EXIT_USAGE;
				goto out;
			}
		} else if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
			usage(stdout);
			goto out;
		} else if (!strcmp(a, "-V") || !strcmp(a, "--version")) {
			printf(PROG " %s\n", PACKAGE_VERSION);
			goto out;
		} else if (!top && (a[0] != '-' || !a[1])) {
			top = a;
		} else {
			fprintf(stderr, PROG ": unknown option or test %s\n", a);
			usage(stderr);
			ret = TOOL_EXIT_USAGE;
			goto out;
		}
	}
	if (!top) {
		usage(stderr);
		ret = TOOL_EXIT_USAGE;
		goto out;
	}
	if (fx_parse(&r.expr, nwords, words, err, sizeof(err)) < 0) {
		fprintf(stderr, PROG ": %s\n", err);
		ret = TOOL_EXIT_USAGE;
		goto out;
	}
	if (!coll_is_collection(top)) {
		fprintf(stderr, PROG ": %s: not a directory or an s3://BUCKET/PREFIX/ (ending in '/')\n", top);
		ret = TOOL_EXIT_OPEN;
		goto out;
	}
	if (h5_ctx_new(&ctx, NULL) < 0) {
		fprintf(stderr, PROG ": %s\n", h5_err_msg());
		ret = TOOL_EXIT_RUNTIME;
		goto out;
	}
	r.oo.ctx = ctx;
	r.oo.writable = 0;
	coll_progress_start(PROG);
	if (tool_coll_open(&r.be, &r.b, top, &r.oo, suffixes, PROG) < 0) {
		fprintf(stderr, PROG ": %s\n", h5_err_msg());
		ret = TOOL_EXIT_OPEN;
		goto out;
	}
	if (!(r.root = coll_canonical(top))) {
		fprintf(stderr, PROG ": %s: %s\n", top, strerror(errno));
		ret = TOOL_EXIT_OPEN;
		goto out;
	}
	if (!noindex) {
		char *path = NULL;

		if (index_path)
			path = strdup(index_path);
		else if (cindex_default_path(&path, r.root) < 0)
			path = NULL;
		if (!path || cindex_open(&r.ix, path, index_note, NULL) < 0) {
			fprintf(stderr, PROG ": %s; answering without an index\n", h5_err_msg());
			h5_err_clear();
			r.ix = NULL;
		}
		free(path);
	}
	if (r.ix) {
		tool_kinds_load(&r.tk, r.ix, r.root, PROG);
		v.kind = w_kind;
		v.set_kind = w_set_kind;
	}
	if (coll_walk(r.be, r.b, &v) != 0) {
		coll_progress_clear();
		fprintf(stderr, PROG ": %s: %s\n", top, h5_err_msg());
		ret = TOOL_EXIT_OPEN;
		goto out;
	}
	if (r.ix)
		tool_kinds_store(&r.tk);
	if (r.nm > 1)
		qsort(r.m, r.nm, sizeof(*r.m), member_cmp);
	if (r.ix && ccat_stamps(r.ix, r.root, stamp_cb, &st) < 0) {
		fprintf(stderr, PROG ": %s\n", h5_err_msg());
		h5_err_clear();
	}
	read_members(&r);
	if (r.ix) {
		store(&r, &st.g);
		for (size_t i = 0; i < r.nm; i++) {
			if (r.m[i].transient)
				continue;       /* tested from memory below */
			ccat_member_free(r.m[i].cat);
			r.m[i].cat = NULL;
		}
		if (ccat_load_all(r.ix, r.root, test_indexed, &r) < 0) {
			fprintf(stderr, PROG ": %s\n", h5_err_msg());
			ret = TOOL_EXIT_RUNTIME;
			goto out;
		}
		for (size_t i = 0; i < r.nm; i++)
			if (r.m[i].transient) {
				test_member(&r, r.m[i].path, r.m[i].cat);
				r.m[i].cat = NULL;
			}
	} else {
		for (size_t i = 0; i < r.nm; i++) {
			test_member(&r, r.m[i].path, r.m[i].cat);
			r.m[i].cat = NULL;
		}
	}
	for (size_t i = 0; i < st.g.n; i++)
		free(st.g.v[i]);
	free(st.g.v);
	for (size_t i = 0; i < r.nfolders; i++)
		test_plain(&r, r.folders[i], 'd', "folder");
	for (size_t i = 0; i < r.nplain; i++)
		test_plain(&r, r.plain[i], 'f', "file");
	coll_progress_clear();
	if (r.nomem) {
		fprintf(stderr, PROG ": out of memory\n");
		ret = TOOL_EXIT_RUNTIME;
		goto out;
	}
	if (r.nhits > 1)        /* (no hit: r.hits NULL, which qsort must not get) */
		qsort(r.hits, r.nhits, sizeof(*r.hits), hit_cmp);
	for (size_t i = 0; i < r.nhits; i++) {
		if (r.json)
			printf("%s\n", r.hits[i].json);
		else
			printf("%s%c", r.hits[i].path, r.print0 ? '\0' : '\n');
	}
	if (fflush(stdout) != 0) {
		fprintf(stderr, PROG ": writing the answer: %s\n", strerror(errno));
		ret = TOOL_EXIT_RUNTIME;
	}
out:
	free_run(&r);
	if (ctx)
		h5_ctx_free(ctx);
	free(words);
	return ret;
}
