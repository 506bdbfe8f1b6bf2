/* collection.c - collections for the tools (collection.h): the backends
 * and the walk are the collection library's (src/coll); here the tools'
 * settings, h5fs-ls's visit of it, and the progress line. */
#include "collection.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

/* ---- the progress line --------------------------------------------------
 * A cold walk of thousands of files takes a while (each member opened,
 * each S3 folder a request): on a terminal, say how far it got. Only
 * after a second, so quick listings stay as they were; at most five
 * updates a second. */

static struct {
	int on;                 /* stderr is a terminal */
	int shown;              /* a line is on the terminal now */
	double start, last, after;
	const char *prog;
} prog;

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

void coll_progress_start(const char *name)
{
	const char *e = getenv("H5FS_LS_PROGRESS_AFTER_MS");

	memset(&prog, 0, sizeof(prog));
	prog.on = isatty(STDERR_FILENO);
	prog.after = e && *e ? atof(e) / 1000.0 : 1.0;
	prog.start = now_s();
	prog.prog = name;
}

void coll_progress_tick(unsigned long folders, unsigned long files, unsigned long members, const char *doing)
{
	double t;

	if (!prog.on)
		return;
	t = now_s();
	if (t - prog.start < prog.after || (prog.shown && t - prog.last < 0.2))
		return;
	prog.last = t;
	fprintf(stderr, "\r%s: %lu folders, %lu files (%lu HDF5)%s%s in %.0f s\033[K", prog.prog, folders,
		files, members, doing ? ", " : "", doing ? doing : "", t - prog.start);
	fflush(stderr);
	prog.shown = 1;
}

void coll_progress_clear(void)
{
	if (prog.shown) {
		fputs("\r\033[K", stderr);
		fflush(stderr);
		prog.shown = 0;
	}
}

/* ---- opening a collection ---------------------------------------------- */

int coll_is_collection(const char *name)
{
	struct stat st;

	if (strncasecmp(name, "s3://", 5) == 0)
		return name[strlen(name) - 1] == '/' && strchr(name + 5, '/') > name + 5;
	if (strstr(name, "://"))
		return 0;
	return stat(name, &st) == 0 && S_ISDIR(st.st_mode);
}

static void tool_log(void *arg, int prio, const char *fmt, ...)
{
	va_list ap;

	(void)prio;
	coll_progress_clear();
	fprintf(stderr, "%s: ", (const char *)arg);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}

int tool_coll_open(const struct coll_backend **be, void **b, const char *top, const h5_open_opts *oo,
		   const char *suffixes, const char *progname)
{
	/* refresh 0: a tool's run sees each listing once */
	struct coll_settings st = { .refresh = 0, .h5_suffixes = suffixes, .log = NULL, .log_arg = (void *)progname };
	int e;

	(void)tool_log; /* a tool says the top's error itself; others are entries */
	*b = NULL;
	*be = coll_backend_of(top);
	h5_err_clear();
	e = (*be)->open(b, top, oo);
	if (e) {
		char msg[512];

		snprintf(msg, sizeof(msg), "%s", *h5_err_msg() ? h5_err_msg() : strerror(e));
		*b = NULL;
		return h5_err_set(coll_h5err(e), "%s: %s", top, msg);
	}
	if ((*be)->configure)
		(*be)->configure(*b, &st);
	return 0;
}

/* ---- h5fs-ls's walk ----------------------------------------------------- */

struct lswalk {
	const ls_coll_opts *o;
	const ls_visit *v;
	const struct coll_backend *be;
	void *b;
	unsigned long folders, files, members;
};

static void lw_folder(void *u, const char *path, const struct coll_stat *st)
{
	struct lswalk *w = u;

	(void)st;
	w->folders++;
	w->v->folder(w->v->u, path);
	coll_progress_tick(w->folders, w->files, w->members, NULL);
}

static void lw_file(void *u, const char *path, const struct coll_stat *st, bool hdf5)
{
	struct lswalk *w = u;
	h5_file *f = NULL;
	int rc = 0;

	w->files++;
	if (!hdf5) {
		w->v->plain(w->v->u, path, st->size);
	} else if (w->o->recursive && w->v->listed && w->v->listed(w->v->u, path, st)) {
		w->members++;   /* printed from the index: not opened */
	} else {
		w->members++;
		/* -R opens every member for its tree; a local one is opened
		 * without -R too, so that a corrupt or unsupported file is
		 * listed with its error (an object of a prefix is not
		 * fetched for a listing of names) */
		bool transient = false;

		if (w->o->recursive || !st->by_name) {
			h5_open_opts oo = *w->o->open;
			int e;

			oo.writable = 0;
			h5_err_clear();
			e = w->be->open_member(w->b, &f, path, &oo);
			rc = e ? (*h5_err_msg() ? H5_ERR_IO : h5_err_set(coll_h5err(e), "%s: %s", path, strerror(e))) : 0;
			/* h5fs-find's rule: not HDF5 or corrupt is what the
			 * member is; a remote object not fetched may pass */
			transient = e && (e == ENOMEM || (e != EMEDIUMTYPE && strcmp(w->be->name, "local") != 0));
		}
		if (!w->o->recursive) {
			h5_file_close(f);
			f = NULL;
		}
		w->v->member(w->v->u, path, st, f, rc, transient);
		h5_file_close(f);
		h5_err_clear();
	}
	coll_progress_tick(w->folders, w->files, w->members, NULL);
}

static int lw_kind(void *u, const char *path, const struct coll_stat *st)
{
	return tool_kind(((struct lswalk *)u)->o->tk, path, st);
}

static void lw_set_kind(void *u, const char *path, const struct coll_stat *st, bool hdf5)
{
	tool_kind_set(((struct lswalk *)u)->o->tk, path, st, hdf5);
}

static void lw_error(void *u, const char *path, int e)
{
	struct lswalk *w = u;

	w->v->error(w->v->u, path, coll_h5err(e));
}

int ls_coll_walk(const char *top, const ls_coll_opts *o, const ls_visit *v)
{
	struct lswalk w = { .o = o, .v = v };
	coll_visit cv = { .u = &w, .folder = lw_folder, .file = lw_file, .error = lw_error,
			  .top_only = !o->recursive };
	int rc, e;

	if (o->tk) {
		cv.kind = lw_kind;
		cv.set_kind = lw_set_kind;
	}
	coll_progress_start("h5fs-ls");
	rc = tool_coll_open(&w.be, &w.b, top, o->open, o->suffixes, "h5fs-ls");
	if (rc < 0) {
		v->error(v->u, "", rc);
		return rc;
	}
	e = coll_walk(w.be, w.b, &cv);
	w.be->close(w.b);
	if (o->tk)
		tool_kinds_store(o->tk);
	coll_progress_clear();
	return e ? coll_h5err(e) : 0;
}

/* ---- the kind cache ------------------------------------------------------ */

cindex_key tool_key(const char *root, const char *path, const struct coll_stat *st)
{
	cindex_key k = { .root = root, .member = path, .view = "", .size = st->size, .mtime_ns = st->mtime_ns,
			 .etag = st->etag };

	return k;
}

static int push_kind(struct tool_kind_ent **v, size_t *n, size_t *cap, const char *path,
		     const struct coll_stat *st, bool hdf5)
{
	struct tool_kind_ent *k;

	if (*n == *cap) {
		size_t ncap = *cap ? *cap * 2 : 1024;
		struct tool_kind_ent *nv = realloc(*v, ncap * sizeof(*nv));

		if (!nv)
			return -1;      /* unknown: its signature is read */
		*v = nv;
		*cap = ncap;
	}
	k = &(*v)[*n];
	memset(k, 0, sizeof(*k));
	k->st = *st;
	k->hdf5 = hdf5;
	if (!(k->path = strdup(path)))
		return -1;
	(*n)++;
	return 0;
}

static void known_cb(void *arg, const char *path, const cindex_file *f)
{
	tool_kinds *tk = arg;
	struct coll_stat st = { .size = f->size, .mtime_ns = f->mtime_ns };

	snprintf(st.etag, sizeof(st.etag), "%s", f->etag);
	(void)push_kind(&tk->known, &tk->nknown, &tk->capn, path, &st, f->hdf5 != 0);
}

void tool_kinds_load(tool_kinds *tk, cindex *ix, const char *root, const char *progname)
{
	memset(tk, 0, sizeof(*tk));
	tk->ix = ix;
	tk->root = root;
	tk->prog = progname;
	if (ix && cindex_kinds(ix, root, known_cb, tk) < 0) {
		fprintf(stderr, "%s: %s\n", progname, h5_err_msg());
		h5_err_clear();
	}
}

int tool_kind(const tool_kinds *tk, const char *path, const struct coll_stat *st)
{
	size_t lo = 0, hi = tk->nknown;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		int c = strcmp(tk->known[mid].path, path);

		if (!c) {
			const struct tool_kind_ent *k = &tk->known[mid];

			return k->st.size == st->size && k->st.mtime_ns == st->mtime_ns && !strcmp(k->st.etag, st->etag)
				       ? k->hdf5 : -1;
		}
		if (c < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return -1;
}

void tool_kind_set(tool_kinds *tk, const char *path, const struct coll_stat *st, bool hdf5)
{
	(void)push_kind(&tk->read, &tk->nread, &tk->capr, path, st, hdf5);   /* else read again next time */
}

void tool_kinds_store(tool_kinds *tk)
{
	cindex_key *k;
	int *h;

	if (!tk->ix || !tk->nread)
		return;
	k = calloc(tk->nread, sizeof(*k));
	h = calloc(tk->nread, sizeof(*h));
	for (size_t i = 0; k && h && i < tk->nread; i++) {
		k[i] = tool_key(tk->root, tk->read[i].path, &tk->read[i].st);
		h[i] = tk->read[i].hdf5;
	}
	if (k && h && cindex_set_kinds(tk->ix, k, h, tk->nread) < 0) {
		coll_progress_clear();
		fprintf(stderr, "%s: %s\n", tk->prog, h5_err_msg());
		h5_err_clear();
	}
	free(k);
	free(h);
}

void tool_kinds_free(tool_kinds *tk)
{
	for (size_t i = 0; i < tk->nknown; i++)
		free(tk->known[i].path);
	for (size_t i = 0; i < tk->nread; i++)
		free(tk->read[i].path);
	free(tk->known);
	free(tk->read);
	memset(tk, 0, sizeof(*tk));
}

/* ---- -o ------------------------------------------------------------------ */

int tool_parse_o(const char *progname, h5_open_opts *oo, char **params, size_t *nparams, char **suffixes, char *arg)
{
	char *save = NULL;

	for (char *t = strtok_r(arg, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
		char *v = strchr(t, '=');
		int known = h5_source_param(t);

		if (known == 1 && *nparams < TOOL_PARAMS) {
			params[(*nparams)++] = t;
			params[*nparams] = NULL;
			oo->source_params = (const char *const *)params;
			continue;
		}
		if (known == 0 && v && v[1] && strncmp(t, "h5_suffixes=", 12) == 0) {
			*suffixes = v + 1;
			continue;
		}
		h5_err_clear();
		fprintf(stderr, "%s: unknown or malformed option -o %s\n", progname, t);
		return -1;
	}
	return 0;
}
