/* source.c - the byte-source class table (source.h): which implementation
 * opens a given FILE name, which class owns an option, and the parsing the
 * classes' options share. A new kind of source (HTTP, S3) is one file with
 * its h5_source_class and one line in `classes` below. */
#include <config.h>
#include "base.h"
#include "source.h"
#include "source_impl.h"

#include <string.h>

/* First match wins; the local class takes every name, so it is last. */
static const h5_source_class *const classes[] = {
#ifdef HAVE_CURL
	&h5_source_http_class,
	&h5_source_s3_class,
#endif
	&h5_source_local_class,
};

#define NCLASSES (sizeof(classes) / sizeof(classes[0]))

const h5_source_class *h5_source_class_of(const char *name)
{
	for (size_t i = 0; i < NCLASSES; i++)
		if (!classes[i]->matches || classes[i]->matches(name))
			return classes[i];
	return NULL;
}

int h5_source_open(h5_source **out, const char *name, const h5_source_opts *opts)
{
	h5_source_opts none = { 0 };
	const h5_source_class *c = h5_source_class_of(name);

	*out = NULL;
	if (!opts)
		opts = &none;
	if (!c)
		return h5_err_set(H5_ERR_UNSUPPORTED, "%s: no byte source can open it", name);
	return c->open(out, name, opts);
}

int h5_source_param(const char *param)
{
	for (size_t i = 0; i < NCLASSES; i++) {
		int rc = classes[i]->param ? classes[i]->param(param) : 0;

		if (rc != 0)
			return rc;
	}
	return 0;
}

const char *h5_source_param_value(const char *param, const char *key, bool *has_value)
{
	size_t n = strlen(key);

	*has_value = false;
	if (strncmp(param, key, n) != 0 || (param[n] && param[n] != '='))
		return NULL;
	*has_value = param[n] == '=';
	return param + n + *has_value;
}

void h5_source_close(h5_source *s)
{
	if (s)
		s->ops->close(s);
}
