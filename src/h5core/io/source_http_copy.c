/* source_http_copy.c - a server that answers ranged GETs with the whole
 * object (python3 -m http.server, some appliances): the object streamed
 * once into an unlinked temporary file and read from there (issue 33
 * item 5; source_http.c falls back to this when its first fetch met a
 * 200). */
#define _GNU_SOURCE
#include <config.h>
#include "source_http.h"
#include "source_http_int.h"
#include "source_impl.h"
#include "base.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* ---- servers without Range: the object downloaded once --------------------
 * A server that answers every ranged GET with the whole object (python3 -m
 * http.server, some appliances) would cost a whole download per read. It is
 * streamed once into an unlinked temporary file ($TMPDIR, else /var/tmp:
 * disk rather than a tmpfs), at most max bytes, and served from there: a
 * source of its own with no descriptor for FUSE (a remote FILE's related
 * files are still looked for on the server) and no change detection (the
 * copy is what was mounted). */

typedef struct http_copy {
	h5_source base;
	int fd;
} http_copy;

typedef struct dl_sink {
	int fd;
	uint64_t got, max;
	bool over;
	int err;                /* errno of a failed write */
	int64_t mtime;          /* Last-Modified (seconds; 0: none) */
} dl_sink;

static size_t on_dl_body(char *p, size_t sz, size_t n, void *u)
{
	dl_sink *d = u;
	size_t len = sz * n;

	if (len > d->max - d->got) {
		d->over = true;
		return 0;
	}
	for (size_t done = 0; done < len;) {
		ssize_t w = pwrite(d->fd, p + done, len - done, (off_t)(d->got + done));

		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0) {
			d->err = w < 0 ? errno : EIO;
			return 0;
		}
		done += (size_t)w;
	}
	d->got += len;
	return len;
}

static size_t on_dl_header(char *p, size_t sz, size_t n, void *u)
{
	(void)p; (void)u;
	return sz * n;
}

static int copy_read(h5_source *s, uint64_t off, void *buf, size_t len)
{
	http_copy *c = (http_copy *)s;
	size_t done = 0;

	if (off > c->base.size || len > c->base.size - off)
		return h5_err_set(H5_ERR_FORMAT, "unexpected end of file at 0x%llx", (unsigned long long)c->base.size);
	while (done < len) {
		ssize_t n = pread(c->fd, (uint8_t *)buf + done, len - done, (off_t)(off + done));

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return h5_err_set(H5_ERR_IO, "reading the downloaded copy at 0x%llx: %s",
					  (unsigned long long)(off + done), n < 0 ? strerror(errno) : "short read");
		done += (size_t)n;
	}
	return 0;
}

static int copy_size(h5_source *s, uint64_t *out)
{
	*out = s->size;
	return 0;
}

static int copy_fd(const h5_source *s)
{
	(void)s;
	return -1;
}

static void copy_close(h5_source *s)
{
	http_copy *c = (http_copy *)s;

	if (c->fd >= 0)
		close(c->fd);
	free(c);
}

static const h5_source_ops http_copy_ops = {
	.name = H5_SOURCE_HTTP_COPY,
	.read = copy_read,
	.size = copy_size,
	.fd = copy_fd,
	.close = copy_close,
};

/* One plain GET of the whole object into d (retried from the start). */
static int http_download(http_transport *h, dl_sink *d)
{
	for (unsigned attempt = 0;; attempt++) {
		struct curl_slist *hd = NULL;
		char cerr[CURL_ERROR_SIZE] = "";
		long status = 0;
		CURLcode cc;
		CURL *c = http_handle_get(h);

		if (!c)
			return h5_err_set(H5_ERR_NOMEM, "%s: cannot create a curl handle", h->name);
		d->got = 0;
		d->over = false;
		d->err = 0;
		if (ftruncate(d->fd, 0) < 0) {
			curl_easy_cleanup(c);
			return h5_err_set(H5_ERR_IO, "%s: temporary file: %s", h->name, strerror(errno));
		}
		if (h->sigv4)
			hd = curl_slist_append(hd, "x-amz-content-sha256: UNSIGNED-PAYLOAD");
		if (h->token_hdr)
			hd = curl_slist_append(hd, h->token_hdr);
		curl_easy_setopt(c, CURLOPT_URL, h->url);
		curl_easy_setopt(c, CURLOPT_HTTPHEADER, hd);
		curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_dl_body);
		curl_easy_setopt(c, CURLOPT_WRITEDATA, d);
		curl_easy_setopt(c, CURLOPT_HEADERFUNCTION, on_dl_header);
		curl_easy_setopt(c, CURLOPT_ERRORBUFFER, cerr);
		/* a whole object takes longer than one request may: what times
		 * out is a stall (under 1 byte/s for -o timeout seconds) */
		curl_easy_setopt(c, CURLOPT_TIMEOUT, 0L);
		curl_easy_setopt(c, CURLOPT_LOW_SPEED_LIMIT, 1L);
		curl_easy_setopt(c, CURLOPT_LOW_SPEED_TIME, h->timeout_s);
		/* Last-Modified: FILE's mtime, as a ranged server's first reply
		 * gives it (issue 47: every object showed mtime 0) */
		curl_easy_setopt(c, CURLOPT_FILETIME, 1L);
		cc = curl_easy_perform(c);
		curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &status);
		{
			curl_off_t ft = -1;

			if (curl_easy_getinfo(c, CURLINFO_FILETIME_T, &ft) == CURLE_OK && ft > 0)
				d->mtime = (int64_t)ft;
		}
		curl_easy_cleanup(c);   /* its options are not a pooled handle's */
		curl_slist_free_all(hd);
		if (d->over)
			return h5_err_set(H5_ERR_IO, "%s: the server ignores Range requests, and the object is "
					  "larger than the %llu MiB it may be downloaded into (-o cache_max=MiB)", h->name,
					  (unsigned long long)(d->max >> 20));
		if (d->err)
			return h5_err_set(d->err == ENOSPC || d->err == EDQUOT ? H5_ERR_NOSPC : H5_ERR_IO,
					  "%s: downloading into a temporary file: %s", h->name, strerror(d->err));
		if (cc == CURLE_OK && status == 200)
			return 0;
		if (cc == CURLE_OK && status == 404)
			return h5_err_set(H5_ERR_NOTFOUND, "%s: not found (HTTP 404)", h->name);
		if (!http_transient(cc, status) || attempt >= h->retries)
			return h5_err_set(H5_ERR_IO, "%s: downloading: %s", h->name,
					  cc == CURLE_OK ? "unexpected HTTP status" : cerr[0] ? cerr : curl_easy_strerror(cc));
		struct timespec ts = { 0, 100000000L << (attempt < 3 ? attempt : 3) };

		nanosleep(&ts, NULL);
	}
}

int http_copy_open(h5_source **out, http_transport *h, uint64_t max)
{
	const char *dir = getenv("TMPDIR");
	char *path = NULL;
	http_copy *c;
	dl_sink d = { .fd = -1, .max = max };
	int rc;

	*out = NULL;
	if (!dir || !*dir)
		dir = "/var/tmp";
	if (asprintf(&path, "%s/h5fs-download-XXXXXX", dir) < 0)
		return h5_err_set(H5_ERR_NOMEM, "out of memory");
	d.fd = mkostemp(path, O_CLOEXEC);
	if (d.fd < 0) {
		rc = h5_err_set(H5_ERR_IO, "%s: the server ignores Range requests, and no temporary file to "
				"download it into: %s: %s", h->name, path, strerror(errno));
		free(path);
		return rc;
	}
	unlink(path);   /* gone with the last descriptor: nothing left behind */
	free(path);
	rc = http_download(h, &d);
	if (rc < 0) {
		close(d.fd);
		return rc;
	}
	c = calloc(1, sizeof(*c));
	if (!c) {
		close(d.fd);
		return h5_err_set(H5_ERR_NOMEM, "out of memory");
	}
	c->base.ops = &http_copy_ops;
	c->base.size = d.got;
	c->base.mtime = d.mtime;
	c->fd = d.fd;
	*out = &c->base;
	return 0;
}

/* A transport for url, not opened yet (NULL and the error on failure). */
