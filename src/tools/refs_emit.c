/*
 * refs_emit.c - the kerchunk version 1 document (refs_emit.h): keys and
 * values as JSON strings, references as [url, offset, length], small
 * chunks inlined as "base64:..." (kerchunk's forms, which fsspec's
 * ReferenceFileSystem reads).
 */
#define _GNU_SOURCE /* fwrite_unlocked */
#ifdef HAVE_CONFIG_H
#include <config.h>
#endif

#include "refs_emit.h"
#include "h5util.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void rd_begin(refs_doc *w)
{
	memset(w, 0, sizeof(*w));
	w->first = 1;
	printf("{\"version\": 1, \"refs\": {");
}

int rd_end(refs_doc *w)
{
	printf("\n}}\n");
	free(w->url);
	free(w->url_json);
	w->url = w->url_json = NULL;
	return fflush(stdout) != 0 || ferror(stdout) ? -1 : 0;
}

/* Whether s is written in JSON as it is (no quote, backslash or control
 * byte, and UTF-8). */
static int plain(const char *s, size_t n)
{
	int high = 0;

	for (size_t i = 0; i < n; i++) {
		unsigned char c = (unsigned char)s[i];

		if (c == '"' || c == '\\' || c < 0x20 || c == 0x7f)
			return 0;
		high |= c >= 0x80;
	}
	return !high || h5_utf8_valid(s, n);
}

/* stdout is written by one thread at a time (the combination writes
 * after its workers are done): no lock per call. */
static void out(const char *p, size_t n)
{
	fwrite_unlocked(p, 1, n, stdout);
}

static void outs(const char *p)
{
	out(p, strlen(p));
}

static int put_key(refs_doc *w, const char *prefix, const char *name)
{
	struct jb b = { 0 };
	size_t pl = strlen(prefix), nl = strlen(name);
	char *k;

	outs(w->first ? "\n    \"" : ",\n    \"");
	w->first = 0;
	if (plain(prefix, pl) && plain(name, nl)) {
		out(prefix, pl);
		out(name, nl);
		out("\": ", 3);
		return 0;
	}
	if (!(k = malloc(pl + nl + 1)))
		return -1;
	memcpy(k, prefix, pl);
	memcpy(k + pl, name, nl + 1);
	jb_str(&b, k, pl + nl);
	jb_done(&b);
	free(k);
	/* the opening quote is out already */
	outs(b.nomem ? "\"" : b.p + 1);
	out(": ", 2);
	free(b.p);
	return b.nomem ? -1 : 0;
}

/* v's decimal digits written backwards ending before end (up to 20 of
 * them, no terminator): returns where they start. */
static char *u64_digits(char *end, uint64_t v)
{
	do {
		*--end = (char)('0' + v % 10);
		v /= 10;
	} while (v);
	return end;
}

int rd_meta(refs_doc *w, const char *prefix, const char *name, const char *json)
{
	struct jb s = { 0 };

	jb_str(&s, json, strlen(json));
	jb_done(&s);
	if (s.nomem || put_key(w, prefix, name) < 0) {
		free(s.p);
		return -1;
	}
	out(s.p, s.len);
	free(s.p);
	return 0;
}

int rd_ref(refs_doc *w, const char *prefix, const char *key, const char *url, uint64_t off, uint64_t size)
{
	if (!w->url || strcmp(w->url, url) != 0) {
		struct jb u = { 0 };

		jb_str(&u, url, strlen(url));
		jb_done(&u);
		free(w->url);
		free(w->url_json);
		w->url = strdup(url);
		w->url_json = u.p;
		w->url_json_len = u.len;
		if (!w->url || !w->url_json) {
			free(w->url);
			free(w->url_json);
			w->url = w->url_json = NULL;
			return -1;
		}
	}
	{
		/* ", OFF, SIZE]" made at the end of t, then one write: a
		 * document holds 50,000 of them at 1,000 files (bench/README.md) */
		char t[2 * 22 + 8], *p = t + sizeof(t);

		*--p = ']';
		p = u64_digits(p, size);
		*--p = ' ';
		*--p = ',';
		p = u64_digits(p, off);
		*--p = ' ';
		*--p = ',';
		if (put_key(w, prefix, key) < 0)
			return -1;
		out("[", 1);
		out(w->url_json, w->url_json_len);
		out(p, (size_t)(t + sizeof(t) - p));
	}
	return 0;
}

int rd_inline(refs_doc *w, const char *prefix, const char *key, const uint8_t *p, size_t n)
{
	struct jb b = { 0 };

	jb_printf(&b, "\"base64:");
	jb_base64(&b, p, n);
	jb_printf(&b, "\"");
	jb_done(&b);
	if (b.nomem || put_key(w, prefix, key) < 0) {
		free(b.p);
		return -1;
	}
	out(b.p, b.len);
	free(b.p);
	return 0;
}

void rd_chunk_key(char *key, size_t cap, const uint64_t *idx, unsigned n)
{
	size_t len = 0;

	if (cap < 2)
		return;
	key[0] = '0';   /* a scalar's one chunk */
	key[1] = 0;
	for (unsigned i = 0; i < n; i++) {
		char t[24], *d = u64_digits(t + sizeof(t), idx[i]);
		size_t dl = (size_t)(t + sizeof(t) - d);

		if (len + (i > 0) + dl + 1 > cap)
			break;
		if (i)
			key[len++] = '.';
		memcpy(key + len, d, dl);
		len += dl;
		key[len] = 0;
	}
}

void rd_zarray(struct jb *b, const char *dtype, const char *filters, unsigned rank, const uint64_t *shape,
	       const uint64_t *chunks, const char *fill)
{
	jb_printf(b, "{\"zarr_format\": 2, \"order\": \"C\", \"dtype\": %s, \"compressor\": null, \"filters\": %s",
		  dtype, filters);
	jb_printf(b, ", \"shape\": [");
	for (unsigned i = 0; i < rank; i++)
		jb_printf(b, "%s%" PRIu64, i ? ", " : "", shape[i]);
	jb_printf(b, "], \"chunks\": [");
	for (unsigned i = 0; i < rank; i++)
		jb_printf(b, "%s%" PRIu64, i ? ", " : "", chunks[i]);
	jb_printf(b, "], \"fill_value\": %s}", fill);
}
