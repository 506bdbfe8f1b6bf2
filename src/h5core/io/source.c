/* source.c - the byte-source class table (source.h): which implementation
 * opens a given FILE name. A new kind of source (HTTP, S3) is one file with
 * its h5_source_class and one line in `classes` below. */
#include <config.h>
#include "base.h"
#include "source.h"
#include "source_impl.h"

/* First match wins; the local class takes every name, so it is last. */
static const h5_source_class *const classes[] = {
#ifdef HAVE_CURL
	&h5_source_http_class,
	&h5_source_s3_class,
#endif
	&h5_source_local_class,
};

int h5_source_open(h5_source **out, const char *name, const h5_source_opts *opts)
{
	h5_source_opts none = { 0 };

	*out = NULL;
	if (!opts)
		opts = &none;
	for (size_t i = 0; i < sizeof(classes) / sizeof(classes[0]); i++)
		if (!classes[i]->matches || classes[i]->matches(name))
			return classes[i]->open(out, name, opts);
	return h5_err_set(H5_ERR_UNSUPPORTED, "%s: no byte source can open it", name);
}

void h5_source_close(h5_source *s)
{
	if (s)
		s->ops->close(s);
}
