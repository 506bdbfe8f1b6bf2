/*
 * refs_concat.c - h5fs-ls --refs --concat=DIM (refs_concat.h): each
 * file's references summarised (refs_sum.c) into a spill file, the
 * collection's members ordered, then combined (refs_combine.c).
 *
 * A collection (a DIR, an S3 prefix) is walked by the collection
 * library's walk (coll_walk.h), as h5fs-ls -R walks it: members by the
 * one rule, other files skipped with one line each. With its index
 * (cindex.h, the default one of `h5fs DIR`, or --index), a member's
 * summary is kept at its stamp (size, mtime, ETag; cls.h's table, form
 * CLS_FORM_CONCAT) and a member whose stamp is unchanged is not opened
 * again; the index's kinds spare the signature reads too.
 */
#define _GNU_SOURCE /* asprintf */
#ifdef HAVE_CONFIG_H
#include <config.h>
#endif

#include "refs_concat.h"
#include "refs_combine.h"
#include "collection.h"
#include "cls.h"
#include "tool_exit.h"

#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>

/* A 1-D variable along DIM is kept by value up to this many bytes per
 * file (netCDF-4 time coordinates: a few KiB). */
#define VALUES_MAX ((uint64_t)1 << 20)

struct gather {
	const concat_opts *o;
	rs_opts so;
	rc_spill spill;
	rc_member *m;
	size_t n, cap;
	int ret;                  /* the first fatal exit status (0: none) */
	/* a collection */
	const char *top;          /* as given, ending in '/': messages name top + path */
	char *top_alloc;
	char *base;               /* members' URLs: base + path */
	const struct coll_backend *be;
	void *b;
	cindex *ix;
	char *root;               /* the index's key of the collection */
	tool_kinds tk;
	unsigned long files, members, skipped, fromindex;
	pthread_mutex_t mu;       /* what the workers record (below) */
	struct pool *pool;
};

static int add_member(struct gather *g, const char *name, const char *url, const uint8_t *sum, size_t len)
{
	rc_member *m;
	rs_head h;
	rs_reader rd;

	if (g->n == g->cap) {
		size_t ncap = g->cap ? g->cap * 2 : 64;
		rc_member *nm = realloc(g->m, ncap * sizeof(*nm));

		if (!nm)
			return h5_err_set(H5_ERR_NOMEM, "out of memory");
		g->m = nm;
		g->cap = ncap;
	}
	m = &g->m[g->n];
	memset(m, 0, sizeof(*m));
	if (rs_open(&h, &rd, sum, len) < 0)
		return H5_ERR_FORMAT;
	if (!(m->name = strdup(name)) || !(m->url = strdup(url))) {
		free(m->name);
		free(m->url);
		return h5_err_set(H5_ERR_NOMEM, "out of memory");
	}
	m->has_key = h.has_key;
	m->key = h.key;
	m->len = len;
	g->n++;
	return rc_spill_put(&g->spill, &m->off, sum, len);
}

static int scan(uint8_t **sum, size_t *len, struct gather *g, h5_file *f, const char *name, const char *url)
{
	refs_opts ro = g->o->ro;

	ro.file = name;
	ro.url = url;
	ro.no_progress = 1;
	return rs_scan(sum, len, f, &ro, &g->so);
}

/* ---- FILEs, in the order given ------------------------------------------------- */

static int gather_file(struct gather *g, const char *file)
{
	h5_file *f = NULL;
	uint8_t *sum = NULL;
	size_t len = 0;
	char *abs = NULL;
	struct stat st;
	int rc;

	if (stat(file, &st) == 0 && !S_ISREG(st.st_mode) && !S_ISBLK(st.st_mode)) {
		fprintf(stderr, "h5fs-ls: %s: %s\n", file, S_ISDIR(st.st_mode) ? strerror(EISDIR) : "not a regular file");
		return TOOL_EXIT_OPEN;
	}
	rc = h5_file_open(&f, file, g->o->oo);
	if (rc == 0 && (rc = h5_file_check_truncated(f)) < 0) {
		h5_file_close(f);
		f = NULL;
	}
	if (rc < 0) {
		fprintf(stderr, "h5fs-ls: %s: %s\n", file, tool_err_cause(file));
		return tool_exit_for_open_error(rc, TOOL_EXIT_PARTIAL);
	}
	abs = strstr(file, "://") ? NULL : realpath(file, NULL);
	rc = scan(&sum, &len, g, f, file, abs ? abs : file);
	if (rc == 0)
		rc = add_member(g, file, abs ? abs : file, sum, len);
	if (rc < 0)
		fprintf(stderr, "h5fs-ls: %s: %s\n", file, h5_err_msg());
	free(sum);
	free(abs);
	h5_file_close(f);
	return rc < 0 ? TOOL_EXIT_PARTIAL : 0;
}

/* ---- a collection ---------------------------------------------------------------- */

static void member_from_index(struct gather *g, const char *path, const char *name, const char *url,
			      const struct coll_stat *st, int *done)
{
	cindex_key k;
	char *body = NULL;
	size_t len = 0;
	unsigned nerr = 0;
	rs_head h;
	rs_reader rd;

	*done = 0;
	if (!g->ix)
		return;
	k = tool_key(g->root, path, st);
	if (cls_get(&body, &len, &nerr, g->ix, &k, CLS_FORM_CONCAT) == 0 &&
	    rs_open(&h, &rd, (const uint8_t *)body, len) == 0 && rs_matches(&h, &g->so)) {
		if (add_member(g, name, url, (const uint8_t *)body, len) < 0) {
			fprintf(stderr, "h5fs-ls: %s: %s\n", name, h5_err_msg());
			g->ret = TOOL_EXIT_PARTIAL;
		}
		g->fromindex++;
		*done = 1;
	}
	h5_err_clear();         /* a miss, a stale or damaged row: read anew */
	free(body);
}

/* ---- members opened and summarised by a few threads --------------------------------
 * The walk (this thread) says which files are members and answers those
 * the index has; the others are opened and walked by workers, several
 * at once: a member's time is mostly waiting (system calls, a remote
 * object's round trips), and the engine's context is shared and
 * thread-safe. What they find is recorded under g->mu; the order of the
 * members is made afterwards (by_key), so the order they finish in does
 * not matter. */

#define QCAP 64                 /* members waiting for a worker */
#define QBATCH 8                /* queued before the workers are woken */
#define QTAKE 4                 /* taken by a worker at once */
#define WORKERS_LOCAL 2
#define WORKERS_REMOTE 8

struct job {
	char *path, *name, *url;
	struct coll_stat st;
};

struct pool {
	pthread_mutex_t mu;
	pthread_cond_t work, room;
	struct job q[QCAP];
	size_t head, n;
	int stop;
	int full;               /* the walk waits for room */
	pthread_t th[WORKERS_REMOTE];
	unsigned nth;
};

static void job_free(struct job *j)
{
	free(j->path);
	free(j->name);
	free(j->url);
}

/* Open, walk and record one member (a worker, or the walk itself when
 * no worker could be started). */
static void job_run(struct gather *g, struct job *j)
{
	h5_open_opts oo = *g->o->oo;
	h5_file *f = NULL;
	uint8_t *sum = NULL;
	size_t len = 0;
	int e, rc = 0;

	oo.writable = 0;
	h5_err_clear();
	e = g->be->open_member(g->b, &f, j->path, &oo);
	if (!e)
		rc = scan(&sum, &len, g, f, j->name, j->url);
	pthread_mutex_lock(&g->mu);
	coll_progress_clear();
	if (e == EMEDIUMTYPE) {
		/* no HDF5 at all (a member by its S3 suffix, or a file the
		 * index did not know) */
		fprintf(stderr, "h5fs-ls: %s: not HDF5: skipped\n", j->name);
		g->skipped++;
		if (g->ix && tool_kind(&g->tk, j->path, &j->st) < 0)
			tool_kind_set(&g->tk, j->path, &j->st, false);
	} else if (e) {
		fprintf(stderr, "h5fs-ls: %s: %s\n", j->name, *h5_err_msg() ? h5_err_msg() : strerror(e));
		if (!g->ret)
			g->ret = e == EBADMSG ? TOOL_EXIT_CORRUPT : TOOL_EXIT_OPEN;
	} else {
		g->members++;
		if (g->ix && !j->st.by_name && tool_kind(&g->tk, j->path, &j->st) < 0)
			tool_kind_set(&g->tk, j->path, &j->st, true);
		if (rc == 0)
			rc = add_member(g, j->name, j->url, sum, len);
		if (rc < 0) {
			fprintf(stderr, "h5fs-ls: %s: %s\n", j->name, h5_err_msg());
			if (!g->ret)
				g->ret = TOOL_EXIT_PARTIAL;
		}
	}
	pthread_mutex_unlock(&g->mu);
	if (!e && rc == 0 && g->ix) {
		rs_head h;
		rs_reader rd;
		cindex_key k = tool_key(g->root, j->path, &j->st);

		/* a summary with errors is not kept: they may pass */
		if (rs_open(&h, &rd, sum, len) == 0 && h.nerr == 0 &&
		    cls_put(g->ix, &k, CLS_FORM_CONCAT, (const char *)sum, len, 0) < 0)
			fprintf(stderr, "h5fs-ls: %s\n", h5_err_msg());
	}
	h5_err_clear();
	free(sum);
	h5_file_close(f);
}

static void *worker(void *arg)
{
	struct gather *g = arg;
	struct pool *p = g->pool;

	pthread_mutex_lock(&p->mu);
	for (;;) {
		struct job j[QTAKE];
		size_t k = 0;

		while (!p->n && !p->stop)
			pthread_cond_wait(&p->work, &p->mu);
		if (!p->n)
			break;
		/* a few at a time: the queue's lock taken once for them (it
		 * was contended per member, bench/README.md) */
		while (p->n && k < QTAKE) {
			j[k++] = p->q[p->head];
			p->head = (p->head + 1) % QCAP;
			p->n--;
		}
		if (p->full && p->n <= QCAP / 2) {
			p->full = 0;
			pthread_cond_signal(&p->room);
		}
		pthread_mutex_unlock(&p->mu);
		for (size_t i = 0; i < k; i++) {
			job_run(g, &j[i]);
			job_free(&j[i]);
		}
		pthread_mutex_lock(&p->mu);
	}
	pthread_mutex_unlock(&p->mu);
	return NULL;
}

static void pool_start(struct gather *g, unsigned n)
{
	struct pool *p = calloc(1, sizeof(*p));

	if (!p)
		return;         /* members opened by the walk itself */
	pthread_mutex_init(&p->mu, NULL);
	pthread_cond_init(&p->work, NULL);
	pthread_cond_init(&p->room, NULL);
	g->pool = p;
	while (p->nth < n && pthread_create(&p->th[p->nth], NULL, worker, g) == 0)
		p->nth++;
}

static void pool_stop(struct gather *g)
{
	struct pool *p = g->pool;

	if (!p)
		return;
	pthread_mutex_lock(&p->mu);
	p->stop = 1;
	pthread_cond_broadcast(&p->work);
	pthread_mutex_unlock(&p->mu);
	for (unsigned i = 0; i < p->nth; i++)
		pthread_join(p->th[i], NULL);
	pthread_mutex_destroy(&p->mu);
	pthread_cond_destroy(&p->work);
	pthread_cond_destroy(&p->room);
	free(p);
	g->pool = NULL;
}

static void job_submit(struct gather *g, struct job *j)
{
	struct pool *p = g->pool;

	if (!p || !p->nth) {
		job_run(g, j);
		job_free(j);
		return;
	}
	pthread_mutex_lock(&p->mu);
	while (p->n == QCAP) {
		p->full = 1;    /* woken when half of it is taken */
		pthread_cond_broadcast(&p->work);
		pthread_cond_wait(&p->room, &p->mu);
	}
	p->q[(p->head + p->n) % QCAP] = *j;
	p->n++;
	/* workers woken for a batch, not for each member: a wake-up and
	 * the wait after it were 3 futex calls a member (bench/README.md) */
	if (p->n == QBATCH)
		pthread_cond_broadcast(&p->work);
	pthread_mutex_unlock(&p->mu);
}

static void walk_file(void *u, const char *path, const struct coll_stat *st, bool hdf5)
{
	struct gather *g = u;
	struct job j = { .st = *st };
	int done, stop;

	pthread_mutex_lock(&g->mu);
	g->files++;
	coll_progress_tick(0, g->files, g->members, NULL);
	stop = g->ret;
	if (!stop && !hdf5) {
		coll_progress_clear();
		fprintf(stderr, "h5fs-ls: %s%s: not HDF5: skipped\n", g->top, path);
		g->skipped++;
	}
	pthread_mutex_unlock(&g->mu);
	if (stop || !hdf5)
		return;
	if (!(j.path = strdup(path)) || asprintf(&j.url, "%s%s", g->base, path) < 0 ||
	    asprintf(&j.name, "%s%s", g->top, path) < 0) {
		pthread_mutex_lock(&g->mu);
		fprintf(stderr, "h5fs-ls: out of memory\n");
		g->ret = TOOL_EXIT_PARTIAL;
		pthread_mutex_unlock(&g->mu);
		job_free(&j);
		return;
	}
	pthread_mutex_lock(&g->mu);
	/* a member by its name (S3) that was no HDF5 at this ETag: not
	 * fetched again */
	if (st->by_name && g->ix && tool_kind(&g->tk, path, st) == 0) {
		fprintf(stderr, "h5fs-ls: %s: not HDF5 (as when last fetched, by the index): skipped\n", j.name);
		g->skipped++;
		done = 1;
	} else {
		member_from_index(g, path, j.name, j.url, st, &done);
		g->members += done;
	}
	pthread_mutex_unlock(&g->mu);
	if (done)
		job_free(&j);
	else
		job_submit(g, &j);
}

/* Before a folder is listed (an S3 listing: round trips), members
 * queued short of a batch go to the workers. */
static void walk_folder(void *u, const char *path, const struct coll_stat *st)
{
	struct gather *g = u;

	(void)path;
	(void)st;
	if (g->pool) {
		pthread_mutex_lock(&g->pool->mu);
		if (g->pool->n)
			pthread_cond_broadcast(&g->pool->work);
		pthread_mutex_unlock(&g->pool->mu);
	}
}

static void walk_error(void *u, const char *path, int e)
{
	struct gather *g = u;

	coll_progress_clear();
	fprintf(stderr, "h5fs-ls: %s%s: %s\n", g->top, path, *h5_err_msg() ? h5_err_msg() : strerror(e));
	g->ret = TOOL_EXIT_OPEN;
}

/* A file the index does not know is taken for a member: opening it
 * applies the same signature rule (the engine's search at 0, 512, 1024,
 * ...; EMEDIUMTYPE when there is none) as the walk's own read would,
 * which would open it a second time. walk_file records what it found. */
static int walk_kind(void *u, const char *path, const struct coll_stat *st)
{
	int k = tool_kind(&((struct gather *)u)->tk, path, st);

	return k >= 0 ? k : 1;
}

static void index_note(void *arg, const char *msg)
{
	(void)arg;
	coll_progress_clear();
	fprintf(stderr, "h5fs-ls: %s\n", msg);
}

static void open_index(struct gather *g)
{
	char *path;

	if (g->o->noindex || !(g->root = coll_canonical(g->top)))
		return;
	path = g->o->index_path ? strdup(g->o->index_path) : NULL;
	if (!g->o->index_path && cindex_default_path(&path, g->root) < 0)
		path = NULL;
	if (!path || cindex_open(&g->ix, path, index_note, NULL) < 0) {
		fprintf(stderr, "h5fs-ls: %s; combining without an index\n", h5_err_msg());
		h5_err_clear();
		g->ix = NULL;
	}
	free(path);
	if (g->ix)
		tool_kinds_load(&g->tk, g->ix, g->root, "h5fs-ls");
}

static int gather_collection(struct gather *g, const char *top)
{
	coll_visit cv = { .u = g, .folder = walk_folder, .file = walk_file, .error = walk_error };
	size_t tl = strlen(top);
	int rc, e;

	g->top = top;
	/* the members' URLs: the prefix as given, or DIR's absolute path */
	if (strncasecmp(top, "s3://", 5) == 0) {
		g->base = strdup(top);
	} else {
		char *abs = realpath(top, NULL);

		g->base = abs ? malloc(strlen(abs) + 2) : NULL;
		if (g->base)
			sprintf(g->base, "%s/", abs);
		free(abs);
	}
	if (!g->base) {
		fprintf(stderr, "h5fs-ls: %s: %s\n", top, strerror(errno ? errno : ENOMEM));
		return TOOL_EXIT_OPEN;
	}
	/* messages name DIR/path */
	if (tl && top[tl - 1] != '/') {
		if (!(g->top_alloc = malloc(tl + 2)))
			return TOOL_EXIT_PARTIAL;
		sprintf(g->top_alloc, "%s/", top);
		g->top = g->top_alloc;
	}
	open_index(g);
	cv.kind = walk_kind;
	/* without an index no file's stamp is used: each is opened, and
	 * the open's fstat is its stamp (a stat per file less) */
	cv.unstamped = !g->ix;
	coll_progress_start("h5fs-ls");
	rc = tool_coll_open(&g->be, &g->b, top, g->o->oo, g->o->suffixes, "h5fs-ls");
	if (rc < 0) {
		fprintf(stderr, "h5fs-ls: %s\n", h5_err_msg());
		return TOOL_EXIT_OPEN;
	}
	pool_start(g, strcmp(g->be->name, "local") == 0 ? WORKERS_LOCAL : WORKERS_REMOTE);
	e = coll_walk(g->be, g->b, &cv);
	pool_stop(g);
	g->be->close(g->b);
	if (g->ix)
		tool_kinds_store(&g->tk);
	coll_progress_clear();
	if (e && !g->ret)
		g->ret = TOOL_EXIT_OPEN;
	return g->ret;
}

/* A collection's order: by the first value of DIM's coordinate variable
 * (members without one after those with), then by path, bytewise. */
static int by_key(const void *a, const void *b)
{
	const rc_member *x = a, *y = b;

	if (x->has_key != y->has_key)
		return x->has_key ? -1 : 1;
	if (x->has_key && x->key != y->key)
		return x->key < y->key ? -1 : 1;
	return strcmp(x->name, y->name);
}

int refs_concat(char *const *inputs, int n, const concat_opts *o)
{
	struct gather g = { .o = o, .so = { o->dim, o->axis, o->ro.inline_max, VALUES_MAX },
			    .mu = PTHREAD_MUTEX_INITIALIZER };
	int ret = 0, coll = n == 1 && coll_is_collection(inputs[0]);

	for (int i = 0; i < n && !coll; i++)
		if (coll_is_collection(inputs[i])) {
			fprintf(stderr, "h5fs-ls: %s: --concat takes several FILEs, or one DIR or S3 prefix alone\n",
				inputs[i]);
			return TOOL_EXIT_USAGE;
		}
	if (rc_spill_open(&g.spill) < 0) {
		fprintf(stderr, "h5fs-ls: %s\n", h5_err_msg());
		return TOOL_EXIT_PARTIAL;
	}
	if (coll) {
		ret = gather_collection(&g, inputs[0]);
		if (!ret && g.n == 0) {
			fprintf(stderr, "h5fs-ls: %s: no HDF5 file to combine\n", inputs[0]);
			ret = TOOL_EXIT_OPEN;
		}
		if (!ret)
			qsort(g.m, g.n, sizeof(*g.m), by_key);
	} else {
		for (int i = 0; i < n && !ret; i++)
			ret = gather_file(&g, inputs[i]);
	}
	if (!ret)
		ret = rc_combine(&g.spill, g.m, g.n, &g.so, o->ro.strict);
	for (size_t i = 0; i < g.n; i++) {
		free(g.m[i].name);
		free(g.m[i].url);
	}
	free(g.m);
	rc_spill_close(&g.spill);
	if (g.ix)
		cindex_close(g.ix);
	tool_kinds_free(&g.tk);
	free(g.top_alloc);
	free(g.base);
	free(g.root);
	return ret;
}
