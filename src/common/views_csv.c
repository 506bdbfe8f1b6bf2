/* views_csv.c - NAME.csv: a 1-D or 2-D dataset of numbers as CSV (RFC
 * 4180: a row per first index, cells joined by ',', lines ended by '\n'),
 * or a 1-D compound dataset with a header row of its field names. Cells
 * are the engine's text of one element (h5_dataset_elem_text: the text
 * getfattr shows for an attribute of that value, doc/h5fs.1 ATTRIBUTES),
 * quoted when it holds a comma, quote or line break.
 *
 * The text's length depends on every value, so the view is measured by
 * one pass over the dataset when it is opened (the daemon: at its lookup),
 * which keeps the offset of every CSV_STEP-th row: a read at any offset
 * formats at most CSV_STEP rows it does not return. */
#include "views.h"

#include <stdlib.h>
#include <string.h>

#define CSV_STEP 64u     /* a 128 KiB request spans some 800 rows of 8 doubles */
#define CSV_BATCH (1u << 20)    /* raw bytes read at once */

int vw_csv_cell(char **buf, size_t *len, size_t *cap, const char *cell, size_t n)
{
	size_t i, from = 0;
	int rc;

	for (i = 0; i < n; i++)
		if (cell[i] == ',' || cell[i] == '"' || cell[i] == '\n' || cell[i] == '\r')
			break;
	if (i == n)
		return vw_buf_put(buf, len, cap, cell, n);
	rc = vw_buf_put(buf, len, cap, "\"", 1);
	for (i = 0; i < n && rc == 0; i++)
		if (cell[i] == '"') {
			rc = vw_buf_put(buf, len, cap, cell + from, i + 1 - from);
			from = i;   /* the quote again: doubled */
		}
	if (rc == 0)
		rc = vw_buf_put(buf, len, cap, cell + from, n - from);
	return rc ? rc : vw_buf_put(buf, len, cap, "\"", 1);
}

struct csv {
	uint64_t rows;
	uint64_t cells;         /* per row: columns, or compound members */
	bool compound;
	size_t esize;           /* bytes of one element */
	size_t rowb;            /* raw bytes of one row */
	char *head;             /* the header row (compound) */
	size_t head_len;
	uint64_t *idx;          /* text offset (after the header) of row k * CSV_STEP */
	uint64_t nidx;
	uint64_t text;          /* bytes of the rows */
};

bool vw_csv_can(const h5_type_view *t, unsigned rank)
{
	return (t->kind == H5_TYPE_NUMBER && (rank == 1 || rank == 2)) ||
	       (t->kind == H5_TYPE_COMPOUND && rank == 1 && t->nmembers > 0);
}

static void csv_free(void *p)
{
	struct csv *c = p;

	if (c) {
		free(c->head);
		free(c->idx);
	}
	free(c);
}

/* The text of one row (raw: its bytes) appended to *b. */
static int row_text(char **b, size_t *len, size_t *cap, h5_dataset *d, const struct csv *c, const uint8_t *raw)
{
	int rc = 0;

	for (uint64_t i = 0; i < c->cells && rc == 0; i++) {
		char *s = NULL;
		size_t n = 0;

		if (i)
			rc = vw_buf_put(b, len, cap, ",", 1);
		if (rc == 0)
			rc = c->compound ? h5_dataset_elem_text(&s, &n, d, (int)i, raw)
					 : h5_dataset_elem_text(&s, &n, d, -1, raw + i * c->esize);
		if (rc == 0)
			rc = vw_csv_cell(b, len, cap, s, n);
		free(s);
	}
	return rc ? rc : vw_buf_put(b, len, cap, "\n", 1);
}

/* Rows [r, r + n) read and formatted, each passed to cb with its text. */
typedef int (*row_cb)(void *ud, uint64_t row, const char *text, size_t len);

static int each_row(h5_dataset *d, const struct csv *c, uint64_t r, uint64_t n, row_cb cb, void *ud)
{
	uint64_t per = c->rowb >= CSV_BATCH ? 1 : CSV_BATCH / c->rowb;
	uint8_t *raw = NULL;
	char *b = NULL;
	size_t cap = 0;
	int rc = 0;

	if (per > n)
		per = n ? n : 1;
	raw = malloc(per * c->rowb);
	if (!raw)
		return h5_err_set(H5_ERR_NOMEM, "out of memory");
	while (n > 0 && rc == 0) {
		uint64_t k = n < per ? n : per;

		rc = h5_view_raw.read(d, raw, r * c->rowb, (size_t)(k * c->rowb));
		for (uint64_t i = 0; i < k && rc == 0; i++) {
			size_t len = 0;

			rc = row_text(&b, &len, &cap, d, c, raw + i * c->rowb);
			if (rc == 0)
				rc = cb(ud, r + i, b, len);
		}
		r += k;
		n -= k;
	}
	free(raw);
	free(b);
	return rc;
}

static int measure_cb(void *ud, uint64_t row, const char *text, size_t len)
{
	struct csv *c = ud;

	(void)text;
	if (row % CSV_STEP == 0)
		c->idx[row / CSV_STEP] = c->text;
	c->text += len;
	return 0;
}

static uint64_t csv_size(const h5_dataset *d)
{
	const struct csv *c = h5_dataset_view_state(d);

	return c ? c->head_len + c->text : 0;
}

struct copy {
	uint8_t *out;
	uint64_t at;            /* text offset of the row being passed */
	uint64_t from, to;      /* the text wanted */
};

static int copy_cb(void *ud, uint64_t row, const char *text, size_t len)
{
	struct copy *cp = ud;
	uint64_t a = cp->at, b = cp->at + len;

	(void)row;
	if (b > cp->from && a < cp->to) {
		uint64_t s = a > cp->from ? a : cp->from, e = b < cp->to ? b : cp->to;

		memcpy(cp->out + (s - cp->from), text + (s - a), e - s);
	}
	cp->at = b;
	/* past the window: stop (1, not an error) */
	return b >= cp->to ? 1 : 0;
}

/* The last indexed run starting at or before text offset at. */
static uint64_t idx_at(const struct csv *c, uint64_t at)
{
	uint64_t lo = 0, hi = c->nidx;

	while (hi - lo > 1) {
		uint64_t mid = lo + (hi - lo) / 2;

		if (c->idx[mid] <= at)
			lo = mid;
		else
			hi = mid;
	}
	return lo;
}

static int csv_read(h5_dataset *d, void *buf, uint64_t off, size_t len)
{
	const struct csv *c = h5_dataset_view_state(d);
	uint64_t size = csv_size(d), k, end, text_off;
	struct copy cp;
	int rc;

	if (!c || off > size || len > size - off)
		return h5_err_set(H5_ERR_INVAL, "read of %zu bytes at %llu is past the end of the CSV", len,
				  (unsigned long long)off);
	if (len == 0)
		return 0;
	if (off < c->head_len) {
		size_t n = c->head_len - off < len ? (size_t)(c->head_len - off) : len;

		memcpy(buf, c->head + off, n);
		buf = (uint8_t *)buf + n;
		off += n;
		len -= n;
		if (len == 0)
			return 0;
	}
	text_off = off - c->head_len;
	/* rows from the last indexed one at or before the window to the end
	 * of the indexed run holding its last byte: each_row reads the raw
	 * rows of that span, not the rest of the dataset, per request */
	k = idx_at(c, text_off);
	end = (idx_at(c, text_off + len - 1) + 1) * CSV_STEP;
	if (end > c->rows)
		end = c->rows;
	cp.out = buf;
	cp.at = c->idx[k];
	cp.from = text_off;
	cp.to = text_off + len;
	rc = each_row(d, c, k * CSV_STEP, end - k * CSV_STEP, copy_cb, &cp);
	if (rc < 0)
		return rc;
	if (cp.at < cp.to)
		return h5_err_set(H5_ERR_FORMAT, "the CSV text of the dataset changed since it was measured");
	return 0;
}

static int csv_map(h5_read_plan *out, h5_dataset *d, uint64_t off, size_t len, unsigned flags)
{
	(void)flags;
	return h5_view_map_made(out, d, off, len, csv_read);
}

static const h5_view_ops csv_ops = {
	.name = "csv",
	.size = csv_size,
	.read = csv_read,
	.map = csv_map,
};

int vw_csv_open(const h5_view_ops **ops, h5_dataset *d, const h5_type_view *t, unsigned rank,
		const uint64_t *dims)
{
	struct csv *c = calloc(1, sizeof(*c));
	size_t cap = 0;
	int rc = 0;

	if (!c)
		return h5_err_set(H5_ERR_NOMEM, "out of memory");
	c->rows = dims[0];
	c->compound = t->kind == H5_TYPE_COMPOUND;
	c->esize = t->size;
	c->cells = c->compound ? t->nmembers : rank == 2 ? dims[1] : 1;
	if (c->cells == 0 || c->esize == 0 || (!c->compound && c->cells > SIZE_MAX / 2 / c->esize)) {
		/* a row of no cells has no CSV */
		csv_free(c);
		return h5_err_set(H5_ERR_NOTFOUND, "no CSV of rows of no cells");
	}
	c->rowb = c->compound ? c->esize : (size_t)(c->cells * c->esize);
	if (c->compound) {
		for (size_t i = 0; i < t->nmembers && rc == 0; i++) {
			const char *nm = t->members[i].name ? t->members[i].name : "";

			if (i)
				rc = vw_buf_put(&c->head, &c->head_len, &cap, ",", 1);
			if (rc == 0)
				rc = vw_csv_cell(&c->head, &c->head_len, &cap, nm, strlen(nm));
		}
		if (rc == 0)
			rc = vw_buf_put(&c->head, &c->head_len, &cap, "\n", 1);
	}
	/* one entry per started run of CSV_STEP rows (at least one): an
	 * entry past the last row would stay 0 and the search below would
	 * start there (a dataset of a multiple of CSV_STEP rows read EIO) */
	c->nidx = c->rows ? (c->rows - 1) / CSV_STEP + 1 : 1;
	c->idx = rc == 0 ? calloc(c->nidx, sizeof(*c->idx)) : NULL;
	if (rc == 0 && !c->idx)
		rc = h5_err_set(H5_ERR_NOMEM, "out of memory");
	/* the first pass: every row formatted once, its length counted */
	if (rc == 0 && c->rows)
		rc = each_row(d, c, 0, c->rows, measure_cb, c);
	if (rc < 0) {
		csv_free(c);
		return rc;
	}
	h5_dataset_set_view_state(d, c, csv_free);
	*ops = &csv_ops;
	return 0;
}
