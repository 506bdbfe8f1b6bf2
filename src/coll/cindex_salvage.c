/* cindex_salvage.c - what a damaged index still holds whole, copied into
 * the fresh file that replaces it (cindex_rebuild, cindex.c).
 *
 * SQLite finds a damaged page only when a query reaches it. By then a
 * mount may have answered many members from the file's sound records
 * (and listings from its file rows) without recording them again: moved
 * aside with the file, they were lost, and the next mount opened those
 * members anew (issue 64 item 4: 24 of 66 members). So the records that
 * still read back whole are copied over: each checked against its CRC
 * (cindex_read_tree), a damaged one a miss as in cindex_load, never a
 * wrong tree. The catalog (ccat.c) and h5fs-ls's listings (cls.c) are
 * not copied: their tools make them again. */
#include "cindex_int.h"

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

/* The member rows to copy, found by scans that each stop at the first
 * page SQLite finds damaged: every scan in both orders (so the rows
 * beyond a damaged page are reached from the other end), through the
 * table's own pages and through its UNIQUE(root, path, view) index's. */
static const char *const id_scans[] = {
	"SELECT id FROM member ORDER BY id",
	"SELECT id FROM member ORDER BY id DESC",
	"SELECT id FROM member ORDER BY root, path, view",
	"SELECT id FROM member ORDER BY root DESC, path DESC, view DESC",
};

struct ids {
	int64_t *v;
	size_t n, cap;
};

static int cmp_id(const void *a, const void *b)
{
	int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;

	return (x > y) - (x < y);
}

/* The ids the scans reach, sorted, each once. SQLITE_OK or SQLITE_NOMEM. */
static int salvage_ids(struct ids *x, sqlite3 *db)
{
	size_t k = 0;

	for (size_t i = 0; i < sizeof(id_scans) / sizeof(id_scans[0]); i++) {
		sqlite3_stmt *s = NULL;

		if (sqlite3_prepare_v2(db, id_scans[i], -1, &s, NULL) != SQLITE_OK) {
			sqlite3_finalize(s);
			continue;
		}
		while (sqlite3_step(s) == SQLITE_ROW) {
			if (x->n == x->cap) {
				size_t cap = x->cap ? x->cap * 2 : 256;
				int64_t *p = realloc(x->v, cap * sizeof(*p));

				if (!p) {
					sqlite3_finalize(s);
					return SQLITE_NOMEM;
				}
				x->v = p;
				x->cap = cap;
			}
			x->v[x->n++] = sqlite3_column_int64(s, 0);
		}
		sqlite3_finalize(s);
	}
	if (x->n)
		qsort(x->v, x->n, sizeof(*x->v), cmp_id);
	for (size_t i = 0; i < x->n; i++)
		if (k == 0 || x->v[i] != x->v[k - 1])
			x->v[k++] = x->v[i];
	x->n = k;
	return SQLITE_OK;
}

/* Each member row of x whose record reads back whole, into ix with its
 * file row (an HDF5 file at the record's stamp: a folder listing then
 * needs no signature read of it). *copied counts them. SQLITE_OK, or
 * the error of a write into ix. */
static int salvage_records(size_t *copied, cindex *ix, cindex *old, const struct ids *x)
{
	sqlite3_stmt *s = NULL;
	int rc = sqlite3_prepare_v2(old->db, "SELECT root, path, view, size, mtime_ns, etag, nodes, crc"
				    " FROM member WHERE id = ?1", -1, &s, NULL);

	*copied = 0;
	if (rc != SQLITE_OK) {
		sqlite3_finalize(s);
		return SQLITE_OK;       /* nothing readable: nothing to copy */
	}
	for (size_t i = 0; i < x->n && rc == SQLITE_OK; i++) {
		cindex_tree *t = NULL;
		cindex_key k;

		sqlite3_bind_int64(s, 1, x->v[i]);
		if (sqlite3_step(s) != SQLITE_ROW || sqlite3_column_type(s, 0) != SQLITE_TEXT ||
		    sqlite3_column_type(s, 1) != SQLITE_TEXT || sqlite3_column_type(s, 2) != SQLITE_TEXT) {
			sqlite3_reset(s);
			continue;
		}
		/* the texts stay valid until s steps again: the record is read
		 * and written meanwhile through other statements */
		k = (cindex_key){ .root = (const char *)sqlite3_column_text(s, 0),
				  .member = (const char *)sqlite3_column_text(s, 1),
				  .view = (const char *)sqlite3_column_text(s, 2),
				  .size = (uint64_t)sqlite3_column_int64(s, 3), .mtime_ns = sqlite3_column_int64(s, 4),
				  .etag = sqlite3_column_text(s, 5) ? (const char *)sqlite3_column_text(s, 5) : "" };
		if (cindex_read_tree(&t, old, x->v[i], sqlite3_column_int64(s, 6),
				     (uint32_t)sqlite3_column_int64(s, 7)) == SQLITE_OK) {
			rc = cindex_put_tree(ix, &k, t);
			if (rc == SQLITE_OK)
				rc = cindex_put_kind(ix, &k, 1, NULL);
			if (rc == SQLITE_OK)
				(*copied)++;
			cindex_tree_free(t);
		}
		sqlite3_reset(s);
	}
	sqlite3_finalize(s);
	return rc;
}

/* Whether key (root, path) sorts at or before (lroot, lpath): SQLite's
 * BINARY order of UTF-8 text is strcmp's. */
static bool key_le(const char *root, const char *path, const char *lroot, const char *lpath)
{
	int c = strcmp(root, lroot);

	return c < 0 || (c == 0 && strcmp(path, lpath) <= 0);
}

/* The file rows (kinds) into ix: forward until a damaged page, then
 * backward from the end down to the last row the forward scan copied.
 * *copied counts them. SQLITE_OK, or the error of a write into ix. */
static int salvage_kinds(size_t *copied, cindex *ix, cindex *old)
{
	static const char *const scans[] = {
		"SELECT root, path, size, mtime_ns, etag, hdf5, error FROM file ORDER BY root, path",
		"SELECT root, path, size, mtime_ns, etag, hdf5, error FROM file ORDER BY root DESC, path DESC",
	};
	char *lroot = NULL, *lpath = NULL;
	int rc = SQLITE_OK;

	*copied = 0;
	for (int dir = 0; dir < 2 && rc == SQLITE_OK; dir++) {
		sqlite3_stmt *s = NULL;

		if (sqlite3_prepare_v2(old->db, scans[dir], -1, &s, NULL) != SQLITE_OK) {
			sqlite3_finalize(s);
			break;
		}
		while (rc == SQLITE_OK && sqlite3_step(s) == SQLITE_ROW) {
			const char *root = (const char *)sqlite3_column_text(s, 0);
			const char *path = (const char *)sqlite3_column_text(s, 1);
			const char *etag = (const char *)sqlite3_column_text(s, 4);
			const char *why = (const char *)sqlite3_column_text(s, 6);
			int kind = sqlite3_column_int(s, 5);
			cindex_key k;

			if (!root || !path || kind < 0 || kind > 2)
				continue;
			if (dir == 1 && lroot && key_le(root, path, lroot, lpath))
				break;  /* the forward scan has it and all before it */
			k = (cindex_key){ .root = root, .member = path, .size = (uint64_t)sqlite3_column_int64(s, 2),
					  .mtime_ns = sqlite3_column_int64(s, 3), .etag = etag ? etag : "" };
			rc = cindex_put_kind(ix, &k, kind, kind == 2 ? (why ? why : "") : NULL);
			if (rc != SQLITE_OK)
				break;
			(*copied)++;
			if (dir == 0) {
				char *r = strdup(root), *p = strdup(path);

				if (!r || !p) {
					free(r);
					free(p);
					rc = SQLITE_NOMEM;
					break;
				}
				free(lroot);
				free(lpath);
				lroot = r;
				lpath = p;
			}
		}
		sqlite3_finalize(s);
	}
	free(lroot);
	free(lpath);
	return rc;
}

void cindex_salvage(size_t *records, size_t *kinds, cindex *ix, cindex *old)
{
	struct ids x = { 0 };
	int rc;

	*records = *kinds = 0;
	if (!ix->db || !old->db)
		return;
	/* one read transaction on the old file, one write on the new: a
	 * consistent copy, committed at once */
	sqlite3_exec(old->db, "BEGIN", NULL, NULL, NULL);
	rc = sqlite3_exec(ix->db, "BEGIN IMMEDIATE", NULL, NULL, NULL);
	if (rc == SQLITE_OK)
		rc = salvage_ids(&x, old->db);
	if (rc == SQLITE_OK)
		rc = salvage_records(records, ix, old, &x);
	if (rc == SQLITE_OK)
		rc = salvage_kinds(kinds, ix, old);
	if (rc == SQLITE_OK)
		rc = sqlite3_exec(ix->db, "COMMIT", NULL, NULL, NULL);
	if (rc != SQLITE_OK) {
		sqlite3_exec(ix->db, "ROLLBACK", NULL, NULL, NULL);
		*records = *kinds = 0;
	}
	sqlite3_exec(old->db, "COMMIT", NULL, NULL, NULL);
	free(x.v);
}
