/* testutil.h - helpers shared by the Check unit tests. */
#ifndef H5FS_TESTUTIL_H
#define H5FS_TESTUTIL_H

#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "base.h"
#include "rd.h"
#include "checksum.h"
#include "h5core_test.h"

/* A growable byte buffer for building on-disk structures in tests. */
typedef struct tbuf {
	uint8_t *p;
	size_t len, cap;
} tbuf;

static inline void tb_put(tbuf *b, const void *src, size_t n)
{
	if (b->len + n > b->cap) {
		b->cap = (b->len + n) * 2 + 64;
		b->p = realloc(b->p, b->cap);
		ck_assert_ptr_nonnull(b->p);
	}
	memcpy(b->p + b->len, src, n);
	b->len += n;
}
static inline void tb_uint(tbuf *b, uint64_t v, unsigned n)
{
	uint8_t tmp[8];
	h5_le_encode(tmp, v, n);
	tb_put(b, tmp, n);
}
static inline void tb_u8(tbuf *b, uint8_t v) { tb_uint(b, v, 1); }
static inline void tb_u16(tbuf *b, uint16_t v) { tb_uint(b, v, 2); }
static inline void tb_u32(tbuf *b, uint32_t v) { tb_uint(b, v, 4); }
static inline void tb_u64(tbuf *b, uint64_t v) { tb_uint(b, v, 8); }
static inline void tb_str(tbuf *b, const char *s) { tb_put(b, s, strlen(s)); }
static inline void tb_zero(tbuf *b, size_t n) { while (n--) tb_u8(b, 0); }
/* Append the lookup3 checksum of everything from `from` to the end. */
static inline void tb_checksum(tbuf *b, size_t from)
{
	tb_u32(b, h5_checksum_metadata(b->p + from, b->len - from));
}
static inline void tb_free(tbuf *b) { free(b->p); b->p = NULL; b->len = b->cap = 0; }

/* The start of a version 2 superblock (48 bytes, sizes of 8; II.A):
 * signature, version, sizes, flags, base 0, no extension, the EOF address
 * (0 here, set by tb_sb2_finish), the root object header's address. */
static inline void tb_sb2_start(tbuf *b, uint64_t root)
{
	static const uint8_t sig[8] = { 0x89, 'H', 'D', 'F', '\r', '\n', 0x1a, '\n' };

	tb_put(b, sig, 8);
	tb_u8(b, 2);
	tb_u8(b, 8);
	tb_u8(b, 8);
	tb_u8(b, 0);
	tb_u64(b, 0);              /* base */
	tb_u64(b, UINT64_MAX);     /* no extension */
	tb_u64(b, 0);              /* EOF, tb_sb2_finish */
	tb_u64(b, root);
	tb_checksum(b, 0);
}

/* The superblock's EOF address set to the buffer's length, its checksum
 * made again. */
static inline void tb_sb2_finish(tbuf *b)
{
	h5_le_encode(b->p + 28, b->len, 8);
	h5_le_encode(b->p + 44, h5_checksum_metadata(b->p, 44), 4);
}

/* The buffer written to path, whole. */
static inline void test_write_file(const char *path, const tbuf *b)
{
	FILE *fp = fopen(path, "wb");

	ck_assert_msg(fp != NULL, "%s: cannot create", path);
	ck_assert_uint_eq(fwrite(b->p, 1, b->len, fp), b->len);
	ck_assert_int_eq(fclose(fp), 0);
}

/* path opened with o (h5_file_open), or the test fails with its error. */
static inline h5_file *test_open(const char *path, h5_open_opts o)
{
	h5_file *f = NULL;

	ck_assert_msg(h5_file_open(&f, path, &o) == 0, "%s: %s", path, h5_err_msg());
	return f;
}

static inline uint64_t test_file_size(const char *path)
{
	struct stat st;

	ck_assert_int_eq(stat(path, &st), 0);
	return (uint64_t)st.st_size;
}

/* Directory of ../shared/corpus (env H5FS_CORPUS overrides), or NULL. */
static inline const char *test_corpus_dir(void)
{
	static char path[4096];
	const char *env = getenv("H5FS_CORPUS");
	const char *src = getenv("H5FS_SRCDIR");

	if (env && *env)
		return env;
	snprintf(path, sizeof(path), "%s/../shared/corpus/hdf5-testfiles", src && *src ? src : ".");
	return path;
}

/* ---- h5py generators -----------------------------------------------------
 * Tests that compare against libhdf5 write their inputs at test time with
 * /usr/bin/python3 (the python3 on PATH may lack h5py). */

/* test_py_run() results that are not the script's own exit status. */
#define TEST_PY_NO_PYTHON (-1) /* /usr/bin/python3 not executable; no dir made */
#define TEST_PY_NO_DIR (-2)    /* mkdtemp failed (errno says why) */
#define TEST_PY_NO_SCRIPT (-3) /* DIR/gen.py not written, or command too long */
#define TEST_PY_ABNORMAL (-4)  /* system() failed or its shell was killed */

/* Make a temp dir from the mkdtemp template `dir` (rewritten in place; set
 * to "" when no dir was made, so test_py_rmdir() then has nothing to do),
 * write `script` to DIR/gen.py and run
 *     /usr/bin/python3 'DIR/gen.py' 'DIR' ARGS
 * where ARGS (NULL for none) are extra words, already shell-quoted.
 * Returns the script's exit status (by convention 77: skip, h5py missing;
 * a script killed by signal N shows as 128+N from the shell) or one of the
 * negative TEST_PY_ codes; the caller decides what skips and what fails. */
static inline int test_py_run(char *dir, const char *script, const char *args)
{
	char path[4096], cmd[16384];
	FILE *fp;
	int n, st;

	if (access("/usr/bin/python3", X_OK) != 0) {
		dir[0] = '\0';
		return TEST_PY_NO_PYTHON;
	}
	if (!mkdtemp(dir)) {
		dir[0] = '\0';
		return TEST_PY_NO_DIR;
	}
	n = snprintf(path, sizeof(path), "%s/gen.py", dir);
	if (n < 0 || (size_t)n >= sizeof(path))
		return TEST_PY_NO_SCRIPT;
	fp = fopen(path, "w");
	if (!fp)
		return TEST_PY_NO_SCRIPT;
	n = fputs(script, fp);
	if (fclose(fp) != 0 || n < 0)
		return TEST_PY_NO_SCRIPT;
	n = snprintf(cmd, sizeof(cmd), "/usr/bin/python3 '%s' '%s'%s%s", path, dir, args ? " " : "", args ? args : "");
	if (n < 0 || (size_t)n >= sizeof(cmd))
		return TEST_PY_NO_SCRIPT;
	st = system(cmd);
	if (st == -1 || !WIFEXITED(st))
		return TEST_PY_ABNORMAL;
	return WEXITSTATUS(st);
}

/* Remove a temp dir made by test_py_run() (or mkdtemp) and all in it.
 * Nothing to do for "": 0. Returns -1 when rm fails, or when `dir` is not
 * under /tmp/ or cannot be quoted (a guard: this runs rm -rf). */
static inline int test_py_rmdir(const char *dir)
{
	char cmd[4200];

	if (!dir || !dir[0])
		return 0;
	if (strncmp(dir, "/tmp/", 5) != 0 || strchr(dir, '\'') || strlen(dir) >= 4096)
		return -1;
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	return system(cmd) == 0 ? 0 : -1;
}

/* A test's temp dir removed at its end (nothing for NULL or ""); a dir
 * that stays is said on stderr, not failed: the tests have run. */
static inline void test_tmp_remove(const char *dir)
{
	if (dir && test_py_rmdir(dir) != 0)
		fprintf(stderr, "could not remove %s\n", dir);
}

/* Two distinct names "c<i>" with the same lookup3 hash, the hash of the
 * name indexes of dense groups and attributes (2^19 names give about 32
 * colliding pairs): tests of lookups that must go on past a collision. */
struct test_hname {
	uint32_t hash, i;
};

static inline int test_hname_cmp(const void *a, const void *b)
{
	const struct test_hname *x = a, *y = b;

	if (x->hash != y->hash)
		return x->hash < y->hash ? -1 : 1;
	return (x->i > y->i) - (x->i < y->i);
}

static inline bool test_hash_collision(char *a, char *b, size_t room)
{
	const uint32_t n = 1u << 19;
	struct test_hname *v = malloc(n * sizeof(*v));
	bool found = false;
	char buf[32];

	if (!v)
		return false;
	for (uint32_t i = 0; i < n; i++) {
		int l = snprintf(buf, sizeof(buf), "c%u", i);

		v[i].hash = h5_checksum_lookup3(buf, (size_t)l, 0);
		v[i].i = i;
	}
	qsort(v, n, sizeof(*v), test_hname_cmp);
	for (uint32_t i = 0; i + 1 < n && !found; i++) {
		if (v[i].hash == v[i + 1].hash) {
			snprintf(a, room, "c%u", v[i].i);
			snprintf(b, room, "c%u", v[i + 1].i);
			found = true;
		}
	}
	free(v);
	return found;
}

/* Run every test of `sr` (freed here) with fork mode `fork` (CK_NOFORK for
 * tests that share state between cases; CK_FORK_GETENV for Check's default),
 * then remove `tmp_dir` (NULL or "" for none; only under /tmp/, see
 * test_py_rmdir()). Returns main()'s exit status: 0 when all passed. */
static inline int test_run(SRunner *sr, enum fork_status fork, const char *tmp_dir)
{
	int nfail;

	srunner_set_fork_status(sr, fork);
	srunner_run_all(sr, CK_NORMAL);
	nfail = srunner_ntests_failed(sr);
	srunner_free(sr);
	test_tmp_remove(tmp_dir);
	return nfail == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}

/* main() for a test program of one suite, run as Check's default. */
#define H5_TEST_MAIN(make_suite_fn)                                         \
	int main(void)                                                      \
	{                                                                   \
		return test_run(srunner_create(make_suite_fn()), CK_FORK_GETENV, NULL); \
	}

#endif
