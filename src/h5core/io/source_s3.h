/* source_s3.h - what source_s3.c (one object) shares with
 * source_s3_list.c (listings of a prefix): the bucket's URL and the
 * request credentials, the same for both, from the same options. */
#ifndef H5_SOURCE_S3_H
#define H5_SOURCE_S3_H

#include "source_http.h"
#include "source.h"

#include <stdbool.h>
#include <stddef.h>

/* SigV4 credentials (anonymous when auth.userpwd is NULL); auth points
 * into the buffers. */
typedef struct s3_auth {
	http_auth auth;
	char sigv4[300], userpwd[520], token[2048];
} s3_auth;

/* The S3 class's options: -o s3_endpoint=URL (NULL: AWS), s3_region=R
 * (NULL: us-east-1), s3_path_style; the strings point into the params
 * they were parsed from. Requests also take the HTTP transport's
 * (http_opts: retries, timeout). */
typedef struct s3_opts {
	const char *endpoint, *region;
	bool path_style;
} s3_opts;

/* *o from params (h5_source_opts.params; other classes' keys passed
 * over): 0, or H5_ERR_INVAL for a malformed one. */
int s3_opts_parse(s3_opts *o, const char *const *params);

/* The URL of bucket[0..blen) (virtual-hosted or path style, as for an
 * object) followed by rest: "/KEY" (percent-encoded) or "?QUERY". */
int s3_bucket_url(char **out, const char *bucket, size_t blen, const char *rest, const s3_opts *o);
/* Credentials from the environment or ~/.aws/credentials (source_s3.c). */
void s3_auth_get(s3_auth *a, const s3_opts *o);

#endif
