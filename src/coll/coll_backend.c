/* coll_backend.c - the table of collection backends (coll_backend.h): a
 * new one is one file and one entry here, before the local one. */
#include "coll_backend.h"

#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>

static const struct coll_backend *const backends[] = {
	&coll_s3,               /* s3://BUCKET/PREFIX/ */
	&coll_local,            /* matches everything: last */
};

const struct coll_backend *coll_backend_of(const char *spec)
{
	size_t i;

	for (i = 0; i + 1 < sizeof(backends) / sizeof(backends[0]); i++)
		if (backends[i]->matches(spec))
			return backends[i];
	return backends[i];
}

void coll_dirents_free(struct coll_dirent *d, size_t n)
{
	size_t i;

	for (i = 0; d && i < n; i++)
		free(d[i].name);
	free(d);
}

int coll_h5err(int e)
{
	switch (e) {
	case 0:
		return H5_OK;
	case ENOMEM:
		return H5_ERR_NOMEM;
	case ENOENT:
	case ENOTDIR:
		return H5_ERR_NOTFOUND;
	case EACCES:
	case EPERM:
		return H5_ERR_PERM;
	default:
		return H5_ERR_IO;
	}
}

char *coll_canonical(const char *spec)
{
	char *p;
	size_t n;

	if (strstr(spec, "://")) {
		n = strlen(spec);
		while (n > 1 && spec[n - 1] == '/')
			n--;
		p = malloc(n + 2);
		if (p) {
			memcpy(p, spec, n);
			p[n] = '/';
			p[n + 1] = 0;
		}
		return p;
	}
	return realpath(spec, NULL);
}

int coll_member_checked(h5_file **f, int rc)
{
	if (rc == 0 && (rc = h5_file_check_truncated(*f)) < 0) {
		h5_file_close(*f);
		*f = NULL;
	}
	return rc;
}
