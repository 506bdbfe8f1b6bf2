/* vw_buf.c - the growing text buffer the views' text is made in
 * (views.c's NPY header, views_csv.c's rows): below both. */
#include "views.h"

#include <stdlib.h>
#include <string.h>

int vw_buf_put(char **buf, size_t *len, size_t *cap, const void *s, size_t n)
{
	if (*len + n + 1 > *cap) {
		size_t nc = *cap ? *cap : 256;
		char *nb;

		while (nc < *len + n + 1)
			nc *= 2;
		nb = realloc(*buf, nc);
		if (!nb)
			return h5_err_set(H5_ERR_NOMEM, "out of memory");
		*buf = nb;
		*cap = nc;
	}
	memcpy(*buf + *len, s, n);
	*len += n;
	(*buf)[*len] = '\0';
	return 0;
}
