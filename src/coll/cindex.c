/* cindex.c - the collection index in SQLite (cindex.h says what it keeps
 * and why): the file (opened, checked, moved aside and rebuilt), its
 * schema and statements, the default path. The records are
 * cindex_rec.c, the in-memory tree cindex_tree.c.
 *
 * Tables (schema CINDEX_SCHEMA_VERSION):
 *   meta(key, value)          'schema' = 'h5fs-collection-index', 'version'
 *   member(id, root, path, view, size, mtime_ns, etag, nodes, crc, recorded_ns)
 *                             one row per member and view; UNIQUE(root, path, view)
 *   node(member, id, parent, ord, name, path, type, mode, nlink, blksize,
 *        size, ino, blocks, atime_ns, mtime_ns, ctime_ns, target, lid, dino)
 *                             type 3 (version 5): an object the walk could
 *                             not read, target its reason
 *   xattr(member, node, ord, name, value)
 *   related(member, ord, path, size, mtime_ns, etag, ino)
 *                             the other files a member's tree reaches
 *                             (external links followed in place), as they
 *                             were when it was walked: the record holds
 *                             only while they still are
 *   file(root, path, size, mtime_ns, etag, hdf5, error)
 *                             every file of the collection seen: HDF5 or not
 *                             (its signature), so a listing need not read it;
 *                             hdf5 2: a member that cannot be read as HDF5
 *                             (error: why), so a remount need not open it
 *   cat_member, cat_object, cat_attr: h5fs-find's catalog (ccat.c)
 *   ls_listing(root, path, form, size, mtime_ns, etag, crc, nerr, body)
 *                             what h5fs-ls -R printed of a member (cls.c)
 * Unsigned 64-bit fields are stored as SQLite's signed INTEGER, bit for bit.
 */
#define _GNU_SOURCE /* asprintf */
#include "cindex_int.h"

#include "h5core.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sqlite3.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define CINDEX_SCHEMA_NAME "h5fs-collection-index"
/* How long a writer waits for another mount's transaction (ms). */
#define CINDEX_BUSY_MS 30000
/* Longest index path (its -wal, -shm and .bad names included). */
#define PATH_MAX_CINDEX 4096

static const char *const query_sql[Q_N] = {
	[Q_MEMBER] = "SELECT id, size, mtime_ns, etag, nodes, crc FROM member"
		     " WHERE root = ?1 AND path = ?2 AND view = ?3",
	[Q_NODES] = "SELECT id, parent, ord, name, path, type, mode, nlink, blksize, size, ino,"
		    " blocks, atime_ns, mtime_ns, ctime_ns, target, lid, dino FROM node WHERE member = ?1 ORDER BY id",
	[Q_XATTRS] = "SELECT node, name, value FROM xattr WHERE member = ?1 ORDER BY node, ord",
	[Q_RELATED] = "SELECT path, size, mtime_ns, etag, ino FROM related WHERE member = ?1 ORDER BY ord",
	[Q_DEL_NODES] = "DELETE FROM node WHERE member IN"
			" (SELECT id FROM member WHERE root = ?1 AND path = ?2 AND (?3 IS NULL OR view = ?3))",
	[Q_DEL_XATTRS] = "DELETE FROM xattr WHERE member IN"
			 " (SELECT id FROM member WHERE root = ?1 AND path = ?2 AND (?3 IS NULL OR view = ?3))",
	[Q_DEL_RELATED] = "DELETE FROM related WHERE member IN"
			  " (SELECT id FROM member WHERE root = ?1 AND path = ?2 AND (?3 IS NULL OR view = ?3))",
	[Q_DEL_MEMBER] = "DELETE FROM member WHERE root = ?1 AND path = ?2 AND (?3 IS NULL OR view = ?3)",
	[Q_INS_MEMBER] = "INSERT INTO member(root, path, view, size, mtime_ns, etag, nodes, crc, recorded_ns)"
			 " VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)",
	[Q_INS_NODE] = "INSERT INTO node(member, id, parent, ord, name, path, type, mode, nlink, blksize,"
		       " size, ino, blocks, atime_ns, mtime_ns, ctime_ns, target, lid, dino)"
		       " VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17, ?18, ?19)",
	[Q_INS_XATTR] = "INSERT INTO xattr(member, node, ord, name, value) VALUES (?1, ?2, ?3, ?4, ?5)",
	[Q_INS_RELATED] = "INSERT INTO related(member, ord, path, size, mtime_ns, etag, ino)"
			  " VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
	[Q_COUNT] = "SELECT count(*) FROM member WHERE root = ?1",
	[Q_KIND] = "SELECT size, mtime_ns, etag, hdf5, error FROM file WHERE root = ?1 AND path = ?2",
	[Q_SET_KIND] = "INSERT OR REPLACE INTO file(root, path, size, mtime_ns, etag, hdf5, error)"
		       " VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
	[Q_DEL_KIND] = "DELETE FROM file WHERE root = ?1 AND path = ?2",
	[Q_DEL_LS] = "DELETE FROM ls_listing WHERE root = ?1 AND path = ?2",
	/* the files under a prefix (a path range: the primary key's order) */
	[Q_FOLDER] = "SELECT path, size, mtime_ns, etag, hdf5 FROM file WHERE root = ?1 AND path >= ?2 AND path < ?3",
};

static const char schema_sql[] =
	"CREATE TABLE meta(key TEXT PRIMARY KEY, value TEXT NOT NULL);"
	"CREATE TABLE member(id INTEGER PRIMARY KEY, root TEXT NOT NULL, path TEXT NOT NULL,"
	" view TEXT NOT NULL, size INTEGER NOT NULL, mtime_ns INTEGER NOT NULL, etag TEXT NOT NULL,"
	" nodes INTEGER NOT NULL, crc INTEGER NOT NULL, recorded_ns INTEGER NOT NULL,"
	" UNIQUE(root, path, view));"
	"CREATE TABLE node(member INTEGER NOT NULL, id INTEGER NOT NULL, parent INTEGER NOT NULL,"
	" ord INTEGER NOT NULL, name TEXT NOT NULL, path TEXT NOT NULL, type INTEGER NOT NULL,"
	" mode INTEGER NOT NULL, nlink INTEGER NOT NULL, blksize INTEGER NOT NULL,"
	" size INTEGER NOT NULL, ino INTEGER NOT NULL, blocks INTEGER NOT NULL,"
	" atime_ns INTEGER NOT NULL, mtime_ns INTEGER NOT NULL, ctime_ns INTEGER NOT NULL,"
	" target BLOB, lid INTEGER NOT NULL, dino INTEGER NOT NULL,"
	" PRIMARY KEY(member, id)) WITHOUT ROWID;"
	"CREATE TABLE xattr(member INTEGER NOT NULL, node INTEGER NOT NULL, ord INTEGER NOT NULL,"
	" name TEXT NOT NULL, value BLOB NOT NULL, PRIMARY KEY(member, node, ord)) WITHOUT ROWID;"
	"CREATE TABLE related(member INTEGER NOT NULL, ord INTEGER NOT NULL, path TEXT NOT NULL,"
	" size INTEGER NOT NULL, mtime_ns INTEGER NOT NULL, etag TEXT NOT NULL, ino INTEGER NOT NULL,"
	" PRIMARY KEY(member, ord)) WITHOUT ROWID;"
	"CREATE TABLE file(root TEXT NOT NULL, path TEXT NOT NULL, size INTEGER NOT NULL,"
	" mtime_ns INTEGER NOT NULL, etag TEXT NOT NULL, hdf5 INTEGER NOT NULL, error TEXT,"
	" PRIMARY KEY(root, path)) WITHOUT ROWID;"
	/* the catalog h5fs-find queries (ccat.c): per member, its objects
	 * and their attributes' texts, keyed by the member's stamp */
	"CREATE TABLE cat_member(id INTEGER PRIMARY KEY, root TEXT NOT NULL, path TEXT NOT NULL,"
	" size INTEGER NOT NULL, mtime_ns INTEGER NOT NULL, etag TEXT NOT NULL, error TEXT,"
	" UNIQUE(root, path));"
	"CREATE TABLE cat_object(member INTEGER NOT NULL, id INTEGER NOT NULL, path TEXT NOT NULL,"
	" type INTEGER NOT NULL, dtype TEXT, shape TEXT, ndim INTEGER, target TEXT,"
	" PRIMARY KEY(member, id)) WITHOUT ROWID;"
	"CREATE TABLE cat_attr(member INTEGER NOT NULL, object INTEGER NOT NULL, ord INTEGER NOT NULL,"
	" name TEXT NOT NULL, value TEXT NOT NULL, PRIMARY KEY(member, object, ord)) WITHOUT ROWID;"
	/* what h5fs-ls -R printed of a member's tree (cls.c), per form */
	"CREATE TABLE ls_listing(root TEXT NOT NULL, path TEXT NOT NULL, form INTEGER NOT NULL,"
	" size INTEGER NOT NULL, mtime_ns INTEGER NOT NULL, etag TEXT NOT NULL, crc INTEGER NOT NULL,"
	" nerr INTEGER NOT NULL, body BLOB NOT NULL, PRIMARY KEY(root, path, form)) WITHOUT ROWID;"
	/* The documented interface (doc/h5fs-find.1, THE INDEX): what
	 * `sqlite3 INDEX 'SELECT ...'` users rely on; the tables may change
	 * with the schema version, the views keep their columns. path is
	 * the object's path as a mount of the collection shows it. */
	"CREATE VIEW files AS SELECT root AS collection, path, size, mtime_ns,"
	" NULLIF(etag, '') AS etag, error FROM cat_member;"
	"CREATE VIEW objects AS SELECT m.root AS collection, m.path AS file, o.path AS object,"
	" CASE o.path WHEN '' THEN m.path ELSE m.path || '/' || o.path END AS path,"
	" CASE o.type WHEN 0 THEN 'group' WHEN 1 THEN 'dataset' WHEN 2 THEN 'datatype'"
	" WHEN 3 THEN 'softlink' ELSE 'extlink' END AS type, o.dtype AS dtype, o.shape AS shape,"
	" o.ndim AS ndim, o.target AS target, o.member AS member_id, o.id AS object_id"
	" FROM cat_object o JOIN cat_member m ON m.id = o.member;"
	"CREATE VIEW groups AS SELECT collection, file, object, path FROM objects WHERE type = 'group';"
	"CREATE VIEW datasets AS SELECT collection, file, object, path, dtype, shape, ndim FROM objects"
	" WHERE type = 'dataset';"
	"CREATE VIEW attributes AS SELECT o.collection AS collection, o.file AS file, o.object AS object,"
	" o.path AS path, o.type AS type, a.name AS name, a.value AS value"
	" FROM cat_attr a JOIN objects o ON o.member_id = a.member AND o.object_id = a.object;";


void cindex_note(const cindex *ix, const char *fmt, ...)
{
	char msg[1024];
	va_list ap;

	if (!ix->log)
		return;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	ix->log(ix->log_arg, msg);
}

int cindex_damaged(int rc)
{
	rc &= 0xff;
	return rc == SQLITE_CORRUPT || rc == SQLITE_NOTADB || rc == SQLITE_FORMAT;
}

int cindex_sql_err(const cindex *ix, int rc, const char *what)
{
	return h5_err_set(rc == SQLITE_NOMEM ? H5_ERR_NOMEM : H5_ERR_IO, "index %s: %s: %s", ix->path, what,
			  ix->db ? sqlite3_errmsg(ix->db) : sqlite3_errstr(rc));
}

/* ---- the file: opened, checked, moved aside ------------------------------- */

static uint32_t be(const unsigned char *p, int n)
{
	uint32_t v = 0;

	for (int i = 0; i < n; i++)
		v = v << 8 | p[i];
	return v;
}

/* Why the file at path cannot be an index, judged from its header alone
 * (before SQLite reads further), or NULL. A file cut short is caught here
 * when its header's page count is valid (file format 1.3.3) and no WAL
 * beside it may hold the missing pages; a cut SQLite does not notice here
 * fails a query later (cindex_damaged()) or a record's CRC. */
static const char *header_problem(const char *path)
{
	unsigned char h[100];
	struct stat st, wst;
	char wal[PATH_MAX_CINDEX];
	uint64_t psize, pages;
	ssize_t got;
	int fd;

	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return NULL;    /* missing: created; unreadable: SQLite says why */
	if (fstat(fd, &st) != 0 || st.st_size == 0) {
		close(fd);
		return NULL;    /* an empty file is an empty database */
	}
	got = pread(fd, h, sizeof(h), 0);
	close(fd);
	if (got < 16 || memcmp(h, "SQLite format 3", 16) != 0)
		return "not an SQLite database";
	if (got != (ssize_t)sizeof(h))
		return "truncated (shorter than its header)";
	psize = be(h + 16, 2) == 1 ? 65536 : be(h + 16, 2);
	pages = be(h + 28, 4);
	snprintf(wal, sizeof(wal), "%s-wal", path);
	if (pages && be(h + 24, 4) == be(h + 92, 4) && psize * pages > (uint64_t)st.st_size &&
	    (stat(wal, &wst) != 0 || wst.st_size == 0))
		return "truncated (shorter than its header says)";
	return NULL;
}

static void db_close(cindex *ix)
{
	for (int i = 0; i < Q_N; i++) {
		sqlite3_finalize(ix->q[i]);
		ix->q[i] = NULL;
	}
	sqlite3_close(ix->db);
	ix->db = NULL;
}

static int read_meta(sqlite3 *db, const char *key, char *buf, size_t size)
{
	sqlite3_stmt *s = NULL;
	int rc = sqlite3_prepare_v2(db, "SELECT value FROM meta WHERE key = ?1", -1, &s, NULL);

	buf[0] = 0;
	if (rc == SQLITE_OK) {
		sqlite3_bind_text(s, 1, key, -1, SQLITE_STATIC);
		rc = sqlite3_step(s);
		if (rc == SQLITE_ROW) {
			snprintf(buf, size, "%s", (const char *)sqlite3_column_text(s, 0));
			rc = SQLITE_OK;
		} else if (rc == SQLITE_DONE) {
			rc = SQLITE_OK;
		}
	}
	sqlite3_finalize(s);
	return rc;
}

/* Open the file as it is and make sure it is our schema, creating the
 * tables in an empty one. SQLITE_OK; NOT_INDEX with *why when the file is
 * not such an index (move it aside); or an SQLite error code. */
static int db_open(cindex *ix, const char **why)
{
	char schema[64], version[16], want[16];
	sqlite3_stmt *s = NULL;
	int rc, tables = 0;

	*why = header_problem(ix->path);
	if (*why)
		return NOT_INDEX;
	rc = sqlite3_open_v2(ix->path, &ix->db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, NULL);
	if (rc != SQLITE_OK)
		goto out;
	sqlite3_busy_timeout(ix->db, CINDEX_BUSY_MS);
	/* WAL: readers (other mounts) never block the one writer, and a
	 * commit is one append to the log; NORMAL: a commit may be lost on
	 * power loss but never half-applied, all an index needs. */
	rc = sqlite3_exec(ix->db, "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;"
			  /* a remount reads every record once: through mmap, and
			   * a page cache that holds a big collection's index */
			  " PRAGMA mmap_size=1073741824; PRAGMA cache_size=-65536", NULL, NULL, NULL);
	if (rc != SQLITE_OK)
		goto out;
	/* IMMEDIATE: two first mounts of a collection do not both create */
	rc = sqlite3_exec(ix->db, "BEGIN IMMEDIATE", NULL, NULL, NULL);
	if (rc != SQLITE_OK)
		goto out;
	rc = sqlite3_prepare_v2(ix->db, "SELECT count(*) FROM sqlite_master", -1, &s, NULL);
	if (rc == SQLITE_OK && (rc = sqlite3_step(s)) == SQLITE_ROW) {
		tables = sqlite3_column_int(s, 0);
		rc = SQLITE_OK;
	}
	sqlite3_finalize(s);
	if (rc != SQLITE_OK)
		goto rollback;
	snprintf(want, sizeof(want), "%d", CINDEX_SCHEMA_VERSION);
	if (tables == 0) {
		rc = sqlite3_exec(ix->db, schema_sql, NULL, NULL, NULL);
		if (rc == SQLITE_OK)
			rc = sqlite3_exec(ix->db, "INSERT INTO meta VALUES ('schema', '" CINDEX_SCHEMA_NAME "')",
					  NULL, NULL, NULL);
		if (rc == SQLITE_OK) {
			char sql[80];

			snprintf(sql, sizeof(sql), "INSERT INTO meta VALUES ('version', '%s')", want);
			rc = sqlite3_exec(ix->db, sql, NULL, NULL, NULL);
		}
		if (rc != SQLITE_OK)
			goto rollback;
	} else {
		rc = read_meta(ix->db, "schema", schema, sizeof(schema));
		if (rc == SQLITE_OK)
			rc = read_meta(ix->db, "version", version, sizeof(version));
		if (rc == SQLITE_ERROR || (rc == SQLITE_OK && strcmp(schema, CINDEX_SCHEMA_NAME) != 0)) {
			*why = "another database (no h5fs collection index schema)";
			rc = NOT_INDEX;
			goto rollback;
		}
		if (rc == SQLITE_OK && strcmp(version, want) != 0) {
			char sql[80], *end;
			long v = strtol(version, &end, 10);

			if (end == version || *end || v < CINDEX_SCHEMA_READABLE || v > CINDEX_SCHEMA_VERSION) {
				*why = "an index of another schema version";
				rc = NOT_INDEX;
				goto rollback;
			}
			/* the same tables: read as they are, marked ours before
			 * anything of this version is written into them */
			snprintf(sql, sizeof(sql), "UPDATE meta SET value = '%s' WHERE key = 'version'", want);
			rc = sqlite3_exec(ix->db, sql, NULL, NULL, NULL);
		}
		if (rc != SQLITE_OK)
			goto rollback;
	}
	rc = sqlite3_exec(ix->db, "COMMIT", NULL, NULL, NULL);
	if (rc != SQLITE_OK)
		goto rollback;
	for (int i = 0; i < Q_N && rc == SQLITE_OK; i++)
		rc = sqlite3_prepare_v3(ix->db, query_sql[i], -1, SQLITE_PREPARE_PERSISTENT, &ix->q[i], NULL);
	goto out;
rollback:
	sqlite3_exec(ix->db, "ROLLBACK", NULL, NULL, NULL);
out:
	if (rc != SQLITE_OK) {
		if (rc != NOT_INDEX && cindex_damaged(rc)) {
			/* keep the text: db_close frees what errmsg points to */
			static _Thread_local char msg[160];

			snprintf(msg, sizeof(msg), "%s", ix->db ? sqlite3_errmsg(ix->db) : sqlite3_errstr(rc));
			*why = msg;
			rc = NOT_INDEX;
		}
		db_close(ix);
	}
	return rc;
}

/* Move the file (and its WAL, which belongs to it: committed records
 * cindex_salvage reads) aside to PATH.bad, replacing older ones; the
 * shared-memory file is SQLite's to make anew. The caller logs. */
static void move_aside(cindex *ix)
{
	char bad[PATH_MAX_CINDEX], side[PATH_MAX_CINDEX], bside[PATH_MAX_CINDEX];

	snprintf(bad, sizeof(bad), "%s.bad", ix->path);
	if (rename(ix->path, bad) != 0)
		unlink(ix->path);
	snprintf(side, sizeof(side), "%s-wal", ix->path);
	snprintf(bside, sizeof(bside), "%s-wal", bad);
	if (rename(side, bside) != 0)
		unlink(bside);  /* none: an older .bad's log is not this file's */
	snprintf(side, sizeof(side), "%s-shm", ix->path);
	unlink(side);
	snprintf(bside, sizeof(bside), "%s-shm", bad);
	unlink(bside);
}

/* Open, and when the file is not an index, move it aside and open a fresh
 * one. Called with the lock held (or before anyone else has ix). */
/* db_open, again while another mount holds a lock SQLite does not wait
 * for with its busy handler (switching a new file to WAL, say): two
 * mounts of one collection starting at once. */
static int db_open_waiting(cindex *ix, const char **why)
{
	int rc = SQLITE_BUSY;

	for (int i = 0; i < CINDEX_BUSY_MS / 50; i++) {
		rc = db_open(ix, why);
		if ((rc & 0xff) != SQLITE_BUSY && (rc & 0xff) != SQLITE_LOCKED)
			break;
		usleep(50 * 1000);
	}
	return rc;
}

static int db_open_or_rebuild(cindex *ix)
{
	const char *why = NULL;
	int rc = db_open_waiting(ix, &why);

	if (rc == NOT_INDEX) {
		move_aside(ix);
		cindex_note(ix, "index %s: %s; moved to %s.bad, rebuilding it", ix->path, why, ix->path);
		rc = db_open_waiting(ix, &why);
		if (rc == NOT_INDEX)
			return h5_err_set(H5_ERR_IO, "index %s: %s right after it was made", ix->path, why);
	}
	if (rc != SQLITE_OK) {
		h5_err_set(H5_ERR_IO, "index %s: %s", ix->path, sqlite3_errstr(rc));
		return H5_ERR_IO;
	}
	return 0;
}

/* A query found the file damaged: start over on a fresh one, with what
 * the damaged one still holds whole (cindex_salvage: records a mount
 * answered from before the damage showed are not lost with the file). */
void cindex_rebuild(cindex *ix, int sqlrc)
{
	char why[200], bad[PATH_MAX_CINDEX];
	cindex old = { .path = bad };
	size_t records = 0, kinds = 0;
	const char *owhy = NULL;

	snprintf(why, sizeof(why), "damaged (%s)", ix->db ? sqlite3_errmsg(ix->db) : sqlite3_errstr(sqlrc));
	snprintf(bad, sizeof(bad), "%s.bad", ix->path);
	db_close(ix);
	move_aside(ix);
	if (db_open_or_rebuild(ix) < 0) {
		cindex_note(ix, "index %s: %s; moved to %s, %s; going on without it", ix->path, why, bad,
			    h5_err_msg());
		return;
	}
	/* its header and schema still ours (else nothing to copy) */
	if (db_open(&old, &owhy) == SQLITE_OK) {
		cindex_salvage(&records, &kinds, ix, &old);
		db_close(&old);
	}
	cindex_note(ix, "index %s: %s; moved to %s, rebuilt with the %zu records and %zu file kinds that read "
		    "back whole", ix->path, why, bad, records, kinds);
}

/* mkdir -p of path's folder, private (0700): the index lists the
 * collection's names. */
static int make_folder(const char *path)
{
	char buf[PATH_MAX_CINDEX];

	snprintf(buf, sizeof(buf), "%s", path);
	for (char *p = buf + 1; *p; p++) {
		if (*p != '/')
			continue;
		*p = 0;
		if (mkdir(buf, 0700) != 0 && errno != EEXIST)
			return h5_err_set(H5_ERR_IO, "index %s: cannot make folder %s: %s", path, buf,
					  strerror(errno));
		*p = '/';
	}
	return 0;
}

int cindex_open(cindex **out, const char *path, cindex_log_fn log, void *log_arg)
{
	cindex *ix;
	int rc;

	*out = NULL;
	if (strlen(path) + 8 >= PATH_MAX_CINDEX)
		return h5_err_set(H5_ERR_INVAL, "index %s: path too long", path);
	rc = make_folder(path);
	if (rc)
		return rc;
	ix = calloc(1, sizeof(*ix));
	if (!ix || !(ix->path = strdup(path))) {
		free(ix);
		return h5_err_set(H5_ERR_NOMEM, "index: out of memory");
	}
	ix->log = log;
	ix->log_arg = log_arg;
	pthread_mutex_init(&ix->lock, NULL);
	rc = db_open_or_rebuild(ix);
	if (rc) {
		cindex_close(ix);
		return rc;
	}
	*out = ix;
	return 0;
}

void cindex_close(cindex *ix)
{
	if (!ix)
		return;
	db_close(ix);
	pthread_mutex_destroy(&ix->lock);
	free(ix->path);
	free(ix);
}

const char *cindex_path(const cindex *ix)
{
	return ix->path;
}

/* ---- the default file -------------------------------------------------------- */

int cindex_default_path(char **out, const char *canonical)
{
	const char *xdg = getenv("XDG_CACHE_HOME"), *home = getenv("HOME"), *base, *end;
	uint64_t h = 0xcbf29ce484222325ULL;   /* FNV-1a 64 */
	char name[48];
	size_t n = 0;
	int len;

	*out = NULL;
	for (const char *p = canonical; *p; p++)
		h = (h ^ (unsigned char)*p) * 0x100000001b3ULL;
	/* the last non-empty component, so that ls of the folder tells them apart */
	end = canonical + strlen(canonical);
	while (end > canonical && end[-1] == '/')
		end--;
	base = end;
	while (base > canonical && base[-1] != '/')
		base--;
	for (const char *p = base; p < end && n < 32; p++)
		name[n++] = (char)((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') ||
					   (*p >= '0' && *p <= '9') || *p == '.' || *p == '-' || *p == '_'
				   ? *p : '_');
	name[n] = 0;
	if (n == 0)
		snprintf(name, sizeof(name), "root");
	if (!(xdg && xdg[0] == '/')) {
		xdg = NULL;
		if (!(home && home[0] == '/'))
			return h5_err_set(H5_ERR_INVAL, "index: no $XDG_CACHE_HOME nor $HOME to keep it in");
	}
	len = xdg ? asprintf(out, "%s/h5fs/%s-%016llx.sqlite", xdg, name, (unsigned long long)h)
		  : asprintf(out, "%s/.cache/h5fs/%s-%016llx.sqlite", home, name, (unsigned long long)h);
	if (len < 0) {
		*out = NULL;
		return h5_err_set(H5_ERR_NOMEM, "index: out of memory");
	}
	return 0;
}

