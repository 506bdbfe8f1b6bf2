/*
 * util.c - path joining, the UTF-8 check and page population of the
 * utility surface
 * (h5util.h), the one copy the engine, src/common, the tools and the
 * daemon use.
 */
#define _GNU_SOURCE /* MADV_POPULATE_WRITE */
#include "base.h"
#include "h5util.h"

#include <stdint.h>
#include <sys/mman.h>
#include <unistd.h>

char *h5_path_join_n(const char *dir, size_t dlen, const char *name, size_t nlen)
{
	size_t slash = !(dlen && dir[dlen - 1] == '/');
	char *p;

	if (dlen > SIZE_MAX - 2 - nlen)
		return NULL;
	p = malloc(dlen + slash + nlen + 1);
	if (!p)
		return NULL;
	memcpy(p, dir, dlen);
	if (slash)
		p[dlen] = '/';
	memcpy(p + dlen + slash, name, nlen);
	p[dlen + slash + nlen] = '\0';
	return p;
}

char *h5_path_join(const char *dir, const char *name)
{
	return h5_path_join_n(dir, strlen(dir), name, strlen(name));
}

bool h5_utf8_valid(const void *buf, size_t len)
{
	const unsigned char *p = buf;

	for (size_t i = 0; i < len;) {
		unsigned c = p[i], n = c < 0x80 ? 0 : c >= 0xc2 && c < 0xe0 ? 1 : c >= 0xe0 && c < 0xf0 ? 2
			: c >= 0xf0 && c < 0xf5 ? 3 : 9;

		if (n == 9 || n >= len - i)   /* a bad lead byte, or cut short */
			return false;
		for (unsigned k = 1; k <= n; k++)
			if ((p[i + k] & 0xc0) != 0x80)
				return false;
		i += n + 1;
	}
	return true;
}

void h5_mem_populate(void *p, size_t n, size_t min_bytes)
{
#ifdef MADV_POPULATE_WRITE
	long psz = sysconf(_SC_PAGESIZE);

	/* the pages wholly inside the block: never a neighbour's */
	if (p && psz > 0 && n >= min_bytes) {
		uintptr_t mask = (uintptr_t)psz - 1;
		uintptr_t a = ((uintptr_t)p + mask) & ~mask, e = ((uintptr_t)p + n) & ~mask;

		if (e > a)
			(void)madvise((void *)a, e - a, MADV_POPULATE_WRITE);
	}
#else
	(void)p;
	(void)n;
	(void)min_bytes;
#endif
}
