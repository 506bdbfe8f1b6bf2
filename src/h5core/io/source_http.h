/* source_http.h - the remote byte source shared by the http(s):// and
 * s3:// classes: source_s3.c turns s3://BUCKET/KEY into a URL plus SigV4
 * credentials and opens it through http_source_open(). */
#ifndef H5_SOURCE_HTTP_H
#define H5_SOURCE_HTTP_H

#include "source.h"

typedef struct http_auth {
	const char *sigv4;      /* CURLOPT_AWS_SIGV4 provider string, or NULL */
	const char *userpwd;    /* "ACCESS_KEY:SECRET" for SigV4, or NULL: anonymous */
	const char *token;      /* session token (x-amz-security-token), or NULL */
} http_auth;

int http_source_open(h5_source **out, const char *url, const char *name, const http_auth *auth,
		     const h5_source_opts *opts);

#endif
