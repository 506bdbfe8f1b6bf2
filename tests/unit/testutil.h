/* testutil.h - helpers shared by the Check unit tests. */
#ifndef H5FS_TESTUTIL_H
#define H5FS_TESTUTIL_H

#include <check.h>
#include <stdio.h>
#include <stdlib.h>

#include "internal.h"

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

#define H5_TEST_MAIN(make_suite_fn)                                     \
	int main(void)                                                  \
	{                                                               \
		SRunner *sr = srunner_create(make_suite_fn());          \
		int nfail;                                              \
		srunner_run_all(sr, CK_NORMAL);                         \
		nfail = srunner_ntests_failed(sr);                      \
		srunner_free(sr);                                       \
		return nfail == 0 ? 0 : 1;                              \
	}

#endif
