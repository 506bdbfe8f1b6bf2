/* coll_s3.c - the S3-prefix collection backend (coll_backend.h; issue 25
 * item 3): `h5fs s3://BUCKET/PREFIX/ MNT`.
 *
 * A folder is one ListObjectsV2 with the delimiter "/" (every page:
 * h5_s3_list, the engine's io/source_s3_list.c), fetched when the folder
 * is listed or something in it is looked up, and kept for the refresh
 * interval (-o refresh, 0: for good; the kernel keeps entries as long), so a walk costs
 * ceil(entries/1000) requests per folder. Common prefixes are folders;
 * objects whose names end in an HDF5 suffix (-o h5_suffixes) are members
 * by their name - reading each object's signature would be a GET per
 * object - and are opened (a GET) only when something inside them is
 * looked up: one that is not HDF5 then gives EIO with root_coll.c's log
 * line. Other objects are read-only files read by ranged GETs (the
 * engine's s3:// byte source). Same options and credentials as a single
 * s3:// FILE (h5_open_opts). Errors of a listing become errno here with
 * one log line each. */
#define _GNU_SOURCE /* asprintf */
#include "coll_backend.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <syslog.h>
#include <time.h>

#define S3_TTL_DEFAULT 1.0      /* s: as the kernel's entry timeout without -o refresh */
#define S3_DIRS_MAX 4096        /* folder listings kept; the oldest go first */

/* One folder's listing, as fetched at `at`. */
struct s3dir {
	struct s3dir *next;
	char *path;             /* "" the top, "a/b" */
	h5_s3_listing l;
	double at;
	bool loading;           /* a request for it is under way */
};

struct s3c {
	char *spec;             /* s3://BUCKET/PREFIX/ */
	h5_open_opts oo;        /* the source classes' options (endpoint, region, ...) */
	char *suffixes;         /* NULL: H5_SUFFIXES_DEFAULT */
	double ttl;
	coll_log_fn log;        /* NULL before configure */
	void *log_arg;
	pthread_mutex_t mu;
	pthread_cond_t loaded;
	struct s3dir *dirs;     /* most recently fetched first */
	size_t ndirs;
};

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static bool s3c_matches(const char *spec)
{
	return strncasecmp(spec, "s3://", 5) == 0 && spec[strlen(spec) - 1] == '/';
}

static void s3c_close(void *b)
{
	struct s3c *s = b;

	if (!s)
		return;
	while (s->dirs) {
		struct s3dir *d = s->dirs;

		s->dirs = d->next;
		h5_s3_listing_free(&d->l);
		free(d->path);
		free(d);
	}
	pthread_mutex_destroy(&s->mu);
	pthread_cond_destroy(&s->loaded);
	free(s->spec);
	free(s->suffixes);
	free(s);
}

/* The top is listed at once: a missing bucket or refused credentials
 * fail the mount with the server's word, not the first ls. */
static int s3c_list_top(struct s3c *s);

static int s3c_open(void **out, const char *spec, const h5_open_opts *oo)
{
	struct s3c *s = calloc(1, sizeof(*s));
	int e;

	*out = NULL;
	if (!s)
		return ENOMEM;
	pthread_mutex_init(&s->mu, NULL);
	pthread_cond_init(&s->loaded, NULL);
	s->ttl = S3_TTL_DEFAULT;
	s->spec = strdup(spec);
	if (!s->spec) {
		s3c_close(s);
		return ENOMEM;
	}
	/* what a request needs; the strings are main.c's, alive for the mount */
	s->oo.source_params = oo->source_params;
	e = s3c_list_top(s);
	if (e) {
		s3c_close(s);
		return e;
	}
	*out = s;
	return 0;
}

static void s3c_configure(void *b, const struct coll_settings *st)
{
	struct s3c *s = b;

	s->log = st->log;
	s->log_arg = st->log_arg;
	/* -o refresh=0: the view stays as mounted, listings too */
	s->ttl = st->refresh ? (double)st->refresh : 1e18;
	free(s->suffixes);
	s->suffixes = st->h5_suffixes && *st->h5_suffixes ? strdup(st->h5_suffixes) : NULL;
}


/* Drops the oldest listings past S3_DIRS_MAX (s->mu held): they are
 * fetched again when needed. */
static void trim(struct s3c *s)
{
	struct s3dir **pp = &s->dirs;
	size_t i = 0;

	while (*pp) {
		struct s3dir *d = *pp;

		if (++i > S3_DIRS_MAX && !d->loading) {
			*pp = d->next;
			h5_s3_listing_free(&d->l);
			free(d->path);
			free(d);
			s->ndirs--;
			continue;
		}
		pp = &d->next;
	}
}

/* The listing of folder path, fetched unless one younger than the TTL is
 * kept; callers that ask while it is fetched wait for that one request.
 * Returns with s->mu held and *out valid until it is released. */
static int dir_get(struct s3c *s, struct s3dir **out, const char *path)
{
	struct s3dir *d;
	h5_s3_listing l;
	char *url = NULL;
	int rc;

	*out = NULL;
	pthread_mutex_lock(&s->mu);
again:
	for (d = s->dirs; d; d = d->next)
		if (strcmp(d->path, path) == 0)
			break;
	if (d && d->loading) {
		pthread_cond_wait(&s->loaded, &s->mu);
		goto again;
	}
	if (d && now_s() - d->at < s->ttl) {
		*out = d;
		return 0;
	}
	if (!d) {
		d = calloc(1, sizeof(*d));
		if (!d || !(d->path = strdup(path))) {
			free(d);
			pthread_mutex_unlock(&s->mu);
			return ENOMEM;
		}
		d->next = s->dirs;
		s->dirs = d;
		s->ndirs++;
	}
	d->loading = true;
	pthread_mutex_unlock(&s->mu);

	if (asprintf(&url, "%s%s%s", s->spec, path, *path ? "/" : "") < 0) {
		url = NULL;
		rc = h5_err_set(H5_ERR_NOMEM, "out of memory");
	} else {
		rc = h5_s3_list(&l, url, &s->oo);
	}
	if (rc < 0 && s->log)
		s->log(s->log_arg, LOG_ERR, "%s: cannot be listed: %s: %s", url ? url : path,
			     strerror(h5fs_errno(rc)), h5_err_msg());
	free(url);

	pthread_mutex_lock(&s->mu);
	d->loading = false;
	pthread_cond_broadcast(&s->loaded);
	if (rc < 0) {
		/* nothing kept: the next lookup asks again */
		d->at = 0;
		pthread_mutex_unlock(&s->mu);
		return h5fs_errno(rc);
	}
	h5_s3_listing_free(&d->l);
	d->l = l;
	d->at = now_s();
	/* the fresh one to the front: trim() drops from the back */
	if (s->dirs != d) {
		struct s3dir **pp = &s->dirs;

		while (*pp != d)
			pp = &(*pp)->next;
		*pp = d->next;
		d->next = s->dirs;
		s->dirs = d;
	}
	trim(s);
	*out = d;
	return 0;
}

static int s3c_list_top(struct s3c *s)
{
	struct s3dir *d;
	int e = dir_get(s, &d, "");

	if (!e)
		pthread_mutex_unlock(&s->mu);
	return e;
}

static void stat_of(struct coll_stat *cs, const struct s3c *s, const h5_s3_entry *x)
{
	memset(cs, 0, sizeof(*cs));
	cs->mode = 0444;        /* objects have no permission bits: readable */
	if (x->is_prefix) {
		cs->is_dir = true;
		return;
	}
	cs->is_file = true;
	cs->size = x->size;
	cs->mtime_ns = x->mtime_ns;
	if (x->etag)
		snprintf(cs->etag, sizeof(cs->etag), "%s", x->etag);
	cs->by_name = true;
	cs->member = h5_name_has_suffix(x->name, s->suffixes) != 0;
}

static int s3c_list(void *b, struct coll_dirent **out, size_t *n, const char *path)
{
	struct s3c *s = b;
	struct coll_dirent *v = NULL;
	struct s3dir *d;
	size_t k = 0;
	int e;

	*out = NULL;
	*n = 0;
	e = dir_get(s, &d, path);
	if (e)
		return e;
	if (d->l.n && !(v = calloc(d->l.n, sizeof(*v))))
		e = ENOMEM;
	for (size_t i = 0; !e && i < d->l.n; i++) {
		const h5_s3_entry *x = &d->l.v[i];

		/* a folder and an object of one name: the folder is shown
		 * (entries are sorted, the object first) */
		if (i + 1 < d->l.n && !x->is_prefix && strcmp(x->name, d->l.v[i + 1].name) == 0)
			continue;
		stat_of(&v[k].st, s, x);
		if (!(v[k].name = strdup(x->name))) {
			e = ENOMEM;
			break;
		}
		k++;
	}
	pthread_mutex_unlock(&s->mu);
	if (e) {
		coll_dirents_free(v, k);
		return e;
	}
	*out = v;
	*n = k;
	return 0;
}

static int s3c_stat(void *b, struct coll_stat *cs, const char *path)
{
	struct s3c *s = b;
	const char *slash = strrchr(path, '/'), *name = slash ? slash + 1 : path;
	char *parent;
	struct s3dir *d;
	const h5_s3_entry *hit = NULL;
	int e;

	if (!*path) {
		memset(cs, 0, sizeof(*cs));
		cs->is_dir = true;
		cs->mode = 0444;
		return 0;
	}
	parent = strndup(path, slash ? (size_t)(slash - path) : 0);
	if (!parent)
		return ENOMEM;
	e = dir_get(s, &d, parent);
	free(parent);
	if (e)
		return e;
	/* sorted by name: a binary search; a folder wins over an object */
	size_t lo = 0, hi = d->l.n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (strcmp(d->l.v[mid].name, name) < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	for (; lo < d->l.n && strcmp(d->l.v[lo].name, name) == 0; lo++)
		if (!hit || d->l.v[lo].is_prefix)
			hit = &d->l.v[lo];
	if (hit)
		stat_of(cs, s, hit);
	pthread_mutex_unlock(&s->mu);
	return hit ? 0 : ENOENT;
}

static char *url_of(const struct s3c *s, const char *path)
{
	char *u;

	return asprintf(&u, "%s%s", s->spec, path) < 0 ? NULL : u;
}

static int s3c_open_source(void *b, h5_source **out, const char *path)
{
	struct s3c *s = b;
	h5_source_opts so = { 0 };
	struct coll_stat cs;
	char *u;
	int rc;

	*out = NULL;
	/* an empty object (a _SUCCESS marker) has no byte a ranged GET could
	 * ask for (416): its bytes are none, as the listing says */
	if (s3c_stat(b, &cs, path) == 0 && cs.is_file && cs.size == 0)
		return h5_source_open_mem(out, "", 0) < 0 ? ENOMEM : 0;
	u = url_of(s, path);
	if (!u)
		return ENOMEM;
	so.params = s->oo.source_params;
	rc = h5_source_open(out, u, &so);
	free(u);
	return rc < 0 ? h5fs_errno(rc) : 0;
}

/* The GET that tells whether the member is HDF5: h5_file_open reads the
 * object's first bytes; a failure keeps its message for root_coll.c's
 * log line. */
static int s3c_open_member(void *b, h5_file **out, const char *path, const h5_open_opts *oo)
{
	struct s3c *s = b;
	h5_open_opts o = *oo;
	char *u = url_of(s, path);
	int rc;

	*out = NULL;
	if (!u)
		return ENOMEM;
	o.writable = 0;         /* remote files are read-only */
	rc = coll_member_checked(out, h5_file_open(out, u, &o));
	free(u);
	return rc == H5_ERR_NOTHDF5 ? EMEDIUMTYPE : rc < 0 ? EIO : 0;
}

const struct coll_backend coll_s3 = {
	.name = "s3",
	.matches = s3c_matches,
	.open = s3c_open,
	.close = s3c_close,
	.list = s3c_list,
	.stat = s3c_stat,
	.open_source = s3c_open_source,
	.open_member = s3c_open_member,
	.configure = s3c_configure,
};
