/* source_http.c - FILE on an HTTP(S) server as a read-only byte source
 * (issue 15), on libcurl.
 *
 * Every request is a ranged GET (RFC 9110 14.2): the first one fetches
 * the first 4 MiB and gives the object's size from its Content-Range, so no HEAD.
 * The ETag of that reply is pinned and sent as If-Match on every later
 * request; a replaced object answers 412 and the read is EIO, never bytes
 * from two versions. A server that answers 200 to a ranged request is
 * refused at open. Bytes are cached in aligned blocks inside the cache
 * budget; a miss right after cached (or arriving) bytes doubles the
 * read-ahead (up to RA_MAX blocks) and a jump resets it; the missing blocks
 * a read needs are fetched in one request. Easy handles are pooled (their
 * connections are reused) and share DNS, TLS sessions and connections, so
 * FUSE threads have several requests in flight; HTTP/2 is used where
 * offered. Failures (5xx, timeouts, resets, short bodies) are retried with
 * backoff; the read that finally fails is EIO, the source stays usable. */
#define _GNU_SOURCE /* asprintf */
#include <config.h>
#include "internal.h"
#include "source_impl.h"
#include "source_http.h"

#include <curl/curl.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#define BLOCK ((size_t)512 << 10)    /* cache block: small, metadata is scattered */
#define FIRST ((size_t)4 << 20)      /* the first fetch: superblock, root metadata */
#define RA_MAX 128                   /* read-ahead limit in blocks (64 MiB) */
#define POOL 16                      /* idle easy handles kept */
#define DEFAULT_RETRIES 4
#define DEFAULT_TIMEOUT 30

typedef struct blk {
	uint64_t idx;                /* block number; UINT64_MAX: empty */
	uint64_t used;               /* LRU tick */
	uint8_t *p;
} blk;

typedef struct http_source {
	h5_source base;
	char *url, *name, *etag, *userpwd, *sigv4, *token_hdr;
	unsigned retries;
	long timeout_s;
	CURLSH *share;
	pthread_mutex_t share_mu[CURL_LOCK_DATA_LAST];
	pthread_mutex_t mu;          /* pool, cache, read-ahead state, in flight */
	pthread_cond_t landed;       /* a fetch finished */
	struct { uint64_t b, n; } inflight[POOL]; /* block ranges being fetched */
	unsigned ninflight;
	CURL *pool[POOL];
	unsigned npool;
	blk *slots;
	unsigned nslots;
	uint64_t tick;
	unsigned ra;
} http_source;

/* One request's reply, filled by the callbacks. */
typedef struct reply {
	uint8_t *buf;
	size_t cap, got;
	bool overflow;
	uint64_t cr_first, cr_last, cr_total;
	bool have_cr;
	char etag[256];
} reply;

static pthread_once_t global_once = PTHREAD_ONCE_INIT;

static void global_init(void)
{
	curl_global_init(CURL_GLOBAL_DEFAULT);
}

static void share_lock(CURL *h, curl_lock_data d, curl_lock_access a, void *u)
{
	(void)h; (void)a;
	pthread_mutex_lock(&((http_source *)u)->share_mu[d]);
}

static void share_unlock(CURL *h, curl_lock_data d, void *u)
{
	(void)h;
	pthread_mutex_unlock(&((http_source *)u)->share_mu[d]);
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
	memcpy(r->buf + r->got, p, len);
	r->got += len;
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

static CURL *handle_get(http_source *h)
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
	if (h->sigv4) {
		curl_easy_setopt(c, CURLOPT_AWS_SIGV4, h->sigv4);
		curl_easy_setopt(c, CURLOPT_USERPWD, h->userpwd);
	}
	return c;
}

static void handle_put(http_source *h, CURL *c)
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

/* One ranged GET of [off, off+len) into buf, retried; *r the reply. */
static int get_range(http_source *h, reply *r, uint64_t off, uint8_t *buf, size_t len)
{
	char range[64], ifm[300];
	int rc = 0;

	snprintf(range, sizeof(range), "%llu-%llu", (unsigned long long)off,
		 (unsigned long long)(off + len - 1));
	for (unsigned attempt = 0;; attempt++) {
		struct curl_slist *hd = NULL;
		char cerr[CURL_ERROR_SIZE] = "";
		long status = 0;
		CURLcode cc;
		CURL *c = handle_get(h);

		if (!c)
			return h5_err_set(H5_ERR_NOMEM, "%s: cannot create a curl handle", h->name);
		memset(r, 0, sizeof(*r));
		r->buf = buf;
		r->cap = len;
		if (h->etag) {
			snprintf(ifm, sizeof(ifm), "If-Match: %s", h->etag);
			hd = curl_slist_append(hd, ifm);
		}
		if (h->sigv4)
			hd = curl_slist_append(hd, "x-amz-content-sha256: UNSIGNED-PAYLOAD");
		if (h->token_hdr)
			hd = curl_slist_append(hd, h->token_hdr);
		curl_easy_setopt(c, CURLOPT_URL, h->url);
		curl_easy_setopt(c, CURLOPT_RANGE, range);
		curl_easy_setopt(c, CURLOPT_HTTPHEADER, hd);
		curl_easy_setopt(c, CURLOPT_WRITEDATA, r);
		curl_easy_setopt(c, CURLOPT_HEADERDATA, r);
		curl_easy_setopt(c, CURLOPT_ERRORBUFFER, cerr);
		cc = curl_easy_perform(c);
		curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &status);
		curl_easy_setopt(c, CURLOPT_HTTPHEADER, NULL);
		curl_easy_setopt(c, CURLOPT_ERRORBUFFER, NULL);
		curl_slist_free_all(hd);
		if (cc != CURLE_OK && cc != CURLE_WRITE_ERROR) {
			curl_easy_cleanup(c); /* its connection may be broken */
			c = NULL;
		} else {
			handle_put(h, c);
		}
		if (r->overflow || status == 200)
			return h5_err_set(H5_ERR_IO, "%s: the server ignores Range requests (200 to a ranged GET)",
					  h->name);
		if (cc == CURLE_OK && status == 206) {
			if (!r->have_cr || r->cr_first != off || r->cr_last < r->cr_first ||
			    r->got != r->cr_last - r->cr_first + 1)
				rc = h5_err_set(H5_ERR_IO, "%s: reply to range %s has Content-Range %llu-%llu "
						"and %zu bytes", h->name, range, (unsigned long long)r->cr_first,
						(unsigned long long)r->cr_last, r->got);
			else
				return 0;
		} else if (cc == CURLE_OK && status == 412) {
			return h5_err_set(H5_ERR_IO, "%s: the object changed on the server (ETag %s no longer matches)",
					  h->name, h->etag ? h->etag : "");
		} else if (cc == CURLE_OK && status == 416) {
			return h5_err_set(H5_ERR_FORMAT, "unexpected end of file at 0x%llx (range %s not satisfiable)",
					  (unsigned long long)off, range);
		} else if (cc == CURLE_OK && (status == 401 || status == 403)) {
			return h5_err_set(H5_ERR_IO, "%s: access denied (HTTP %ld)", h->name, status);
		} else if (cc == CURLE_OK && status == 404) {
			return h5_err_set(H5_ERR_NOTFOUND, "%s: not found (HTTP 404)", h->name);
		} else if (cc == CURLE_OK && !transient(cc, status)) {
			return h5_err_set(H5_ERR_IO, "%s: HTTP %ld", h->name, status);
		} else if (cc != CURLE_OK && !transient(cc, status)) {
			return h5_err_set(H5_ERR_IO, "%s: %s", h->name, cerr[0] ? cerr : curl_easy_strerror(cc));
		} else {
			if (cc != CURLE_OK)
				rc = h5_err_set(H5_ERR_IO, "%s: range %s: %s", h->name, range,
						cerr[0] ? cerr : curl_easy_strerror(cc));
			else
				rc = h5_err_set(H5_ERR_IO, "%s: range %s: HTTP %ld", h->name, range, status);
		}
		if (attempt >= h->retries)
			return rc;
		/* backoff: 100 ms, 200 ms, 400 ms ... capped at 3.2 s */
		struct timespec ts = { 0, 0 };
		unsigned ms = 100u << (attempt < 5 ? attempt : 5);

		ts.tv_sec = ms / 1000;
		ts.tv_nsec = (long)(ms % 1000) * 1000000L;
		nanosleep(&ts, NULL);
	}
}

static size_t block_len(const http_source *h, uint64_t b)
{
	uint64_t start = b * BLOCK;

	return h->base.size - start < BLOCK ? (size_t)(h->base.size - start) : BLOCK;
}

/* The slot holding block b, or NULL (h->mu held). */
static blk *slot_find(http_source *h, uint64_t b)
{
	for (unsigned i = 0; i < h->nslots; i++)
		if (h->slots[i].idx == b) {
			h->slots[i].used = ++h->tick;
			return &h->slots[i];
		}
	return NULL;
}

/* Store block b from p (h->mu held): the least recently used slot goes. */
static void slot_put(http_source *h, uint64_t b, const uint8_t *p)
{
	blk *v = &h->slots[0];

	if (slot_find(h, b))
		return;
	for (unsigned i = 1; i < h->nslots; i++)
		if (h->slots[i].used < v->used)
			v = &h->slots[i];
	memcpy(v->p, p, block_len(h, b));
	v->idx = b;
	v->used = ++h->tick;
}

/* True if block b is being fetched by another thread (h->mu held). */
static bool in_flight(const http_source *h, uint64_t b)
{
	for (unsigned i = 0; i < h->ninflight; i++)
		if (b >= h->inflight[i].b && b - h->inflight[i].b < h->inflight[i].n)
			return true;
	return false;
}

static void flight_end(http_source *h, uint64_t b)
{
	pthread_mutex_lock(&h->mu);
	for (unsigned i = 0; i < h->ninflight; i++)
		if (h->inflight[i].b == b) {
			h->inflight[i] = h->inflight[--h->ninflight];
			break;
		}
	pthread_cond_broadcast(&h->landed);
	pthread_mutex_unlock(&h->mu);
}

/* Fetches blocks [b, b+n) in one request into the cache (registered in
 * h->inflight by the caller, removed here). */
static int fetch_blocks(http_source *h, uint64_t b, uint64_t n)
{
	uint64_t off = b * BLOCK;
	uint64_t end = (b + n) * BLOCK < h->base.size ? (b + n) * BLOCK : h->base.size;
	uint8_t *buf = malloc((size_t)(end - off));
	reply r;
	int rc;

	if (!buf) {
		flight_end(h, b);
		return h5_err_set(H5_ERR_NOMEM, "out of memory");
	}
	rc = get_range(h, &r, off, buf, (size_t)(end - off));
	/* gone from the server after the mount: an I/O error like any other
	 * (only at open does a 404 mean "no such file") */
	if (rc == H5_ERR_NOTFOUND) {
		char msg[512];

		snprintf(msg, sizeof(msg), "%s", h5_err_msg());
		rc = h5_err_set(H5_ERR_IO, "%s", msg);
	}
	if (rc == 0) {
		pthread_mutex_lock(&h->mu);
		for (uint64_t i = 0; i < n; i++)
			slot_put(h, b + i, buf + i * BLOCK);
		pthread_mutex_unlock(&h->mu);
	}
	free(buf);
	flight_end(h, b);
	return rc;
}

static int http_read(h5_source *s, uint64_t off, void *out, size_t len)
{
	http_source *h = (http_source *)s;
	uint8_t *dst = out;
	uint64_t end, last;
	unsigned ra;

	if (len == 0)
		return 0;
	if (h5_add_overflow(off, len, &end) || end > s->size)
		return h5_err_set(H5_ERR_FORMAT, "unexpected end of file at 0x%llx", (unsigned long long)s->size);
	last = (end - 1) / BLOCK;
	for (uint64_t b = off / BLOCK; b <= last; b++) {
		uint64_t bstart = b * BLOCK;
		size_t from = off > bstart ? (size_t)(off - bstart) : 0;
		size_t to = end - bstart < BLOCK ? (size_t)(end - bstart) : BLOCK;
		blk *v;

		pthread_mutex_lock(&h->mu);
		v = slot_find(h, b);
		if (v) {
			memcpy(dst, v->p + from, to - from);
			pthread_mutex_unlock(&h->mu);
			dst += to - from;
			continue;
		}
		/* another thread fetches it (the kernel's parallel read-ahead):
		 * wait for that instead of asking twice */
		if (in_flight(h, b) || h->ninflight == POOL) {
			pthread_cond_wait(&h->landed, &h->mu);
			pthread_mutex_unlock(&h->mu);
			b--;
			continue;
		}
		/* a miss: this block, the rest of the read that is missing too,
		 * and the read-ahead, in one request (never more than half the
		 * cache, so the blocks this read needs stay) */
		/* sequential: the block before is here or on its way (the
		 * kernel's parallel read-ahead reads out of order); a jump
		 * resets the read-ahead */
		if (b > 0 && (in_flight(h, b - 1) || slot_find(h, b - 1)))
			h->ra = h->ra * 2 > RA_MAX ? RA_MAX : h->ra * 2;
		else
			h->ra = 1;
		ra = h->ra;
		uint64_t want = last - b + 1 > ra ? last - b + 1 : ra;
		uint64_t n = 1, nblocks = (s->size + BLOCK - 1) / BLOCK;

		if (want > h->nslots / 2)
			want = h->nslots / 2 ? h->nslots / 2 : 1;
		while (n < want && b + n < nblocks && !slot_find(h, b + n) && !in_flight(h, b + n))
			n++;
		h->inflight[h->ninflight].b = b;
		h->inflight[h->ninflight++].n = n;
		pthread_mutex_unlock(&h->mu);
		int rc = fetch_blocks(h, b, n);

		if (rc < 0)
			return rc;
		b--; /* now cached: copy it on the next turn */
	}
	return 0;
}

static int http_size(h5_source *s, uint64_t *out)
{
	*out = s->size;
	return 0;
}

static int http_fd(const h5_source *s)
{
	(void)s;
	return -1; /* no splicing: bytes come from the cache */
}

static void http_close(h5_source *s)
{
	http_source *h = (http_source *)s;

	if (!h)
		return;
	for (unsigned i = 0; i < h->npool; i++)
		curl_easy_cleanup(h->pool[i]);
	if (h->share)
		curl_share_cleanup(h->share);
	for (int i = 0; i < CURL_LOCK_DATA_LAST; i++)
		pthread_mutex_destroy(&h->share_mu[i]);
	pthread_mutex_destroy(&h->mu);
	pthread_cond_destroy(&h->landed);
	if (h->slots)
		for (unsigned i = 0; i < h->nslots; i++)
			free(h->slots[i].p);
	free(h->slots);
	free(h->url);
	free(h->name);
	free(h->etag);
	free(h->userpwd);
	free(h->sigv4);
	free(h->token_hdr);
	free(h);
}

static const h5_source_ops http_ops = {
	.name = "http",
	.read = http_read,
	.size = http_size,
	.fd = http_fd,
	.close = http_close,
};

/* The first request: FIRST bytes (or the whole object), the size and the
 * ETag. */
static int first_fetch(http_source *h)
{
	uint8_t *buf = malloc(FIRST);
	reply r;
	int rc;

	if (!buf)
		return h5_err_set(H5_ERR_NOMEM, "out of memory");
	rc = get_range(h, &r, 0, buf, FIRST);
	if (rc == H5_ERR_FORMAT) /* 416 at 0: an empty object */
		rc = h5_err_set(H5_ERR_NOTHDF5, "%s: empty object", h->name);
	if (rc == 0 && r.cr_total == 0)
		rc = h5_err_set(H5_ERR_IO, "%s: no object size in Content-Range", h->name);
	if (rc == 0) {
		h->base.size = r.cr_total;
		if (r.etag[0] && !(h->etag = strdup(r.etag)))
			rc = h5_err_set(H5_ERR_NOMEM, "out of memory");
	}
	if (rc == 0) {
		pthread_mutex_lock(&h->mu);
		for (uint64_t b = 0; b * BLOCK < r.got && b < h->nslots / 2; b++)
			slot_put(h, b, buf + b * BLOCK);
		pthread_mutex_unlock(&h->mu);
	}
	free(buf);
	return rc;
}

int http_source_open(h5_source **out, const char *url, const char *name, const http_auth *auth,
		     const h5_source_opts *opts)
{
	http_source *h;
	size_t budget;
	int rc = 0;

	*out = NULL;
	if (opts->writable)
		return h5_err_set(H5_ERR_ROFS, "%s: remote files are read-only", name);
	pthread_once(&global_once, global_init);
	h = calloc(1, sizeof(*h));
	if (!h)
		return h5_err_set(H5_ERR_NOMEM, "out of memory");
	h->base.ops = &http_ops;
	pthread_mutex_init(&h->mu, NULL);
	pthread_cond_init(&h->landed, NULL);
	for (int i = 0; i < CURL_LOCK_DATA_LAST; i++)
		pthread_mutex_init(&h->share_mu[i], NULL);
	h->retries = opts->retries ? opts->retries : DEFAULT_RETRIES;
	h->timeout_s = opts->timeout_s ? (long)opts->timeout_s : DEFAULT_TIMEOUT;
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
	/* the remote blocks get a quarter of the cache budget (decoded chunks
	 * and metadata live in the engine's cache), at least 2 * FIRST */
	budget = (opts->cache_bytes ? opts->cache_bytes : H5_DEFAULT_CACHE_BYTES) / 4;
	if (budget < 2 * FIRST)
		budget = 2 * FIRST;
	h->nslots = (unsigned)(budget / BLOCK);
	h->slots = calloc(h->nslots, sizeof(*h->slots));
	if (!h->slots)
		goto nomem;
	for (unsigned i = 0; i < h->nslots; i++) {
		h->slots[i].idx = UINT64_MAX;
		if (!(h->slots[i].p = malloc(BLOCK)))
			goto nomem;
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
	rc = first_fetch(h);
	if (rc < 0)
		goto out;
	*out = &h->base;
	return 0;
nomem:
	rc = h5_err_set(H5_ERR_NOMEM, "out of memory");
out:
	http_close(&h->base);
	return rc;
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
};
