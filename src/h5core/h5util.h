/*
 * h5util.h - the one utility surface of h5fs, shared by the engine,
 * src/common, the tools and the daemon: the string builder (h5_sb,
 * base/strbuf.c), path joining and the UTF-8 check (base/util.c). The
 * errno an engine error becomes is the daemon's and tools' business:
 * src/common/h5errno.h.
 */
#ifndef H5UTIL_H
#define H5UTIL_H

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>

/* A growing string, always NUL-terminated once anything was put; each
 * call returns 0 or a negative h5_err (H5_ERR_NOMEM, H5_ERR_LIMIT past
 * max). Start from { 0 }: max 0 means H5_VALUE_MAX_TEXT (16 MiB, what
 * value texts may reach); a writer of long documents sets it (SIZE_MAX).
 * h5_sb_printf is for short pieces (numbers, names; H5_ERR_INVAL beyond
 * 127 bytes); h5_sb_vprintf takes text of any length. */
typedef struct h5_sb {
	char *p;
	size_t len, cap;
	size_t max;
} h5_sb;
int h5_sb_put(h5_sb *s, const void *d, size_t n);
int h5_sb_puts(h5_sb *s, const char *str);
int h5_sb_printf(h5_sb *s, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
int h5_sb_vprintf(h5_sb *s, const char *fmt, va_list ap) __attribute__((format(printf, 2, 0)));
/* Hand the text over (*out, *len; "" when nothing was put): s is empty
 * after. */
int h5_sb_finish(char **out, size_t *len, h5_sb *s);

/* dir (dlen bytes) "/" name (nlen bytes), malloc'd: the slash is left out
 * when dir ends with one; an empty dir gives "/name" (the root of an
 * HDF5 path; a caller whose empty dir means "here" passes name alone).
 * NULL when out of memory. */
char *h5_path_join_n(const char *dir, size_t dlen, const char *name, size_t nlen);
/* The same of two C strings. */
char *h5_path_join(const char *dir, const char *name);

/* Whether p[0..len) is UTF-8 (sequences of at most 4 bytes, no lead
 * bytes 0xc0, 0xc1 or beyond 0xf4). */
bool h5_utf8_valid(const void *p, size_t len);

/* Map the pages wholly inside [p, p+n) in one call (MADV_POPULATE_WRITE,
 * where the kernel has it): touched one by one they are a page fault
 * each, and in a virtual machine a fault is an exit to the hypervisor
 * (about 10 us: 16,384 per 64 MiB). A hint; nothing happens below
 * min_bytes or without the call. */
void h5_mem_populate(void *p, size_t n, size_t min_bytes);

#endif
