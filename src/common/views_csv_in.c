/* views_csv_in.c - rows in as text: what writing NAME.csv parses
 * (doc/h5fs.1, VIEWS), the mirror of views_csv.c. Records are RFC 4180
 * lines (ended by "\n" or "\r\n", as Python's csv module writes them; a
 * quoted cell may hold commas, doubled quotes and line breaks) of the
 * cells the view prints: one per column of a 1-D or 2-D dataset of
 * numbers, one per field of a 1-D compound. Each cell is parsed in its
 * column's type by the engine (h5_dataset_elem_parse), so exactly the
 * text the view shows reads back to the same bytes.
 *
 * A batch of text is decided as a whole: every record complete in it is
 * parsed before any row is given, and one that does not parse refuses
 * the batch (the daemon answers the write EINVAL and appends nothing). */
#include "views.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct vw_csv_in {
	h5_dataset *d;          /* borrowed: the type the cells are parsed in */
	uint64_t cols;          /* cells per record */
	bool compound;
	size_t esize, rowb;
	char *head;             /* a compound's header line, without its end */
	size_t head_len;
	uint64_t records;       /* records taken so far (error messages) */
};

int vw_csv_in_new(struct vw_csv_in **out, h5_dataset *d)
{
	struct vw_csv_in *c = NULL;
	h5_type_view t;
	const uint64_t *dims;
	unsigned rank;
	size_t cap = 0;
	int rc;

	*out = NULL;
	memset(&t, 0, sizeof(t));
	rc = h5_dataset_type(&t, d);
	if (rc < 0)
		return rc;
	if (h5_dataset_shape(&rank, &dims, d) != H5_SHAPE_SIMPLE || !vw_csv_can(&t, rank) || t.size == 0) {
		rc = h5_err_set(H5_ERR_NOTFOUND, "the dataset has no CSV view");
		goto out;
	}
	c = calloc(1, sizeof(*c));
	if (!c) {
		rc = h5_err_set(H5_ERR_NOMEM, "out of memory");
		goto out;
	}
	c->d = d;
	c->compound = t.kind == H5_TYPE_COMPOUND;
	c->esize = t.size;
	c->cols = c->compound ? t.nmembers : rank == 2 ? dims[1] : 1;
	if (c->cols == 0 || (!c->compound && c->cols > SIZE_MAX / 2 / c->esize)) {
		rc = h5_err_set(H5_ERR_NOTFOUND, "no CSV of rows of no cells");
		goto out;
	}
	c->rowb = c->compound ? c->esize : (size_t)(c->cols * c->esize);
	/* every column must be one text sets, or no row could be taken */
	for (uint64_t i = 0; i < (c->compound ? c->cols : 1) && rc == 0; i++)
		rc = h5_dataset_elem_parsable(d, c->compound ? (int)i : -1);
	for (size_t i = 0; c->compound && i < t.nmembers && rc == 0; i++) {
		const char *nm = t.members[i].name ? t.members[i].name : "";

		if (i)
			rc = vw_buf_put(&c->head, &c->head_len, &cap, ",", 1);
		if (rc == 0)
			rc = vw_csv_cell(&c->head, &c->head_len, &cap, nm, strlen(nm));
	}
out:
	h5_type_view_clear(&t);
	if (rc < 0) {
		vw_csv_in_free(c);
		return rc;
	}
	*out = c;
	return 0;
}

void vw_csv_in_free(struct vw_csv_in *c)
{
	if (c)
		free(c->head);
	free(c);
}

size_t vw_csv_in_row_bytes(const struct vw_csv_in *c)
{
	return c->rowb;
}

/* Where the record starting at text[0] ends (the index of its "\n"), or
 * len when it does not end in the text; *open: a quote left open there.
 * A quote toggles: a doubled one inside a quoted cell toggles twice. */
static size_t record_end(const char *text, size_t len, bool *open)
{
	bool inq = false;
	size_t i;

	for (i = 0; i < len; i++) {
		if (text[i] == '"')
			inq = !inq;
		else if (text[i] == '\n' && !inq)
			break;
	}
	*open = inq;
	return i;
}

/* One record's cells (text [0, len), its line end taken off) parsed into
 * row (rowb bytes, zeroed: a compound's padding). */
static int parse_record(const struct vw_csv_in *c, uint8_t *row, const char *text, size_t len, uint64_t rec,
			char **cell, size_t *cap)
{
	size_t i = 0;
	uint64_t k = 0;
	int rc = 0;

	if (len && text[len - 1] == '\r')
		len--;          /* "\r\n" */
	for (;;) {
		size_t n = 0;
		bool quoted = i < len && text[i] == '"';

		if (k == c->cols)
			return h5_err_set(H5_ERR_INVAL, "line %llu has more than the %llu cells of a row",
					  (unsigned long long)rec, (unsigned long long)c->cols);
		if (*cap < len + 1) {
			char *nc = realloc(*cell, len + 1);

			if (!nc)
				return h5_err_set(H5_ERR_NOMEM, "out of memory");
			*cell = nc;
			*cap = len + 1;
		}
		if (quoted) {
			for (i++;; i++) {
				if (i >= len)
					return h5_err_set(H5_ERR_INVAL, "line %llu: a quoted cell is not closed",
							  (unsigned long long)rec);
				if (text[i] == '"') {
					if (i + 1 < len && text[i + 1] == '"')
						i++;
					else
						break;
				}
				(*cell)[n++] = text[i];
			}
			i++;    /* the closing quote: a comma or the end follows */
			if (i < len && text[i] != ',')
				return h5_err_set(H5_ERR_INVAL, "line %llu: text after the closing quote of cell %llu",
						  (unsigned long long)rec, (unsigned long long)k + 1);
		} else {
			const char *e = memchr(text + i, ',', len - i);
			size_t end = e ? (size_t)(e - text) : len;

			memcpy(*cell, text + i, end - i);
			n = end - i;
			i = end;
		}
		rc = c->compound ? h5_dataset_elem_parse(row, c->d, (int)k, *cell, n)
				 : h5_dataset_elem_parse(row + k * c->esize, c->d, -1, *cell, n);
		if (rc < 0) {
			char why[160];

			snprintf(why, sizeof(why), "%s", h5_err_msg());
			return h5_err_set(rc, "line %llu, cell %llu: %s", (unsigned long long)rec,
					  (unsigned long long)k + 1, why);
		}
		k++;
		if (i >= len)
			break;
		i++;    /* the comma */
	}
	if (k != c->cols)
		return h5_err_set(H5_ERR_INVAL, "line %llu has %llu cells, a row has %llu", (unsigned long long)rec,
				  (unsigned long long)k, (unsigned long long)c->cols);
	return 0;
}

int vw_csv_in_parse(struct vw_csv_in *c, uint8_t **rows, size_t *nbytes, size_t *used, const char *text,
		    size_t len, bool final)
{
	uint8_t *out = NULL;
	size_t pos = 0, n = 0, cap = 0, ccap = 0;
	uint64_t rec = c->records;
	char *cell = NULL;
	int rc = 0;

	*rows = NULL;
	*nbytes = 0;
	*used = 0;
	while (pos < len) {
		bool open;
		size_t e = pos + record_end(text + pos, len - pos, &open);
		size_t rlen = e - pos;

		if (e == len && !final)
			break;  /* a record not ended yet: kept for the next text */
		if (e == len && open) {
			rc = h5_err_set(H5_ERR_INVAL, "line %llu: a quoted cell is not closed at the end of the text",
					(unsigned long long)rec + 1);
			goto out;
		}
		rec++;
		/* the view's header line, first through this descriptor: `cat
		 * a.csv >> b.csv` of two tables of one type appends a's rows */
		if (c->compound && rec == 1 &&
		    (rlen == c->head_len || (rlen == c->head_len + 1 && text[pos + rlen - 1] == '\r')) &&
		    memcmp(text + pos, c->head, c->head_len) == 0) {
			pos = e < len ? e + 1 : e;
			continue;
		}
		if (n + c->rowb > cap) {
			size_t nc = cap ? cap * 2 : c->rowb * 64;
			uint8_t *nb;

			while (nc < n + c->rowb)
				nc *= 2;
			nb = realloc(out, nc);
			if (!nb) {
				rc = h5_err_set(H5_ERR_NOMEM, "out of memory");
				goto out;
			}
			out = nb;
			cap = nc;
		}
		memset(out + n, 0, c->rowb);
		rc = parse_record(c, out + n, text + pos, rlen, rec, &cell, &ccap);
		if (rc < 0)
			goto out;
		n += c->rowb;
		pos = e < len ? e + 1 : e;
	}
out:
	free(cell);
	if (rc < 0) {
		free(out);
		return rc;
	}
	c->records = rec;
	*rows = out;
	*nbytes = n;
	*used = pos;
	return 0;
}
