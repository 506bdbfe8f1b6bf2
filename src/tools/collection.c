/* collection.c - the walk of a collection for h5fs-ls (collection.h): a
 * local DIR with readdir, an S3 prefix with one ListObjectsV2 per folder
 * (h5_s3_list), entries in name order, and the progress line. */
#define _GNU_SOURCE /* asprintf */
#include "collection.h"
#include "h5util.h"

#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define MAX_DEPTH 256   /* folders inside folders: deeper is a loop or a joke */

/* ---- the progress line --------------------------------------------------
 * A cold walk of thousands of files takes a while (each member opened,
 * each S3 folder a request): on a terminal, say how far it got. Only
 * after a second, so quick listings stay as they were; at most five
 * updates a second. H5FS_LS_PROGRESS_AFTER_MS moves the second (tests). */

static struct {
	int on;                 /* stderr is a terminal */
	int shown;              /* a line is on the terminal now */
	double start, last, after;
	unsigned long folders, files, members;
} prog;

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void progress_start(void)
{
	const char *e = getenv("H5FS_LS_PROGRESS_AFTER_MS");

	memset(&prog, 0, sizeof(prog));
	prog.on = isatty(STDERR_FILENO);
	prog.after = e && *e ? atof(e) / 1000.0 : 1.0;
	prog.start = now_s();
}

static void progress_tick(void)
{
	double t;

	if (!prog.on)
		return;
	t = now_s();
	if (t - prog.start < prog.after || (prog.shown && t - prog.last < 0.2))
		return;
	prog.last = t;
	fprintf(stderr, "\rh5fs-ls: %lu folders, %lu files (%lu HDF5) in %.0f s\033[K", prog.folders,
		prog.files, prog.members, t - prog.start);
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

/* ---- the walk ----------------------------------------------------------- */

struct walk {
	const coll_opts *o;
	const coll_visit *v;
	struct { dev_t dev; ino_t ino; } up[MAX_DEPTH];   /* local folders above */
	unsigned depth;
};

int coll_is_collection(const char *name)
{
	struct stat st;

	if (strncasecmp(name, "s3://", 5) == 0)
		return name[strlen(name) - 1] == '/' && strchr(name + 5, '/') > name + 5;
	if (strstr(name, "://"))
		return 0;
	return stat(name, &st) == 0 && S_ISDIR(st.st_mode);
}

/* b below a; "" is here */
static char *join(const char *a, const char *b)
{
	return *a ? h5_path_join(a, b) : strdup(b);
}

static int name_cmp(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* A member: opened (-R) or only named. */
static void member(struct walk *w, const char *rel, const char *open_name, uint64_t size)
{
	h5_file *f = NULL;
	int rc = 0;

	prog.files++;
	prog.members++;
	if (w->o->recursive)
		rc = h5_file_open(&f, open_name, w->o->open);
	w->v->member(w->v->u, rel, size, f, rc);
	h5_file_close(f);
	h5_err_clear();
}

static int local_dir(struct walk *w, const char *abs, const char *rel);

/* One name of a local folder: stat followed through symbolic links (a
 * link to a file is that file, as the mount shows it). */
static void local_entry(struct walk *w, const char *abs, const char *rel)
{
	struct stat st;
	h5_file *f = NULL;
	int rc;

	if (stat(abs, &st) != 0) {
		w->v->error(w->v->u, rel, h5_err_set(H5_ERR_IO, "%s: %s", abs, strerror(errno)));
		return;
	}
	if (S_ISDIR(st.st_mode)) {
		prog.folders++;
		w->v->folder(w->v->u, rel);
		if (w->o->recursive)
			local_dir(w, abs, rel);
		return;
	}
	if (!S_ISREG(st.st_mode))
		return; /* FIFOs, sockets, devices: nothing h5fs shows */
	/* known by the signature (user blocks included), whatever the name:
	 * opening reads it. A file that cannot be read at all is neither. */
	rc = h5_file_open(&f, abs, w->o->open);
	if (rc == H5_ERR_NOTHDF5) {
		prog.files++;
		w->v->plain(w->v->u, rel, (uint64_t)st.st_size);
	} else if (rc == H5_ERR_IO) {
		w->v->error(w->v->u, rel, rc);
	} else if (!w->o->recursive) {
		prog.files++;
		prog.members++;
		w->v->member(w->v->u, rel, (uint64_t)st.st_size, NULL, rc < 0 ? rc : 0);
	} else {
		prog.files++;
		prog.members++;
		w->v->member(w->v->u, rel, (uint64_t)st.st_size, f, rc);
	}
	h5_file_close(f);
	h5_err_clear();
	progress_tick();
}

static int local_dir(struct walk *w, const char *abs, const char *rel)
{
	char **names = NULL;
	size_t n = 0, cap = 0;
	struct stat st;
	struct dirent *de;
	DIR *d = NULL;
	int rc = 0;

	if (stat(abs, &st) != 0 || !(d = opendir(abs))) {
		rc = h5_err_set(H5_ERR_IO, "%s: %s", abs, strerror(errno));
		goto out;
	}
	/* a symbolic link back up the tree would walk forever */
	for (unsigned i = 0; i < w->depth; i++)
		if (w->up[i].dev == st.st_dev && w->up[i].ino == st.st_ino) {
			rc = h5_err_set(H5_ERR_LOOP, "%s: a folder inside itself (symbolic link loop)", abs);
			goto out;
		}
	if (w->depth == MAX_DEPTH) {
		rc = h5_err_set(H5_ERR_LIMIT, "%s: folders nested deeper than %d", abs, MAX_DEPTH);
		goto out;
	}
	w->up[w->depth].dev = st.st_dev;
	w->up[w->depth].ino = st.st_ino;
	while ((errno = 0, de = readdir(d))) {
		if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
			continue;
		if (n == cap) {
			char **v = realloc(names, (cap = cap ? cap * 2 : 64) * sizeof(*v));

			if (!v)
				goto nomem;
			names = v;
		}
		if (!(names[n] = strdup(de->d_name)))
			goto nomem;
		n++;
	}
	if (errno) {
		rc = h5_err_set(H5_ERR_IO, "%s: %s", abs, strerror(errno));
		goto out;
	}
	qsort(names, n, sizeof(*names), name_cmp);
	w->depth++;
	for (size_t i = 0; i < n; i++) {
		char *a = join(abs, names[i]), *r = join(rel, names[i]);

		if (a && r)
			local_entry(w, a, r);
		free(a);
		free(r);
		if (!a || !r) {
			w->depth--;
			goto nomem;
		}
	}
	w->depth--;
	goto out;
nomem:
	rc = h5_err_set(H5_ERR_NOMEM, "out of memory");
out:
	if (rc < 0)
		w->v->error(w->v->u, rel, rc);
	if (d)
		closedir(d);
	for (size_t i = 0; i < n; i++)
		free(names[i]);
	free(names);
	return rc;
}

/* One level of the prefix url (ending in '/'): one listing, paginated. */
static int s3_dir(struct walk *w, const char *url, const char *rel, unsigned depth)
{
	h5_s3_listing l;
	int rc;

	if (depth == MAX_DEPTH) {
		rc = h5_err_set(H5_ERR_LIMIT, "%s: folders nested deeper than %d", url, MAX_DEPTH);
		w->v->error(w->v->u, rel, rc);
		return rc;
	}
	rc = h5_s3_list(&l, url, w->o->open);
	if (rc < 0) {
		w->v->error(w->v->u, rel, rc);
		return rc;
	}
	for (size_t i = 0; i < l.n; i++) {
		const h5_s3_entry *e = &l.v[i];
		char *r, *u = NULL;

		/* an object and a folder of one name (sorted: the object
		 * first): the folder, as the mount shows it */
		if (!e->is_prefix && i + 1 < l.n && strcmp(e->name, l.v[i + 1].name) == 0)
			continue;
		r = join(rel, e->name);

		if (!r || asprintf(&u, "%s%s%s", url, e->name, e->is_prefix ? "/" : "") < 0) {
			free(r);
			rc = h5_err_set(H5_ERR_NOMEM, "out of memory");
			w->v->error(w->v->u, rel, rc);
			break;
		}
		if (e->is_prefix) {
			prog.folders++;
			w->v->folder(w->v->u, r);
			if (w->o->recursive)
				s3_dir(w, u, r, depth + 1);
		} else if (h5_name_has_suffix(e->name, w->o->suffixes)) {
			member(w, r, u, e->size);
		} else {
			prog.files++;
			w->v->plain(w->v->u, r, e->size);
		}
		free(r);
		free(u);
		progress_tick();
	}
	h5_s3_listing_free(&l);
	return rc < 0 ? rc : 0;
}

int coll_walk(const char *top, const coll_opts *o, const coll_visit *v)
{
	struct walk w = { .o = o, .v = v };
	int rc;

	progress_start();
	if (strncasecmp(top, "s3://", 5) == 0)
		rc = s3_dir(&w, top, "", 0);
	else
		rc = local_dir(&w, top, "");
	coll_progress_clear();
	return rc;
}
