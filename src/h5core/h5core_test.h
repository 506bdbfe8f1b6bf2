/*
 * h5core_test.h - test hooks of libh5core, for tests only.
 *
 * Not included by h5core.h: the daemon and the tools never see these.
 * Unit tests and test helpers (tests/integration/append_trace.c) include
 * it to watch or break the engine's writes (io/source_trace.c).
 */
#ifndef H5CORE_TEST_H
#define H5CORE_TEST_H

#include "h5core.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct h5_test_hooks {
	const char *io_trace;    /* record every write and sync here (source.h,
				  * h5_source_trace); reads are not spliced then */
	uint64_t io_fail_at;     /* the Nth write or sync fails (0: none) */
} h5_test_hooks;

/* h5_file_open with hooks (NULL or all zero: h5_file_open itself). */
int h5_file_open_hooked(h5_file **out, const char *path, const h5_open_opts *opts, const h5_test_hooks *hooks);

#ifdef __cplusplus
}
#endif
#endif
