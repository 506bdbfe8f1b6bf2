/*
 * strbuf.c - the engine's one string builder (h5_sb): bounded by
 * H5_VALUE_MAX_TEXT, errors as h5_err. Used for attribute and metadata
 * text (value.c) and dataset descriptions (describe.c).
 */
#ifdef HAVE_CONFIG_H
#include <config.h>
#endif

#include "base.h"
#include "strbuf.h"

#include <stdarg.h>
#include <stdio.h>

int h5_sb_put(h5_sb *s, const void *d, size_t n)
{
	if (n > H5_VALUE_MAX_TEXT - s->len)
		return h5_err_set(H5_ERR_LIMIT, "value text longer than %zu bytes", H5_VALUE_MAX_TEXT);
	if (s->len + n + 1 > s->cap) {
		size_t ncap = s->cap ? s->cap : 64;
		char *np;

		while (ncap < s->len + n + 1)
			ncap *= 2;
		np = realloc(s->p, ncap);
		if (!np)
			return h5_err_set(H5_ERR_NOMEM, "out of memory formatting a value");
		s->p = np;
		s->cap = ncap;
	}
	if (n)
		memcpy(s->p + s->len, d, n);
	s->len += n;
	s->p[s->len] = '\0';
	return 0;
}

int h5_sb_puts(h5_sb *s, const char *str)
{
	return h5_sb_put(s, str, strlen(str));
}

/* For numbers and short pieces: strings of any length go through h5_sb_puts. */
int h5_sb_printf(h5_sb *s, const char *fmt, ...)
{
	char tmp[128];
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(tmp, sizeof(tmp), fmt, ap);
	va_end(ap);
	if (n < 0 || (size_t)n >= sizeof(tmp))
		return h5_err_set(H5_ERR_INVAL, "internal: formatted number too long");
	return h5_sb_put(s, tmp, (size_t)n);
}

/* Hand the text over; an empty value is still a valid (1-byte) buffer. */
int h5_sb_finish(char **out, size_t *len, h5_sb *s)
{
	if (!s->p) {
		int rc = h5_sb_put(s, "", 0);

		if (rc < 0)
			return rc;
	}
	*out = s->p;
	*len = s->len;
	s->p = NULL;
	return 0;
}
