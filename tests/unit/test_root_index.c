/* test_root_index.c - the indexed root (src/fuse/collection/root_index.c) against the
 * live member root it was recorded from, on real files (examples/example.h5
 * and the corpus): every answer of the root ops compared, node by node —
 * readdir (names, numbers, types, order), lookup (node ids, every stat
 * field), getattr, readlink, listxattr, getxattr (ERANGE sizes too) — and
 * the bytes of every dataset read through the indexed root (which opens
 * the member for them) against the live root's; the record goes through
 * the SQLite index (store, load) on the way. No FUSE mount: root ops
 * never reply (root.h). On a live mount's config the indexed root looks
 * for changes of its file (root op changed) at most once per refresh
 * interval, the watcher only after a request, and once changed for good. */
#define _GNU_SOURCE /* nftw */
#include "testutil.h"

#include "root_index.h"
#include "file.h"

#include <dirent.h>
#include <ftw.h>

static char dir[256];
static h5fs_config cfg;
static int files_compared, nodes_compared, errors_compared, files_skipped, opened_live;

struct live_arg {
	const char *path;
};

static int open_member(h5fs **out, const char *path)
{
	h5_open_opts o = { 0 };
	h5_file *f;
	int rc;

	*out = NULL;
	rc = h5_file_open(&f, path, &o);
	if (rc < 0)
		return rc;
	rc = h5fs_new(out, f, &cfg);
	if (rc < 0)
		h5_file_close(f);
	return rc;
}

static int open_live(void *arg, const struct root_ops **ops, void **r)
{
	struct live_arg *a = arg;
	h5fs *fs;

	opened_live++;
	if (open_member(&fs, a->path) < 0)
		return EIO;
	*ops = &h5fs_member_ops;
	*r = fs;
	return 0;
}

/* The bytes a root's read answers with, in out; *err its errno. */
static size_t read_answer(int *err, const struct root_ops *ops, void *r, uint64_t ino, struct fuse_file_info *fi,
			  off_t off, size_t size, char *out)
{
	struct root_read a;
	size_t got = 0;

	memset(&a, 0, sizeof(a));
	*err = ops->read(r, &a, ino, size, off, fi);
	if (*err) {
		/* nothing to hand back */
	} else if (a.next) {
		for (size_t i = 0; i < a.next; i++) {
			ck_assert_int_eq(pread(a.ext[i].fd, out + got, a.ext[i].len, (off_t)a.ext[i].file_off),
					 (ssize_t)a.ext[i].len);
			got += a.ext[i].len;
		}
	} else if (a.niov) {
		for (int i = 0; i < a.niov; i++) {
			memcpy(out + got, a.iov[i].iov_base, a.iov[i].iov_len);
			got += a.iov[i].iov_len;
		}
	} else if (a.len) {
		memcpy(out, a.buf, a.len);
		got = a.len;
	}
	if (ops->read_done)
		ops->read_done(r, &a);
	return got;
}

/* st_ino of an object is the object's in both; a symlink's without an
 * object (synthetic: the top bit) is each root's own number. */
static bool same_ino(uint64_t a, uint64_t b)
{
	return a == b || (a & b & H5FS_SYNTH_BIT);
}

static void same_stat(const struct stat *a, const struct stat *b, const char *what)
{
	ck_assert_msg(same_ino(a->st_ino, b->st_ino), "%s: st_ino %llu vs %llu", what, (unsigned long long)a->st_ino,
		      (unsigned long long)b->st_ino);
	ck_assert_msg(a->st_mode == b->st_mode, "%s: st_mode %o vs %o", what, a->st_mode, b->st_mode);
	ck_assert_msg(a->st_size == b->st_size, "%s: st_size", what);
	ck_assert_msg(a->st_nlink == b->st_nlink, "%s: st_nlink", what);
	ck_assert_msg(a->st_blocks == b->st_blocks, "%s: st_blocks", what);
	ck_assert_msg(a->st_blksize == b->st_blksize, "%s: st_blksize", what);
	ck_assert_msg(a->st_uid == b->st_uid && a->st_gid == b->st_gid, "%s: owner", what);
	ck_assert_msg(a->st_mtim.tv_sec == b->st_mtim.tv_sec && a->st_mtim.tv_nsec == b->st_mtim.tv_nsec,
		      "%s: mtime", what);
	ck_assert_msg(a->st_ctim.tv_sec == b->st_ctim.tv_sec && a->st_ctim.tv_nsec == b->st_ctim.tv_nsec,
		      "%s: ctime", what);
	ck_assert_msg(a->st_atim.tv_sec == b->st_atim.tv_sec && a->st_atim.tv_nsec == b->st_atim.tv_nsec,
		      "%s: atime", what);
}

static void same_xattrs(void *L, void *I, uint64_t lino, uint64_t iino, const char *what)
{
	const struct root_ops *lo = &h5fs_member_ops, *io = &h5fs_indexed_ops;
	size_t ll = 0, il = 0;
	char *ln, *in;

	ck_assert_int_eq(lo->listxattr(L, NULL, 0, &ll, lino), io->listxattr(I, NULL, 0, &il, iino));
	ck_assert_msg(ll == il, "%s: listxattr length %zu vs %zu", what, ll, il);
	if (!ll)
		return;
	ln = malloc(ll);
	in = malloc(il);
	ck_assert_int_eq(lo->listxattr(L, ln, ll, &ll, lino), 0);
	ck_assert_int_eq(io->listxattr(I, in, il, &il, iino), 0);
	ck_assert_msg(memcmp(ln, in, ll) == 0, "%s: listxattr names", what);
	for (size_t off = 0; off < ll; off += strlen(ln + off) + 1) {
		size_t lv = 0, iv = 0;
		char *a, *b;
		int e1 = lo->getxattr(L, NULL, 0, &lv, lino, ln + off);
		int e2 = io->getxattr(I, NULL, 0, &iv, iino, ln + off);

		ck_assert_msg(e1 == e2 && lv == iv, "%s %s: getxattr size %zu/%d vs %zu/%d", what, ln + off, lv, e1,
			      iv, e2);
		if (e1)
			continue;
		a = malloc(lv + 1);
		b = malloc(iv + 1);
		ck_assert_int_eq(lo->getxattr(L, a, lv, &lv, lino, ln + off), 0);
		ck_assert_int_eq(io->getxattr(I, b, iv, &iv, iino, ln + off), 0);
		ck_assert_msg(memcmp(a, b, lv) == 0, "%s %s: value", what, ln + off);
		free(a);
		free(b);
	}
	{
		size_t lv = 0, iv = 0;

		ck_assert_int_eq(lo->getxattr(L, NULL, 0, &lv, lino, "user.no.such.name"),
				 io->getxattr(I, NULL, 0, &iv, iino, "user.no.such.name"));
	}
	free(ln);
	free(in);
}

static void same_bytes(void *L, void *I, uint64_t lino, uint64_t iino, off_t size, const char *what)
{
	const struct root_ops *lo = &h5fs_member_ops, *io = &h5fs_indexed_ops;
	struct fuse_file_info lf, xf;
	size_t chunk = 1 << 20;
	char *a = malloc(chunk + 1), *b = malloc(chunk + 1);
	int e1, e2;

	memset(&lf, 0, sizeof(lf));
	memset(&xf, 0, sizeof(xf));
	lf.flags = xf.flags = O_RDONLY;
	e1 = lo->open(L, &lf, lino);
	e2 = io->open(I, &xf, iino);
	ck_assert_msg(e1 == e2, "%s: open %d vs %d", what, e1, e2);
	if (!e1) {
		/* the first and the last window: enough to tell files apart */
		off_t offs[2] = { 0, size > (off_t)chunk ? size - (off_t)chunk : 0 };

		for (int i = 0; i < (offs[1] ? 2 : 1); i++) {
			int ea, eb;
			size_t na = read_answer(&ea, lo, L, lino, &lf, offs[i], chunk, a);
			size_t nb = read_answer(&eb, io, I, iino, &xf, offs[i], chunk, b);

			/* a corrupt chunk: the same error from both */
			ck_assert_msg(ea == eb, "%s: read errors %d vs %d", what, ea, eb);
			ck_assert_msg(na == nb && memcmp(a, b, na) == 0, "%s: bytes at %lld", what,
				      (long long)offs[i]);
		}
		lo->release(L, lino, &lf);
		io->release(I, iino, &xf);
	}
	free(a);
	free(b);
}

/* Both roots' directory (live id lino, indexed iino), recursively. */
static void same_dir(void *L, void *I, uint64_t lino, uint64_t iino, const char *path, int depth)
{
	const struct root_ops *lo = &h5fs_member_ops, *io = &h5fs_indexed_ops;
	void *ld, *id;
	bool lk, ik;

	ck_assert_int_lt(depth, INDEX_MAX_DEPTH);
	ck_assert_int_eq(lo->opendir(L, &ld, &lk, lino), 0);
	ck_assert_int_eq(io->opendir(I, &id, &ik, iino), 0);
	for (size_t i = 0;; i++) {
		struct root_dirent a, b;
		struct root_entry ea, eb;
		int e1 = lo->readdir(L, &a, ld, i), e2 = io->readdir(I, &b, id, i);
		char what[1024];

		ck_assert_msg(e1 == e2, "%s: readdir %zu: %d vs %d", path, i, e1, e2);
		if (e1)
			break;
		snprintf(what, sizeof(what), "%s/%s", path, a.name);
		ck_assert_str_eq(a.name, b.name);
		ck_assert_msg(same_ino(a.ino, b.ino) && a.type == b.type, "%s: readdir ino/type %llx/%o vs %llx/%o", what, (unsigned long long)a.ino, a.type, (unsigned long long)b.ino, b.type);
		e1 = lo->lookup(L, &ea, lino, a.name);
		e2 = io->lookup(I, &eb, iino, b.name);
		ck_assert_msg(e1 == e2, "%s: lookup %d vs %d", what, e1, e2);
		/* an object whose bytes fail: an error node, EIO from both */
		if (e1) {
			ck_assert_msg(e1 == EIO, "%s: lookup %d", what, e1);
			errors_compared++;
			continue;
		}
		/* a dataset's node id is its st_ino in both; a directory's or a
		 * symlink's is each root's own (the live one's is recycled) */
		if (S_ISREG(ea.attr.st_mode))
			ck_assert_msg(ea.ino == eb.ino, "%s: node id", what);
		same_stat(&ea.attr, &eb.attr, what);
		{
			struct stat sa, sb;
			double ta, tb;

			ck_assert_int_eq(lo->getattr(L, &sa, &ta, ea.ino), 0);
			ck_assert_int_eq(io->getattr(I, &sb, &tb, eb.ino), 0);
			same_stat(&sa, &sb, what);
		}
		nodes_compared++;
		if (S_ISLNK(ea.attr.st_mode)) {
			char *ta = NULL, *tb = NULL;

			ck_assert_int_eq(lo->readlink(L, &ta, ea.ino), 0);
			ck_assert_int_eq(io->readlink(I, &tb, eb.ino), 0);
			ck_assert_str_eq(ta, tb);
			free(ta);
			free(tb);
		} else {
			same_xattrs(L, I, ea.ino, eb.ino, what);
		}
		if (S_ISREG(ea.attr.st_mode))
			same_bytes(L, I, ea.ino, eb.ino, ea.attr.st_size, what);
		if (S_ISDIR(ea.attr.st_mode))
			same_dir(L, I, ea.ino, eb.ino, what, depth + 1);
		lo->forget(L, ea.ino, 1);
	}
	{
		struct root_entry e;

		ck_assert_int_eq(io->lookup(I, &e, iino, "no such name in here"), ENOENT);
	}
	lo->releasedir(L, ld);
	io->releasedir(I, id);
}

static cindex *ix;

static void compare_file(const char *path)
{
	struct live_arg arg = { path };
	cindex_tree *t = NULL, *back = NULL;
	cindex_key k = { .root = "/test", .member = path, .view = "v", .size = 1, .mtime_ns = 2 };
	struct stat fst, a, b;
	h5fs *L;
	void *I;
	double to;
	int rec_err;

	if (open_member(&L, path) < 0 || stat(path, &fst) != 0) {
		files_skipped++;
		return;
	}
	if ((rec_err = index_record(&t, &h5fs_member_ops, L, INDEX_MAX_NODES)) != 0) {
		if (getenv("TEST_VERBOSE"))
			fprintf(stderr, "not recorded: %s: %s\n", path, strerror(rec_err));
		/* an object that gives an error other than its bytes' is not
		 * recorded: served live */
		files_skipped++;
		h5fs_free(L);
		return;
	}
	ck_assert_int_eq(cindex_store(ix, &k, t), 0);
	ck_assert_int_eq(cindex_load(&back, ix, &k), 0);
	cindex_tree_free(t);
	{
		struct index_live lv = { .open = open_live, .arg = &arg };

		ck_assert_int_eq(index_root_new(&I, back, &cfg, fst.st_uid, fst.st_gid, &lv), 0);
	}
	ck_assert_int_eq(h5fs_member_ops.getattr(L, &a, &to, FUSE_ROOT_ID), 0);
	ck_assert_int_eq(h5fs_indexed_ops.getattr(I, &b, &to, FUSE_ROOT_ID), 0);
	same_stat(&a, &b, path);
	same_xattrs(L, I, FUSE_ROOT_ID, FUSE_ROOT_ID, path);
	same_dir(L, I, FUSE_ROOT_ID, FUSE_ROOT_ID, path, 0);
	h5fs_indexed_ops.free(I);
	h5fs_free(L);
	files_compared++;
}

static int visit(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	size_t n = strlen(path);

	(void)ftw;
	if (flag == FTW_F && S_ISREG(st->st_mode) && st->st_size < (64 << 20) &&
	    ((n > 3 && strcmp(path + n - 3, ".h5") == 0) || (n > 5 && strcmp(path + n - 5, ".hdf5") == 0)) &&
	    files_compared < 400)
		compare_file(path);
	return 0;
}

START_TEST(test_example)
{
	char path[512];
	const char *src = getenv("H5FS_SRCDIR");

	snprintf(path, sizeof(path), "%s/examples/example.h5", src && *src ? src : ".");
	files_compared = 0;
	compare_file(path);
	ck_assert_int_eq(files_compared, 1);
	ck_assert_int_gt(nodes_compared, 5);
	ck_assert_int_gt(opened_live, 0);
}
END_TEST

START_TEST(test_corpus)
{
	const char *corpus = test_corpus_dir();

	if (!corpus || access(corpus, R_OK) != 0) {
		fprintf(stderr, "test_root_index: no corpus, skipped\n");
		return;
	}
	files_compared = files_skipped = 0;
	nftw(corpus, visit, 16, FTW_PHYS);
	fprintf(stderr, "test_root_index: %d corpus files compared (%d nodes, %d error nodes), %d not recorded\n",
		files_compared, nodes_compared, errors_compared, files_skipped);
	ck_assert_int_gt(files_compared, 20);
	/* the corpus has objects that fail (th5s.h5/dset): error nodes */
	ck_assert_int_gt(errors_compared, 0);
}
END_TEST

static int looks, file_changed;

static bool count_changed(void *arg)
{
	(void)arg;
	looks++;
	return file_changed;
}

/* An indexed root of examples/example.h5 made with mount config c. */
static void *indexed_example(const h5fs_config *c, struct live_arg *arg)
{
	const char *src = getenv("H5FS_SRCDIR");
	static char path[512];
	cindex_key k = { .root = "/test", .member = "live", .view = "v", .size = 1, .mtime_ns = 2 };
	cindex_tree *t = NULL, *back = NULL;
	struct index_live lv = { .open = open_live, .changed = count_changed, .arg = arg };
	h5fs *L;
	void *I;

	snprintf(path, sizeof(path), "%s/examples/example.h5", src && *src ? src : ".");
	arg->path = path;
	ck_assert_int_eq(open_member(&L, path), 0);
	ck_assert_int_eq(index_record(&t, &h5fs_member_ops, L, INDEX_MAX_NODES), 0);
	h5fs_free(L);
	ck_assert_int_eq(cindex_store(ix, &k, t), 0);
	cindex_tree_free(t);
	ck_assert_int_eq(cindex_load(&back, ix, &k), 0);
	ck_assert_int_eq(index_root_new(&I, back, c, 0, 0, &lv), 0);
	return I;
}

START_TEST(test_live_changed)
{
	h5fs_config live = cfg, frozen = cfg;
	struct live_arg arg;
	struct stat st;
	double to;
	void *I;

	live.refresh = 1;
	frozen.refresh = 0;
	looks = file_changed = 0;

	/* -o ro,refresh=0: never looks, the kernel keeps answers for long */
	I = indexed_example(&frozen, &arg);
	ck_assert_int_eq(h5fs_indexed_ops.getattr(I, &st, &to, FUSE_ROOT_ID), 0);
	ck_assert(to == H5FS_TIMEOUT);
	file_changed = 1;
	ck_assert(!h5fs_indexed_ops.changed(I, true));
	ck_assert_int_eq(looks, 0);
	h5fs_indexed_ops.free(I);

	/* -o ro (refresh 1 s): answers kept for the interval */
	file_changed = 0;
	I = indexed_example(&live, &arg);
	ck_assert_int_eq(h5fs_indexed_ops.getattr(I, &st, &to, FUSE_ROOT_ID), 0);
	ck_assert(to == 1.0);
	/* within the interval of its load: no look */
	ck_assert(!h5fs_indexed_ops.changed(I, true));
	ck_assert(!h5fs_indexed_ops.changed(I, false));
	ck_assert_int_eq(looks, 0);
	usleep(1100 * 1000);
	/* the watcher looks, a request having come since the last look */
	ck_assert(!h5fs_indexed_ops.changed(I, false));
	ck_assert_int_eq(looks, 1);
	ck_assert(!h5fs_indexed_ops.changed(I, true));
	ck_assert_int_eq(looks, 1);
	usleep(1100 * 1000);
	/* a request after the interval looks; unchanged */
	ck_assert(!h5fs_indexed_ops.changed(I, true));
	ck_assert_int_eq(looks, 2);
	usleep(1100 * 1000);
	/* no request since the last look: the watcher does not look */
	ck_assert(!h5fs_indexed_ops.changed(I, false));
	ck_assert_int_eq(looks, 2);
	/* the file changes: the next request's look sees it, for good */
	file_changed = 1;
	ck_assert(h5fs_indexed_ops.changed(I, true));
	ck_assert_int_eq(looks, 3);
	file_changed = 0;
	ck_assert(h5fs_indexed_ops.changed(I, true));
	ck_assert(h5fs_indexed_ops.changed(I, false));
	ck_assert_int_eq(looks, 3);
	h5fs_indexed_ops.free(I);
}
END_TEST

static Suite *root_index_suite(void)
{
	Suite *s = suite_create("root_index");
	TCase *tc = tcase_create("core");

	tcase_set_timeout(tc, 600);
	tcase_add_test(tc, test_example);
	tcase_add_test(tc, test_corpus);
	tcase_add_test(tc, test_live_changed);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	char path[300];
	int st;

	snprintf(dir, sizeof(dir), "/tmp/h5fs-rootindex-XXXXXX");
	if (!mkdtemp(dir))
		return EXIT_FAILURE;
	snprintf(path, sizeof(path), "%s/index.sqlite", dir);
	if (cindex_open(&ix, path, NULL, NULL) != 0)
		return EXIT_FAILURE;
	cfg.read_only = 1;
	cfg.max_read = 1 << 20;
	/* The index is closed before its directory goes. */
	st = test_run(srunner_create(root_index_suite()), CK_NOFORK, NULL);
	cindex_close(ix);
	test_tmp_remove(dir);
	return st;
}
