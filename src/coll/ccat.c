/* ccat.c - a collection's catalog (ccat.h): a member's objects, types,
 * shapes and attribute texts read from the open file (the walk), and
 * kept in the collection's index (cat_* tables; cindex.c makes them). */
#define _GNU_SOURCE /* asprintf */
#include "ccat.h"
#include "cindex_int.h"
#include "linkvec.h"
#include "xattrs.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CCAT_MAX_DEPTH 256      /* groups inside groups, as the index's walk */
#define CCAT_MAX_OBJS 2000000   /* objects of one member at most */
#define CCAT_MAX_XATTRS 65536
#define CCAT_VALUE_INLINE (1u << 20)

/* ---- reading a member ------------------------------------------------------ */

struct rd {
	h5_file *f;
	ccat_member *m;
	uint64_t up[CCAT_MAX_DEPTH + 1];        /* groups on the path from the root */
	unsigned depth;
	bool nomem;
};

static void note(struct rd *r, const char *path)
{
	if (!r->m->error && asprintf(&r->m->error, "/%s: %s", path, h5_err_msg()) < 0)
		r->m->error = NULL;
	h5_err_clear();
}

static ccat_obj *add(struct rd *r, const char *path, int type)
{
	ccat_member *m = r->m;
	ccat_obj *o;

	if (m->n == CCAT_MAX_OBJS) {
		h5_err_set(H5_ERR_LIMIT, "more than %d objects: the rest not cataloged", CCAT_MAX_OBJS);
		note(r, path);
		return NULL;
	}
	if (m->n == m->cap) {
		size_t ncap = m->cap ? m->cap * 2 : 16;
		ccat_obj *nv = realloc(m->v, ncap * sizeof(*nv));

		if (!nv) {
			r->nomem = true;
			return NULL;
		}
		m->v = nv;
		m->cap = ncap;
	}
	o = &m->v[m->n];
	memset(o, 0, sizeof(*o));
	o->type = type;
	o->ndim = -1;
	if (!(o->path = strdup(path))) {
		r->nomem = true;
		return NULL;
	}
	m->n++;
	return o;
}

static int has_prefix(const char *s, const char *p)
{
	return strncmp(s, p, strlen(p)) == 0;
}

static int attr_add(struct rd *r, ccat_obj *o, const char *name, const void *val, size_t len)
{
	ccat_attr *nv = realloc(o->attrs, (o->nattrs + 1) * sizeof(*nv)), *a;

	if (!nv)
		return r->nomem = true, -1;
	o->attrs = nv;
	a = &nv[o->nattrs];
	a->name = strdup(name);
	a->value = malloc(len + 1);
	if (!a->name || !a->value) {
		free(a->name);
		free(a->value);
		return r->nomem = true, -1;
	}
	memcpy(a->value, val, len);
	a->value[len] = 0;
	a->len = len;
	o->nattrs++;
	return 0;
}

/* The object's xattrs in text mode, as getfattr shows them: HDF5
 * attributes into attrs (by their HDF5 name), user.h5.dtype and
 * user.h5.shape kept aside. */
static void xattrs_of(struct rd *r, ccat_obj *o, const char *path, uint64_t addr)
{
	xa_set *s = NULL;
	int rc = xa_all(&s, r->f, addr, 0, CCAT_VALUE_INLINE, CCAT_MAX_XATTRS);

	if (rc < 0) {
		if (rc == H5_ERR_NOMEM)
			r->nomem = true;
		note(r, path);
		return;
	}
	for (size_t i = 0; i < s->n && !r->nomem; i++) {
		const char *xn = s->v[i].name;
		void *val = s->v[i].val, *got = NULL;
		size_t len = s->v[i].len;

		if (!val) {
			if (xa_get(&got, &len, r->f, addr, xn, 0) < 0) {
				note(r, path);
				continue;
			}
			val = got;
		}
		if (has_prefix(xn, "user.h5.attr.")) {
			attr_add(r, o, xn + 13, val, len);
		} else if (has_prefix(xn, "user.h5.")) {
			char **slot = !strcmp(xn + 8, "dtype") ? &o->dtype : !strcmp(xn + 8, "shape") ? &o->shape : NULL;

			if (slot && !*slot) {
				*slot = strndup(val, len);
				if (!*slot)
					r->nomem = true;
			}
		} else if (has_prefix(xn, "user.")) {
			attr_add(r, o, xn + 5, val, len);
		}
		free(got);
	}
	xa_set_free(s);
	if (o->shape)
		o->ndim = !strcmp(o->shape, "null") ? -1 : !*o->shape ? 0 : 1;
	for (const char *p = o->shape; o->ndim > 0 && *p; p++)
		o->ndim += *p == ',';
}

/* A name a mount can show as a directory entry (doc/h5fs.1, MAPPING). */
static bool showable(const h5_link *l)
{
	return l->name_len && l->name_len <= 255 && strlen(l->name) == l->name_len && strcmp(l->name, ".") &&
	       strcmp(l->name, "..") && !strchr(l->name, '/');
}

static void walk_object(struct rd *r, const char *path, uint64_t addr);

static void walk_group(struct rd *r, const char *path, uint64_t addr)
{
	linkvec lv;
	int rc = linkvec_collect(&lv, r->f, addr);

	if (lv.nomem) {
		r->nomem = true;
		goto out;
	}
	if (rc < 0)
		note(r, path);
	for (size_t i = 0; i < lv.n && !r->nomem; i++) {
		const h5_link *l = &lv.v[i];
		char *child;
		ccat_obj *o;

		if (!showable(l))
			continue;
		if (asprintf(&child, "%s%s%s", path, *path ? "/" : "", l->name) < 0) {
			r->nomem = true;
			break;
		}
		if (l->type == H5_LINK_HARD) {
			walk_object(r, child, l->addr);
		} else if ((o = add(r, child, l->type == H5_LINK_SOFT ? CCAT_SOFTLINK : CCAT_EXTLINK))) {
			if (l->type == H5_LINK_SOFT)
				o->target = strdup(l->target ? l->target : "");
			else if (asprintf(&o->target, "%s::%s", l->ext_file ? l->ext_file : "",
					  l->ext_path ? l->ext_path : "") < 0)
				o->target = NULL;
			if (!o->target)
				r->nomem = true;
		}
		free(child);
	}
out:
	linkvec_clear(&lv);
}

static void walk_object(struct rd *r, const char *path, uint64_t addr)
{
	h5_obj_info info;
	ccat_obj *o;

	if (h5_obj_info_get(&info, r->f, addr) < 0) {
		note(r, path);
		return;
	}
	if (info.kind == H5_OBJ_GROUP) {
		/* a hard link to a group on its own path is a symbolic link
		 * in a mount ("..", "../.."): not walked again */
		for (unsigned i = 0; i < r->depth; i++)
			if (r->up[i] == addr) {
				unsigned k = r->depth - 1 - i;  /* levels up: 0 ".", 1 "..", ... */

				if (!(o = add(r, path, CCAT_SOFTLINK)))
					return;
				if (!(o->target = malloc(3 * k + 2))) {
					r->nomem = true;
					return;
				}
				strcpy(o->target, k ? ".." : ".");
				while (k-- > 1)
					strcat(o->target, "/..");
				return;
			}
		if (r->depth == CCAT_MAX_DEPTH) {
			h5_err_set(H5_ERR_LIMIT, "groups nested deeper than %d", CCAT_MAX_DEPTH);
			note(r, path);
			return;
		}
		if (!(o = add(r, path, CCAT_GROUP)))
			return;
		xattrs_of(r, o, path, addr);
		r->up[r->depth++] = addr;
		walk_group(r, path, addr);
		r->depth--;
		return;
	}
	if (!(o = add(r, path, info.kind == H5_OBJ_DATASET ? CCAT_DATASET : CCAT_DATATYPE)))
		return;
	xattrs_of(r, o, path, addr);
}

int ccat_read(ccat_member **out, h5_file *f)
{
	struct rd *r = calloc(1, sizeof(*r));
	ccat_member *m = calloc(1, sizeof(*m));

	*out = NULL;
	if (!r || !m) {
		free(r);
		free(m);
		return h5_err_set(H5_ERR_NOMEM, "out of memory");
	}
	r->f = f;
	r->m = m;
	walk_object(r, "", h5_file_root(f));
	if (r->nomem) {
		free(r);
		ccat_member_free(m);
		return h5_err_set(H5_ERR_NOMEM, "out of memory cataloging a member");
	}
	free(r);
	*out = m;
	return 0;
}

void ccat_member_free(ccat_member *m)
{
	if (!m)
		return;
	for (size_t i = 0; i < m->n; i++) {
		ccat_obj *o = &m->v[i];

		for (uint32_t k = 0; k < o->nattrs; k++) {
			free(o->attrs[k].name);
			free(o->attrs[k].value);
		}
		free(o->attrs);
		free(o->path);
		free(o->dtype);
		free(o->shape);
		free(o->target);
	}
	free(m->v);
	free(m->error);
	free(m);
}

/* ---- the catalog in the index ----------------------------------------------
 * Tables cat_member (one row per member: its stamp), cat_object (its
 * objects, id = walk order) and cat_attr (their attributes), made with
 * the index's schema (cindex.c); the views over them are the documented
 * interface (doc/h5fs-find.1). A damaged page found on the way is the
 * index's to rebuild (cindex_rebuild): the catalog is read again. */

static int step_done(cindex *ix, sqlite3_stmt *s, int *rc)
{
	int r = sqlite3_step(s);

	sqlite3_reset(s);
	if (r != SQLITE_DONE && !*rc)
		*rc = r;
	return r == SQLITE_DONE;
}

static void bind_key(sqlite3_stmt *s, const cindex_key *k)
{
	sqlite3_bind_text(s, 1, k->root, -1, SQLITE_STATIC);
	sqlite3_bind_text(s, 2, k->member, -1, SQLITE_STATIC);
}

static const char *const DEL_SQL[] = {
	"DELETE FROM cat_attr WHERE member IN (SELECT id FROM cat_member WHERE root = ?1 AND path = ?2)",
	"DELETE FROM cat_object WHERE member IN (SELECT id FROM cat_member WHERE root = ?1 AND path = ?2)",
	"DELETE FROM cat_member WHERE root = ?1 AND path = ?2",
};
#define NDEL (sizeof(DEL_SQL) / sizeof(DEL_SQL[0]))

/* Run in one transaction: fn with prepared statements sql[0..n). */
static int in_txn(cindex *ix, const char *const *sql, size_t nsql,
		  int (*fn)(cindex *ix, sqlite3_stmt **st, void *arg), void *arg, const char *what)
{
	sqlite3_stmt *st[8] = { 0 };
	int rc;

	pthread_mutex_lock(&ix->lock);
	if (!ix->db) {
		pthread_mutex_unlock(&ix->lock);
		return h5_err_set(H5_ERR_IO, "index %s: not open", ix->path);
	}
	rc = sqlite3_exec(ix->db, "BEGIN IMMEDIATE", NULL, NULL, NULL);
	for (size_t i = 0; rc == SQLITE_OK && i < nsql; i++)
		rc = sqlite3_prepare_v2(ix->db, sql[i], -1, &st[i], NULL);
	if (rc == SQLITE_OK)
		rc = fn(ix, st, arg);
	for (size_t i = 0; i < nsql; i++)
		sqlite3_finalize(st[i]);
	if (rc == SQLITE_OK)
		rc = sqlite3_exec(ix->db, "COMMIT", NULL, NULL, NULL);
	if (rc != SQLITE_OK) {
		int r = cindex_sql_err(ix, rc, what);

		sqlite3_exec(ix->db, "ROLLBACK", NULL, NULL, NULL);
		if (cindex_damaged(rc))
			cindex_rebuild(ix, rc);
		pthread_mutex_unlock(&ix->lock);
		return r;
	}
	pthread_mutex_unlock(&ix->lock);
	return 0;
}

struct store_arg {
	const cindex_key *k;
	ccat_member *const *m;
	size_t n;
	const char *const *names;
	const char *root;
};

static int store_fn(cindex *ix, sqlite3_stmt **st, void *arg)
{
	struct store_arg *a = arg;
	int rc = 0;

	(void)ix;
	for (size_t i = 0; !rc && i < a->n; i++) {
		const cindex_key *k = &a->k[i];
		const ccat_member *m = a->m[i];
		sqlite3_int64 id;

		for (size_t d = 0; d < NDEL && !rc; d++) {
			bind_key(st[d], k);
			step_done(ix, st[d], &rc);
		}
		if (rc)
			break;
		bind_key(st[3], k);
		sqlite3_bind_int64(st[3], 3, (sqlite3_int64)k->size);
		sqlite3_bind_int64(st[3], 4, k->mtime_ns);
		sqlite3_bind_text(st[3], 5, k->etag ? k->etag : "", -1, SQLITE_STATIC);
		if (m->error)
			sqlite3_bind_text(st[3], 6, m->error, -1, SQLITE_STATIC);
		else
			sqlite3_bind_null(st[3], 6);
		if (!step_done(ix, st[3], &rc))
			break;
		id = sqlite3_last_insert_rowid(sqlite3_db_handle(st[3]));
		for (size_t j = 0; !rc && j < m->n; j++) {
			const ccat_obj *o = &m->v[j];
			sqlite3_stmt *s = st[4];

			sqlite3_bind_int64(s, 1, id);
			sqlite3_bind_int64(s, 2, (sqlite3_int64)j);
			sqlite3_bind_text(s, 3, o->path, -1, SQLITE_STATIC);
			sqlite3_bind_int(s, 4, o->type);
			o->dtype ? sqlite3_bind_text(s, 5, o->dtype, -1, SQLITE_STATIC) : sqlite3_bind_null(s, 5);
			o->shape ? sqlite3_bind_text(s, 6, o->shape, -1, SQLITE_STATIC) : sqlite3_bind_null(s, 6);
			o->type == CCAT_DATASET ? sqlite3_bind_int(s, 7, o->ndim) : sqlite3_bind_null(s, 7);
			o->target ? sqlite3_bind_text(s, 8, o->target, -1, SQLITE_STATIC) : sqlite3_bind_null(s, 8);
			step_done(ix, s, &rc);
			for (uint32_t q = 0; !rc && q < o->nattrs; q++) {
				sqlite3_stmt *t = st[5];

				sqlite3_bind_int64(t, 1, id);
				sqlite3_bind_int64(t, 2, (sqlite3_int64)j);
				sqlite3_bind_int(t, 3, (int)q);
				sqlite3_bind_text(t, 4, o->attrs[q].name, -1, SQLITE_STATIC);
				sqlite3_bind_text(t, 5, o->attrs[q].value, (int)o->attrs[q].len, SQLITE_STATIC);
				step_done(ix, t, &rc);
			}
		}
	}
	return rc;
}

int ccat_store(cindex *ix, const cindex_key *k, ccat_member *const *m, size_t n)
{
	static const char *const sql[] = {
		DEL_SQL[0], DEL_SQL[1], DEL_SQL[2],
		"INSERT INTO cat_member(root, path, size, mtime_ns, etag, error) VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
		"INSERT INTO cat_object(member, id, path, type, dtype, shape, ndim, target)"
		" VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)",
		"INSERT INTO cat_attr(member, object, ord, name, value) VALUES (?1, ?2, ?3, ?4, ?5)",
	};
	struct store_arg a = { .k = k, .m = m, .n = n };

	return n ? in_txn(ix, sql, 6, store_fn, &a, "storing a catalog") : 0;
}

static int forget_fn(cindex *ix, sqlite3_stmt **st, void *arg)
{
	struct store_arg *a = arg;
	int rc = 0;

	for (size_t i = 0; !rc && i < a->n; i++) {
		cindex_key k = { .root = a->root, .member = a->names[i] };

		for (size_t d = 0; d < NDEL && !rc; d++) {
			bind_key(st[d], &k);
			step_done(ix, st[d], &rc);
		}
	}
	return rc;
}

int ccat_forget(cindex *ix, const char *root, const char *const *member, size_t n)
{
	struct store_arg a = { .names = member, .n = n, .root = root };

	return n ? in_txn(ix, DEL_SQL, NDEL, forget_fn, &a, "dropping a catalog") : 0;
}

static const char *col_text(sqlite3_stmt *s, int i)
{
	const char *t = (const char *)sqlite3_column_text(s, i);

	return t ? t : "";
}

static char *col_dup(sqlite3_stmt *s, int i, bool *nomem)
{
	const char *t = (const char *)sqlite3_column_text(s, i);
	char *d;

	if (!t)
		return NULL;
	d = strdup(t);
	if (!d)
		*nomem = true;
	return d;
}

/* A read-only query over the catalog, ix locked: rc an SQLite code. */
static int query_done(cindex *ix, sqlite3_stmt *s, int rc, const char *what)
{
	sqlite3_finalize(s);
	if (rc == SQLITE_OK || rc == SQLITE_DONE)
		return 0;
	rc = cindex_sql_err(ix, rc, what);
	return rc;
}

int ccat_stamps(cindex *ix, const char *root, void (*cb)(void *arg, const cindex_key *k), void *arg)
{
	sqlite3_stmt *s = NULL;
	int rc, r;

	pthread_mutex_lock(&ix->lock);
	rc = ix->db ? sqlite3_prepare_v2(ix->db, "SELECT path, size, mtime_ns, etag FROM cat_member WHERE root = ?1"
				 " ORDER BY path", -1, &s, NULL) : SQLITE_MISUSE;
	if (rc == SQLITE_OK) {
		sqlite3_bind_text(s, 1, root, -1, SQLITE_STATIC);
		while ((rc = sqlite3_step(s)) == SQLITE_ROW) {
			cindex_key k = { .root = root, .member = col_text(s, 0),
					 .size = (uint64_t)sqlite3_column_int64(s, 1),
					 .mtime_ns = sqlite3_column_int64(s, 2), .etag = col_text(s, 3) };

			cb(arg, &k);
		}
	}
	r = query_done(ix, s, rc, "reading the catalog");
	if (r < 0 && cindex_damaged(rc))
		cindex_rebuild(ix, rc);
	pthread_mutex_unlock(&ix->lock);
	return r;
}

struct loaded {
	sqlite3_int64 id;
	char *path;
	ccat_member *m;
};

static struct loaded *by_id(struct loaded *v, size_t n, sqlite3_int64 id)
{
	size_t lo = 0, hi = n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (v[mid].id < id)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < n && v[lo].id == id ? &v[lo] : NULL;
}

int ccat_load_all(cindex *ix, const char *root, void (*cb)(void *arg, const char *path, ccat_member *m), void *arg)
{
	static const char *const sql[] = {
		"SELECT id, path, error FROM cat_member WHERE root = ?1 ORDER BY id",
		"SELECT o.member, o.id, o.path, o.type, o.dtype, o.shape, o.ndim, o.target FROM cat_object o"
		" JOIN cat_member m ON m.id = o.member WHERE m.root = ?1 ORDER BY o.member, o.id",
		"SELECT a.member, a.object, a.name, a.value FROM cat_attr a"
		" JOIN cat_member m ON m.id = a.member WHERE m.root = ?1 ORDER BY a.member, a.object, a.ord",
	};
	struct loaded *v = NULL;
	size_t n = 0, cap = 0;
	bool nomem = false;
	sqlite3_stmt *s = NULL;
	int rc = SQLITE_OK, r = 0;

	pthread_mutex_lock(&ix->lock);
	if (!ix->db)
		rc = SQLITE_MISUSE;
	for (int q = 0; q < 3 && rc == SQLITE_OK && !nomem; q++) {
		rc = sqlite3_prepare_v2(ix->db, sql[q], -1, &s, NULL);
		if (rc != SQLITE_OK)
			break;
		sqlite3_bind_text(s, 1, root, -1, SQLITE_STATIC);
		while (!nomem && (rc = sqlite3_step(s)) == SQLITE_ROW) {
			sqlite3_int64 id = sqlite3_column_int64(s, 0);
			struct loaded *l;

			if (q == 0) {
				if (n == cap) {
					struct loaded *nv = realloc(v, (cap = cap ? cap * 2 : 256) * sizeof(*nv));

					if (!nv) {
						nomem = true;
						break;
					}
					v = nv;
				}
				l = &v[n];
				l->id = id;
				l->path = col_dup(s, 1, &nomem);
				l->m = calloc(1, sizeof(*l->m));
				n++;
				if (!l->m || !l->path)
					nomem = true;
				else
					l->m->error = col_dup(s, 2, &nomem);
				continue;
			}
			l = by_id(v, n, id);
			if (!l)
				continue;       /* written meanwhile by another: next run */
			if (q == 1) {
				ccat_member *m = l->m;
				ccat_obj *o;

				if (m->n == m->cap) {
					ccat_obj *nv = realloc(m->v, (m->cap = m->cap ? m->cap * 2 : 16) * sizeof(*nv));

					if (!nv) {
						nomem = true;
						break;
					}
					m->v = nv;
				}
				o = &m->v[m->n++];
				memset(o, 0, sizeof(*o));
				o->path = col_dup(s, 2, &nomem);
				if (!o->path && !nomem)
					o->path = strdup("");
				o->type = sqlite3_column_int(s, 3);
				o->dtype = col_dup(s, 4, &nomem);
				o->shape = col_dup(s, 5, &nomem);
				o->ndim = sqlite3_column_type(s, 6) == SQLITE_NULL ? -1 : sqlite3_column_int(s, 6);
				o->target = col_dup(s, 7, &nomem);
			} else {
				sqlite3_int64 oid = sqlite3_column_int64(s, 1);
				ccat_obj *o;
				ccat_attr *nv;

				if (oid < 0 || (size_t)oid >= l->m->n)
					continue;
				o = &l->m->v[oid];
				nv = realloc(o->attrs, (o->nattrs + 1) * sizeof(*nv));
				if (!nv) {
					nomem = true;
					break;
				}
				o->attrs = nv;
				nv[o->nattrs].name = col_dup(s, 2, &nomem);
				nv[o->nattrs].value = col_dup(s, 3, &nomem);
				nv[o->nattrs].len = (size_t)sqlite3_column_bytes(s, 3);
				if (!nv[o->nattrs].value && !nomem)
					nv[o->nattrs].value = strdup("");
				o->nattrs++;
			}
		}
		sqlite3_finalize(s);
		s = NULL;
		if (rc == SQLITE_DONE)
			rc = SQLITE_OK;
	}
	if (nomem)
		r = h5_err_set(H5_ERR_NOMEM, "out of memory reading the catalog");
	else if (rc != SQLITE_OK)
		r = cindex_sql_err(ix, rc, "reading the catalog");
	if (r < 0 && cindex_damaged(rc))
		cindex_rebuild(ix, rc);
	for (size_t i = 0; i < n; i++) {
		if (r == 0)
			cb(arg, v[i].path, v[i].m);
		else
			ccat_member_free(v[i].m);
		free(v[i].path);
	}
	free(v);
	pthread_mutex_unlock(&ix->lock);
	return r;
}
