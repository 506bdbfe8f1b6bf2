/* cindex_rec.c - the records of the collection index (cindex.h): a
 * member's tree stored and loaded (with its CRC), dropped, the kinds of
 * files, pruning. The file and its statements are cindex.c. */
#define _GNU_SOURCE /* asprintf */
#include "cindex_int.h"

#include "h5core.h"

#include <pthread.h>
#include <stdbool.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <zlib.h>

/* ---- records ------------------------------------------------------------------ */

static uint32_t crc_bytes(uint32_t crc, const void *p, size_t n)
{
	/* zlib's crc32 takes uInt lengths */
	while (n) {
		uInt k = n > 1u << 30 ? 1u << 30 : (uInt)n;

		crc = (uint32_t)crc32(crc, p, k);
		p = (const char *)p + k;
		n -= k;
	}
	return crc;
}

static uint32_t crc_u64(uint32_t crc, uint64_t v)
{
	unsigned char b[8];

	for (int i = 0; i < 8; i++)
		b[i] = (unsigned char)(v >> (8 * i));
	return crc_bytes(crc, b, 8);
}

static uint32_t crc_str(uint32_t crc, const char *s)
{
	if (!s)
		return crc_u64(crc, UINT64_MAX);
	crc = crc_u64(crc, strlen(s));
	return crc_bytes(crc, s, strlen(s));
}

/* The CRC of everything a record says, in node order: what a damaged page
 * would change without SQLite noticing. */
static uint32_t tree_crc(const cindex_tree *t)
{
	uint32_t crc = (uint32_t)crc32(0, Z_NULL, 0);

	crc = crc_u64(crc, t->n);
	for (uint32_t i = 0; i < t->n; i++) {
		const cindex_node *nd = &t->nodes[i];
		const cindex_stat *st = &nd->st;

		crc = crc_u64(crc, (uint64_t)nd->parent << 32 | nd->order);
		crc = crc_u64(crc, (uint64_t)nd->type);
		crc = crc_str(crc, nd->name);
		crc = crc_str(crc, nd->path);
		crc = crc_str(crc, nd->target);
		crc = crc_u64(crc, (uint64_t)st->mode << 32 | st->nlink);
		crc = crc_u64(crc, st->blksize);
		crc = crc_u64(crc, st->size);
		crc = crc_u64(crc, st->ino);
		crc = crc_u64(crc, st->blocks);
		crc = crc_u64(crc, (uint64_t)st->atime_ns);
		crc = crc_u64(crc, (uint64_t)st->mtime_ns);
		crc = crc_u64(crc, (uint64_t)st->ctime_ns);
		crc = crc_u64(crc, nd->lid);
		crc = crc_u64(crc, nd->dino);
		crc = crc_u64(crc, nd->nxattrs);
		for (uint32_t j = 0; j < nd->nxattrs; j++) {
			crc = crc_str(crc, nd->xattrs[j].name);
			crc = crc_u64(crc, nd->xattrs[j].len);
			crc = crc_bytes(crc, nd->xattrs[j].value, nd->xattrs[j].len);
		}
	}
	crc = crc_u64(crc, t->nrelated);
	for (uint32_t i = 0; i < t->nrelated; i++) {
		const cindex_related *r = &t->related[i];

		crc = crc_str(crc, r->path);
		crc = crc_u64(crc, r->size);
		crc = crc_u64(crc, (uint64_t)r->mtime_ns);
		crc = crc_str(crc, r->etag);
		crc = crc_u64(crc, r->ino);
	}
	return crc;
}

static void bind_key(sqlite3_stmt *s, const cindex_key *k, int with_view)
{
	sqlite3_bind_text(s, 1, k->root, -1, SQLITE_STATIC);
	sqlite3_bind_text(s, 2, k->member, -1, SQLITE_STATIC);
	if (with_view)
		sqlite3_bind_text(s, 3, k->view, -1, SQLITE_STATIC);
	else
		sqlite3_bind_null(s, 3);
}

static void done(sqlite3_stmt *s)
{
	sqlite3_reset(s);
	sqlite3_clear_bindings(s);
}

/* A text column; "" for NULL (a damaged row, caught by the CRC). */
static const char *text(sqlite3_stmt *s, int col)
{
	const char *p = (const char *)sqlite3_column_text(s, col);

	return p ? p : "";
}

/* Load the nodes and xattrs of member row id into t. SQLITE_OK, BAD_RECORD
 * when the rows do not make a tree (a damaged record), or an SQLite error. */
static int load_rows(cindex_tree *t, cindex *ix, int64_t id, int64_t nodes)
{
	sqlite3_stmt *s = ix->q[Q_NODES];
	int rc;

	sqlite3_bind_int64(s, 1, id);
	while ((rc = sqlite3_step(s)) == SQLITE_ROW) {
		cindex_node *nd;
		cindex_stat st;
		uint32_t got;
		const char *target = (const char *)sqlite3_column_text(s, 15);

		st.mode = (uint32_t)sqlite3_column_int64(s, 6);
		st.nlink = (uint32_t)sqlite3_column_int64(s, 7);
		st.blksize = (uint32_t)sqlite3_column_int64(s, 8);
		st.size = (uint64_t)sqlite3_column_int64(s, 9);
		st.ino = (uint64_t)sqlite3_column_int64(s, 10);
		st.blocks = (uint64_t)sqlite3_column_int64(s, 11);
		st.atime_ns = sqlite3_column_int64(s, 12);
		st.mtime_ns = sqlite3_column_int64(s, 13);
		st.ctime_ns = sqlite3_column_int64(s, 14);
		if (sqlite3_column_int64(s, 0) != (int64_t)t->n || t->n >= (uint64_t)nodes) {
			rc = BAD_RECORD;
			break;
		}
		/* the root first; cindex_tree_add checks the parent exists */
		if (cindex_tree_add(&got, t, (uint32_t)sqlite3_column_int64(s, 1),
				    text(s, 3), &st,
				    sqlite3_column_type(s, 15) == SQLITE_NULL ? NULL : target) < 0) {
			rc = BAD_RECORD;
			break;
		}
		nd = &t->nodes[got];
		nd->parent = (uint32_t)sqlite3_column_int64(s, 1);
		nd->order = (uint32_t)sqlite3_column_int64(s, 2);
		nd->lid = (uint64_t)sqlite3_column_int64(s, 16);
		nd->dino = (uint64_t)sqlite3_column_int64(s, 17);
		/* an error node: any name but the root's, its reason in target
		 * (its stat, mode aside, unused); no xattrs nor children follow
		 * (cindex_tree_xattr and the seal refuse them) */
		if (sqlite3_column_int64(s, 5) == CINDEX_ERROR && got > 0 && nd->target)
			nd->type = CINDEX_ERROR;
		if (strcmp(nd->path, text(s, 4)) != 0 ||
		    sqlite3_column_int64(s, 5) != nd->type) {
			rc = BAD_RECORD;
			break;
		}
	}
	done(s);
	if (rc != SQLITE_DONE)
		return rc;
	if (t->n != (uint64_t)nodes)
		return BAD_RECORD;
	s = ix->q[Q_XATTRS];
	sqlite3_bind_int64(s, 1, id);
	while ((rc = sqlite3_step(s)) == SQLITE_ROW) {
		int64_t node = sqlite3_column_int64(s, 0);
		const void *v = sqlite3_column_blob(s, 2);
		size_t len = (size_t)sqlite3_column_bytes(s, 2);

		if (node < 0 || node >= (int64_t)t->n ||
		    cindex_tree_xattr(t, (uint32_t)node, text(s, 1), v, len) < 0) {
			rc = BAD_RECORD;
			break;
		}
	}
	done(s);
	if (rc != SQLITE_DONE)
		return rc;
	s = ix->q[Q_RELATED];
	sqlite3_bind_int64(s, 1, id);
	while ((rc = sqlite3_step(s)) == SQLITE_ROW) {
		cindex_related r = { .path = (char *)text(s, 0), .size = (uint64_t)sqlite3_column_int64(s, 1),
				     .mtime_ns = sqlite3_column_int64(s, 2), .etag = (char *)text(s, 3),
				     .ino = (uint64_t)sqlite3_column_int64(s, 4) };

		if (cindex_tree_related(t, &r) < 0) {
			rc = SQLITE_NOMEM;
			break;
		}
	}
	done(s);
	return rc == SQLITE_DONE ? SQLITE_OK : rc;
}

/* Take the index's lock: true when the index is open (the caller
 * unlocks), false when it was closed as unusable (nothing held). */
static bool lock_open(cindex *ix)
{
	pthread_mutex_lock(&ix->lock);
	if (ix->db)
		return true;
	pthread_mutex_unlock(&ix->lock);
	return false;
}

/* End the write transaction begun with BEGIN IMMEDIATE whose statements
 * returned rc: committed when rc is SQLITE_OK, else (or when the commit
 * fails) rolled back after the error is set saying `what` failed (*ret,
 * before ROLLBACK replaces SQLite's message). Returns the final code. */
static int end_write(int *ret, cindex *ix, int rc, const char *what)
{
	if (rc == SQLITE_OK)
		rc = sqlite3_exec(ix->db, "COMMIT", NULL, NULL, NULL);
	if (rc != SQLITE_OK) {
		*ret = cindex_sql_err(ix, rc, what);
		sqlite3_exec(ix->db, "ROLLBACK", NULL, NULL, NULL);
	}
	return rc;
}

/* The member row of k (ix->lock held): *hit when its stamp is k's. */
static int member_row(int *hit, int64_t *id, int64_t *nodes, uint32_t *crc, cindex *ix, const cindex_key *k)
{
	sqlite3_stmt *s = ix->q[Q_MEMBER];
	int rc;

	*hit = 0;
	bind_key(s, k, 1);
	rc = sqlite3_step(s);
	if (rc == SQLITE_ROW) {
		const char *etag = (const char *)sqlite3_column_text(s, 3);

		*id = sqlite3_column_int64(s, 0);
		*nodes = sqlite3_column_int64(s, 4);
		*crc = (uint32_t)sqlite3_column_int64(s, 5);
		*hit = (uint64_t)sqlite3_column_int64(s, 1) == k->size && sqlite3_column_int64(s, 2) == k->mtime_ns &&
		       strcmp(etag ? etag : "", k->etag ? k->etag : "") == 0 && *nodes > 0;
		rc = SQLITE_OK;
	} else if (rc == SQLITE_DONE) {
		rc = SQLITE_OK;
	}
	done(s);
	return rc;
}

int cindex_read_tree(cindex_tree **out, cindex *ix, int64_t id, int64_t nodes, uint32_t crc)
{
	cindex_tree *t = NULL;
	int rc = cindex_tree_new(&t) < 0 ? SQLITE_NOMEM : SQLITE_OK;

	*out = NULL;
	if (rc == SQLITE_OK)
		rc = load_rows(t, ix, id, nodes);
	if (rc == SQLITE_OK && (tree_crc(t) != crc || cindex_tree_seal(t) < 0))
		rc = BAD_RECORD;
	if (rc != SQLITE_OK) {
		cindex_tree_free(t);
		return rc;
	}
	*out = t;
	return SQLITE_OK;
}

int cindex_load(cindex_tree **out, cindex *ix, const cindex_key *k)
{
	cindex_tree *t = NULL;
	int64_t id = 0, nodes = 0;
	uint32_t crc = 0;
	int rc, hit = 0;

	*out = NULL;
	if (!lock_open(ix))
		return 1;
	/* one read transaction: a record another mount replaces meanwhile is
	 * seen whole, old or new */
	rc = sqlite3_exec(ix->db, "BEGIN", NULL, NULL, NULL);
	if (rc != SQLITE_OK)
		goto out;
	rc = member_row(&hit, &id, &nodes, &crc, ix, k);
	if (rc != SQLITE_OK || !hit)
		goto end;
	rc = cindex_read_tree(&t, ix, id, nodes, crc);
	if (rc == BAD_RECORD) {
		cindex_note(ix, "index %s: the record of %s is damaged; reading the file again", ix->path, k->member);
		hit = 0;
		rc = SQLITE_OK;
	}
end:
	sqlite3_exec(ix->db, "COMMIT", NULL, NULL, NULL);
out:
	if (rc != SQLITE_OK) {
		hit = 0;
		if (cindex_damaged(rc))
			cindex_rebuild(ix, rc);
		else
			cindex_sql_err(ix, rc, "reading a record");
	}
	pthread_mutex_unlock(&ix->lock);
	if (!hit) {
		cindex_tree_free(t);
		return rc == SQLITE_OK || cindex_damaged(rc) ? 1 : H5_ERR_IO;
	}
	*out = t;
	return 0;
}

static int64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* Delete the member's records (of k's view, or every view). */
static int delete_member(cindex *ix, const cindex_key *k, int with_view)
{
	static const int q[] = { Q_DEL_NODES, Q_DEL_XATTRS, Q_DEL_RELATED, Q_DEL_MEMBER };
	int rc = SQLITE_DONE;

	for (size_t i = 0; i < sizeof(q) / sizeof(q[0]) && rc == SQLITE_DONE; i++) {
		bind_key(ix->q[q[i]], k, with_view);
		rc = sqlite3_step(ix->q[q[i]]);
		done(ix->q[q[i]]);
	}
	if (rc == SQLITE_DONE && !with_view) {
		bind_key(ix->q[Q_DEL_KIND], k, 0);
		rc = sqlite3_step(ix->q[Q_DEL_KIND]);
		done(ix->q[Q_DEL_KIND]);
	}
	if (rc == SQLITE_DONE && !with_view) {
		bind_key(ix->q[Q_DEL_LS], k, 0);
		rc = sqlite3_step(ix->q[Q_DEL_LS]);
		done(ix->q[Q_DEL_LS]);
	}
	return rc == SQLITE_DONE ? SQLITE_OK : rc;
}

static int insert_tree(cindex *ix, const cindex_key *k, const cindex_tree *t)
{
	sqlite3_stmt *s = ix->q[Q_INS_MEMBER];
	int64_t id;
	int rc;

	bind_key(s, k, 1);
	sqlite3_bind_int64(s, 4, (int64_t)k->size);
	sqlite3_bind_int64(s, 5, k->mtime_ns);
	sqlite3_bind_text(s, 6, k->etag ? k->etag : "", -1, SQLITE_STATIC);
	sqlite3_bind_int64(s, 7, t->n);
	sqlite3_bind_int64(s, 8, tree_crc(t));
	sqlite3_bind_int64(s, 9, now_ns());
	rc = sqlite3_step(s);
	done(s);
	if (rc != SQLITE_DONE)
		return rc;
	id = sqlite3_last_insert_rowid(ix->db);
	for (uint32_t i = 0; i < t->n; i++) {
		const cindex_node *nd = &t->nodes[i];

		s = ix->q[Q_INS_NODE];
		sqlite3_bind_int64(s, 1, id);
		sqlite3_bind_int64(s, 2, i);
		sqlite3_bind_int64(s, 3, nd->parent);
		sqlite3_bind_int64(s, 4, nd->order);
		sqlite3_bind_text(s, 5, nd->name, -1, SQLITE_STATIC);
		sqlite3_bind_text(s, 6, nd->path, -1, SQLITE_STATIC);
		sqlite3_bind_int64(s, 7, nd->type);
		sqlite3_bind_int64(s, 8, nd->st.mode);
		sqlite3_bind_int64(s, 9, nd->st.nlink);
		sqlite3_bind_int64(s, 10, nd->st.blksize);
		sqlite3_bind_int64(s, 11, (int64_t)nd->st.size);
		sqlite3_bind_int64(s, 12, (int64_t)nd->st.ino);
		sqlite3_bind_int64(s, 13, (int64_t)nd->st.blocks);
		sqlite3_bind_int64(s, 14, nd->st.atime_ns);
		sqlite3_bind_int64(s, 15, nd->st.mtime_ns);
		sqlite3_bind_int64(s, 16, nd->st.ctime_ns);
		if (nd->target)
			sqlite3_bind_text(s, 17, nd->target, -1, SQLITE_STATIC);
		else
			sqlite3_bind_null(s, 17);
		sqlite3_bind_int64(s, 18, (int64_t)nd->lid);
		sqlite3_bind_int64(s, 19, (int64_t)nd->dino);
		rc = sqlite3_step(s);
		done(s);
		if (rc != SQLITE_DONE)
			return rc;
		for (uint32_t j = 0; j < nd->nxattrs; j++) {
			s = ix->q[Q_INS_XATTR];
			sqlite3_bind_int64(s, 1, id);
			sqlite3_bind_int64(s, 2, i);
			sqlite3_bind_int64(s, 3, j);
			sqlite3_bind_text(s, 4, nd->xattrs[j].name, -1, SQLITE_STATIC);
			sqlite3_bind_blob64(s, 5, nd->xattrs[j].value, nd->xattrs[j].len, SQLITE_STATIC);
			rc = sqlite3_step(s);
			done(s);
			if (rc != SQLITE_DONE)
				return rc;
		}
	}
	for (uint32_t i = 0; i < t->nrelated; i++) {
		const cindex_related *r = &t->related[i];

		s = ix->q[Q_INS_RELATED];
		sqlite3_bind_int64(s, 1, id);
		sqlite3_bind_int64(s, 2, i);
		sqlite3_bind_text(s, 3, r->path, -1, SQLITE_STATIC);
		sqlite3_bind_int64(s, 4, (int64_t)r->size);
		sqlite3_bind_int64(s, 5, r->mtime_ns);
		sqlite3_bind_text(s, 6, r->etag ? r->etag : "", -1, SQLITE_STATIC);
		sqlite3_bind_int64(s, 7, (int64_t)r->ino);
		rc = sqlite3_step(s);
		done(s);
		if (rc != SQLITE_DONE)
			return rc;
	}
	return SQLITE_OK;
}

int cindex_put_tree(cindex *ix, const cindex_key *k, const cindex_tree *t)
{
	int rc = delete_member(ix, k, 1);

	return rc == SQLITE_OK ? insert_tree(ix, k, t) : rc;
}

int cindex_store(cindex *ix, const cindex_key *k, const cindex_tree *t)
{
	int rc = SQLITE_OK, ret = 0;

	if (t->n == 0)
		return h5_err_set(H5_ERR_INVAL, "index: no root node to record for %s", k->member);
	pthread_mutex_lock(&ix->lock);
	/* a second try on a fresh file when this one turns out damaged */
	for (int attempt = 0; attempt < 2 && ix->db; attempt++) {
		rc = sqlite3_exec(ix->db, "BEGIN IMMEDIATE", NULL, NULL, NULL);
		if (rc == SQLITE_OK)
			rc = cindex_put_tree(ix, k, t);
		rc = end_write(&ret, ix, rc, "recording");
		if (rc == SQLITE_OK || !cindex_damaged(rc))
			break;
		cindex_rebuild(ix, rc);
	}
	if (!ix->db && rc == SQLITE_OK)
		ret = h5_err_set(H5_ERR_IO, "index %s: unusable", ix->path);
	else if (rc == SQLITE_OK)
		ret = 0;
	pthread_mutex_unlock(&ix->lock);
	return ret;
}

int cindex_forget(cindex *ix, const char *root, const char *member)
{
	cindex_key k = { .root = root, .member = member };
	int rc, ret = 0;

	if (!lock_open(ix))
		return 0;
	rc = sqlite3_exec(ix->db, "BEGIN IMMEDIATE", NULL, NULL, NULL);
	if (rc == SQLITE_OK)
		rc = delete_member(ix, &k, 0);
	rc = end_write(&ret, ix, rc, "dropping a record");
	if (cindex_damaged(rc))
		cindex_rebuild(ix, rc);
	pthread_mutex_unlock(&ix->lock);
	return ret;
}

int cindex_count(uint64_t *out, cindex *ix, const char *root)
{
	sqlite3_stmt *s;
	int rc, ret = 0;

	*out = 0;
	if (!lock_open(ix))
		return 0;
	s = ix->q[Q_COUNT];
	sqlite3_bind_text(s, 1, root, -1, SQLITE_STATIC);
	rc = sqlite3_step(s);
	if (rc == SQLITE_ROW)
		*out = (uint64_t)sqlite3_column_int64(s, 0);
	else
		ret = cindex_sql_err(ix, rc, "counting");
	done(s);
	pthread_mutex_unlock(&ix->lock);
	return ret;
}

/* The file row of k (ix locked): its kind (0 not HDF5, 1 HDF5, 2 a member
 * that cannot be read as HDF5) when its key is k's, else -1; why (may be
 * NULL) gets a kind-2 row's reason, malloc'd (NULL when out of memory). */
static int kind_row(cindex *ix, const cindex_key *k, char **why)
{
	sqlite3_stmt *s = ix->q[Q_KIND];
	int rc, kind = -1;

	bind_key(s, k, 0);
	rc = sqlite3_step(s);
	if (rc == SQLITE_ROW) {
		const char *etag = (const char *)sqlite3_column_text(s, 2);

		if ((uint64_t)sqlite3_column_int64(s, 0) == k->size && sqlite3_column_int64(s, 1) == k->mtime_ns &&
		    strcmp(etag ? etag : "", k->etag ? k->etag : "") == 0) {
			kind = sqlite3_column_int(s, 3);
			if (kind == 2 && why) {
				const char *w = (const char *)sqlite3_column_text(s, 4);

				*why = strdup(w ? w : "");
			}
		}
	}
	done(s);
	if (rc != SQLITE_ROW && rc != SQLITE_DONE && cindex_damaged(rc))
		cindex_rebuild(ix, rc);
	return kind;
}

/* Binds Q_SET_KIND's values: k's key, kind and why (NULL: none). */
static void bind_kind(sqlite3_stmt *s, const cindex_key *k, int kind, const char *why)
{
	bind_key(s, k, 0);
	sqlite3_bind_int64(s, 3, (int64_t)k->size);
	sqlite3_bind_int64(s, 4, k->mtime_ns);
	sqlite3_bind_text(s, 5, k->etag ? k->etag : "", -1, SQLITE_STATIC);
	sqlite3_bind_int(s, 6, kind);
	if (why)
		sqlite3_bind_text(s, 7, why, -1, SQLITE_STATIC);
	else
		sqlite3_bind_null(s, 7);
}

int cindex_put_kind(cindex *ix, const cindex_key *k, int kind, const char *why)
{
	sqlite3_stmt *s = ix->q[Q_SET_KIND];
	int rc;

	bind_kind(s, k, kind, why);
	rc = sqlite3_step(s);
	done(s);
	return rc == SQLITE_DONE ? SQLITE_OK : rc;
}

/* One file row written (its own transaction): what says what failed. */
static int set_kind_row(cindex *ix, const cindex_key *k, int kind, const char *why, const char *what)
{
	sqlite3_stmt *s;
	int rc, ret = 0;

	if (!lock_open(ix))
		return 0;
	s = ix->q[Q_SET_KIND];
	bind_kind(s, k, kind, why);
	rc = sqlite3_step(s);
	done(s);
	if (rc != SQLITE_DONE) {
		ret = cindex_sql_err(ix, rc, what);
		if (cindex_damaged(rc))
			cindex_rebuild(ix, rc);
	}
	pthread_mutex_unlock(&ix->lock);
	return ret;
}

int cindex_kind(cindex *ix, const cindex_key *k)
{
	int kind;

	if (!lock_open(ix))
		return -1;
	kind = kind_row(ix, k, NULL);
	pthread_mutex_unlock(&ix->lock);
	return kind < 0 ? -1 : kind != 0;
}

int cindex_set_kind(cindex *ix, const cindex_key *k, int hdf5)
{
	return set_kind_row(ix, k, hdf5 != 0, NULL, "recording a file's kind");
}

int cindex_set_unreadable(cindex *ix, const cindex_key *k, const char *why)
{
	return set_kind_row(ix, k, 2, why ? why : "", "recording an unreadable member");
}

int cindex_unreadable(char **why, cindex *ix, const cindex_key *k)
{
	int kind;

	*why = NULL;
	if (!lock_open(ix))
		return 0;
	kind = kind_row(ix, k, why);
	pthread_mutex_unlock(&ix->lock);
	return kind == 2 && *why;
}

int cindex_set_kinds(cindex *ix, const cindex_key *k, const int *hdf5, size_t n)
{
	sqlite3_stmt *s;
	int rc = SQLITE_OK, ret = 0;

	if (!n || !lock_open(ix))
		return 0;
	/* one transaction: a commit per file is a WAL write per file */
	rc = sqlite3_exec(ix->db, "BEGIN IMMEDIATE", NULL, NULL, NULL);
	s = ix->q[Q_SET_KIND];
	for (size_t i = 0; rc == SQLITE_OK && i < n; i++) {
		bind_kind(s, &k[i], hdf5[i] != 0, NULL);
		rc = sqlite3_step(s);
		done(s);
		if (rc == SQLITE_DONE)
			rc = SQLITE_OK;
	}
	if (rc == SQLITE_OK)
		rc = sqlite3_exec(ix->db, "COMMIT", NULL, NULL, NULL);
	if (rc != SQLITE_OK) {
		ret = cindex_sql_err(ix, rc, "recording files' kinds");
		sqlite3_exec(ix->db, "ROLLBACK", NULL, NULL, NULL);
		if (cindex_damaged(rc))
			cindex_rebuild(ix, rc);
	}
	pthread_mutex_unlock(&ix->lock);
	return ret;
}

int cindex_kinds(cindex *ix, const char *root, void (*cb)(void *arg, const char *path, const cindex_file *f),
		 void *arg)
{
	sqlite3_stmt *s;
	int rc, ret = 0;

	if (!lock_open(ix))
		return 0;
	s = ix->q[Q_FOLDER];
	sqlite3_bind_text(s, 1, root, -1, SQLITE_STATIC);
	sqlite3_bind_text(s, 2, "", -1, SQLITE_STATIC);
	sqlite3_bind_blob(s, 3, "\xff", 1, SQLITE_STATIC);     /* every path: text sorts below any blob */
	while ((rc = sqlite3_step(s)) == SQLITE_ROW) {
		const char *etag = (const char *)sqlite3_column_text(s, 3);
		cindex_file f = { .size = (uint64_t)sqlite3_column_int64(s, 1), .mtime_ns = sqlite3_column_int64(s, 2),
				  .etag = etag ? etag : "", .hdf5 = sqlite3_column_int(s, 4) != 0 };

		cb(arg, (const char *)sqlite3_column_text(s, 0), &f);
	}
	done(s);
	if (rc != SQLITE_DONE) {
		ret = cindex_sql_err(ix, rc, "reading files' kinds");
		if (cindex_damaged(rc))
			cindex_rebuild(ix, rc);
	}
	pthread_mutex_unlock(&ix->lock);
	return ret;
}

int cindex_prune(cindex *ix, const char *root, const char *folder,
		 int (*present)(void *arg, const char *name, const cindex_file *f), void *arg)
{
	char *lo = NULL, *hi = NULL, **gone = NULL;
	size_t n = 0, cap = 0, fl = strlen(folder);
	sqlite3_stmt *s;
	int rc, ret = 0;

	/* [folder/, folder0): '0' follows '/' in byte order */
	if (asprintf(&lo, "%s%s", folder, fl ? "/" : "") < 0 || asprintf(&hi, "%s%s", folder, fl ? "0" : "\x7f") < 0) {
		free(lo);
		return h5_err_set(H5_ERR_NOMEM, "index: out of memory");
	}
	if (!fl) {
		free(hi);
		hi = NULL;
	}
	pthread_mutex_lock(&ix->lock);
	if (!ix->db)
		goto unlock;
	s = ix->q[Q_FOLDER];
	sqlite3_bind_text(s, 1, root, -1, SQLITE_STATIC);
	sqlite3_bind_text(s, 2, lo, -1, SQLITE_STATIC);
	if (hi)
		sqlite3_bind_text(s, 3, hi, -1, SQLITE_STATIC);
	else
		sqlite3_bind_blob(s, 3, "\xff", 1, SQLITE_STATIC);    /* blobs sort after all text */
	while ((rc = sqlite3_step(s)) == SQLITE_ROW) {
		const char *path = (const char *)sqlite3_column_text(s, 0), *name;
		cindex_file f;

		if (!path || strlen(path) < strlen(lo))
			continue;
		name = path + strlen(lo);
		f.size = (uint64_t)sqlite3_column_int64(s, 1);
		f.mtime_ns = sqlite3_column_int64(s, 2);
		f.etag = text(s, 3);
		f.hdf5 = sqlite3_column_int(s, 4) != 0;
		if (!*name || strchr(name, '/') || present(arg, name, &f))
			continue;
		if (n == cap) {
			char **p = realloc(gone, (cap = cap ? cap * 2 : 8) * sizeof(*p));

			if (!p)
				break;
			gone = p;
		}
		if (!(gone[n] = strdup(path)))
			break;
		n++;
	}
	done(s);
	if (n) {
		rc = sqlite3_exec(ix->db, "BEGIN IMMEDIATE", NULL, NULL, NULL);
		for (size_t i = 0; i < n && rc == SQLITE_OK; i++) {
			cindex_key k = { .root = root, .member = gone[i] };

			rc = delete_member(ix, &k, 0);
		}
		end_write(&ret, ix, rc, "dropping removed files");
	}
unlock:
	pthread_mutex_unlock(&ix->lock);
	for (size_t i = 0; i < n; i++)
		free(gone[i]);
	free(gone);
	free(lo);
	free(hi);
	return ret;
}
