/*
 * fuzz_walk.c - libFuzzer target for libh5core: open an arbitrary byte image
 * as an HDF5 file and do everything a mount would do with it, through the
 * public API only (h5core.h): every group recursively (iterate, then look
 * each name up as a FUSE lookup would), stat every object, open every
 * dataset, size it, and read it in FUSE-sized windows.
 *
 * Goal (issue "No input crashes, hangs or fools h5fs"): the sanitizers catch
 * crashes and leaks, -timeout catches hangs, and the checks below catch the
 * engine being "fooled" into inconsistent answers:
 *   - a sub-range of a window read back separately must give the same bytes
 *     (chunk boundaries, fill, filters and the cache must agree), and a
 *     read past h5_dataset_size() must fail;
 *   - the read plan the daemon answers with (h5_dataset_map: extents to
 *     splice, pinned pieces, or a buffer) and the narrower fast paths
 *     (h5_dataset_extents: where the bytes lie in FILE; h5_dataset_pin:
 *     iovecs into decoded chunks) give exactly the bytes h5_dataset_read
 *     gives, or fail with a documented error and hold nothing (the plan
 *     never fails where the read works);
 *   - every listed xattr reads the same twice (getxattr asks for the size
 *     first, then the value), and the list is NUL-terminated;
 *   - error codes are negative h5_err values with a message.
 * Violations call abort() so libFuzzer records them as crashes.
 *
 * The same walk is used by replay.c (plain main, no libFuzzer) so `make
 * check` replays tests/fuzz/regress/ and the corpus. See tests/fuzz/README.
 */
#include "fuzz_walk.h"
#include "xattrs.h"
#include "file.h"
#include "dataset.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>
#include <unistd.h>

/* Limits that keep one input fast: FUSE reads at most 128 KiB at a time, and
 * a hostile file can claim petabytes of logical size or millions of links. */
#define WALK_WINDOW ((size_t)128 << 10)
#define WALK_MAX_DEPTH 64
#define WALK_MAX_OBJECTS 4096
#define WALK_MAX_LINKS 20000
#define WALK_RANDOM_WINDOWS 4
#define WALK_MAX_READ_ERRORS 4
#define WALK_MAX_XATTRS 256         /* per object */
#define WALK_MAX_EXTENTS 64         /* pieces of one window, as the daemon asks */

struct walk_link {
	char *name;
	size_t name_len;
	h5_link_type type;
	uint64_t addr;
};

struct walk {
	h5_file *f;
	const h5fuzz_opts *opts;
	h5fuzz_stats *st;
	uint64_t seed;          /* derived from the input: picks read windows */
	uint64_t read_left;     /* byte budget for dataset reads */
	uint64_t *visited;      /* open-addressing set of object addresses */
	size_t visited_cap, nvisited;
	uint8_t *buf, *buf2;    /* WALK_WINDOW bytes each */
};

static uint64_t mix64(uint64_t x)
{
	/* splitmix64 finaliser: cheap, well spread */
	x += 0x9e3779b97f4a7c15ULL;
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
	x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
	return x ^ (x >> 31);
}

/* An error must be one of the documented codes and carry a message. */
static void check_err(int rc, const char *where)
{
	const char *msg;

	if (rc >= 0)
		return;
	if (rc < H5_ERR_LAST) {
		fprintf(stderr, "fuzz_walk: %s returned undocumented error %d\n", where, rc);
		abort();
	}
	msg = h5_err_msg();
	if (!msg || !*msg || !h5_err_name(rc)) {
		fprintf(stderr, "fuzz_walk: %s failed (%d) without a message\n", where, rc);
		abort();
	}
}

static void note_err(struct walk *w, int rc, const char *where, uint64_t addr)
{
	check_err(rc, where);
	w->st->errors++;
	if (w->opts->verbose)
		fprintf(stderr, "  %s 0x%llx: %s: %s\n", where, (unsigned long long)addr, h5_err_name(rc),
			h5_err_msg());
}

/* Returns 1 if addr was already visited (or the set is full), else records it. */
static int visit(struct walk *w, uint64_t addr)
{
	size_t mask = w->visited_cap - 1, i;

	if (w->nvisited >= WALK_MAX_OBJECTS)
		return 1;
	for (i = (size_t)mix64(addr) & mask;; i = (i + 1) & mask) {
		if (w->visited[i] == UINT64_MAX) {
			w->visited[i] = addr;
			w->nvisited++;
			return 0;
		}
		if (w->visited[i] == addr)
			return 1;
	}
}

/* ---- datasets ----------------------------------------------------------- */

static void fail_window(const char *what, uint64_t addr, uint64_t off, size_t len)
{
	fprintf(stderr, "fuzz_walk: dataset 0x%llx: window [%llu, +%zu): %s\n", (unsigned long long)addr,
		(unsigned long long)off, len, what);
	abort();
}

/* The daemon answers a read (op_read) from FILE's bytes when the window
 * maps to them (h5_dataset_extents, spliced), else from pinned decoded
 * chunks (h5_dataset_pin), else by h5_dataset_read. Both fast paths are
 * asked here for [off, off+len) and must give the bytes want holds (what
 * h5_dataset_read gave; NULL when that failed: then only the error rules
 * apply). w->buf2 is scratch. */
static void check_fast_paths(struct walk *w, h5_dataset *d, uint64_t addr, uint64_t off, size_t len,
			     const uint8_t *want)
{
	h5_extent ext[WALK_MAX_EXTENTS];
	h5_pin pin;
	size_t n = 0, pos = 0;
	int rc;

	rc = h5_dataset_extents(ext, WALK_MAX_EXTENTS, &n, d, off, len);
	if (rc < 0) {
		check_err(rc, "h5_dataset_extents");   /* most windows: not plain bytes */
	} else {
		if (n > WALK_MAX_EXTENTS)
			fail_window("more extents than asked for", addr, off, len);
		for (size_t i = 0; i < n; i++) {
			if (ext[i].len == 0 || ext[i].len > len - pos || ext[i].fd < 0)
				fail_window("an extent is empty, too long or has no descriptor", addr, off, len);
			if (want && (pread(ext[i].fd, w->buf2, (size_t)ext[i].len, (off_t)ext[i].file_off) !=
				     (ssize_t)ext[i].len || memcmp(w->buf2, want + pos, (size_t)ext[i].len) != 0))
				fail_window("an extent's bytes in FILE differ from h5_dataset_read", addr, off, len);
			pos += (size_t)ext[i].len;
		}
		if (pos != len)
			fail_window("the extents do not cover the window", addr, off, len);
		w->st->extents++;
	}
	memset(&pin, 0, sizeof(pin));
	rc = h5_dataset_pin(&pin, d, off, len);
	if (rc < 0) {
		check_err(rc, "h5_dataset_pin");
		if (pin.nheld || pin.nsrc_held)
			fail_window("h5_dataset_pin failed and still holds chunks", addr, off, len);
		return;
	}
	pos = 0;
	if (pin.niov > H5_PIN_MAX)
		fail_window("more pinned pieces than H5_PIN_MAX", addr, off, len);
	for (size_t i = 0; i < pin.niov; i++) {
		if (pin.iov[i].iov_len > len - pos || (pin.iov[i].iov_len && !pin.iov[i].iov_base))
			fail_window("a pinned piece lies past the window", addr, off, len);
		if (want && memcmp(pin.iov[i].iov_base, want + pos, pin.iov[i].iov_len) != 0)
			fail_window("pinned bytes differ from h5_dataset_read", addr, off, len);
		pos += pin.iov[i].iov_len;
	}
	if (pin.niov && pos != len)
		fail_window("the pinned pieces do not cover the window", addr, off, len);
	h5_pin_release(&pin);
	if (pin.nheld || pin.nsrc_held)
		fail_window("h5_pin_release left chunks held", addr, off, len);
	w->st->pinned++;
}

static void check_plan(struct walk *w, h5_dataset *d, uint64_t addr, uint64_t off, size_t len, const uint8_t *want,
		       unsigned flags);

/* The daemon's answer (the plan) and the narrower fast paths. */
static void check_answers(struct walk *w, h5_dataset *d, uint64_t addr, uint64_t off, size_t len,
			  const uint8_t *want)
{
	check_plan(w, d, addr, off, len, want, 0);
	check_plan(w, d, addr, off, len, want, H5_MAP_NO_SPLICE);
	check_fast_paths(w, d, addr, off, len, want);
}

/* The read plan the daemon answers with (h5_dataset_map), with splicing
 * allowed and not (a live mount): its bytes - extents read back from
 * their descriptors, pinned pieces, or the buffer - are exactly want's;
 * when h5_dataset_read worked the plan must work too (else the daemon
 * would fail a read the engine can do); a failed plan holds nothing. */
static void check_plan(struct walk *w, h5_dataset *d, uint64_t addr, uint64_t off, size_t len, const uint8_t *want,
		       unsigned flags)
{
	h5_read_plan *p = malloc(sizeof(*p));
	size_t pos = 0;
	int rc;

	if (!p)
		abort();
	rc = h5_dataset_map(p, d, off, len, flags);
	if (rc < 0) {
		check_err(rc, "h5_dataset_map");
		if (want)
			fail_window("h5_dataset_map failed where h5_dataset_read worked", addr, off, len);
		if (p->pin.nheld || p->pin.nsrc_held || p->buf || p->next)
			fail_window("h5_dataset_map failed and still holds something", addr, off, len);
		free(p);
		return;
	}
	switch (p->kind) {
	case H5_PLAN_EXTENTS:
		if ((flags & H5_MAP_NO_SPLICE) || p->next == 0 || p->next > H5_PLAN_MAX)
			fail_window("extents where none may be, or too many", addr, off, len);
		for (size_t i = 0; i < p->next; i++) {
			const h5_extent *e = &p->ext[i];

			if (e->len == 0 || e->len > len - pos || e->fd < 0)
				fail_window("a planned extent is empty, too long or has no descriptor", addr, off, len);
			if (want && (pread(e->fd, w->buf2, (size_t)e->len, (off_t)e->file_off) != (ssize_t)e->len ||
				     memcmp(w->buf2, want + pos, (size_t)e->len) != 0))
				fail_window("a planned extent differs from h5_dataset_read", addr, off, len);
			pos += (size_t)e->len;
		}
		break;
	case H5_PLAN_PINNED:
		if (p->pin.niov == 0 || p->pin.niov > H5_PIN_MAX)
			fail_window("no pinned pieces, or too many", addr, off, len);
		for (size_t i = 0; i < p->pin.niov; i++) {
			const struct iovec *v = &p->pin.iov[i];

			if (v->iov_len > len - pos || (v->iov_len && !v->iov_base))
				fail_window("a planned pinned piece lies past the window", addr, off, len);
			if (want && memcmp(v->iov_base, want + pos, v->iov_len) != 0)
				fail_window("planned pinned bytes differ from h5_dataset_read", addr, off, len);
			pos += v->iov_len;
		}
		break;
	case H5_PLAN_BUFFER:
		if (!p->buf || p->len != len || p->pin.nheld || p->pin.nsrc_held)
			fail_window("a planned buffer of the wrong size, or holding pins", addr, off, len);
		if (want && memcmp(p->buf, want, len) != 0)
			fail_window("the planned buffer differs from h5_dataset_read", addr, off, len);
		pos = len;
		break;
	default:
		break;
	}
	if (pos != len)
		fail_window("the plan does not cover the window", addr, off, len);
	h5_read_plan_release(p);
	if (p->pin.nheld || p->pin.nsrc_held || p->buf)
		fail_window("h5_read_plan_release left something held", addr, off, len);
	w->st->planned++;
	free(p);
}

/* Read [off, off+len) and, when it worked, read a sub-range of it again and
 * compare: the engine must give the same bytes whichever way it is asked.
 * Then the fast paths of the daemon, over the window and the sub-range. */
static void read_window(struct walk *w, h5_dataset *d, uint64_t addr, uint64_t off, size_t len,
			unsigned *nerr)
{
	size_t a, b;
	int rc;

	if (len == 0 || w->read_left < len)
		return;
	w->read_left -= len;
	rc = h5_dataset_read(d, w->buf, off, len);
	if (rc < 0) {
		note_err(w, rc, "h5_dataset_read", addr);
		(*nerr)++;
		check_answers(w, d, addr, off, len, NULL);
		return;
	}
	w->st->bytes_read += len;
	a = (size_t)(mix64(w->seed ^ off) % len);
	b = a + (size_t)(mix64(w->seed + off) % (len - a)) + 1;
	if (w->read_left < b - a)
		return;
	w->read_left -= b - a;
	rc = h5_dataset_read(d, w->buf2, off + a, b - a);
	if (rc < 0) {
		/* errors may depend on the range (one bad chunk), so not a mismatch */
		note_err(w, rc, "h5_dataset_read (re-read)", addr);
		return;
	}
	if (memcmp(w->buf + a, w->buf2, b - a) != 0) {
		fprintf(stderr, "fuzz_walk: dataset 0x%llx: bytes [%llu, %llu) differ between a read at %llu "
			"and a re-read of the sub-range\n", (unsigned long long)addr,
			(unsigned long long)(off + a), (unsigned long long)(off + b), (unsigned long long)off);
		abort();
	}
	check_answers(w, d, addr, off, len, w->buf);
	check_answers(w, d, addr, off + a, b - a, w->buf + a);
}

static void walk_dataset(struct walk *w, uint64_t addr)
{
	h5_dataset *d = NULL;
	uint64_t size, off;
	unsigned nerr = 0, i;
	int64_t mtime;
	int rc;

	rc = h5_dataset_open(&d, w->f, addr);
	if (rc < 0) {
		note_err(w, rc, "h5_dataset_open", addr);
		return;
	}
	w->st->datasets++;
	size = h5_dataset_size(d);
	(void)h5_dataset_allocated(d);
	rc = h5_dataset_mtime(d, &mtime);
	if (rc < 0 && rc != H5_ERR_NOTFOUND)
		note_err(w, rc, "h5_dataset_mtime", addr);
	if (size <= w->read_left) {
		/* small enough: all of it, as `cat` would */
		for (off = 0; off < size && nerr < WALK_MAX_READ_ERRORS; off += WALK_WINDOW)
			read_window(w, d, addr, off, size - off < WALK_WINDOW ? (size_t)(size - off) : WALK_WINDOW,
				    &nerr);
	} else {
		/* first and last windows, then a few unaligned ones picked by the input */
		size_t win = size < WALK_WINDOW ? (size_t)size : WALK_WINDOW;

		read_window(w, d, addr, 0, win, &nerr);
		read_window(w, d, addr, size - win, win, &nerr);
		for (i = 0; i < WALK_RANDOM_WINDOWS && nerr < WALK_MAX_READ_ERRORS; i++) {
			off = mix64(w->seed ^ addr ^ (uint64_t)i << 56) % (size - win + 1);
			read_window(w, d, addr, off, win, &nerr);
		}
	}
	/* one read past the end must be refused, not served (with INVAL, or
	 * with the error that keeps the whole dataset from being read) */
	rc = h5_dataset_read(d, w->buf, size, 1);
	check_err(rc, "h5_dataset_read (past the end)");
	if (rc == 0) {
		fprintf(stderr, "fuzz_walk: dataset 0x%llx: read past the end returned %d\n",
			(unsigned long long)addr, rc);
		abort();
	}
	h5_dataset_close(d);
}

/* ---- attributes (as the FUSE listxattr/getxattr do) -------------------- */

static void walk_xattrs(struct walk *w, uint64_t addr)
{
	char *list = NULL;
	size_t len = 0, pos, n = 0;
	void *v1, *v2;
	size_t l1, l2;
	int raw, rc;

	rc = xa_list(&list, &len, w->f, addr);
	if (rc < 0) {
		note_err(w, rc, "xa_list", addr);
		return;
	}
	if (len && (!list || list[len - 1] != '\0')) {
		fprintf(stderr, "fuzz_walk: object 0x%llx: xattr list of %zu bytes is not NUL-terminated\n",
			(unsigned long long)addr, len);
		abort();
	}
	for (pos = 0; pos < len && n < WALK_MAX_XATTRS; pos += strlen(list + pos) + 1, n++) {
		const char *name = list + pos;

		w->st->attrs++;
		for (raw = 0; raw <= 1; raw++) {
			v1 = v2 = NULL;
			rc = xa_get(&v1, &l1, w->f, addr, name, raw);
			if (rc < 0) {
				note_err(w, rc, "xa_get", addr);
				continue;
			}
			rc = xa_get(&v2, &l2, w->f, addr, name, raw);
			if (rc < 0 || l1 != l2 || (l1 && memcmp(v1, v2, l1) != 0)) {
				fprintf(stderr, "fuzz_walk: object 0x%llx: xattr \"%s\" (raw=%d) differs between two "
					"reads (%zu bytes, then rc %d, %zu bytes)\n", (unsigned long long)addr, name, raw,
					l1, rc, rc < 0 ? (size_t)0 : l2);
				abort();
			}
			free(v1);
			free(v2);
		}
	}
	/* a name nobody lists is not found (and does not crash) */
	rc = xa_get(&v1, &l1, w->f, addr, "user.\x01fuzz-absent", 0);
	if (rc == 0)
		free(v1);
	else if (rc != H5_ERR_NOTFOUND)
		note_err(w, rc, "xa_get (absent)", addr);
	free(list);
}

/* ---- groups ------------------------------------------------------------- */

static void walk_object(struct walk *w, uint64_t addr, unsigned depth);

struct link_vec {
	struct walk *w;
	struct walk_link *v;
	size_t n, cap;
};

static int collect_link(const h5_link *l, void *ud)
{
	struct link_vec *lv = ud;
	struct walk_link *nv;

	if (lv->w->st->links >= WALK_MAX_LINKS)
		return 1;
	if (!l->name) {
		fprintf(stderr, "fuzz_walk: a link without a name\n");
		abort();
	}
	if (lv->n == lv->cap) {
		size_t cap = lv->cap ? lv->cap * 2 : 16;

		nv = realloc(lv->v, cap * sizeof(*nv));
		if (!nv)
			return 1;
		lv->v = nv;
		lv->cap = cap;
	}
	nv = &lv->v[lv->n];
	nv->name = malloc(l->name_len + 1);
	if (!nv->name)
		return 1;
	/* the name must really hold name_len bytes and a NUL */
	memcpy(nv->name, l->name, l->name_len + 1);
	nv->name_len = l->name_len;
	nv->type = l->type;
	nv->addr = l->addr;
	lv->n++;
	lv->w->st->links++;
	if (l->type == H5_LINK_SOFT && !l->target)
		abort();
	if (l->type == H5_LINK_EXTERNAL && (!l->ext_file || !l->ext_path))
		abort();
	return 0;
}

static void walk_group(struct walk *w, uint64_t addr, unsigned depth)
{
	struct link_vec lv = { w, NULL, 0, 0 };
	h5_link l;
	size_t i;
	int rc;

	w->st->groups++;
	rc = h5_group_iterate(w->f, addr, collect_link, &lv);
	if (rc < 0)
		note_err(w, rc, "h5_group_iterate", addr);
	/* what a FUSE lookup does after readdir: by name, then stat the target */
	for (i = 0; i < lv.n; i++) {
		struct walk_link *e = &lv.v[i];

		if (e->name_len && strlen(e->name) == e->name_len) {
			rc = h5_group_lookup(&l, w->f, addr, e->name);
			/* A damaged index (v1 B-tree keys, duplicate names) can make
			 * the two disagree without any bug: counted, not fatal. */
			if (rc == 0) {
				if (l.type != e->type || (l.type == H5_LINK_HARD && l.addr != e->addr)) {
					w->st->lookup_mismatch++;
					if (w->opts->verbose)
						fprintf(stderr, "  group 0x%llx: \"%s\" lists as type %d 0x%llx, looks up "
							"as type %d 0x%llx\n", (unsigned long long)addr, e->name,
							(int)e->type, (unsigned long long)e->addr, (int)l.type,
							(unsigned long long)l.addr);
				}
				h5_link_clear(&l);
			} else if (rc == H5_ERR_NOTFOUND) {
				check_err(rc, "h5_group_lookup");
				w->st->lookup_notfound++;
				if (w->opts->verbose)
					fprintf(stderr, "  group 0x%llx: \"%s\" is listed but not found: %s\n",
						(unsigned long long)addr, e->name, h5_err_msg());
			} else {
				note_err(w, rc, "h5_group_lookup", addr);
			}
		}
		if (e->type == H5_LINK_HARD)
			walk_object(w, e->addr, depth + 1);
	}
	for (i = 0; i < lv.n; i++)
		free(lv.v[i].name);
	free(lv.v);
}

static void walk_object(struct walk *w, uint64_t addr, unsigned depth)
{
	h5_obj_info info;
	int rc;

	if (depth > WALK_MAX_DEPTH || visit(w, addr))
		return;
	w->st->objects++;
	rc = h5_obj_info_get(&info, w->f, addr);
	if (rc < 0) {
		note_err(w, rc, "h5_obj_info_get", addr);
		return;
	}
	if (info.addr != addr) {
		fprintf(stderr, "fuzz_walk: h5_obj_info_get(0x%llx) describes 0x%llx\n", (unsigned long long)addr,
			(unsigned long long)info.addr);
		abort();
	}
	walk_xattrs(w, addr);
	switch (info.kind) {
	case H5_OBJ_GROUP:
		walk_group(w, addr, depth);
		break;
	case H5_OBJ_DATASET:
		walk_dataset(w, addr);
		break;
	default:
		break;
	}
}

/* ---- entry points --------------------------------------------------------- */

void h5fuzz_default_opts(h5fuzz_opts *o)
{
	memset(o, 0, sizeof(*o));
	o->cache_bytes = (size_t)8 << 20;
	o->max_read = (uint64_t)16 << 20;
}

uint64_t h5fuzz_seed(const uint8_t *data, size_t size)
{
	uint64_t seed = size;
	size_t i;

	/* windows depend on the input so the fuzzer can steer them */
	for (i = 0; i < size && i < 4096; i++)
		seed = (seed ^ data[i]) * 0x100000001b3ULL;
	return seed;
}

int h5fuzz_walk_file(h5fuzz_stats *st, h5_file *f, uint64_t seed, const h5fuzz_opts *opts)
{
	struct walk w;
	int rc = 0;

	memset(&w, 0, sizeof(w));
	w.f = f;
	w.opts = opts;
	w.st = st;
	w.read_left = opts->max_read;
	w.seed = seed;
	w.visited_cap = 2 * WALK_MAX_OBJECTS;
	w.visited = malloc(w.visited_cap * sizeof(*w.visited));
	w.buf = malloc(WALK_WINDOW);
	w.buf2 = malloc(WALK_WINDOW);
	if (!w.visited || !w.buf || !w.buf2) {
		rc = H5_ERR_NOMEM;
		goto out;
	}
	memset(w.visited, 0xff, w.visited_cap * sizeof(*w.visited));
	(void)h5_file_sb_version(f);
	(void)h5_file_userblock(f);
	(void)h5_file_mtime(f);
	(void)h5_file_path(f);
	walk_object(&w, h5_file_root(f), 0);
out:
	free(w.visited);
	free(w.buf);
	free(w.buf2);
	return rc;
}

int h5fuzz_walk(h5fuzz_stats *st, const uint8_t *data, size_t size, const h5fuzz_opts *opts)
{
	h5_open_opts oo;
	h5_file *f = NULL;
	int rc;

	memset(st, 0, sizeof(*st));
	memset(&oo, 0, sizeof(oo));
	oo.cache_bytes = opts->cache_bytes;
	oo.nthreads = opts->nthreads ? opts->nthreads : 1;
	rc = h5_file_open_mem(&f, data, size, &oo);
	if (rc < 0) {
		check_err(rc, "h5_file_open_mem");
		st->open_rc = rc;
		return rc;
	}
	rc = h5fuzz_walk_file(st, f, h5fuzz_seed(data, size), opts);
	h5_file_close(f);
	return rc;
}

/* libFuzzer entry point (replay.c links it too, unused there). */
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	h5fuzz_opts o;
	h5fuzz_stats st;

	h5fuzz_default_opts(&o);
	h5fuzz_walk(&st, data, size, &o);
	return 0;
}
