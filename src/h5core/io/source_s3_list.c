/* source_s3_list.c - one directory level of an S3 prefix (issue 25 item 3):
 * ListObjectsV2 (AWS S3 API Reference, "ListObjectsV2": GET
 * /?list-type=2&delimiter=/&prefix=P, at most 1000 keys a page, the
 * next page asked with continuation-token=NextContinuationToken while
 * IsTruncated is true) signed as object reads are (source_s3.c).
 *
 * The reply is a ListBucketResult XML document; h5_s3_list_decode()
 * parses one page on (buf, len), without the transport, the way the
 * format decoders do: every read bounds checked, entities decoded
 * (&amp; &lt; &gt; &quot; &apos; and numeric references: keys may hold
 * any UTF-8), nesting and text lengths limited, and a document cut short
 * or not a listing refused with a message, never half-read. Only what a
 * listing needs is understood: elements, attributes (skipped), comments,
 * processing instructions and CDATA; a DOCTYPE (entity definitions) is
 * refused. */
#define _GNU_SOURCE /* asprintf */
#include <config.h>
#include "source.h"
#include "base.h"
#include "strbuf.h"
#include "source_impl.h"

#include <stdio.h>
#include <stdlib.h>
#include <pthread.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#define XML_DEPTH 8               /* ListBucketResult/Contents/Key is 3 */
#define XML_TEXT_MAX (64u << 10)  /* S3 keys are at most 1024 bytes */

/* ---- the decoder -------------------------------------------------------- */

/* Where the parser is: the open elements, by name. */
typedef struct xml_state {
	const char *buf;
	size_t len, pos;
	struct { const char *name; size_t nlen; size_t text; bool child; } open[XML_DEPTH];
	unsigned depth;
	bool root_closed;
	int root;                    /* 1 ListBucketResult, 2 Error */
	/* the entry being read (inside Contents or CommonPrefixes) */
	char *key, *etag, *lastmod, *size;
	/* <Error> */
	char *code, *message;
} xml_state;

static bool name_is(const char *n, size_t nlen, const char *want)
{
	return nlen == strlen(want) && memcmp(n, want, nlen) == 0;
}

static bool at(const xml_state *x, const char *s)
{
	size_t n = strlen(s);

	return x->len - x->pos >= n && memcmp(x->buf + x->pos, s, n) == 0;
}

/* Moves past the next occurrence of end; false if there is none. */
static bool skip_past(xml_state *x, const char *end)
{
	size_t n = strlen(end);

	for (size_t i = x->pos; i + n <= x->len; i++)
		if (memcmp(x->buf + i, end, n) == 0) {
			x->pos = i + n;
			return true;
		}
	return false;
}

static void put_utf8(char *o, size_t *k, uint32_t c)
{
	if (c < 0x80) {
		o[(*k)++] = (char)c;
	} else if (c < 0x800) {
		o[(*k)++] = (char)(0xC0 | c >> 6);
		o[(*k)++] = (char)(0x80 | (c & 0x3F));
	} else if (c < 0x10000) {
		o[(*k)++] = (char)(0xE0 | c >> 12);
		o[(*k)++] = (char)(0x80 | (c >> 6 & 0x3F));
		o[(*k)++] = (char)(0x80 | (c & 0x3F));
	} else {
		o[(*k)++] = (char)(0xF0 | c >> 18);
		o[(*k)++] = (char)(0x80 | (c >> 12 & 0x3F));
		o[(*k)++] = (char)(0x80 | (c >> 6 & 0x3F));
		o[(*k)++] = (char)(0x80 | (c & 0x3F));
	}
}

/* One entity reference at s[0] == '&' (n bytes left): its character
 * written at o[*k], *used the bytes it took. A character reference
 * names at most 4 UTF-8 bytes, never more than the reference's own
 * length ("&#1;" is 4), so the output never outgrows the input. */
static int entity(char *o, size_t *k, const char *s, size_t n, size_t *used)
{
	static const struct { const char *name; char c; } named[] = {
		{ "&amp;", '&' }, { "&lt;", '<' }, { "&gt;", '>' }, { "&quot;", '"' }, { "&apos;", '\'' },
	};
	const char *semi = memchr(s, ';', n < 16 ? n : 16);
	uint32_t c = 0;

	for (size_t i = 0; i < sizeof(named) / sizeof(named[0]); i++)
		if (n >= strlen(named[i].name) && memcmp(s, named[i].name, strlen(named[i].name)) == 0) {
			o[(*k)++] = named[i].c;
			*used = strlen(named[i].name);
			return 0;
		}
	if (!semi || n < 4 || s[1] != '#')
		return h5_err_set(H5_ERR_FORMAT, "S3 listing: unknown entity \"%.*s\"", (int)(semi ? semi - s + 1 : 1),
				  s);
	bool hex = s[2] == 'x';
	const char *d = s + (hex ? 3 : 2);

	if (d == semi)
		return h5_err_set(H5_ERR_FORMAT, "S3 listing: empty character reference");
	for (; d < semi; d++) {
		int v = *d >= '0' && *d <= '9' ? *d - '0'
			: hex && *d >= 'a' && *d <= 'f' ? *d - 'a' + 10
			: hex && *d >= 'A' && *d <= 'F' ? *d - 'A' + 10 : -1;

		if (v < 0 || c > 0x10FFFF)
			return h5_err_set(H5_ERR_FORMAT, "S3 listing: bad character reference \"%.*s\"",
					  (int)(semi - s + 1), s);
		c = c * (hex ? 16 : 10) + (uint32_t)v;
	}
	/* NUL cannot be in a name; surrogates are not characters */
	if (c == 0 || c > 0x10FFFF || (c >= 0xD800 && c <= 0xDFFF))
		return h5_err_set(H5_ERR_FORMAT, "S3 listing: character reference \"%.*s\" names no character",
				  (int)(semi - s + 1), s);
	put_utf8(o, k, c);
	*used = (size_t)(semi - s) + 1;
	return 0;
}

/* The text buf[from, to) with entities and CDATA sections decoded, as a
 * new string. */
static int text_decode(char **out, const char *buf, size_t from, size_t to)
{
	size_t k = 0;
	char *o;
	int rc = 0;

	*out = NULL;
	if (to - from > XML_TEXT_MAX)
		return h5_err_set(H5_ERR_LIMIT, "S3 listing: a value of %zu bytes (at most %u)", to - from,
				  XML_TEXT_MAX);
	o = malloc(to - from + 1);
	if (!o)
		return h5_err_set(H5_ERR_NOMEM, "out of memory");
	for (size_t i = from; i < to;) {
		if (buf[i] == '&') {
			size_t used = 0;

			rc = entity(o, &k, buf + i, to - i, &used);
			if (rc < 0)
				goto out;
			i += used;
		} else if (buf[i] == '<') {
			/* the tokenizer saw these whole inside [from, to): a
			 * comment or processing instruction (no text), or CDATA
			 * (its text as is) */
			const char *p = buf + i, *end = buf + to;
			bool cdata = (size_t)(end - p) >= 9 && memcmp(p, "<![CDATA[", 9) == 0;
			bool comment = (size_t)(end - p) >= 4 && memcmp(p, "<!--", 4) == 0;
			const char *stop = cdata ? "]]>" : comment ? "-->" : "?>";
			size_t skip = cdata ? 9 : comment ? 4 : 2;
			const char *e = memmem(p + skip, (size_t)(end - p) - skip, stop, strlen(stop));

			if (!e || (!cdata && !comment && p[1] != '?')) {
				rc = h5_err_set(H5_ERR_FORMAT, "S3 listing: markup inside a value");
				goto out;
			}
			if (cdata) {
				memcpy(o + k, p + 9, (size_t)(e - (p + 9)));
				k += (size_t)(e - (p + 9));
			}
			i = (size_t)(e - buf) + strlen(stop);
		} else if (buf[i] == 0) {
			rc = h5_err_set(H5_ERR_FORMAT, "S3 listing: a NUL byte in a value");
			goto out;
		} else {
			o[k++] = buf[i++];
		}
	}
	o[k] = 0;
	*out = o;
	o = NULL;
out:
	free(o);
	return rc;
}

/* "2026-11-23T07:55:42.123Z" as nanoseconds since the epoch (UTC, by
 * arithmetic: no time zone of the process involved). */
static int iso_time(int64_t *out, const char *s)
{
	int y, mo, d, h, mi, sec, n = 0;
	int64_t frac = 0, scale = 100000000;

	if (sscanf(s, "%4d-%2d-%2dT%2d:%2d:%2d%n", &y, &mo, &d, &h, &mi, &sec, &n) != 6 || n != 19 ||
	    mo < 1 || mo > 12 || d < 1 || d > 31 || h > 23 || mi > 59 || sec > 60 || h < 0 || mi < 0 || sec < 0)
		goto bad;
	s += n;
	if (*s == '.') {
		s++;
		if (*s < '0' || *s > '9')
			goto bad;
		for (; *s >= '0' && *s <= '9'; s++, scale /= 10)
			frac += scale ? (*s - '0') * scale : 0;
	}
	if (strcmp(s, "Z") != 0 && strcmp(s, "+00:00") != 0)
		goto bad;
	/* days from civil (proleptic Gregorian), after H. Hinnant */
	int yy = y - (mo <= 2);
	int era = (yy >= 0 ? yy : yy - 399) / 400;
	unsigned yoe = (unsigned)(yy - era * 400);
	unsigned doy = (unsigned)((153 * (mo + (mo > 2 ? -3 : 9)) + 2) / 5 + d - 1);
	unsigned doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
	int64_t days = (int64_t)era * 146097 + (int64_t)doe - 719468;

	*out = ((days * 86400 + h * 3600 + mi * 60 + sec) * 1000000000LL) + frac;
	return 0;
bad:
	return h5_err_set(H5_ERR_FORMAT, "S3 listing: LastModified \"%.40s\" is not an ISO 8601 UTC time", s);
}

static int push(h5_s3_listing *l, const char *name, size_t nlen, bool is_prefix, uint64_t size, int64_t mtime_ns,
		const char *etag)
{
	h5_s3_entry *e;

	if (l->n == l->cap) {
		size_t cap = l->cap ? l->cap * 2 : 64;
		h5_s3_entry *v = realloc(l->v, cap * sizeof(*v));

		if (!v)
			return h5_err_set(H5_ERR_NOMEM, "out of memory");
		l->v = v;
		l->cap = cap;
	}
	e = &l->v[l->n];
	memset(e, 0, sizeof(*e));
	e->name = strndup(name, nlen);
	e->etag = etag ? strdup(etag) : NULL;
	if (!e->name || (etag && !e->etag)) {
		free(e->name);
		free(e->etag);
		return h5_err_set(H5_ERR_NOMEM, "out of memory");
	}
	e->is_prefix = is_prefix;
	e->size = size;
	e->mtime_ns = mtime_ns;
	l->n++;
	return 0;
}

/* A Contents element read whole: its entry, named relative to prefix. A
 * key equal to the prefix (the "folder" object some tools create) is no
 * entry of its own. */
static int contents_done(xml_state *x, h5_s3_listing *l, const char *prefix)
{
	size_t plen = strlen(prefix);
	uint64_t size = 0;
	int64_t mtime = 0;
	int rc;

	if (!x->key || !x->size)
		return h5_err_set(H5_ERR_FORMAT, "S3 listing: an object without %s", x->key ? "Size" : "Key");
	if (strncmp(x->key, prefix, plen) != 0)
		return h5_err_set(H5_ERR_FORMAT, "S3 listing: key \"%s\" is outside the prefix \"%s\"", x->key, prefix);
	if (!x->size[0])
		goto badsize;
	for (const char *c = x->size; *c; c++)
		if (*c < '0' || *c > '9' || h5_mul_overflow(size, 10, &size) || h5_add_overflow(size, (uint64_t)(*c - '0'), &size))
			goto badsize;
	if (x->lastmod) {
		rc = iso_time(&mtime, x->lastmod);
		if (rc < 0)
			return rc;
	}
	if (!x->key[plen])
		return 0;
	/* the delimiter "/" keeps deeper keys out of Contents: a server that
	 * ignored it would list the whole tree as one level */
	if (strchr(x->key + plen, '/'))
		return h5_err_set(H5_ERR_FORMAT, "S3 listing: key \"%s\" is below a '/' past the prefix "
				  "(the server ignored the delimiter)", x->key);
	return push(l, x->key + plen, strlen(x->key + plen), false, size, mtime, x->etag ? x->etag : "");
badsize:
	return h5_err_set(H5_ERR_FORMAT, "S3 listing: key \"%s\": Size \"%.30s\" is not a 64-bit count", x->key,
			  x->size);
}

/* A CommonPrefixes/Prefix: PREFIX + NAME + "/" is the folder NAME. An
 * empty NAME ("a//") cannot be a directory entry and is left out. */
static int prefix_done(xml_state *x, h5_s3_listing *l, const char *prefix)
{
	size_t plen = strlen(prefix), n;

	if (!x->key)
		return h5_err_set(H5_ERR_FORMAT, "S3 listing: CommonPrefixes without a Prefix");
	n = strlen(x->key);
	if (strncmp(x->key, prefix, plen) != 0 || n <= plen || x->key[n - 1] != '/')
		return h5_err_set(H5_ERR_FORMAT, "S3 listing: common prefix \"%s\" is not \"%s\"NAME/", x->key, prefix);
	if (memchr(x->key + plen, '/', n - plen - 1))
		return h5_err_set(H5_ERR_FORMAT, "S3 listing: common prefix \"%s\" spans two levels", x->key);
	if (n - plen - 1 == 0)
		return 0;
	return push(l, x->key + plen, n - plen - 1, true, 0, 0, NULL);
}

static void entry_clear(xml_state *x)
{
	free(x->key);
	free(x->etag);
	free(x->lastmod);
	free(x->size);
	x->key = x->etag = x->lastmod = x->size = NULL;
}

/* Keeps text as *slot (the last one wins if an element repeats). */
static void keep(char **slot, char **text)
{
	free(*slot);
	*slot = *text;
	*text = NULL;
}

/* The element open[x->depth] (just closed) with its text buf[from, to). */
static int element_done(xml_state *x, h5_s3_listing *l, const char *prefix, size_t from, size_t to)
{
	unsigned d = x->depth;       /* the closed element was open[d] */
	const char *n = x->open[d].name;
	size_t nl = x->open[d].nlen;
	char *text = NULL;
	int rc = 0;

	if (d == 0)
		return 0;
	const char *up = x->open[d - 1].name;
	size_t upl = x->open[d - 1].nlen;

	if (x->root == 1 && d == 1) {
		if (name_is(n, nl, "Contents"))
			rc = contents_done(x, l, prefix);
		else if (name_is(n, nl, "CommonPrefixes"))
			rc = prefix_done(x, l, prefix);
		if (name_is(n, nl, "Contents") || name_is(n, nl, "CommonPrefixes")) {
			entry_clear(x);
			return rc;
		}
	}
	if (x->open[d].child)
		return 0;
	bool want = (x->root == 1 && d == 1 && (name_is(n, nl, "IsTruncated") || name_is(n, nl, "NextContinuationToken"))) ||
		    (x->root == 1 && d == 2 && name_is(up, upl, "Contents") &&
		     (name_is(n, nl, "Key") || name_is(n, nl, "Size") || name_is(n, nl, "LastModified") ||
		      name_is(n, nl, "ETag"))) ||
		    (x->root == 1 && d == 2 && name_is(up, upl, "CommonPrefixes") && name_is(n, nl, "Prefix")) ||
		    (x->root == 2 && d == 1 && (name_is(n, nl, "Code") || name_is(n, nl, "Message")));

	if (!want)
		return 0;
	rc = text_decode(&text, x->buf, from, to);
	if (rc < 0)
		return rc;
	if (x->root == 2)
		keep(name_is(n, nl, "Code") ? &x->code : &x->message, &text);
	else if (d == 1 && name_is(n, nl, "IsTruncated")) {
		if (strcmp(text, "true") && strcmp(text, "false"))
			rc = h5_err_set(H5_ERR_FORMAT, "S3 listing: IsTruncated is \"%.20s\"", text);
		l->truncated = strcmp(text, "true") == 0;
	} else if (d == 1)
		keep(&l->next_token, &text);
	else if (name_is(n, nl, "Key") || name_is(n, nl, "Prefix"))
		keep(&x->key, &text);
	else if (name_is(n, nl, "Size"))
		keep(&x->size, &text);
	else if (name_is(n, nl, "LastModified"))
		keep(&x->lastmod, &text);
	else
		keep(&x->etag, &text);
	free(text);
	return rc;
}

/* A start or end tag at x->pos ('<'), or a comment, processing
 * instruction or CDATA section. *text_end: where the text before it
 * ended (for the element it closes). */
static int tag(xml_state *x, h5_s3_listing *l, const char *prefix)
{
	size_t start = x->pos;

	if (at(x, "<!--"))
		return skip_past(x, "-->") ? 0 : h5_err_set(H5_ERR_FORMAT, "S3 listing: truncated (a comment)");
	if (at(x, "<?"))
		return skip_past(x, "?>") ? 0 : h5_err_set(H5_ERR_FORMAT, "S3 listing: truncated (<?...)");
	if (at(x, "<![CDATA[")) {
		if (!x->depth)
			return h5_err_set(H5_ERR_FORMAT, "S3 listing: CDATA outside the document element");
		return skip_past(x, "]]>") ? 0 : h5_err_set(H5_ERR_FORMAT, "S3 listing: truncated (CDATA)");
	}
	if (at(x, "<!"))
		return h5_err_set(H5_ERR_FORMAT, "S3 listing: a DOCTYPE or declaration (not a listing)");
	bool close = at(x, "</");
	size_t p = x->pos + (close ? 2 : 1), nstart = p;

	while (p < x->len && x->buf[p] && !strchr(" \t\r\n/>", x->buf[p]))
		p++;
	if (p == nstart)
		return h5_err_set(H5_ERR_FORMAT, "S3 listing: a tag without a name at byte %zu", start);
	const char *name = x->buf + nstart;
	size_t nlen = p - nstart;
	/* the rest of the tag: attributes, quoted values may hold '>' */
	char quote = 0;

	while (p < x->len && (quote || x->buf[p] != '>')) {
		if (quote && x->buf[p] == quote)
			quote = 0;
		else if (!quote && (x->buf[p] == '"' || x->buf[p] == '\''))
			quote = x->buf[p];
		p++;
	}
	if (p >= x->len)
		return h5_err_set(H5_ERR_FORMAT, "S3 listing: truncated (inside a tag)");
	bool empty = !close && x->buf[p - 1] == '/';

	x->pos = p + 1;
	if (close) {
		if (!x->depth || x->open[x->depth - 1].nlen != nlen || memcmp(x->open[x->depth - 1].name, name, nlen) != 0)
			return h5_err_set(H5_ERR_FORMAT, "S3 listing: </%.*s> closes no open element",
					  (int)(nlen < 64 ? nlen : 64), name);
		x->depth--;
		int rc = element_done(x, l, prefix, x->open[x->depth].text, start);

		if (x->depth == 0)
			x->root_closed = true;
		return rc;
	}
	if (x->root_closed)
		return h5_err_set(H5_ERR_FORMAT, "S3 listing: an element after the document element");
	if (x->depth == XML_DEPTH)
		return h5_err_set(H5_ERR_LIMIT, "S3 listing: elements nested deeper than %d", XML_DEPTH);
	if (x->depth == 0) {
		x->root = name_is(name, nlen, "ListBucketResult") ? 1 : name_is(name, nlen, "Error") ? 2 : 0;
		if (!x->root)
			return h5_err_set(H5_ERR_FORMAT, "S3 listing: <%.*s> is not a ListBucketResult",
					  (int)(nlen < 64 ? nlen : 64), name);
	} else {
		x->open[x->depth - 1].child = true;
	}
	x->open[x->depth].name = name;
	x->open[x->depth].nlen = nlen;
	x->open[x->depth].text = x->pos;
	x->open[x->depth].child = false;
	x->depth++;
	if (empty) {
		x->depth--;
		int rc = element_done(x, l, prefix, x->pos, x->pos);

		if (x->depth == 0)
			x->root_closed = true;
		return rc;
	}
	return 0;
}

int h5_s3_list_decode(h5_s3_listing *l, const char *prefix, const void *buf, size_t len)
{
	xml_state x = { .buf = buf, .len = len };
	int rc = 0;

	l->truncated = 0;
	free(l->next_token);
	l->next_token = NULL;
	/* a UTF-8 byte order mark */
	if (at(&x, "\xEF\xBB\xBF"))
		x.pos = 3;
	while (x.pos < x.len) {
		const char *lt = memchr(x.buf + x.pos, '<', x.len - x.pos);
		size_t next = lt ? (size_t)(lt - x.buf) : x.len;

		/* outside the document element only white space */
		if (!x.depth)
			for (size_t i = x.pos; i < next; i++)
				if (!x.buf[i] || !strchr(" \t\r\n", x.buf[i])) {
					rc = h5_err_set(H5_ERR_FORMAT, "S3 listing: text outside the document "
							"element at byte %zu (not XML?)", i);
					goto out;
				}
		x.pos = next;
		if (!lt)
			break;
		rc = tag(&x, l, prefix);
		if (rc < 0)
			goto out;
	}
	if (!x.root_closed) {
		rc = h5_err_set(H5_ERR_FORMAT, "S3 listing: truncated (%s)",
				x.root ? "the document element is not closed" : "no document element");
		goto out;
	}
	if (x.root == 2) {
		bool nf = x.code && (!strcmp(x.code, "NoSuchBucket") || !strcmp(x.code, "NoSuchKey"));

		rc = h5_err_set(nf ? H5_ERR_NOTFOUND : H5_ERR_IO, "S3 error %s: %s", x.code ? x.code : "(no Code)",
				x.message ? x.message : "(no Message)");
		goto out;
	}
	if (l->truncated && (!l->next_token || !l->next_token[0]))
		rc = h5_err_set(H5_ERR_FORMAT, "S3 listing: IsTruncated without a NextContinuationToken");
out:
	entry_clear(&x);
	free(x.code);
	free(x.message);
	return rc;
}

static int entry_cmp(const void *a, const void *b)
{
	const h5_s3_entry *x = a, *y = b;
	int c = strcmp(x->name, y->name);

	return c ? c : x->is_prefix - y->is_prefix;
}

void h5_s3_listing_sort(h5_s3_listing *l)
{
	size_t k = 0;

	if (!l->n)
		return;
	if (l->n > 1)   /* (an empty listing: no array) */
		qsort(l->v, l->n, sizeof(l->v[0]), entry_cmp);
	for (size_t i = 1; i < l->n; i++) {
		if (entry_cmp(&l->v[k], &l->v[i]) == 0) {
			free(l->v[i].name);
			free(l->v[i].etag);
			continue;
		}
		l->v[++k] = l->v[i];
	}
	l->n = k + 1;
}

void h5_s3_listing_free(h5_s3_listing *l)
{
	if (!l)
		return;
	for (size_t i = 0; i < l->n; i++) {
		free(l->v[i].name);
		free(l->v[i].etag);
	}
	free(l->v);
	free(l->next_token);
	memset(l, 0, sizeof(*l));
}

int h5_name_has_suffix(const char *name, const char *suffixes)
{
	size_t n = strlen(name);

	if (!suffixes || !*suffixes)
		suffixes = H5_SUFFIXES_DEFAULT;
	for (const char *s = suffixes; *s;) {
		size_t k = strcspn(s, ":");

		if (k && n > k && strncasecmp(name + n - k, s, k) == 0)
			return 1;
		s += k;
		if (*s == ':')
			s++;
	}
	return 0;
}

/* ---- the requests ------------------------------------------------------- */

#ifdef HAVE_CURL
#include "source_s3.h"
#include "curl_dl.h"

#define LIST_BODY_MAX ((size_t)64 << 20)  /* a page of 1000 keys is ~300 KiB */
#define LIST_RETRIES 4
#define LIST_TIMEOUT 30

typedef struct body {
	char *p;
	size_t len, cap;
	bool overflow;
} body;

static size_t on_body(char *p, size_t sz, size_t n, void *u)
{
	body *b = u;
	size_t len = sz * n;

	if (len > LIST_BODY_MAX - b->len) {
		b->overflow = true;
		return 0;
	}
	if (b->len + len > b->cap) {
		size_t cap = b->cap ? b->cap : 64 << 10;
		char *q;

		while (cap < b->len + len)
			cap *= 2;
		q = realloc(b->p, cap);
		if (!q)
			return 0;
		b->p = q;
		b->cap = cap;
	}
	memcpy(b->p + b->len, p, len);
	b->len += len;
	return len;
}

/* s percent-encoded for a query value: all but RFC 3986 unreserved
 * characters, '/' too (SigV4's canonical query string encodes it). */
static int q_encode(h5_sb *sb, const char *s)
{
	int rc = 0;

	for (const unsigned char *c = (const unsigned char *)s; *c && rc == 0; c++) {
		if ((*c >= 'A' && *c <= 'Z') || (*c >= 'a' && *c <= 'z') || (*c >= '0' && *c <= '9') ||
		    strchr("-._~", *c))
			rc = h5_sb_put(sb, c, 1);
		else
			rc = h5_sb_printf(sb, "%%%02X", *c);
	}
	return rc;
}

/* The URL of one page: parameters in sorted order, as SigV4 canonicalizes
 * them (so the signature holds whatever libcurl does with the query). */
static int page_url(char **out, const char *bucket, size_t blen, const char *prefix, const char *token,
		    const s3_opts *so)
{
	h5_sb sb = { 0 };
	char *q = NULL;
	int rc = h5_sb_puts(&sb, "?");

	if (rc == 0 && token) {
		rc = h5_sb_puts(&sb, "continuation-token=");
		if (rc == 0)
			rc = q_encode(&sb, token);
		if (rc == 0)
			rc = h5_sb_puts(&sb, "&");
	}
	if (rc == 0)
		rc = h5_sb_puts(&sb, "delimiter=%2F&list-type=2&prefix=");
	if (rc == 0)
		rc = q_encode(&sb, prefix);
	size_t qlen;

	if (rc == 0)
		rc = h5_sb_finish(&q, &qlen, &sb);
	else
		h5_sb_finish(&q, &qlen, &sb);
	if (rc == 0)
		rc = s3_bucket_url(out, bucket, blen, q, so);
	free(q);
	return rc;
}

static bool transient(CURLcode cc, long status)
{
	if (cc == CURLE_OK)
		return status >= 500 || status == 429;
	return cc == CURLE_COULDNT_CONNECT || cc == CURLE_OPERATION_TIMEDOUT || cc == CURLE_RECV_ERROR ||
	       cc == CURLE_SEND_ERROR || cc == CURLE_PARTIAL_FILE || cc == CURLE_GOT_NOTHING;
}

/* One page, retried: its body decoded into *l. */
static int page_get(h5_s3_listing *l, CURL *c, const char *url, const char *name, const char *prefix,
		    unsigned retries)
{
	for (unsigned attempt = 0;; attempt++) {
		char cerr[CURL_ERROR_SIZE] = "";
		body b = { 0 };
		long status = 0;
		CURLcode cc;
		int rc;

		curl_easy_setopt(c, CURLOPT_URL, url);
		curl_easy_setopt(c, CURLOPT_WRITEDATA, &b);
		curl_easy_setopt(c, CURLOPT_ERRORBUFFER, cerr);
		cc = curl_easy_perform(c);
		curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &status);
		curl_easy_setopt(c, CURLOPT_ERRORBUFFER, NULL);
		if (cc == CURLE_OK && status == 200) {
			rc = h5_s3_list_decode(l, prefix, b.p ? b.p : "", b.len);
			if (rc < 0)
				h5_err_wrap(rc, "%s: ", name);
		} else if (b.overflow) {
			rc = h5_err_set(H5_ERR_LIMIT, "%s: a listing page of more than %zu bytes", name, LIST_BODY_MAX);
		} else if (cc == CURLE_OK && status == 404) {
			h5_s3_listing none = { 0 };

			/* the body names what is missing (NoSuchBucket) */
			rc = h5_s3_list_decode(&none, prefix, b.p ? b.p : "", b.len);
			h5_s3_listing_free(&none);
			rc = rc == H5_ERR_NOTFOUND ? h5_err_wrap(rc, "%s: ", name)
						   : h5_err_set(H5_ERR_NOTFOUND, "%s: not found (HTTP 404)", name);
		} else if (cc == CURLE_OK && (status == 401 || status == 403)) {
			rc = h5_err_set(H5_ERR_IO, "%s: access denied (HTTP %ld)", name, status);
		} else if (cc == CURLE_OK) {
			rc = h5_err_set(H5_ERR_IO, "%s: listing: HTTP %ld", name, status);
		} else {
			rc = h5_err_set(H5_ERR_IO, "%s: listing: %s", name, cerr[0] ? cerr : curl_easy_strerror(cc));
		}
		free(b.p);
		if (rc == 0 || !transient(cc, status) || attempt >= retries)
			return rc;
		/* backoff as object reads: 100 ms doubling, capped at 3.2 s */
		unsigned ms = 100u << (attempt < 5 ? attempt : 5);
		struct timespec ts = { ms / 1000, (long)(ms % 1000) * 1000000L };

		nanosleep(&ts, NULL);
	}
}

int h5_s3_list(h5_s3_listing *out, const char *url, const h5_open_opts *opts)
{
	s3_opts so;
	http_opts ho;
	const char *bk, *slash, *prefix;
	struct curl_slist *hd = NULL;
	char *page = NULL, *token = NULL, *tokhdr = NULL;
	CURL *c = NULL;
	s3_auth a;
	int rc = 0;

	memset(out, 0, sizeof(*out));
	if (strncasecmp(url, "s3://", 5) != 0)
		return h5_err_set(H5_ERR_INVAL, "%s: expected s3://BUCKET/PREFIX/", url);
	bk = url + 5;
	slash = strchr(bk, '/');
	if (!slash || slash == bk || url[strlen(url) - 1] != '/')
		return h5_err_set(H5_ERR_INVAL, "%s: expected s3://BUCKET/ or s3://BUCKET/PREFIX/", url);
	prefix = slash + 1;
	rc = s3_opts_parse(&so, opts ? opts->source_params : NULL);
	if (rc == 0)
		rc = http_opts_parse(&ho, opts ? opts->source_params : NULL);
	if (rc < 0)
		return rc;
	s3_auth_get(&a, &so);
	rc = h5_curl_init();
	if (rc < 0)
		goto out;
	c = curl_easy_init();
	if (!c) {
		rc = h5_err_set(H5_ERR_NOMEM, "%s: cannot create a curl handle", url);
		goto out;
	}
	long timeout = ho.timeout_s ? (long)ho.timeout_s : LIST_TIMEOUT;

	curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(c, CURLOPT_FOLLOWLOCATION, 1L);
	curl_easy_setopt(c, CURLOPT_MAXREDIRS, 5L);
	curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT, timeout);
	curl_easy_setopt(c, CURLOPT_TIMEOUT, timeout);
	curl_easy_setopt(c, CURLOPT_USERAGENT, "h5fs/" PACKAGE_VERSION);
	curl_easy_setopt(c, CURLOPT_ACCEPT_ENCODING, ""); /* listings compress well */
	curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_body);
	if (a.auth.userpwd) {
		curl_easy_setopt(c, CURLOPT_AWS_SIGV4, a.auth.sigv4);
		curl_easy_setopt(c, CURLOPT_USERPWD, a.auth.userpwd);
		hd = curl_slist_append(hd, "x-amz-content-sha256: UNSIGNED-PAYLOAD");
		if (a.auth.token) {
			if (asprintf(&tokhdr, "x-amz-security-token: %s", a.auth.token) < 0) {
				tokhdr = NULL;
				rc = h5_err_set(H5_ERR_NOMEM, "out of memory");
				goto out;
			}
			hd = curl_slist_append(hd, tokhdr);
		}
		curl_easy_setopt(c, CURLOPT_HTTPHEADER, hd);
	}
	for (;;) {
		rc = page_url(&page, bk, (size_t)(slash - bk), prefix, token, &so);
		if (rc < 0)
			goto out;
		rc = page_get(out, c, page, url, prefix, ho.retries ? ho.retries : LIST_RETRIES);
		free(page);
		page = NULL;
		if (rc < 0)
			goto out;
		out->pages++;
		if (!out->truncated)
			break;
		/* a server that hands back the token it was given would loop */
		if (token && strcmp(token, out->next_token) == 0) {
			rc = h5_err_set(H5_ERR_LOOP, "%s: the listing repeats its continuation token", url);
			goto out;
		}
		free(token);
		token = out->next_token;
		out->next_token = NULL;
	}
	h5_s3_listing_sort(out);
out:
	if (c)
		curl_easy_cleanup(c);
	curl_slist_free_all(hd);
	free(tokhdr);
	free(token);
	if (rc < 0)
		h5_s3_listing_free(out);
	return rc;
}
#else
int h5_s3_list(h5_s3_listing *out, const char *url, const h5_open_opts *opts)
{
	(void)opts;
	memset(out, 0, sizeof(*out));
	return h5_err_set(H5_ERR_UNSUPPORTED, "%s: built without libcurl (no S3)", url);
}
#endif
