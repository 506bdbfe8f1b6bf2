/* source_http.h - the HTTP transport shared by the http(s):// and s3://
 * classes: source_s3.c turns s3://BUCKET/KEY into a URL plus SigV4
 * credentials and opens it through http_source_open(); both take the
 * transport's options (http_opts) and resolve related names alike. */
#ifndef H5_SOURCE_HTTP_H
#define H5_SOURCE_HTTP_H

#include "source.h"

#include <stdbool.h>

typedef struct http_auth {
	const char *sigv4;      /* CURLOPT_AWS_SIGV4 provider string, or NULL */
	const char *userpwd;    /* "ACCESS_KEY:SECRET" for SigV4, or NULL: anonymous */
	const char *token;      /* session token (x-amz-security-token), or NULL */
} http_auth;

/* The HTTP transport's options: -o retries=N, timeout=S (0: the default,
 * 4 retries, 30 s; S3 listings have their own defaults). */
typedef struct http_opts {
	unsigned retries, timeout_s;
	unsigned cache_max_mib;  /* -o cache_max=MiB: the most a server without
				  * Range may have downloaded (0: 1024) */
} http_opts;

/* *o from params (h5_source_opts.params; other classes' keys passed
 * over): 0, or H5_ERR_INVAL for a malformed value. */
int http_opts_parse(http_opts *o, const char *const *params);

/* The source of the object at url (name: for messages and related
 * files), its options from opts->params. */
int http_source_open(h5_source **out, const char *url, const char *name, const http_auth *auth,
		     const h5_source_opts *opts);

/* The URL of a file related to the one at base (h5_source_class
 * resolve): beside it, name percent-encoded; the http and s3 classes. */
int http_resolve(char **out, const char *name, const char *base, bool any);

#endif
