/* source_http.c - FILE on an HTTP(S) server as a read-only byte source
 * (issue 15): a transport of the block cache (blockcache.h) on libcurl.
 *
 * Every request is a ranged GET (RFC 9110 14.2): the first one (the
 * cache's first fetch, the first 4 MiB) gives the object's size from its
 * Content-Range, so no HEAD. The ETag of that reply is pinned and sent as
 * If-Match on every later request; a replaced object answers 412 (or,
 * from a server that ignores If-Match, another ETag or size) and the read
 * is EIO, never bytes from two versions. A server that answers 200 to a
 * ranged request (python3 -m http.server) has the object downloaded once,
 * whole, into a temporary file (at most -o cache_max MiB) that is then
 * read instead (http_copy: the daemon says so, h5_file_downloaded). The body lands straight in the cache slots
 * the cache hands over (no copy). Easy handles are pooled (their
 * connections are reused) and share DNS, TLS sessions and connections,
 * so FUSE threads have several requests in flight; HTTP/2 is used where
 * offered; the cache's read-ahead runs up to BC_STREAM_MAX of them at
 * once through a curl multi handle (http_stream). Failures (5xx,
 * timeouts, resets, short bodies) of a reader's fetch are retried with
 * backoff; the read that finally fails is EIO, the source stays usable.
 * source_s3.c opens S3 objects through http_source_open with SigV4
 * credentials. Blocks, pins, read-ahead and hints are blockcache.c's. */
#define _GNU_SOURCE /* asprintf */
#include <config.h>
#include "source_http.h"
#include "source_http_int.h"
#include "blockcache.h"
#include "source.h"
#include "source_impl.h"
#include "base.h"

#include "curl_dl.h"
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>

#define BLOCK BC_BLOCK
#define DEFAULT_RETRIES 4
#define DEFAULT_TIMEOUT 30

/* Set by http_verdict in the thread whose request a server answered 200
 * to a ranged GET: http_source_open's first fetch runs in its thread. */
static __thread bool tl_no_range;


/* One request's reply, filled by the callbacks: the body lands in seg[0],
 * seg[1], ... BLOCK bytes each (the cache slots it is fetched into). */
typedef struct http_reply {
	uint8_t *const *seg;
	size_t cap, got;
	bool overflow;
	uint64_t cr_first, cr_last, cr_total;
	bool have_cr;
	char etag[256];
	int64_t mtime;               /* Last-Modified, seconds (0: none) */
	char cerr[CURL_ERROR_SIZE];
} http_reply;

/* short names inside this file */
typedef http_reply reply;

static void share_lock(CURL *h, curl_lock_data d, curl_lock_access a, void *u)
{
	(void)h; (void)a;
	pthread_mutex_lock(&((http_transport *)u)->share_mu[d]);
}

static void share_unlock(CURL *h, curl_lock_data d, void *u)
{
	(void)h;
	pthread_mutex_unlock(&((http_transport *)u)->share_mu[d]);
}

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
		r->mtime = 0;
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
	} else if (strncasecmp(line, "last-modified:", 14) == 0) {
		/* an HTTP-date (RFC 9110 5.6.7): FILE's mtime (h5_file_mtime) */
		time_t t = curl_getdate(line + 14, NULL);

		r->mtime = t > 0 ? (int64_t)t : 0;
	}
	return len;
}

CURL *http_handle_get(http_transport *h)
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

void http_handle_put(http_transport *h, CURL *c)
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

bool http_transient(CURLcode cc, long status)
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
 * pinned by the first reply: servers that ignore If-Match (some S3 look-alikes do)
 * still tell by the ETag or the size in Content-Range. */
static bool other_version(const http_transport *h, const reply *r)
{
	if (h->size && r->cr_total != h->size)
		return true;
	return h->etag && r->etag[0] && strcmp(h->etag, r->etag) != 0;
}

/* Sets c up for a GET of [off, off+len) into the BLOCK-sized segments
 * seg (which, like the reply *r, must outlive the transfer); returns the
 * header list for http_request_done(). */
static struct curl_slist *http_request(http_transport *h, CURL *c, reply *r, uint64_t off,
				       uint8_t *const *seg, size_t len)
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
static void http_request_done(http_transport *h, CURL *c, struct curl_slist *hd, CURLcode cc)
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
static int http_verdict(http_transport *h, const reply *r, CURLcode cc, long status, uint64_t off, size_t len,
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
	if (r->overflow || (cc == CURLE_OK && status == 200)) {
		tl_no_range = true;
		return h5_err_set(H5_ERR_IO, "%s: the server ignores Range requests (200 to a ranged GET)",
				  h->name);
	}
	if (cc == CURLE_OK && status == 206) {
		if (!r->have_cr || r->cr_first != off || r->cr_last < r->cr_first ||
		    r->got != r->cr_last - r->cr_first + 1) {
			*retry = true;
			return h5_err_set(H5_ERR_IO, "%s: reply to range %llu-%llu has Content-Range %llu-%llu "
					  "and %zu bytes", h->name, a, z, (unsigned long long)r->cr_first,
					  (unsigned long long)r->cr_last, r->got);
		}
		if (other_version(h, r)) {
			__atomic_store_n(&h->replaced, true, __ATOMIC_RELEASE);
			return h5_err_set(H5_ERR_IO, "%s: the object changed on the server (ETag %s, size %llu; "
					  "pinned %s, %llu)", h->name, r->etag, (unsigned long long)r->cr_total,
					  h->etag ? h->etag : "", (unsigned long long)h->size);
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
	*retry = http_transient(cc, status);
	if (cc == CURLE_OK)
		return h5_err_set(H5_ERR_IO, "%s: range %llu-%llu: HTTP %ld", h->name, a, z, status);
	return h5_err_set(H5_ERR_IO, "%s: range %llu-%llu: %s", h->name, a, z,
			  r->cerr[0] ? r->cerr : curl_easy_strerror(cc));
}

/* One ranged GET of [off, off+len) into seg, retried; *r the reply. */
static int http_get_range(http_transport *h, reply *r, uint64_t off, uint8_t *const *seg, size_t len)
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

/* bc_transport_ops fetch: one ranged GET, retried. The first reply pins
 * the object (its size and ETag) for all later ones. */
static int http_fetch(bc_transport *t, bc_fetch *f)
{
	http_transport *h = (http_transport *)t;
	reply r;
	int rc;

	rc = http_get_range(h, &r, f->off, f->seg, f->len);
	f->rc = rc;
	if (rc < 0)
		return rc;
	f->got = r.got;
	f->total = r.cr_total;
	f->mtime = r.mtime;
	if (h->size == 0) { /* the first fetch, at open (one thread) */
		if (r.cr_total == 0)
			return f->rc = h5_err_set(H5_ERR_IO, "%s: no object size in Content-Range", h->name);
		h->size = r.cr_total;
		if (r.etag[0] && !(h->etag = strdup(r.etag)))
			return f->rc = h5_err_set(H5_ERR_NOMEM, "out of memory");
	}
	return 0;
}

/* The multi handle of the read-ahead, made at its first stream. */
static CURLM *stream_multi(http_transport *h)
{
	CURLM *m;

	pthread_mutex_lock(&h->mu);
	if (!h->multi)
		h->multi = curl_multi_init();
	m = h->multi;
	pthread_mutex_unlock(&h->mu);
	return m;
}

/* A background transfer: the cache's fetch and the request behind it. */
typedef struct stream_xfer {
	bc_fetch *f;                 /* NULL: this slot is free */
	CURL *c;
	struct curl_slist *hd;
	reply r;
} stream_xfer;

/* Starts the GET of x->f on m; on failure x->f->rc is set. */
static int stream_start(http_transport *h, CURLM *m, stream_xfer *x)
{
	x->c = http_handle_get(h);
	if (!x->c)
		return x->f->rc = h5_err_set(H5_ERR_NOMEM, "%s: cannot create a curl handle", h->name);
	x->hd = http_request(h, x->c, &x->r, x->f->off, x->f->seg, x->f->len);
	if (curl_multi_add_handle(m, x->c) != CURLM_OK) {
		http_request_done(h, x->c, x->hd, CURLE_FAILED_INIT);
		x->c = NULL;
		return x->f->rc = h5_err_set(H5_ERR_IO, "%s: cannot start a transfer", h->name);
	}
	return 0;
}

/* A transfer ended (cc: its result; aborted at stop): its verdict into
 * x->f->rc; x->f is then the cache's again (done). */
static void stream_finish(http_transport *h, CURLM *m, stream_xfer *x, CURLcode cc, bool aborted)
{
	long status = 0;
	bool retry;

	curl_multi_remove_handle(m, x->c);
	curl_easy_getinfo(x->c, CURLINFO_RESPONSE_CODE, &status);
	http_request_done(h, x->c, x->hd, aborted ? CURLE_ABORTED_BY_CALLBACK : cc);
	if (aborted)
		x->f->rc = H5_ERR_IO;
	else
		x->f->rc = http_verdict(h, &x->r, cc, status, x->f->off, x->f->len, &retry);
	if (x->f->rc == 0) {
		x->f->got = x->r.got;
		x->f->total = x->r.cr_total;
	}
}

/* bc_transport_ops stream: the read-ahead's fetches, up to max at once
 * through the multi handle, each on its own pooled connection; not
 * retried (a reader fetches what failed itself). */
static void http_stream(bc_transport *t, bc_queue *q, unsigned max)
{
	http_transport *h = (http_transport *)t;
	stream_xfer x[BC_STREAM_MAX];
	CURLM *m = stream_multi(h);
	unsigned nrun = 0;
	bc_fetch *f;

	if (max > BC_STREAM_MAX)
		max = BC_STREAM_MAX;
	memset(x, 0, sizeof(x));
	if (!m) {
		/* no multi handle: no read-ahead (its fetches fail, the
		 * stream stops; readers fetch for themselves) */
		while ((f = q->next(q))) {
			f->rc = h5_err_set(H5_ERR_NOMEM, "%s: cannot create a curl multi handle", h->name);
			q->done(q, f);
		}
		return;
	}
	while (!q->stopping(q)) {
		int still = 0, left;
		CURLMsg *msg;

		while (nrun < max) {
			stream_xfer *s = x;

			while (s->f)
				s++;
			if (!(s->f = q->next(q)))
				break;
			if (stream_start(h, m, s) < 0) {
				q->done(q, s->f);
				memset(s, 0, sizeof(*s));
				break;
			}
			nrun++;
		}
		if (nrun == 0)
			return;
		curl_multi_perform(m, &still);
		while ((msg = curl_multi_info_read(m, &left)))
			for (unsigned i = 0; msg->msg == CURLMSG_DONE && i < max; i++)
				if (x[i].c && x[i].c == msg->easy_handle) {
					stream_finish(h, m, &x[i], msg->data.result, false);
					q->done(q, x[i].f);
					memset(&x[i], 0, sizeof(x[i]));
					nrun--;
					break;
				}
		/* bounded: http_wake wakes it early */
		if (still)
			curl_multi_poll(m, NULL, 0, 1000, NULL);
	}
	for (unsigned i = 0; i < max; i++)
		if (x[i].c) {
			stream_finish(h, m, &x[i], CURLE_OK, true);
			q->done(q, x[i].f);
		}
}

static void http_wake(bc_transport *t)
{
	http_transport *h = (http_transport *)t;

	pthread_mutex_lock(&h->mu);
	if (h->multi)
		curl_multi_wakeup(h->multi);
	pthread_mutex_unlock(&h->mu);
}

/* In a child forked while a stream ran (fuse_daemonize after the open):
 * the multi handle is the parent's; the next stream makes its own. Not
 * under h->mu: a parent's thread may have held it at the fork, and the
 * child has no worker yet (the cache starts one after this). */
static void http_forked(bc_transport *t)
{
	((http_transport *)t)->multi = NULL;
}

/* h5fs -o refresh: a one-byte GET with the pinned ETag (412 or another
 * ETag or size: replaced); network trouble answers "not known" (0). */
static int http_changed(bc_transport *t, int probe)
{
	http_transport *h = (http_transport *)t;
	uint8_t one[16], *seg[1] = { one };
	reply r;

	if (probe && !__atomic_load_n(&h->replaced, __ATOMIC_ACQUIRE) && http_get_range(h, &r, 0, seg, 1) < 0)
		h5_err_clear();
	return __atomic_load_n(&h->replaced, __ATOMIC_ACQUIRE);
}

static void http_close(bc_transport *t)
{
	http_transport *h = (http_transport *)t;

	if (!h)
		return;
	for (unsigned i = 0; i < h->npool; i++)
		curl_easy_cleanup(h->pool[i]);
	if (h->multi)
		curl_multi_cleanup(h->multi);
	if (h->share)
		curl_share_cleanup(h->share);
	for (int i = 0; i < CURL_LOCK_DATA_LAST; i++)
		pthread_mutex_destroy(&h->share_mu[i]);
	pthread_mutex_destroy(&h->mu);
	free(h->url);
	free(h->name);
	free(h->etag);
	free(h->userpwd);
	free(h->sigv4);
	free(h->token_hdr);
	free(h);
}

static const bc_transport_ops http_transport_ops = {
	.fetch = http_fetch,
	.stream = http_stream,
	.wake = http_wake,
	.forked = http_forked,
	.changed = http_changed,
	.close = http_close,
};

static http_transport *http_transport_new(const char *url, const char *name, const http_auth *auth,
					  const http_opts *ho)
{
	http_transport *h;

	if (h5_curl_init() < 0)
		return NULL;
	h = calloc(1, sizeof(*h));
	if (!h) {
		h5_err_set(H5_ERR_NOMEM, "out of memory");
		return NULL;
	}
	h->base.ops = &http_transport_ops;
	pthread_mutex_init(&h->mu, NULL);
	for (int i = 0; i < CURL_LOCK_DATA_LAST; i++)
		pthread_mutex_init(&h->share_mu[i], NULL);
	h->retries = ho->retries ? ho->retries : DEFAULT_RETRIES;
	h->timeout_s = ho->timeout_s ? (long)ho->timeout_s : DEFAULT_TIMEOUT;
	h->url = strdup(url);
	h->name = strdup(name);
	if (!h->url || !h->name)
		goto nomem;
	if (auth && auth->sigv4 && auth->userpwd) {
		if (!(h->sigv4 = strdup(auth->sigv4)) || !(h->userpwd = strdup(auth->userpwd)))
			goto nomem;
		if (auth->token && asprintf(&h->token_hdr, "x-amz-security-token: %s", auth->token) < 0) {
			h->token_hdr = NULL;
			goto nomem;
		}
	}
	h->share = curl_share_init();
	if (!h->share)
		goto nomem;
	curl_share_setopt(h->share, CURLSHOPT_LOCKFUNC, share_lock);
	curl_share_setopt(h->share, CURLSHOPT_UNLOCKFUNC, share_unlock);
	curl_share_setopt(h->share, CURLSHOPT_USERDATA, h);
	curl_share_setopt(h->share, CURLSHOPT_SHARE, CURL_LOCK_DATA_DNS);
	curl_share_setopt(h->share, CURLSHOPT_SHARE, CURL_LOCK_DATA_SSL_SESSION);
	curl_share_setopt(h->share, CURLSHOPT_SHARE, CURL_LOCK_DATA_CONNECT);
	return h;
nomem:
	http_close(&h->base);
	h5_err_set(H5_ERR_NOMEM, "out of memory");
	return NULL;
}

int http_source_open(h5_source **out, const char *url, const char *name, const http_auth *auth,
		     const h5_source_opts *opts)
{
	http_transport *h;
	http_opts ho;
	int rc;

	*out = NULL;
	if (opts->writable)
		return h5_err_set(H5_ERR_ROFS, "%s: remote files are read-only", name);
	rc = http_opts_parse(&ho, opts->params);
	if (rc < 0)
		return rc;
	h = http_transport_new(url, name, auth, &ho);
	if (!h)
		return H5_ERR_NOMEM;    /* (message set) */
	/* the cache owns the transport from here, closed on failure too */
	tl_no_range = false;
	rc = bc_source_open(out, &h->base, name, opts->cache_bytes);
	if (rc < 0 && tl_no_range) {
		tl_no_range = false;
		h = http_transport_new(url, name, auth, &ho);
		if (!h)
			return H5_ERR_NOMEM;    /* (message set) */
		rc = http_copy_open(out, h, (uint64_t)(ho.cache_max_mib ? ho.cache_max_mib : DEFAULT_CACHE_MAX_MIB)
				    << 20);
		http_close(&h->base);
	}
	return rc;
}

/* An unsigned option value: decimal digits only. */
static int param_uint(unsigned *out, const char *param, const char *v, bool has_value)
{
	unsigned long long n = 0;

	if (!has_value || !*v)
		return h5_err_set(H5_ERR_INVAL, "-o %s: expected a number", param);
	for (const char *p = v; *p; p++) {
		if (*p < '0' || *p > '9' || (n = n * 10 + (unsigned)(*p - '0')) > UINT_MAX)
			return h5_err_set(H5_ERR_INVAL, "-o %s: expected a number", param);
	}
	*out = (unsigned)n;
	return 0;
}

/* One of param's keys into *o: 1, 0 not ours, or H5_ERR_INVAL. */
static int http_param_into(http_opts *o, const char *param)
{
	bool has;
	const char *v;
	int rc;

	if ((v = h5_source_param_value(param, "retries", &has)))
		rc = param_uint(&o->retries, param, v, has);
	else if ((v = h5_source_param_value(param, "timeout", &has)))
		rc = param_uint(&o->timeout_s, param, v, has);
	else if ((v = h5_source_param_value(param, "cache_max", &has))) {
		rc = param_uint(&o->cache_max_mib, param, v, has);
		if (rc == 0 && (o->cache_max_mib == 0 || o->cache_max_mib > (1u << 20)))
			rc = h5_err_set(H5_ERR_INVAL, "-o %s: MiB, 1..1048576", param);
	}
	else
		return 0;
	return rc < 0 ? rc : 1;
}

int http_opts_parse(http_opts *o, const char *const *params)
{
	memset(o, 0, sizeof(*o));
	for (size_t i = 0; params && params[i]; i++) {
		int rc = http_param_into(o, params[i]);

		if (rc < 0)
			return rc;
	}
	return 0;
}

static int http_param(const char *param)
{
	http_opts o;

	return http_param_into(&o, param);
}

/* ---- related files ------------------------------------------------------
 * They are looked for beside the file that names them, on the same server
 * and with the same options (credentials, endpoint): the directory of its
 * URL joined with the name, percent-encoded. An absolute name is looked
 * for by its last component (as libhdf5 falls back to); a name with ".."
 * would leave the URL's directory and is refused unless any (-o ext_any),
 * as a local file outside FILE's tree is. The prefix variables name local
 * directories and do not apply. */

static bool url_plain(unsigned char c)
{
	return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' ||
	       c == '.' || c == '_' || c == '~';
}

int http_resolve(char **out, const char *name, const char *base, bool any)
{
	const char *slash = strrchr(base, '/'), *p;
	size_t dlen = slash ? (size_t)(slash - base) : 0, cap;
	char *url, *o;

	*out = NULL;
	if (name[0] == '/') {
		name = strrchr(name, '/') + 1;
		if (!*name)
			return 1;
	}
	cap = dlen + 1 + 3 * strlen(name) + 1;
	url = malloc(cap);
	if (!url)
		return h5_err_set(H5_ERR_NOMEM, "out of memory");
	memcpy(url, base, dlen);
	o = url + dlen;
	for (p = name; *p;) {
		size_t len = strcspn(p, "/");

		if ((len == 1 && p[0] == '.') || len == 0) {
			p += len + (p[len] == '/');
			continue;
		}
		if (len == 2 && p[0] == '.' && p[1] == '.' && !any) {
			free(url);
			return h5_err_set(H5_ERR_PERM, "\"%.200s\" lies outside the directory of FILE: not followed "
					  "(mount with -o ext_any to allow)", name);
		}
		*o++ = '/';
		for (size_t i = 0; i < len; i++) {
			unsigned char c = (unsigned char)p[i];

			if (url_plain(c)) {
				*o++ = (char)c;
			} else {
				snprintf(o, 4, "%%%02X", c);
				o += 3;
			}
		}
		p += len + (p[len] == '/');
	}
	*o = 0;
	if (o == url + dlen) {
		free(url);
		return 1;
	}
	*out = url;
	return 0;
}

static bool http_matches(const char *name)
{
	return strncasecmp(name, "http://", 7) == 0 || strncasecmp(name, "https://", 8) == 0;
}

static int http_open(h5_source **out, const char *name, const h5_source_opts *opts)
{
	return http_source_open(out, name, name, NULL, opts);
}

const h5_source_class h5_source_http_class = {
	.name = "http",
	.matches = http_matches,
	.open = http_open,
	.param = http_param,
	.resolve = http_resolve,
};
