/* source_s3.c - s3://BUCKET/KEY as a byte source: the object's URL
 * (virtual-hosted https://BUCKET.ENDPOINT/KEY, or path style
 * ENDPOINT/BUCKET/KEY with -o s3_path_style and always for an endpoint with
 * a port or an IP address) and AWS Signature Version 4 credentials, then
 * the HTTP source (source_http.c) does the reading. libcurl signs each
 * request (CURLOPT_AWS_SIGV4); the payload is declared UNSIGNED-PAYLOAD.
 * Credentials: AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY / AWS_SESSION_TOKEN,
 * else the AWS_PROFILE (or "default") section of ~/.aws/credentials, else
 * anonymous requests. */
#define _GNU_SOURCE /* asprintf */
#include "base.h"
#include "source.h"
#include "source_impl.h"
#include "source_http.h"
#include "source_s3.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

typedef struct s3_creds {
	char key[256], secret[256], token[2048];
} s3_creds;

static void trim(char *s)
{
	size_t n = strlen(s);

	while (n && isspace((unsigned char)s[n - 1]))
		s[--n] = 0;
	memmove(s, s + strspn(s, " \t"), strlen(s + strspn(s, " \t")) + 1);
}

/* ~/.aws/credentials: INI sections of key = value lines. */
static void creds_from_file(s3_creds *c)
{
	const char *home = getenv("HOME"), *prof = getenv("AWS_PROFILE");
	char path[4096], line[4096], want[300];
	bool in = false;
	FILE *fp;

	if (!home)
		return;
	snprintf(path, sizeof(path), "%s/.aws/credentials", home);
	snprintf(want, sizeof(want), "[%s]", prof && *prof ? prof : "default");
	fp = fopen(path, "r");
	if (!fp)
		return;
	while (fgets(line, sizeof(line), fp)) {
		char *eq;

		trim(line);
		if (line[0] == '[') {
			in = strcmp(line, want) == 0;
			continue;
		}
		if (!in || !(eq = strchr(line, '=')))
			continue;
		*eq = 0;
		trim(line);
		trim(eq + 1);
		if (strcmp(line, "aws_access_key_id") == 0)
			snprintf(c->key, sizeof(c->key), "%s", eq + 1);
		else if (strcmp(line, "aws_secret_access_key") == 0)
			snprintf(c->secret, sizeof(c->secret), "%s", eq + 1);
		else if (strcmp(line, "aws_session_token") == 0)
			snprintf(c->token, sizeof(c->token), "%s", eq + 1);
	}
	fclose(fp);
}

static void creds_get(s3_creds *c)
{
	const char *k = getenv("AWS_ACCESS_KEY_ID"), *s = getenv("AWS_SECRET_ACCESS_KEY");
	const char *t = getenv("AWS_SESSION_TOKEN");

	memset(c, 0, sizeof(*c));
	if (k && *k && s && *s) {
		snprintf(c->key, sizeof(c->key), "%s", k);
		snprintf(c->secret, sizeof(c->secret), "%s", s);
		if (t)
			snprintf(c->token, sizeof(c->token), "%s", t);
		return;
	}
	creds_from_file(c);
}

/* Percent-encodes a key for the URL path (RFC 3986 unreserved and '/' kept),
 * as SigV4's canonical URI expects. */
static int key_encode(char **out, const char *key)
{
	size_t n = strlen(key);
	char *o = malloc(3 * n + 1), *p = o;

	if (!o)
		return h5_err_set(H5_ERR_NOMEM, "out of memory");
	for (const unsigned char *k = (const unsigned char *)key; *k; k++) {
		if (isalnum(*k) || strchr("-._~/", *k))
			*p++ = (char)*k;
		else
			p += sprintf(p, "%%%02X", *k);
	}
	*p = 0;
	*out = o;
	return 0;
}

/* True if the endpoint's host has a port or is an IPv4/IPv6 address:
 * virtual-hosted names cannot work there. */
static bool needs_path_style(const char *host)
{
	size_t n = strcspn(host, "/");

	if (memchr(host, ':', n) || host[0] == '[')
		return true;
	for (size_t i = 0; i < n; i++)
		if (!isdigit((unsigned char)host[i]) && host[i] != '.')
			return false;
	return true;
}

int s3_bucket_url(char **out, const char *bucket, size_t blen, const char *rest, const s3_opts *o)
{
	const char *region = o->region && *o->region ? o->region : "us-east-1";
	char defep[256];
	const char *ep = o->endpoint, *host;
	size_t schlen, hlen;
	int n;

	*out = NULL;
	if (!ep || !*ep) {
		snprintf(defep, sizeof(defep), "https://s3.%s.amazonaws.com", region);
		ep = defep;
	}
	host = strstr(ep, "://");
	if (!host)
		return h5_err_set(H5_ERR_INVAL, "s3_endpoint=%s: expected http(s)://HOST[:PORT]", ep);
	host += 3;
	schlen = (size_t)(host - ep);
	hlen = strlen(host);
	while (hlen && host[hlen - 1] == '/')
		hlen--;
	if (o->path_style || needs_path_style(host) || memchr(bucket, '.', blen))
		n = asprintf(out, "%.*s%.*s/%.*s%s", (int)schlen, ep, (int)hlen, host, (int)blen, bucket, rest);
	else /* a query right after the host needs the path "/" */
		n = asprintf(out, "%.*s%.*s.%.*s%s%s", (int)schlen, ep, (int)blen, bucket, (int)hlen, host,
			     rest[0] == '/' ? "" : "/", rest);
	if (n < 0) {
		*out = NULL;
		return h5_err_set(H5_ERR_NOMEM, "out of memory");
	}
	return 0;
}

static int s3_url(char **out, const char *name, const s3_opts *o)
{
	const char *bk = name + 5, *slash = strchr(bk, '/');
	char *key = NULL;
	int rc;

	*out = NULL;
	if (!slash || slash == bk || !slash[1])
		return h5_err_set(H5_ERR_INVAL, "%s: expected s3://BUCKET/KEY", name);
	rc = key_encode(&key, slash);
	if (rc < 0)
		return rc;
	rc = s3_bucket_url(out, bk, (size_t)(slash - bk), key, o);
	free(key);
	return rc;
}

void s3_auth_get(s3_auth *a, const s3_opts *o)
{
	const char *region = o->region && *o->region ? o->region : "us-east-1";
	s3_creds c;

	memset(a, 0, sizeof(*a));
	creds_get(&c);
	if (c.key[0] && c.secret[0]) {
		snprintf(a->sigv4, sizeof(a->sigv4), "aws:amz:%s:s3", region);
		snprintf(a->userpwd, sizeof(a->userpwd), "%s:%s", c.key, c.secret);
		snprintf(a->token, sizeof(a->token), "%s", c.token);
		a->auth.sigv4 = a->sigv4;
		a->auth.userpwd = a->userpwd;
		a->auth.token = a->token[0] ? a->token : NULL;
	}
}

/* One of param's keys into *o: 1, 0 not ours, or H5_ERR_INVAL. */
static int s3_param_into(s3_opts *o, const char *param)
{
	bool has;
	const char *v;

	if ((v = h5_source_param_value(param, "s3_endpoint", &has)) ||
	    (v = h5_source_param_value(param, "s3_region", &has))) {
		if (!has)
			return h5_err_set(H5_ERR_INVAL, "-o %s: expected a value", param);
		if (param[3] == 'e')
			o->endpoint = v;
		else
			o->region = v;
		return 1;
	}
	if ((v = h5_source_param_value(param, "s3_path_style", &has))) {
		if (has)
			return h5_err_set(H5_ERR_INVAL, "-o %s: takes no value", param);
		o->path_style = true;
		return 1;
	}
	return 0;
}

int s3_opts_parse(s3_opts *o, const char *const *params)
{
	memset(o, 0, sizeof(*o));
	for (size_t i = 0; params && params[i]; i++) {
		int rc = s3_param_into(o, params[i]);

		if (rc < 0)
			return rc;
	}
	return 0;
}

static int s3_param(const char *param)
{
	s3_opts o;

	return s3_param_into(&o, param);
}

static bool s3_matches(const char *name)
{
	return strncasecmp(name, "s3://", 5) == 0;
}

static int s3_open(h5_source **out, const char *name, const h5_source_opts *opts)
{
	char *url = NULL;
	s3_opts so;
	s3_auth a;
	int rc;

	*out = NULL;
	rc = s3_opts_parse(&so, opts->params);
	if (rc < 0)
		return rc;
	rc = s3_url(&url, name, &so);
	if (rc < 0)
		return rc;
	s3_auth_get(&a, &so);
	rc = http_source_open(out, url, name, &a.auth, opts);
	free(url);
	return rc;
}

const h5_source_class h5_source_s3_class = {
	.name = "s3",
	.matches = s3_matches,
	.open = s3_open,
	.param = s3_param,
	.resolve = http_resolve,        /* s3://BUCKET/DIR/ joins as a URL does */
};
