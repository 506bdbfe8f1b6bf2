/* test_cindex.c - the collection index (src/coll/cindex.c, cindex_tree.c):
 * trees in memory, records in SQLite keyed by member, size, mtime, ETag and
 * view, error nodes (objects a walk could not read), files that are not
 * an index (or of another schema version) moved aside and rebuilt, an
 * index of version 4 read as it is, damaged records read as misses, the sound records of a file damaged
 * mid-use kept in its rebuilt one, several handles (mounts) on one file, and a
 * writer killed with SIGKILL mid-transaction. */
#include "testutil.h"

#include "cindex.h"

#include <inttypes.h>
#include <pthread.h>
#include <signal.h>
#include <sqlite3.h>
#include <sys/stat.h>

static char dir[256];
static int notices;
static char last_notice[1024];

static void on_log(void *arg, const char *msg)
{
	(void)arg;
	notices++;
	snprintf(last_notice, sizeof(last_notice), "%s", msg);
}

static void make_dir(void)
{
	if (!dir[0]) {
		snprintf(dir, sizeof(dir), "/tmp/h5fs-cindex-XXXXXX");
		ck_assert_ptr_nonnull(mkdtemp(dir));
	}
}

/* A fresh index path under dir (file, -wal, -shm and .bad removed). */
static const char *fresh(const char *name)
{
	static char path[400];
	char side[420];

	make_dir();
	snprintf(path, sizeof(path), "%s/%s", dir, name);
	unlink(path);
	snprintf(side, sizeof(side), "%s-wal", path);
	unlink(side);
	snprintf(side, sizeof(side), "%s-shm", path);
	unlink(side);
	snprintf(side, sizeof(side), "%s.bad", path);
	unlink(side);
	notices = 0;
	return path;
}

static cindex_stat st_of(uint32_t mode, uint64_t size, uint64_t ino)
{
	cindex_stat st = { .mode = mode, .nlink = 1, .blksize = 4096, .size = size, .ino = ino,
			   .blocks = (size + 511) / 512, .atime_ns = 1700000000123456789LL,
			   .mtime_ns = 1700000000123456789LL, .ctime_ns = 1700000001000000000LL };
	return st;
}

/* A member's tree: / { b/ { ds (xattrs) }, a (file), link -> b/ds }, with
 * readdir order b, a, link (not by name) and a root xattr holding a NUL;
 * it reaches two other files (one in the collection, one outside). */
static cindex_tree *sample(uint64_t salt)
{
	cindex_tree *t;
	uint32_t root, b, ds, a, l;
	cindex_stat st;

	ck_assert_int_eq(cindex_tree_new(&t), 0);
	st = st_of(S_IFDIR | 0555, 0, 1 + salt);
	ck_assert_int_eq(cindex_tree_add(&root, t, 0, NULL, &st, NULL), 0);
	st = st_of(S_IFDIR | 0555, 0, 800 + salt);
	ck_assert_int_eq(cindex_tree_add(&b, t, root, "b", &st, NULL), 0);
	st = st_of(S_IFREG | 0444, 4000 + salt, 2048 + salt);
	ck_assert_int_eq(cindex_tree_add(&ds, t, b, "ds", &st, NULL), 0);
	st = st_of(S_IFREG | 0444, 12, 4096);
	ck_assert_int_eq(cindex_tree_add(&a, t, root, "a", &st, NULL), 0);
	st = st_of(S_IFLNK | 0777, 4, (uint64_t)1 << 63 | 5);
	ck_assert_int_eq(cindex_tree_add(&l, t, root, "link", &st, "b/ds"), 0);
	for (uint32_t i = 0; i < t->n; i++) {
		t->nodes[i].lid = t->nodes[i].type == CINDEX_DIR ? ((uint64_t)1 << 50) + i : t->nodes[i].st.ino;
		t->nodes[i].dino = t->nodes[i].st.ino;
	}
	ck_assert_int_eq(cindex_tree_xattr(t, ds, "user.h5.dtype", "<f8", 3), 0);
	ck_assert_int_eq(cindex_tree_xattr(t, ds, "user.units", "m", 1), 0);
	ck_assert_int_eq(cindex_tree_xattr(t, root, "user.raw", "a\0b", 3), 0);
	ck_assert_int_eq(cindex_tree_xattr(t, a, "user.empty", "", 0), 0);
	ck_assert_int_eq(cindex_tree_related(t, &(cindex_related){ .path = "links/b.h5", .size = 800 + salt,
								    .mtime_ns = 1700000000000000002LL, .ino = 77 }), 0);
	ck_assert_int_eq(cindex_tree_related(t, &(cindex_related){ .path = "/elsewhere/c.h5", .size = 9,
								    .mtime_ns = -5, .etag = "\"e\"" }), 0);
	ck_assert_int_eq(cindex_tree_seal(t), 0);
	return t;
}

/* A file a tree reaches as one line, every field of it. */
static const char *related_text(char *buf, size_t size, const cindex_related *r)
{
	snprintf(buf, size, "%s size=%" PRIu64 " mtime=%" PRId64 " etag=%s ino=%" PRIu64, r->path, r->size,
		 r->mtime_ns, r->etag, r->ino);
	return buf;
}

static void assert_same(const cindex_tree *x, const cindex_tree *y)
{
	ck_assert_uint_eq(x->n, y->n);
	for (uint32_t i = 0; i < x->n; i++) {
		const cindex_node *a = &x->nodes[i], *b = &y->nodes[i];

		ck_assert_uint_eq(a->parent, b->parent);
		ck_assert_uint_eq(a->order, b->order);
		ck_assert_int_eq(a->type, b->type);
		ck_assert_str_eq(a->name, b->name);
		ck_assert_str_eq(a->path, b->path);
		ck_assert_int_eq(!a->target, !b->target);
		if (a->target)
			ck_assert_str_eq(a->target, b->target);
		ck_assert_uint_eq(a->st.mode, b->st.mode);
		ck_assert_uint_eq(a->st.nlink, b->st.nlink);
		ck_assert_uint_eq(a->st.blksize, b->st.blksize);
		ck_assert_uint_eq(a->st.size, b->st.size);
		ck_assert_uint_eq(a->st.ino, b->st.ino);
		ck_assert_uint_eq(a->st.blocks, b->st.blocks);
		ck_assert_int_eq(a->st.atime_ns, b->st.atime_ns);
		ck_assert_int_eq(a->st.mtime_ns, b->st.mtime_ns);
		ck_assert_int_eq(a->st.ctime_ns, b->st.ctime_ns);
		ck_assert_uint_eq(a->lid, b->lid);
		ck_assert_uint_eq(a->dino, b->dino);
		ck_assert_uint_eq(a->nxattrs, b->nxattrs);
		ck_assert_uint_eq(a->nkids, b->nkids);
		for (uint32_t j = 0; j < a->nkids; j++)
			ck_assert_uint_eq(x->kids[a->kid0 + j], y->kids[b->kid0 + j]);
		for (uint32_t j = 0; j < a->nxattrs; j++) {
			ck_assert_str_eq(a->xattrs[j].name, b->xattrs[j].name);
			ck_assert_uint_eq(a->xattrs[j].len, b->xattrs[j].len);
			ck_assert_int_eq(memcmp(a->xattrs[j].value, b->xattrs[j].value, a->xattrs[j].len), 0);
		}
	}
	ck_assert_uint_eq(x->nrelated, y->nrelated);
	for (uint32_t i = 0; i < x->nrelated; i++) {
		char a[256], b[256];

		ck_assert_str_eq(related_text(a, sizeof(a), &x->related[i]), related_text(b, sizeof(b), &y->related[i]));
	}
}

START_TEST(test_tree)
{
	cindex_tree *t = sample(0);
	const cindex_xattr *x;
	char *names;
	size_t len;
	int64_t b, ds;

	ck_assert_uint_eq(t->n, 5);
	ck_assert_str_eq(t->nodes[0].path, "/");
	ck_assert_str_eq(t->nodes[2].path, "/b/ds");
	ck_assert_int_eq(t->nodes[4].type, CINDEX_LINK);
	/* readdir order is the order of adding, lookups find by name */
	ck_assert_uint_eq(t->nodes[0].nkids, 3);
	ck_assert_str_eq(t->nodes[t->kids[t->nodes[0].kid0]].name, "b");
	ck_assert_str_eq(t->nodes[t->kids[t->nodes[0].kid0 + 1]].name, "a");
	ck_assert_str_eq(t->nodes[t->kids[t->nodes[0].kid0 + 2]].name, "link");
	b = cindex_tree_lookup(t, 0, "b");
	ck_assert_int_eq(b, 1);
	ds = cindex_tree_lookup(t, (uint32_t)b, "ds");
	ck_assert_int_eq(ds, 2);
	ck_assert_int_eq(cindex_tree_lookup(t, 0, "ds"), -1);
	ck_assert_int_eq(cindex_tree_lookup(t, 0, "zzz"), -1);
	ck_assert_int_eq(cindex_tree_lookup(t, 3, "x"), -1);
	x = cindex_tree_getxattr(t, (uint32_t)ds, "user.units");
	ck_assert_ptr_nonnull(x);
	ck_assert_uint_eq(x->len, 1);
	ck_assert_ptr_null(cindex_tree_getxattr(t, (uint32_t)ds, "user.nope"));
	ck_assert_int_eq(cindex_tree_listxattr(&names, &len, t, (uint32_t)ds), 0);
	ck_assert_uint_eq(len, sizeof("user.h5.dtype") + sizeof("user.units"));
	ck_assert_int_eq(memcmp(names, "user.h5.dtype\0user.units", len), 0);
	free(names);
	ck_assert_int_eq(cindex_tree_listxattr(&names, &len, t, 4), 0);
	ck_assert_ptr_null(names);
	ck_assert_uint_eq(len, 0);
	/* a file cannot have children */
	{
		cindex_stat st = st_of(S_IFREG | 0444, 1, 9);
		uint32_t id;

		ck_assert_int_eq(cindex_tree_add(&id, t, 3, "x", &st, NULL), H5_ERR_INVAL);
		ck_assert_int_eq(cindex_tree_add(&id, t, 99, "x", &st, NULL), H5_ERR_INVAL);
	}
	cindex_tree_free(t);
}
END_TEST

/* A big flat group: lookups by name over 20,000 children. */
START_TEST(test_tree_wide)
{
	cindex_tree *t;
	cindex_stat st = st_of(S_IFDIR | 0555, 0, 1);
	uint32_t id;
	char name[32];

	ck_assert_int_eq(cindex_tree_new(&t), 0);
	ck_assert_int_eq(cindex_tree_add(&id, t, 0, NULL, &st, NULL), 0);
	for (int i = 0; i < 20000; i++) {
		cindex_stat f = st_of(S_IFREG | 0444, (uint64_t)i, 100 + (uint64_t)i);

		snprintf(name, sizeof(name), "ds%05d", 19999 - i);
		ck_assert_int_eq(cindex_tree_add(&id, t, 0, name, &f, NULL), 0);
	}
	ck_assert_int_eq(cindex_tree_seal(t), 0);
	for (int i = 0; i < 20000; i += 997) {
		snprintf(name, sizeof(name), "ds%05d", i);
		ck_assert_int_eq(cindex_tree_lookup(t, 0, name), 20000 - i);
	}
	ck_assert_uint_eq(t->nodes[t->kids[0]].order, 0);
	ck_assert_str_eq(t->nodes[t->kids[0]].name, "ds19999");
	cindex_tree_free(t);
}
END_TEST

static cindex_key key_of(const char *member, uint64_t size, int64_t mtime, const char *etag)
{
	cindex_key k = { .root = "/data/beamtime", .member = member, .view = "xattr=text;umask=022",
			 .size = size, .mtime_ns = mtime, .etag = etag };
	return k;
}

START_TEST(test_store_load)
{
	const char *path = fresh("a.sqlite");
	cindex *ix;
	cindex_tree *t = sample(0), *t2 = sample(7), *got;
	cindex_key k = key_of("/run1/scan_001.h5", 123456, 1700000000000000001LL, NULL), k2;
	uint64_t n;

	ck_assert_int_eq(cindex_open(&ix, path, on_log, NULL), 0);
	ck_assert_int_eq(notices, 0);
	ck_assert_int_eq(cindex_load(&got, ix, &k), 1);
	ck_assert_int_eq(cindex_store(ix, &k, t), 0);
	ck_assert_int_eq(cindex_load(&got, ix, &k), 0);
	assert_same(t, got);
	cindex_tree_free(got);
	/* any part of the key differing is a miss */
	k2 = k;
	k2.size++;
	ck_assert_int_eq(cindex_load(&got, ix, &k2), 1);
	k2 = k;
	k2.mtime_ns++;
	ck_assert_int_eq(cindex_load(&got, ix, &k2), 1);
	k2 = k;
	k2.etag = "\"abc\"";
	ck_assert_int_eq(cindex_load(&got, ix, &k2), 1);
	k2 = k;
	k2.view = "xattr=raw;umask=022";
	ck_assert_int_eq(cindex_load(&got, ix, &k2), 1);
	k2 = k;
	k2.root = "/data/other";
	ck_assert_int_eq(cindex_load(&got, ix, &k2), 1);
	/* a second view of the same member is a record of its own */
	ck_assert_int_eq(cindex_store(ix, &k2, t2), 0);
	/* a changed file replaces its record */
	k.size = 999;
	ck_assert_int_eq(cindex_store(ix, &k, t2), 0);
	ck_assert_int_eq(cindex_load(&got, ix, &k), 0);
	assert_same(t2, got);
	cindex_tree_free(got);
	ck_assert_int_eq(cindex_count(&n, ix, "/data/beamtime"), 0);
	ck_assert_uint_eq(n, 1);
	/* survives closing */
	cindex_close(ix);
	ck_assert_int_eq(cindex_open(&ix, path, on_log, NULL), 0);
	ck_assert_int_eq(cindex_load(&got, ix, &k), 0);
	assert_same(t2, got);
	cindex_tree_free(got);
	/* gone from the collection: every view dropped */
	ck_assert_int_eq(cindex_forget(ix, "/data/beamtime", "/run1/scan_001.h5"), 0);
	ck_assert_int_eq(cindex_load(&got, ix, &k), 1);
	ck_assert_int_eq(cindex_count(&n, ix, "/data/beamtime"), 0);
	ck_assert_uint_eq(n, 0);
	ck_assert_int_eq(cindex_count(&n, ix, "/data/other"), 0);
	ck_assert_uint_eq(n, 1);
	/* what a file is, by its key without the view */
	k = key_of("/run1/notes.txt", 10, 20, NULL);
	ck_assert_int_eq(cindex_kind(ix, &k), -1);
	ck_assert_int_eq(cindex_set_kind(ix, &k, 0), 0);
	ck_assert_int_eq(cindex_kind(ix, &k), 0);
	k.view = "another";
	ck_assert_int_eq(cindex_kind(ix, &k), 0);
	k.mtime_ns++;
	ck_assert_int_eq(cindex_kind(ix, &k), -1);
	ck_assert_int_eq(cindex_set_kind(ix, &k, 1), 0);
	ck_assert_int_eq(cindex_kind(ix, &k), 1);
	ck_assert_int_eq(cindex_forget(ix, k.root, k.member), 0);
	ck_assert_int_eq(cindex_kind(ix, &k), -1);
	/* objects: the ETag is part of the key */
	k = key_of("s3obj.h5", 10, 0, "\"e1\"");
	ck_assert_int_eq(cindex_store(ix, &k, t), 0);
	ck_assert_int_eq(cindex_load(&got, ix, &k), 0);
	cindex_tree_free(got);
	k.etag = "\"e2\"";
	ck_assert_int_eq(cindex_load(&got, ix, &k), 1);
	ck_assert_int_eq(notices, 0);
	cindex_close(ix);
	cindex_tree_free(t);
	cindex_tree_free(t2);
}
END_TEST

static void write_file(const char *path, const void *p, size_t n)
{
	FILE *f = fopen(path, "wb");

	ck_assert_ptr_nonnull(f);
	ck_assert_uint_eq(fwrite(p, 1, n, f), n);
	fclose(f);
}

static int exists(const char *path)
{
	struct stat st;

	return stat(path, &st) == 0;
}

/* Open what is at path: it must be moved aside with one notice and the
 * index then work. */
static void assert_rebuilt(const char *path, const char *why)
{
	char bad[420];
	cindex *ix;
	cindex_tree *t = sample(3), *got;
	cindex_key k = key_of("m.h5", 1, 2, NULL);

	notices = 0;
	ck_assert_int_eq(cindex_open(&ix, path, on_log, NULL), 0);
	ck_assert_int_eq(notices, 1);
	ck_assert_msg(strstr(last_notice, why), "notice \"%s\" does not say \"%s\"", last_notice, why);
	snprintf(bad, sizeof(bad), "%s.bad", path);
	ck_assert(exists(bad));
	ck_assert_int_eq(cindex_load(&got, ix, &k), 1);
	ck_assert_int_eq(cindex_store(ix, &k, t), 0);
	ck_assert_int_eq(cindex_load(&got, ix, &k), 0);
	assert_same(t, got);
	cindex_tree_free(got);
	cindex_tree_free(t);
	cindex_close(ix);
	ck_assert_int_eq(notices, 1);
}

START_TEST(test_not_an_index)
{
	const char *path = fresh("junk.sqlite");
	char junk[3000];

	for (size_t i = 0; i < sizeof(junk); i++)
		junk[i] = (char)(i * 7 + 1);
	write_file(path, junk, sizeof(junk));
	assert_rebuilt(path, "not an SQLite database");
	path = fresh("short.sqlite");
	write_file(path, "SQLite format 3\0\x10", 18);
	assert_rebuilt(path, "truncated");
}
END_TEST

static void exec_sql(const char *path, const char *sql)
{
	sqlite3 *db;

	ck_assert_int_eq(sqlite3_open(path, &db), SQLITE_OK);
	ck_assert_int_eq(sqlite3_exec(db, sql, NULL, NULL, NULL), SQLITE_OK);
	ck_assert_int_eq(sqlite3_close(db), SQLITE_OK);
}

START_TEST(test_wrong_schema)
{
	const char *path = fresh("other.sqlite");
	cindex *ix;

	exec_sql(path, "CREATE TABLE t(x); INSERT INTO t VALUES (1)");
	assert_rebuilt(path, "another database");
	/* our schema, another version */
	path = fresh("v0.sqlite");
	ck_assert_int_eq(cindex_open(&ix, path, on_log, NULL), 0);
	cindex_close(ix);
	exec_sql(path, "UPDATE meta SET value = '0' WHERE key = 'version'");
	assert_rebuilt(path, "schema version");
}
END_TEST

/* Fill an index with n records, closed (WAL checkpointed into the file). */
static void fill(const char *path, int n)
{
	cindex *ix;
	cindex_tree *t = sample(1);
	char m[32];

	ck_assert_int_eq(cindex_open(&ix, path, on_log, NULL), 0);
	for (int i = 0; i < n; i++) {
		cindex_key k;

		snprintf(m, sizeof(m), "f%04d.h5", i);
		k = key_of(m, (uint64_t)i, i, NULL);
		ck_assert_int_eq(cindex_store(ix, &k, t), 0);
	}
	cindex_close(ix);
	cindex_tree_free(t);
}

START_TEST(test_truncated)
{
	const char *path = fresh("trunc.sqlite");
	struct stat st;

	fill(path, 300);
	ck_assert_int_eq(stat(path, &st), 0);
	ck_assert_int_gt(st.st_size, 40000);
	ck_assert_int_eq(truncate(path, st.st_size / 2), 0);
	assert_rebuilt(path, "truncated");
}
END_TEST

/* Bytes changed inside the pages (not the header): SQLite may or may not
 * notice; either the file is rebuilt or the damaged records are misses,
 * never a wrong tree. */
START_TEST(test_damaged_pages)
{
	const char *path = fresh("damaged.sqlite");
	cindex_tree *t = sample(1), *got;
	struct stat st;
	cindex *ix;
	FILE *f;
	int hits = 0, misses = 0;

	fill(path, 300);
	ck_assert_int_eq(stat(path, &st), 0);
	f = fopen(path, "r+b");
	ck_assert_ptr_nonnull(f);
	for (off_t off = 4096 * 3; off < st.st_size; off += 4096 * 5) {
		fseeko(f, off + 1500, SEEK_SET);
		fputs("garbage garbage garbage", f);
	}
	fclose(f);
	notices = 0;
	ck_assert_int_eq(cindex_open(&ix, path, on_log, NULL), 0);
	for (int i = 0; i < 300; i++) {
		char m[32];
		cindex_key k;
		int rc;

		snprintf(m, sizeof(m), "f%04d.h5", i);
		k = key_of(m, (uint64_t)i, i, NULL);
		rc = cindex_load(&got, ix, &k);
		ck_assert_int_ge(rc, 0);
		if (rc == 0) {
			assert_same(t, got);
			cindex_tree_free(got);
			hits++;
		} else {
			misses++;
		}
	}
	ck_assert_int_gt(misses, 0);
	ck_assert_int_gt(notices, 0);
	cindex_close(ix);
	cindex_tree_free(t);
}
END_TEST

/* The page number of the node table's middle leaf (dbstat, tree order). */
static int64_t middle_node_page(const char *path)
{
	sqlite3 *db;
	sqlite3_stmt *s;
	int64_t pages[4096];
	int n = 0;

	ck_assert_int_eq(sqlite3_open(path, &db), SQLITE_OK);
	ck_assert_int_eq(sqlite3_prepare_v2(db, "SELECT pageno FROM dbstat WHERE name = 'node' AND pagetype = 'leaf'"
					    " ORDER BY path", -1, &s, NULL), SQLITE_OK);
	while (sqlite3_step(s) == SQLITE_ROW && n < 4096)
		pages[n++] = sqlite3_column_int64(s, 0);
	sqlite3_finalize(s);
	sqlite3_close(db);
	ck_assert_int_gt(n, 4);
	return pages[n / 2];
}

/* A damaged page that SQLite finds only mid-use (a leaf of the node
 * table zeroed): the records read before it, and those after it, are
 * kept in the rebuilt file (issue 64 item 4: a mount answered members
 * from them and does not record them again), with their file kinds;
 * the records on the page are misses, never a wrong tree. */
START_TEST(test_damaged_salvaged)
{
	const char *path = fresh("salvage.sqlite");
	cindex_tree *t = sample(1), *got;
	bool hit1[300];
	int before = 0, after = 0;
	char zero[4096] = { 0 };
	cindex *ix;
	FILE *f;

	fill(path, 300);
	ck_assert_int_eq(cindex_open(&ix, path, on_log, NULL), 0);
	for (int i = 0; i < 300; i++) {
		char m[32];
		cindex_key k;

		snprintf(m, sizeof(m), "f%04d.h5", i);
		k = key_of(m, (uint64_t)i, i, NULL);
		ck_assert_int_eq(cindex_set_kind(ix, &k, i % 3 != 0), 0);
	}
	cindex_close(ix);
	f = fopen(path, "r+b");
	ck_assert_ptr_nonnull(f);
	fseeko(f, (off_t)(middle_node_page(path) - 1) * 4096, SEEK_SET);
	ck_assert_uint_eq(fwrite(zero, 1, sizeof(zero), f), sizeof(zero));
	fclose(f);
	notices = 0;
	ck_assert_int_eq(cindex_open(&ix, path, on_log, NULL), 0);
	ck_assert_int_eq(notices, 0);           /* not found at opening */
	for (int i = 0; i < 300; i++) {
		char m[32];
		cindex_key k;
		int rc;

		snprintf(m, sizeof(m), "f%04d.h5", i);
		k = key_of(m, (uint64_t)i, i, NULL);
		rc = cindex_load(&got, ix, &k);
		ck_assert_int_ge(rc, 0);
		hit1[i] = rc == 0;
		if (rc == 0) {
			assert_same(t, got);
			cindex_tree_free(got);
			before++;
		}
	}
	ck_assert_int_eq(notices, 1);
	ck_assert_ptr_nonnull(strstr(last_notice, "rebuilt with the"));
	ck_assert_int_gt(before, 100);
	ck_assert_int_lt(before, 300);
	cindex_close(ix);
	ck_assert_int_eq(access(path, F_OK), 0);
	/* the rebuilt file: every record served before still there */
	ck_assert_int_eq(cindex_open(&ix, path, on_log, NULL), 0);
	for (int i = 0; i < 300; i++) {
		char m[32];
		cindex_key k;
		int rc;

		snprintf(m, sizeof(m), "f%04d.h5", i);
		k = key_of(m, (uint64_t)i, i, NULL);
		rc = cindex_load(&got, ix, &k);
		if (hit1[i])
			ck_assert_int_eq(rc, 0);
		if (rc == 0) {
			assert_same(t, got);
			cindex_tree_free(got);
			after++;
		}
		/* the file rows (another table, sound) copied whole */
		ck_assert_int_eq(cindex_kind(ix, &k), i % 3 != 0);
	}
	ck_assert_int_ge(after, before);
	ck_assert_int_gt(after, 250);
	ck_assert_int_eq(notices, 1);
	cindex_close(ix);
	cindex_tree_free(t);
}
END_TEST

/* A record whose rows were changed behind the index's back (its CRC no
 * longer matches) is a miss with one notice. */
START_TEST(test_damaged_record)
{
	const char *path = fresh("crc.sqlite");
	cindex_tree *t = sample(0), *got;
	cindex_key k = key_of("m.h5", 5, 6, NULL);
	cindex *ix;

	ck_assert_int_eq(cindex_open(&ix, path, on_log, NULL), 0);
	ck_assert_int_eq(cindex_store(ix, &k, t), 0);
	exec_sql(path, "UPDATE node SET size = size + 1 WHERE name = 'ds'");
	ck_assert_int_eq(cindex_load(&got, ix, &k), 1);
	ck_assert_int_eq(notices, 1);
	ck_assert_ptr_nonnull(strstr(last_notice, "damaged"));
	exec_sql(path, "UPDATE node SET parent = 7 WHERE name = 'ds'");
	ck_assert_int_eq(cindex_load(&got, ix, &k), 1);
	/* the stamps of the files it reaches are part of the record */
	ck_assert_int_eq(cindex_store(ix, &k, t), 0);
	exec_sql(path, "UPDATE related SET mtime_ns = mtime_ns + 1 WHERE path = 'links/b.h5'");
	ck_assert_int_eq(cindex_load(&got, ix, &k), 1);
	/* recording again mends it */
	ck_assert_int_eq(cindex_store(ix, &k, t), 0);
	ck_assert_int_eq(cindex_load(&got, ix, &k), 0);
	assert_same(t, got);
	cindex_tree_free(got);
	cindex_close(ix);
	cindex_tree_free(t);
}
END_TEST

/* sample() with error nodes (CINDEX_ERROR): one at the top, one in b/,
 * after and before their siblings in readdir order. */
static cindex_tree *sample_errors(void)
{
	cindex_tree *t = sample(0);
	uint32_t e1, e2;

	ck_assert_int_eq(cindex_tree_add_error(&e1, t, 0, "bad", 0, 9001, "object header at 0x1cf: checksum mismatch"),
			 0);
	ck_assert_int_eq(cindex_tree_add_error(&e2, t, 1, "0broken", S_IFDIR | 0755, 9002, "cycle"), 0);
	ck_assert_int_eq(cindex_tree_seal(t), 0);
	return t;
}

START_TEST(test_error_nodes)
{
	const char *path = fresh("err.sqlite");
	cindex_tree *t = sample_errors(), *got;
	cindex_key k = key_of("m.h5", 5, 6, NULL);
	uint32_t x;
	int64_t e;
	cindex *ix;

	/* in memory: an error node has its reason, its readdir number and
	 * type bits, and takes no xattr nor child; the root is never one */
	e = cindex_tree_lookup(t, 0, "bad");
	ck_assert_int_ge(e, 0);
	ck_assert_int_eq(t->nodes[e].type, CINDEX_ERROR);
	ck_assert_str_eq(t->nodes[e].target, "object header at 0x1cf: checksum mismatch");
	ck_assert_uint_eq(t->nodes[e].dino, 9001);
	ck_assert_uint_eq(t->nodes[e].st.mode, 0);
	ck_assert_int_lt(cindex_tree_xattr(t, (uint32_t)e, "user.x", "1", 1), 0);
	ck_assert_int_lt(cindex_tree_add(&x, t, (uint32_t)e, "kid", &(cindex_stat){ .mode = S_IFREG }, NULL), 0);
	e = cindex_tree_lookup(t, 1, "0broken");
	ck_assert_int_ge(e, 0);
	ck_assert_int_eq(t->nodes[e].type, CINDEX_ERROR);
	ck_assert_uint_eq(t->nodes[e].st.mode, S_IFDIR);
	ck_assert_uint_eq(t->nodes[e].order, 1);
	ck_assert_int_eq(cindex_tree_seal(t), 0);
	{
		cindex_tree *r;

		ck_assert_int_eq(cindex_tree_new(&r), 0);
		ck_assert_int_lt(cindex_tree_add_error(&x, r, 0, NULL, 0, 1, "root"), 0);
		cindex_tree_free(r);
	}
	/* stored and loaded as they were */
	ck_assert_int_eq(cindex_open(&ix, path, on_log, NULL), 0);
	ck_assert_int_eq(cindex_store(ix, &k, t), 0);
	ck_assert_int_eq(cindex_load(&got, ix, &k), 0);
	assert_same(t, got);
	cindex_tree_free(got);
	ck_assert_int_eq(notices, 0);
	/* damaged: another reason (the CRC), an error node turned into a
	 * file or a file into one, one with an xattr, one as a parent: misses */
	exec_sql(path, "UPDATE node SET target = 'other' WHERE name = 'bad'");
	ck_assert_int_eq(cindex_load(&got, ix, &k), 1);
	ck_assert_ptr_nonnull(strstr(last_notice, "damaged"));
	ck_assert_int_eq(cindex_store(ix, &k, t), 0);
	exec_sql(path, "UPDATE node SET type = 1 WHERE name = 'bad'");
	ck_assert_int_eq(cindex_load(&got, ix, &k), 1);
	ck_assert_int_eq(cindex_store(ix, &k, t), 0);
	exec_sql(path, "UPDATE node SET type = 3 WHERE name = 'a'");
	ck_assert_int_eq(cindex_load(&got, ix, &k), 1);
	ck_assert_int_eq(cindex_store(ix, &k, t), 0);
	exec_sql(path, "UPDATE node SET type = 3, target = NULL WHERE name = 'bad'");
	ck_assert_int_eq(cindex_load(&got, ix, &k), 1);
	ck_assert_int_eq(cindex_store(ix, &k, t), 0);
	exec_sql(path, "INSERT INTO xattr SELECT member, id, 0, 'user.x', x'01' FROM node WHERE name = 'bad'");
	ck_assert_int_eq(cindex_load(&got, ix, &k), 1);
	ck_assert_int_eq(cindex_store(ix, &k, t), 0);
	exec_sql(path, "UPDATE node SET type = 4 WHERE name = 'bad'");
	ck_assert_int_eq(cindex_load(&got, ix, &k), 1);
	/* recording again mends it */
	ck_assert_int_eq(cindex_store(ix, &k, t), 0);
	ck_assert_int_eq(cindex_load(&got, ix, &k), 0);
	assert_same(t, got);
	cindex_tree_free(got);
	cindex_close(ix);
	cindex_tree_free(t);
}
END_TEST

/* An index of schema version 4 (the same tables, no error nodes) is read
 * as it is and marked 5 (so an older h5fs moves it aside rather than
 * misread an error node); a newer one, or one before 4, is rebuilt. */
START_TEST(test_schema_versions)
{
	const char *path = fresh("v4.sqlite");
	cindex_tree *t = sample(0), *got;
	cindex_key k = key_of("m.h5", 5, 6, NULL);
	char bad[420];
	sqlite3 *db;
	sqlite3_stmt *s;
	cindex *ix;

	ck_assert_int_eq(cindex_open(&ix, path, on_log, NULL), 0);
	ck_assert_int_eq(cindex_store(ix, &k, t), 0);
	cindex_close(ix);
	exec_sql(path, "UPDATE meta SET value = '4' WHERE key = 'version'");
	ck_assert_int_eq(cindex_open(&ix, path, on_log, NULL), 0);
	ck_assert_int_eq(notices, 0);
	snprintf(bad, sizeof(bad), "%s.bad", path);
	ck_assert(!exists(bad));
	ck_assert_int_eq(cindex_load(&got, ix, &k), 0);
	assert_same(t, got);
	cindex_tree_free(got);
	cindex_close(ix);
	ck_assert_int_eq(sqlite3_open(path, &db), SQLITE_OK);
	ck_assert_int_eq(sqlite3_prepare_v2(db, "SELECT value FROM meta WHERE key = 'version'", -1, &s, NULL),
			 SQLITE_OK);
	ck_assert_int_eq(sqlite3_step(s), SQLITE_ROW);
	ck_assert_int_eq(atoi((const char *)sqlite3_column_text(s, 0)), CINDEX_SCHEMA_VERSION);
	sqlite3_finalize(s);
	sqlite3_close(db);
	/* 3 (no related table's meaning), 6 (a later h5fs's), "4x": rebuilt */
	exec_sql(path, "UPDATE meta SET value = '3' WHERE key = 'version'");
	assert_rebuilt(path, "schema version");
	path = fresh("v6.sqlite");
	ck_assert_int_eq(cindex_open(&ix, path, on_log, NULL), 0);
	cindex_close(ix);
	exec_sql(path, "UPDATE meta SET value = '6' WHERE key = 'version'");
	assert_rebuilt(path, "schema version");
	path = fresh("v4x.sqlite");
	ck_assert_int_eq(cindex_open(&ix, path, on_log, NULL), 0);
	cindex_close(ix);
	exec_sql(path, "UPDATE meta SET value = '4x' WHERE key = 'version'");
	assert_rebuilt(path, "schema version");
	cindex_tree_free(t);
}
END_TEST

struct writer {
	const char *path;
	int id, n;
};

static void *write_many(void *arg)
{
	struct writer *w = arg;
	cindex_tree *t = sample((uint64_t)w->id);
	cindex *ix;
	char m[32];

	ck_assert_int_eq(cindex_open(&ix, w->path, on_log, NULL), 0);
	for (int i = 0; i < w->n; i++) {
		cindex_key k;
		cindex_tree *got;

		snprintf(m, sizeof(m), "w%d/f%04d.h5", w->id, i);
		k = key_of(m, (uint64_t)i, i, NULL);
		ck_assert_int_eq(cindex_store(ix, &k, t), 0);
		/* and read what the other writer recorded */
		snprintf(m, sizeof(m), "w%d/f%04d.h5", !w->id, i);
		k.member = m;
		if (cindex_load(&got, ix, &k) == 0) {
			cindex_tree *want = sample((uint64_t)!w->id);

			assert_same(want, got);
			cindex_tree_free(want);
			cindex_tree_free(got);
		}
	}
	cindex_close(ix);
	cindex_tree_free(t);
	return NULL;
}

/* Two mounts of one collection: two handles on one file, writing and
 * reading at once. */
START_TEST(test_shared)
{
	const char *path = fresh("shared.sqlite");
	struct writer w[2] = { { path, 0, 150 }, { path, 1, 150 } };
	pthread_t th[2];
	cindex *ix;
	uint64_t n;

	for (int i = 0; i < 2; i++)
		ck_assert_int_eq(pthread_create(&th[i], NULL, write_many, &w[i]), 0);
	for (int i = 0; i < 2; i++)
		pthread_join(th[i], NULL);
	ck_assert_int_eq(cindex_open(&ix, path, on_log, NULL), 0);
	ck_assert_int_eq(cindex_count(&n, ix, "/data/beamtime"), 0);
	ck_assert_uint_eq(n, 300);
	ck_assert_int_eq(notices, 0);
	cindex_close(ix);
}
END_TEST

/* A writer SIGKILLed in the middle of recording: the index opens without
 * complaint, and every record is whole or absent. */
START_TEST(test_kill9)
{
	const char *path = fresh("kill.sqlite");
	cindex_tree *want = sample(2), *got;
	cindex *ix;
	int hits = 0, status;
	pid_t pid;

	pid = fork();
	ck_assert_int_ge(pid, 0);
	if (pid == 0) {
		cindex_tree *t = sample(2);
		cindex *cx;
		char m[32];

		if (cindex_open(&cx, path, NULL, NULL) != 0)
			_exit(2);
		for (int i = 0;; i++) {
			cindex_key k;

			snprintf(m, sizeof(m), "f%06d.h5", i % 100000);
			k = key_of(m, 1, 1, NULL);
			cindex_store(cx, &k, t);
		}
	}
	/* kill it once it has recorded a few (a loaded machine may take a
	 * while to start it), in the middle of the next */
	{
		cindex *px;
		uint64_t n = 0;

		ck_assert_int_eq(cindex_open(&px, path, on_log, NULL), 0);
		for (int i = 0; i < 600 && n < 5; i++) {
			usleep(50 * 1000);
			ck_assert_int_eq(cindex_count(&n, px, "/data/beamtime"), 0);
		}
		cindex_close(px);
		ck_assert_uint_ge(n, 5);
		usleep(20 * 1000);
	}
	kill(pid, SIGKILL);
	ck_assert_int_eq(waitpid(pid, &status, 0), pid);
	ck_assert(WIFSIGNALED(status));
	notices = 0;
	ck_assert_int_eq(cindex_open(&ix, path, on_log, NULL), 0);
	ck_assert_int_eq(notices, 0);
	for (int i = 0; i < 100000; i++) {
		char m[32];
		cindex_key k;
		int rc;

		snprintf(m, sizeof(m), "f%06d.h5", i);
		k = key_of(m, 1, 1, NULL);
		rc = cindex_load(&got, ix, &k);
		ck_assert_int_ge(rc, 0);
		if (rc == 1)
			break;  /* the first one not recorded: none after it either */
		assert_same(want, got);
		cindex_tree_free(got);
		hits++;
	}
	ck_assert_int_gt(hits, 0);
	ck_assert_int_eq(notices, 0);
	cindex_close(ix);
	cindex_tree_free(want);
}
END_TEST

static int present_odd(void *arg, const char *name, const cindex_file *f)
{
	(void)arg;
	/* each row comes with the kind and the stamp it was said at */
	ck_assert_uint_eq(f->size, 1);
	ck_assert_int_eq(f->mtime_ns, 1);
	ck_assert_str_eq(f->etag, "");
	ck_assert_int_eq(f->hdf5, 1);
	return name[strlen(name) - 4] % 2;    /* "fNNN.h5": odd digits stay */
}

/* Files removed from a folder leave the index when it is listed. */
START_TEST(test_prune)
{
	const char *path = fresh("prune.sqlite");
	cindex_tree *t = sample(0);
	cindex *ix;
	uint64_t n;
	char m[64];

	ck_assert_int_eq(cindex_open(&ix, path, on_log, NULL), 0);
	for (int i = 0; i < 10; i++) {
		const char *folders[] = { "a", "a/sub", "", "ab" };

		for (int f = 0; f < 4; f++) {
			cindex_key k;

			snprintf(m, sizeof(m), "%s%sf%03d.h5", folders[f], *folders[f] ? "/" : "", i);
			k = key_of(m, 1, 1, NULL);
			ck_assert_int_eq(cindex_store(ix, &k, t), 0);
			ck_assert_int_eq(cindex_set_kind(ix, &k, 1), 0);
		}
	}
	ck_assert_int_eq(cindex_count(&n, ix, "/data/beamtime"), 0);
	ck_assert_uint_eq(n, 40);
	/* only a's own files go, not a/sub's nor ab's */
	ck_assert_int_eq(cindex_prune(ix, "/data/beamtime", "a", present_odd, NULL), 0);
	ck_assert_int_eq(cindex_count(&n, ix, "/data/beamtime"), 0);
	ck_assert_uint_eq(n, 35);
	ck_assert_int_eq(cindex_prune(ix, "/data/beamtime", "", present_odd, NULL), 0);
	ck_assert_int_eq(cindex_count(&n, ix, "/data/beamtime"), 0);
	ck_assert_uint_eq(n, 30);
	{
		cindex_key k = key_of("a/f002.h5", 1, 1, NULL);
		cindex_tree *got;

		ck_assert_int_eq(cindex_kind(ix, &k), -1);
		ck_assert_int_eq(cindex_load(&got, ix, &k), 1);
		k.member = "a/f003.h5";
		ck_assert_int_eq(cindex_kind(ix, &k), 1);
		k.member = "a/sub/f002.h5";
		ck_assert_int_eq(cindex_kind(ix, &k), 1);
	}
	cindex_close(ix);
	cindex_tree_free(t);
}
END_TEST

START_TEST(test_default_path)
{
	char *p;

	setenv("XDG_CACHE_HOME", "/x/cache", 1);
	ck_assert_int_eq(cindex_default_path(&p, "/data/beamtime 7/"), 0);
	ck_assert_msg(strncmp(p, "/x/cache/h5fs/beamtime_7-", 25) == 0, "%s", p);
	ck_assert_str_eq(p + strlen(p) - 7, ".sqlite");
	free(p);
	{
		char *q, *r;

		/* the hash tells apart collections of one name */
		ck_assert_int_eq(cindex_default_path(&q, "/a/run"), 0);
		ck_assert_int_eq(cindex_default_path(&r, "/b/run"), 0);
		ck_assert_str_ne(q, r);
		free(q);
		free(r);
	}
	setenv("XDG_CACHE_HOME", "relative", 1);
	setenv("HOME", "/home/u", 1);
	ck_assert_int_eq(cindex_default_path(&p, "s3://bucket/prefix/"), 0);
	ck_assert_msg(strncmp(p, "/home/u/.cache/h5fs/prefix-", 27) == 0, "%s", p);
	free(p);
	unsetenv("XDG_CACHE_HOME");
	ck_assert_int_eq(cindex_default_path(&p, "/"), 0);
	ck_assert_msg(strncmp(p, "/home/u/.cache/h5fs/root-", 25) == 0, "%s", p);
	free(p);
}
END_TEST

START_TEST(test_unwritable)
{
	cindex *ix;

	/* no folder can be made: an error (the daemon mounts without an index) */
	ck_assert_int_lt(cindex_open(&ix, "/proc/h5fs-no/such/index.sqlite", on_log, NULL), 0);
	ck_assert_ptr_null(ix);
}
END_TEST

static Suite *cindex_suite(void)
{
	Suite *s = suite_create("cindex");
	TCase *tc = tcase_create("core");

	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, test_tree);
	tcase_add_test(tc, test_tree_wide);
	tcase_add_test(tc, test_store_load);
	tcase_add_test(tc, test_not_an_index);
	tcase_add_test(tc, test_wrong_schema);
	tcase_add_test(tc, test_truncated);
	tcase_add_test(tc, test_damaged_pages);
	tcase_add_test(tc, test_damaged_record);
	tcase_add_test(tc, test_damaged_salvaged);
	tcase_add_test(tc, test_error_nodes);
	tcase_add_test(tc, test_schema_versions);
	tcase_add_test(tc, test_shared);
	tcase_add_test(tc, test_kill9);
	tcase_add_test(tc, test_prune);
	tcase_add_test(tc, test_default_path);
	tcase_add_test(tc, test_unwritable);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return test_run(srunner_create(cindex_suite()), CK_NOFORK, dir);
}
