/* source_http_req.c - the requests of an HTTP(S) byte source
 * (source_http.c): pooled easy handles, one ranged GET set up and
 * received straight into cache slots (the body and header callbacks),
 * the verdict on a reply (the pinned ETag and size, Range honoured, which
 * failures are worth another try) and the retried GET with backoff.
 * source_http.c keeps the block cache, pins and the source's ops;
 * source_http_ra.c the background read-ahead, which sends its requests
 * through http_request/http_verdict too. */
#include <config.h>
#include "source_http_int.h" /* base.h, curl, pthread */

#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#define BLOCK HTTP_BLOCK
#define POOL HTTP_POOL

/* short names inside this file */
typedef http_reply reply;

static size_t on_body(char *p, size_t sz, size_t n, void *u)
{
	reply *r = u;
	size_t len = sz * n;

	if (len > r->cap - r->got) {
		/* more than the range asked for: a server that ignored Range */
		r->overflow = true;
		return 0;
	}
	for (size_t done = 0; done < len;) {
		size_t at = r->got % BLOCK, k = BLOCK - at < len - done ? BLOCK - at : len - done;

		memcpy(r->seg[r->got / BLOCK] + at, p + done, k);
		r->got += k;
		done += k;
	}
	return len;
}

static size_t on_header(char *p, size_t sz, size_t n, void *u)
{
	reply *r = u;
	size_t len = sz * n;
	char line[512];
	size_t l = len < sizeof(line) - 1 ? len : sizeof(line) - 1;

	memcpy(line, p, l);
	line[l] = 0;
	while (l && (line[l - 1] == '\r' || line[l - 1] == '\n'))
		line[--l] = 0;
	if (strncasecmp(line, "HTTP/", 5) == 0) {
		/* a new response (after a redirect): forget the previous headers */
		r->have_cr = false;
		r->etag[0] = 0;
	} else if (strncasecmp(line, "content-range:", 14) == 0) {
		unsigned long long a, b, t;

		if (sscanf(line + 14, " bytes %llu-%llu/%llu", &a, &b, &t) == 3) {
			r->cr_first = a;
			r->cr_last = b;
			r->cr_total = t;
			r->have_cr = true;
		}
	} else if (strncasecmp(line, "etag:", 5) == 0) {
		const char *v = line + 5;

		while (*v == ' ' || *v == '\t')
			v++;
		snprintf(r->etag, sizeof(r->etag), "%s", v);
	}
	return len;
}

CURL *http_handle_get(http_source *h)
{
	CURL *c = NULL;

	pthread_mutex_lock(&h->mu);
	if (h->npool)
		c = h->pool[--h->npool];
	pthread_mutex_unlock(&h->mu);
	if (c)
		return c;
	c = curl_easy_init();
	if (!c)
		return NULL;
	curl_easy_setopt(c, CURLOPT_SHARE, h->share);
	curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(c, CURLOPT_FOLLOWLOCATION, 1L);
	curl_easy_setopt(c, CURLOPT_MAXREDIRS, 5L);
	curl_easy_setopt(c, CURLOPT_HTTP_VERSION, (long)CURL_HTTP_VERSION_2TLS);
	curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT, h->timeout_s);
	curl_easy_setopt(c, CURLOPT_TIMEOUT, h->timeout_s);
	curl_easy_setopt(c, CURLOPT_TCP_KEEPALIVE, 1L);
	curl_easy_setopt(c, CURLOPT_USERAGENT, "h5fs/" PACKAGE_VERSION);
	curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_body);
	curl_easy_setopt(c, CURLOPT_HEADERFUNCTION, on_header);
	curl_easy_setopt(c, CURLOPT_BUFFERSIZE, 512L << 10);
	if (h->sigv4) {
		curl_easy_setopt(c, CURLOPT_AWS_SIGV4, h->sigv4);
		curl_easy_setopt(c, CURLOPT_USERPWD, h->userpwd);
	}
	return c;
}

void http_handle_put(http_source *h, CURL *c)
{
	pthread_mutex_lock(&h->mu);
	if (h->npool < POOL) {
		h->pool[h->npool++] = c;
		c = NULL;
	}
	pthread_mutex_unlock(&h->mu);
	if (c)
		curl_easy_cleanup(c);
}

/* Failures worth another try: the network, a timeout, a cut body, 5xx. */
static bool transient(CURLcode cc, long status)
{
	switch (cc) {
	case CURLE_OK:
		return status >= 500 || status == 429;
	case CURLE_COULDNT_CONNECT:
	case CURLE_OPERATION_TIMEDOUT:
	case CURLE_RECV_ERROR:
	case CURLE_SEND_ERROR:
	case CURLE_PARTIAL_FILE:
	case CURLE_GOT_NOTHING:
	case CURLE_HTTP2:
	case CURLE_HTTP2_STREAM:
		return true;
	default:
		return false;
	}
}

/* True if a 206 came from another version of the object than the one
 * pinned at open: servers that ignore If-Match (some S3 look-alikes do)
 * still tell by the ETag or the size in Content-Range. */
static bool changed(const http_source *h, const reply *r)
{
	if (h->base.size && r->cr_total != h->base.size)
		return true;
	return h->etag && r->etag[0] && strcmp(h->etag, r->etag) != 0;
}

/* Sets c up for a GET of [off, off+len) into the BLOCK-sized segments
 * seg (which, like the reply *r, must outlive the transfer); returns the
 * header list for http_request_done(). */
struct curl_slist *http_request(http_source *h, CURL *c, reply *r, uint64_t off, uint8_t *const *seg, size_t len)
{
	struct curl_slist *hd = NULL;
	char range[64], ifm[300];

	memset(r, 0, sizeof(*r));
	r->seg = seg;
	r->cap = len;
	snprintf(range, sizeof(range), "%llu-%llu", (unsigned long long)off,
		 (unsigned long long)(off + len - 1));
	if (h->etag) {
		snprintf(ifm, sizeof(ifm), "If-Match: %s", h->etag);
		hd = curl_slist_append(hd, ifm);
	}
	if (h->sigv4)
		hd = curl_slist_append(hd, "x-amz-content-sha256: UNSIGNED-PAYLOAD");
	if (h->token_hdr)
		hd = curl_slist_append(hd, h->token_hdr);
	curl_easy_setopt(c, CURLOPT_URL, h->url);
	curl_easy_setopt(c, CURLOPT_RANGE, range); /* libcurl copies strings */
	curl_easy_setopt(c, CURLOPT_HTTPHEADER, hd);
	curl_easy_setopt(c, CURLOPT_WRITEDATA, r);
	curl_easy_setopt(c, CURLOPT_HEADERDATA, r);
	curl_easy_setopt(c, CURLOPT_ERRORBUFFER, r->cerr);
	return hd;
}

/* After a transfer: c back to the pool, or closed if its connection may
 * be broken. */
void http_request_done(http_source *h, CURL *c, struct curl_slist *hd, CURLcode cc)
{
	curl_easy_setopt(c, CURLOPT_HTTPHEADER, NULL);
	curl_easy_setopt(c, CURLOPT_ERRORBUFFER, NULL);
	curl_slist_free_all(hd);
	if (cc != CURLE_OK && cc != CURLE_WRITE_ERROR)
		curl_easy_cleanup(c);
	else
		http_handle_put(h, c);
}

/* 0 if *r is the range [off, off+len) of the pinned object, else the
 * error (message set), *retry true if another try may succeed. */
int http_verdict(http_source *h, const reply *r, CURLcode cc, long status, uint64_t off, size_t len,
		 bool *retry)
{
	unsigned long long a = off, z = off + len - 1;

	*retry = false;
	/* first: a 412's body may not fit a small read's buffer */
	if (status == 412 && (cc == CURLE_OK || cc == CURLE_WRITE_ERROR)) {
		__atomic_store_n(&h->replaced, true, __ATOMIC_RELEASE);
		return h5_err_set(H5_ERR_IO, "%s: the object changed on the server (ETag %s no longer matches)",
				  h->name, h->etag ? h->etag : "");
	}
	if (r->overflow || (cc == CURLE_OK && status == 200))
		return h5_err_set(H5_ERR_IO, "%s: the server ignores Range requests (200 to a ranged GET)",
				  h->name);
	if (cc == CURLE_OK && status == 206) {
		if (!r->have_cr || r->cr_first != off || r->cr_last < r->cr_first ||
		    r->got != r->cr_last - r->cr_first + 1) {
			*retry = true;
			return h5_err_set(H5_ERR_IO, "%s: reply to range %llu-%llu has Content-Range %llu-%llu "
					  "and %zu bytes", h->name, a, z, (unsigned long long)r->cr_first,
					  (unsigned long long)r->cr_last, r->got);
		}
		if (changed(h, r)) {
			__atomic_store_n(&h->replaced, true, __ATOMIC_RELEASE);
			return h5_err_set(H5_ERR_IO, "%s: the object changed on the server (ETag %s, size %llu; "
					  "pinned %s, %llu)", h->name, r->etag, (unsigned long long)r->cr_total,
					  h->etag ? h->etag : "", (unsigned long long)h->base.size);
		}
		return 0;
	}
	if (cc == CURLE_OK && status == 416)
		return h5_err_set(H5_ERR_FORMAT, "unexpected end of file at 0x%llx (range %llu-%llu not "
				  "satisfiable)", a, a, z);
	if (cc == CURLE_OK && (status == 401 || status == 403))
		return h5_err_set(H5_ERR_IO, "%s: access denied (HTTP %ld)", h->name, status);
	if (cc == CURLE_OK && status == 404)
		return h5_err_set(H5_ERR_NOTFOUND, "%s: not found (HTTP 404)", h->name);
	*retry = transient(cc, status);
	if (cc == CURLE_OK)
		return h5_err_set(H5_ERR_IO, "%s: range %llu-%llu: HTTP %ld", h->name, a, z, status);
	return h5_err_set(H5_ERR_IO, "%s: range %llu-%llu: %s", h->name, a, z,
			  r->cerr[0] ? r->cerr : curl_easy_strerror(cc));
}

/* One ranged GET of [off, off+len) into seg, retried; *r the reply. */
int http_get_range(http_source *h, reply *r, uint64_t off, uint8_t *const *seg, size_t len)
{
	for (unsigned attempt = 0;; attempt++) {
		struct curl_slist *hd;
		long status = 0;
		bool retry;
		CURLcode cc;
		CURL *c = http_handle_get(h);
		int rc;

		if (!c)
			return h5_err_set(H5_ERR_NOMEM, "%s: cannot create a curl handle", h->name);
		hd = http_request(h, c, r, off, seg, len);
		cc = curl_easy_perform(c);
		curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &status);
		http_request_done(h, c, hd, cc);
		rc = http_verdict(h, r, cc, status, off, len, &retry);
		if (rc == 0 || !retry || attempt >= h->retries)
			return rc;
		/* backoff: 100 ms, 200 ms, 400 ms ... capped at 3.2 s */
		struct timespec ts = { 0, 0 };
		unsigned ms = 100u << (attempt < 5 ? attempt : 5);

		ts.tv_sec = ms / 1000;
		ts.tv_nsec = (long)(ms % 1000) * 1000000L;
		nanosleep(&ts, NULL);
	}
}
