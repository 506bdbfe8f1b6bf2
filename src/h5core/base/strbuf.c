/*
 * strbuf.c - the one string builder (h5_sb, h5util.h): bounded by its max
 * (H5_VALUE_MAX_TEXT unless set), errors as h5_err. Used for attribute and
 * metadata text (value.c), dataset descriptions (describe.c), the xattrs
 * of src/common and the JSON of the tools (json.c).
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
	size_t max = s->max ? s->max : H5_VALUE_MAX_TEXT;

	if (max > SIZE_MAX - 1)
		max = SIZE_MAX - 1;
	if (n > max - s->len)
		return h5_err_set(H5_ERR_LIMIT, "text longer than %zu bytes", max);
	if (s->len + n + 1 > s->cap) {
		size_t ncap = s->cap ? s->cap : 64;
		char *np;

		while (ncap < s->len + n + 1)
			ncap = ncap > SIZE_MAX / 2 ? s->len + n + 1 : ncap * 2;
		np = realloc(s->p, ncap);
		if (!np)
			return h5_err_set(H5_ERR_NOMEM, "out of memory building a text");
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

int h5_sb_vprintf(h5_sb *s, const char *fmt, va_list ap)
{
	char tmp[256];
	va_list ap2;
	char *big;
	int n, rc;

	va_copy(ap2, ap);
	n = vsnprintf(tmp, sizeof(tmp), fmt, ap2);
	va_end(ap2);
	if (n < 0)
		return h5_err_set(H5_ERR_INVAL, "internal: bad format");
	if ((size_t)n < sizeof(tmp))
		return h5_sb_put(s, tmp, (size_t)n);
	big = malloc((size_t)n + 1);
	if (!big)
		return h5_err_set(H5_ERR_NOMEM, "out of memory building a text");
	vsnprintf(big, (size_t)n + 1, fmt, ap);
	rc = h5_sb_put(s, big, (size_t)n);
	free(big);
	return rc;
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
	s->len = s->cap = 0;
	return 0;
}
