/* coll_walk.c - the walk of a collection (coll_walk.h): one backend
 * listing per folder, entries sorted by name, kinds by the one rule. */
#include "coll_walk.h"
#include "h5util.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

struct walk {
	const struct coll_backend *be;
	void *b;
	const coll_visit *v;
	/* local folders above (dev, ino): a symbolic link back up the tree
	 * would walk forever */
	struct { uint64_t dev, ino; } up[COLL_WALK_MAX_DEPTH];
	unsigned depth;
};

char *coll_path_join(const char *dir, const char *name)
{
	return *dir ? h5_path_join(dir, name) : strdup(name);
}

static int ent_cmp(const void *a, const void *b)
{
	return strcmp(((const struct coll_dirent *)a)->name, ((const struct coll_dirent *)b)->name);
}

static void file(struct walk *w, const char *path, const struct coll_stat *st)
{
	const coll_visit *v = w->v;
	struct coll_stat full;
	bool hdf5;
	int known = -1, e;

	if (st->by_name) {
		v->file(v->u, path, st, st->member);
		return;
	}
	if (v->kind)
		known = v->kind(v->u, path, st);
	if (known >= 0) {
		v->file(v->u, path, st, known);
		return;
	}
	h5_err_clear();
	if (st->unstamped) {
		/* the signature search needs the size: stat'ed after all */
		e = w->be->stat(w->b, &full, path);
		if (e == ENOENT)
			return;         /* gone meanwhile, as a listing leaves it out */
		if (e) {
			h5_err_set(coll_h5err(e), "%s: %s", path, strerror(e));
			v->error(v->u, path, e);
			return;
		}
		st = &full;
	}
	e = coll_detect(&hdf5, w->be, w->b, path, st->size);
	if (e) {
		if (!*h5_err_msg())
			h5_err_set(coll_h5err(e), "%s: %s", path, strerror(e));
		v->error(v->u, path, e);
		return;
	}
	if (v->set_kind)
		v->set_kind(v->u, path, st, hdf5);
	v->file(v->u, path, st, hdf5);
}

static int folder(struct walk *w, const char *path, const struct coll_stat *self)
{
	const coll_visit *v = w->v;
	struct coll_dirent *d = NULL;
	size_t n = 0, i;
	int e;

	if (self && self->ino) {
		for (unsigned k = 0; k < w->depth; k++)
			if (w->up[k].dev == self->dev && w->up[k].ino == self->ino) {
				h5_err_set(H5_ERR_LOOP, "%s: a folder inside itself (symbolic link loop)", path);
				v->error(v->u, path, ELOOP);
				return ELOOP;
			}
	}
	if (w->depth == COLL_WALK_MAX_DEPTH) {
		h5_err_set(H5_ERR_LIMIT, "%s: folders nested deeper than %d", path, COLL_WALK_MAX_DEPTH);
		v->error(v->u, path, ELOOP);
		return ELOOP;
	}
	h5_err_clear();
	e = v->unstamped && w->be->list_kinds ? w->be->list_kinds(w->b, &d, &n, path) : w->be->list(w->b, &d, &n, path);
	if (e) {
		if (!*h5_err_msg())
			h5_err_set(coll_h5err(e), "%s: %s", *path ? path : ".", strerror(e));
		v->error(v->u, path, e);
		return e;
	}
	if (n > 1)      /* (an empty folder lists NULL: qsort's argument must not be) */
		qsort(d, n, sizeof(*d), ent_cmp);
	w->up[w->depth].dev = self ? self->dev : 0;
	w->up[w->depth].ino = self ? self->ino : 0;
	w->depth++;
	for (i = 0; i < n; i++) {
		char *p = coll_path_join(path, d[i].name);

		if (!p) {
			h5_err_set(H5_ERR_NOMEM, "out of memory");
			v->error(v->u, path, ENOMEM);
			break;
		}
		if (d[i].st.is_dir) {
			v->folder(v->u, p, &d[i].st);
			if (!v->top_only)
				folder(w, p, &d[i].st);
		} else if (d[i].st.is_file) {
			file(w, p, &d[i].st);
		}               /* FIFOs, sockets, devices: nothing h5fs shows */
		free(p);
	}
	w->depth--;
	coll_dirents_free(d, n);
	return 0;
}

int coll_walk(const struct coll_backend *be, void *b, const coll_visit *v)
{
	struct walk *w = calloc(1, sizeof(*w));
	struct coll_stat top;
	int e;

	if (!w)
		return ENOMEM;
	w->be = be;
	w->b = b;
	w->v = v;
	e = be->stat(b, &top, "");
	e = folder(w, "", e ? NULL : &top);
	free(w);
	return e;
}
