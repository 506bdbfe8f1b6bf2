/* dl.h - a shared library loaded on first use (dl.c).
 *
 * Every library linked into h5fs and h5fs-ls is mapped and relocated at
 * each start, used or not. libcurl (io/curl_dl.h) and the codecs of the
 * HDF5 filters other than deflate (filter/filter_*.c: zstd, lz4, blosc,
 * bzip2, szip, lzo, zfp and the ~15 libraries they pull in) are opened
 * instead the first time a remote file or a dataset using the filter is
 * read or written (issue 45: 5-9 ms of each h5fs-ls start went to them).
 *
 * A user of a library lists the functions it calls (an X-macro over their
 * names), keeps a table of pointers to them, and calls through it:
 *
 *   #define ZSTD_FUNCTIONS(X) X(ZSTD_decompress) X(ZSTD_isError)
 *   static struct { ZSTD_FUNCTIONS(H5_DL_FIELD) } zstd_fn;
 *   #define ZSTD_SLOT(name) H5_DL_SLOT(zstd_fn, name)
 *   static const h5_dl_sym zstd_syms[] = { ZSTD_FUNCTIONS(ZSTD_SLOT) { NULL, NULL } };
 *   static h5_dl zstd_lib = { .what = "zstd filter", .package = "libzstd1",
 *           .names = (const char *const[]){ "libzstd.so.1", NULL }, .syms = zstd_syms };
 *   #define ZSTD_decompress (zstd_fn.p_ZSTD_decompress)
 *
 * and h5_dl_need(&zstd_lib) before the first call. The header of the
 * library stays a build-time requirement (the types of the pointers come
 * from its declarations).
 */
#ifndef H5_BASE_DL_H
#define H5_BASE_DL_H

#include "base.h"

#include <stdatomic.h>

/* One function (or object) of the library and where its address goes. */
typedef struct h5_dl_sym {
	const char *name;
	void **slot;
} h5_dl_sym;

typedef struct h5_dl {
	const char *what;               /* who needs it: "zstd filter" */
	const char *package;            /* the Debian package to install */
	const char *const *names;       /* sonames, tried in order; NULL-terminated */
	const h5_dl_sym *syms;          /* NULL-terminated */
	const char *min_version;        /* the oldest version with every symbol, or NULL */
	void (*ready)(void);            /* run once after loading (NULL: none) */
	atomic_int done;                /* the load was tried; rc and err are final */
	int rc;
	char err[320];
} h5_dl;

#define H5_DL_FIELD(name) __typeof__(name) *p_##name;
#define H5_DL_SLOT(table, name) { #name, (void **)&(table).p_##name },

/* Load d's library and resolve its symbols the first time (thread-safe;
 * every later call only reads a flag): 0, or H5_ERR_UNSUPPORTED with
 * "<what>: <soname> not found: install <package> (<dlerror>)" (or the
 * symbol missing)
 * again at every call, so each dataset that needs it fails alone.
 *
 * For tests only, H5FS_TEST_DL_DIR names a directory the sonames are
 * opened from instead of the system's search path: a test leaves one out
 * of it to see the failure of a missing library. */
int h5_dl_need(h5_dl *d);

#endif
