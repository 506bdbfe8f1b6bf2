/* source_s3.h - what source_s3.c (one object) shares with
 * source_s3_list.c (listings of a prefix): the bucket's URL and the
 * request credentials, the same for both, from the same options. */
#ifndef H5_SOURCE_S3_H
#define H5_SOURCE_S3_H

#include "source_http.h"
#include "source.h"

#include <stddef.h>

/* SigV4 credentials (anonymous when auth.userpwd is NULL); auth points
 * into the buffers. */
typedef struct s3_auth {
	http_auth auth;
	char sigv4[300], userpwd[520], token[2048];
} s3_auth;

/* The URL of bucket[0..blen) (virtual-hosted or path style, as for an
 * object) followed by rest: "/KEY" (percent-encoded) or "?QUERY". */
int s3_bucket_url(char **out, const char *bucket, size_t blen, const char *rest, const h5_source_opts *o);
/* Credentials from the environment or ~/.aws/credentials (source_s3.c). */
void s3_auth_get(s3_auth *a, const h5_source_opts *o);

#endif
