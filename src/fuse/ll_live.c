/*
 * ll_live.c - live files (-o refresh=SECONDS; README "Live files"): a
 * mounted FILE that changes shows its new state, never stale or mixed
 * bytes. The design is generations, chosen to be obviously correct rather
 * than clever:
 *
 * - Noticing. A watcher thread looks at FILE and the related files its
 *   generation opened (external link targets, VDS sources) whenever
 *   inotify reports an event on FILE or its directory, and at least every
 *   refresh seconds: h5_file_changed() compares fstat of the open
 *   descriptor and stat of the path with the stamp taken at open (device,
 *   inode, size, mtime, ctime).
 * - A change opens FILE anew, by its path, as the next generation (struct
 *   gen, ll.h): a new source, a new related-file table, and a view of its
 *   own in the mount's one engine context (h5_open_opts.ctx: the cache
 *   budget and decoding threads are the mount's, not one set per
 *   generation; cache keys carry the generation's file), so no decoded
 *   metadata, chunk index or chunk of the old bytes is ever used with the
 *   new ones, and the old generation's entries go when it is closed. Half-written metadata (a SWMR writer flushing, a
 *   copy under way) fails to open: tried again with doubling backoff.
 * - Nodes are re-resolved by path (node_rebuild): all of them by the
 *   watcher right after a new generation (sweep), and any a request meets
 *   before that (node_fresh), the path walked as a lookup walks it
 *   (resolve). If the path leads to an object with the node's id (a
 *   directory, a node per path: the same group shown from the same
 *   anchors; a symlink: a symlink), that object's fields replace the
 *   node's; else the node is stale (ESTALE on open descriptors, ENOENT to
 *   lookups) and lets go of its old object. Its id is not given to
 *   another object while the kernel holds it (FUSE requests carry no
 *   generation: reads of the old inode would get the other object's
 *   bytes): a name that now leads to a stale node's id is shown under its
 *   (parent, name) number instead, as a stale directory or symlink gives
 *   its number up for a new one (ll.c show_object).
 *   An old generation is closed when the last node and read let go.
 * - The kernel's caches: entries and attributes time out after refresh
 *   seconds; after a change the watcher invalidates every inode (pages,
 *   attributes, cached listings) and the entries whose path now leads
 *   elsewhere; files opened once FILE has changed are read with direct_io
 *   (a read() the kernel splits into several requests is kept to one
 *   version by ll_dio.c). Files opened before use the page cache, whose pages ll_pcache.c
 *   records and verifies before they could meet another version's. Plain
 *   bytes are copied rather than spliced (a splice happens while the reply
 *   is written, after the check below).
 * - Reads are checked after they are made (live_read_check): FILE's
 *   descriptor still has its generation's stamp, so no byte was written
 *   meanwhile; else the read is made again on a new generation (at most
 *   H5FS_LIVE_READ_TRIES times, then EIO with a log line). File times move in
 *   clock ticks, so a generation opened within LIVE_QUIET_NS of FILE's last
 *   change cannot be vouched for by its stamp ("racy", as git's index
 *   says) and is opened again once FILE is quiet. Nor can one opened
 *   while a write() is still copying its bytes in: the times move when a
 *   write starts, its inotify event comes when it returns, and a write
 *   descheduled on a loaded machine can take longer than LIVE_QUIET_NS.
 *   With inotify, a stamp vouches only once an event of FILE came after
 *   it (writes_done; LIVE_SETTLE_NS where no event ever comes: writers
 *   through mmap, file systems that send none). A file a SWMR writer has
 *   open is read as libhdf5's SWMR reader does: such a writer never
 *   rewrites data in place and its metadata is checksummed, so reads are
 *   not refused for its appends, and a failed decode is retried on a fresh
 *   generation with backoff.
 * A read-write mount holds FILE's exclusive flock, which keeps libhdf5
 * writers out: it is never live, and its own appends are no changes.
 */
#include "ll.h"

#include <poll.h>
#include <sys/inotify.h>
#include <time.h>

#define LIVE_QUIET_NS 30000000LL        /* more than a clock tick of file times */
#define LIVE_SETTLE_NS 1000000000LL     /* a change with no event after it: vouched after this */
#define LIVE_OPEN_TRIES 8               /* 5 ms doubling: about 1.3 s in all */

struct live {
	pthread_mutex_t mu;     /* one refresh or node rebuild at a time */
	const h5_open_opts *opts;
	char *path;
	unsigned refresh;
	uint64_t ngen;          /* numbers handed out (under mu) */
	uint64_t seen;          /* the generation the kernel was told about */
	pthread_t thread;
	bool started;
	int wake[2];            /* pipe: live_free stops the watcher */
	int ino_fd;             /* inotify, or -1 */
	/* watch descriptors: set by watch_path under mu, read by the watcher's
	 * read_events without it (atomic, relaxed: each is one int on its own) */
	int file_wd;            /* the watch of FILE (-1: none, the old rule alone) */
	int dir_wd;             /* the watch of FILE's folder (events of other names: not FILE's) */
	int64_t event_ns;       /* when the watcher last read an event of FILE (atomic) */
	int failed_rc;          /* the refresh failure last logged, 0: none */
	bool gone_logged;
	bool changed_once;      /* a second generation was made: direct_io */
	bool local;             /* FILE is a local file (else remote: probes) */
	bool accessed;          /* a request came since the last probe (atomic) */
	char **retired;         /* node paths replaced (read unlocked in logs) */
	size_t nretired;
};

static int64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static void sleep_ns(int64_t ns)
{
	struct timespec ts = { (time_t)(ns / 1000000000), (long)(ns % 1000000000) };

	while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
		;
}

void gen_hold(struct gen *g)
{
	__atomic_add_fetch(&g->refs, 1, __ATOMIC_RELAXED);
}

void gen_release(struct gen *g)
{
	if (g && __atomic_sub_fetch(&g->refs, 1, __ATOMIC_ACQ_REL) == 0) {
		h5_file_close(g->f);
		free(g);
	}
}

struct gen *gen_current(h5fs *fs)
{
	struct gen *g;

	pthread_mutex_lock(&fs->lock);
	g = fs->gen;
	gen_hold(g);
	pthread_mutex_unlock(&fs->lock);
	return g;
}

static int64_t latest_ns(int64_t m, int64_t c)
{
	return m > c ? m : c;
}

/* Reads what inotify has for us (the watcher, or a reopen waiting for a
 * write's event): the time an event of FILE came (one on FILE itself, or
 * on its folder under its name). True when there were events: a thread
 * other than the watcher then kicks it (they may be changes to show). */
static bool read_events(struct live *lv)
{
	char buf[4096] __attribute__((aligned(__alignof__(struct inotify_event))));
	const char *base = strrchr(lv->path, '/');
	bool any = false;
	ssize_t n;

	base = base ? base + 1 : lv->path;
	while ((n = read(lv->ino_fd, buf, sizeof(buf))) > 0) {
		int dir_wd = __atomic_load_n(&lv->dir_wd, __ATOMIC_RELAXED);

		for (ssize_t i = 0; i + (ssize_t)sizeof(struct inotify_event) <= n;) {
			const struct inotify_event *ev = (const struct inotify_event *)(buf + i);

			if (ev->wd != dir_wd || (ev->len && strcmp(ev->name, base) == 0))
				__atomic_store_n(&lv->event_ns, now_ns(), __ATOMIC_RELEASE);
			i += (ssize_t)sizeof(*ev) + ev->len;
		}
		any = true;
	}
	return any;
}

/* Has every write that moved FILE's times to t returned? (See the top.) */
static bool writes_done(const struct live *lv, int64_t t)
{
	if (!lv || lv->ino_fd < 0 || __atomic_load_n(&lv->file_wd, __ATOMIC_RELAXED) < 0 || !lv->local)
		return true;
	return __atomic_load_n(&lv->event_ns, __ATOMIC_ACQUIRE) >= t || now_ns() - t >= LIVE_SETTLE_NS;
}

static struct gen *gen_make(h5fs *fs, h5_file *f)
{
	struct gen *g = calloc(1, sizeof(*g));
	h5_file_stamp s;

	if (!g)
		return NULL;
	g->f = f;
	g->refs = 1;
	g->num = ++fs->lv->ngen;
	g->swmr = h5_file_swmr(f) != 0;
	if (h5_file_stamp_get(&s, f)) {
		int64_t t = latest_ns(s.mtime_ns, s.ctime_ns);

		g->racy = now_ns() - t < LIVE_QUIET_NS || !writes_done(fs->lv, t);
	}
	return g;
}

double node_timeout(const h5fs *fs)
{
	return fs->live ? (double)fs->lv->refresh : H5FS_TIMEOUT;
}

bool live_direct(h5fs *fs)
{
	return fs->live && __atomic_load_n(&fs->lv->changed_once, __ATOMIC_RELAXED);
}

void h5fs_set_changed(h5fs *fs)
{
	if (fs->live)
		__atomic_store_n(&fs->lv->changed_once, true, __ATOMIC_RELAXED);
}

int live_new(h5fs *fs, h5_file *f)
{
	struct live *lv = calloc(1, sizeof(*lv));
	h5_file_stamp s;

	if (!lv)
		return h5_err_set(H5_ERR_NOMEM, "out of memory");
	pthread_mutex_init(&lv->mu, NULL);
	lv->wake[0] = lv->wake[1] = lv->ino_fd = lv->file_wd = lv->dir_wd = -1;
	lv->opts = fs->cfg.open_opts;
	lv->refresh = fs->cfg.refresh;
	fs->lv = lv;
	fs->gen = gen_make(fs, f);
	if (!fs->gen)
		return h5_err_set(H5_ERR_NOMEM, "out of memory");
	lv->seen = fs->gen->num;
	/* local files have a stamp; remote ones ask the server (by ETag) */
	fs->live = lv->refresh > 0 && lv->opts && !fs->writable && h5_file_watchable(f);
	lv->local = h5_file_stamp_get(&s, f);
	if (fs->live && !lv->local) {
		if (!(lv->path = strdup(h5_file_path(f))))
			return h5_err_set(H5_ERR_NOMEM, "out of memory");
	} else if (fs->live) {
		/* absolute: the daemon leaves its directory (fuse_daemonize);
		 * not resolved: a symlink at the path may be pointed elsewhere */
		const char *p = h5_file_path(f);
		char cwd[PATH_MAX];

		if (p[0] != '/' && getcwd(cwd, sizeof(cwd)))
			lv->path = path_join(cwd, p);
		else
			lv->path = strdup(p);
		if (!lv->path)
			return h5_err_set(H5_ERR_NOMEM, "out of memory");
	}
	return 0;
}

static int refresh_locked(h5fs *fs, bool doubt);

/* ---- resolving a path in a generation ------------------------------------ */

/* The node `path` leads to in generation g, resolved as lookups resolve it
 * (ll.c do_lookup): hard links, links shown in place (link_place: external
 * chains, soft links of another file not shown where it is), the anchors
 * of another file's groups (dir_anchor), a link up to a group of the path
 * shown as a symlink. 0 with *tf (a reference held), *taddr and anc's
 * anchors (anc->fpath malloc'd); 1 when the last name is shown as a
 * symlink: *link, its node (id ino), made; or a negative h5_err (no such
 * name, or a symlink in the middle: not a path the kernel asks for). */
static int resolve(struct node **link, h5_file **tf, uint64_t *taddr, struct node *anc, h5fs *fs, struct gen *g,
		   const char *path, uint64_t ino)
{
	/* the group walked through, as a lookup in it sees it */
	struct node dir = { .path = strdup("") };
	uint64_t *up = NULL;   /* st_ino of the path's groups, root first */
	size_t nup = 0;
	h5_file *f = g->f;
	uint64_t addr = h5_file_root(f);
	char name[H5FS_NAME_MAX + 1];
	int rc = 0;

	*link = NULL;
	*tf = NULL;
	h5_file_hold_related(f);
	up = malloc((strlen(path) / 2 + 2) * sizeof(*up));   /* one per name at most */
	if (!dir.path || !up) {
		rc = h5_err_set(H5_ERR_NOMEM, "out of memory");
		goto out;
	}
	up[nup++] = file_ino(f, addr);
	while (*path) {
		const char *e;
		size_t len;
		h5_link l;
		h5_file *nf = NULL;
		uint64_t na = UINT64_MAX, id = 0;
		char *fp = NULL, *npath;
		int prc, depth = -1;

		if (*path == '/') {
			path++;
			continue;
		}
		e = strchr(path, '/');
		len = e ? (size_t)(e - path) : strlen(path);
		if (len > H5FS_NAME_MAX) {
			rc = h5_err_set(H5_ERR_NOTFOUND, "no such object");
			break;
		}
		memcpy(name, path, len);
		name[len] = '\0';
		path += len;
		memset(&l, 0, sizeof(l));
		rc = h5_group_lookup(&l, f, addr, name);
		if (rc < 0)
			break;
		if (!name_ok(l.name, l.name_len) || strcmp(l.name, name) != 0) {
			h5_link_clear(&l);
			rc = h5_err_set(H5_ERR_NOTFOUND, "no such object");
			break;
		}
		if (l.type == H5_LINK_HARD) {
			nf = f;
			h5_file_hold_related(nf);
			na = l.addr;
			prc = 0;
		} else if (l.type == H5_LINK_SOFT || l.type == H5_LINK_EXTERNAL) {
			prc = link_place(&nf, &na, &fp, &dir, f, &l);
		} else {
			h5_link_clear(&l);
			rc = h5_err_set(H5_ERR_NOTFOUND, "no such object");
			break;
		}
		if (prc == 0) {
			id = file_ino(nf, na);
			for (size_t i = nup; i-- > 0;)
				if (up[i] == id) {
					depth = (int)(nup - 1 - i);
					break;
				}
		}
		npath = path_join(dir.path, name);
		if (!npath) {
			rc = h5_err_set(H5_ERR_NOMEM, "out of memory");
		} else if (prc != 0 || depth >= 0) {
			/* shown as a symlink: only the last name may be one */
			h5_link shown;
			char *mt = NULL;

			h5_err_clear();
			if (strspn(path, "/") != strlen(path))
				rc = h5_err_set(H5_ERR_NOTFOUND, "no such object");
			else if (link_shown(&shown, &mt, &dir, f, &l, prc) != 0)
				rc = h5_err_set(H5_ERR_NOMEM, "out of memory");
			else if ((rc = node_make_link(link, fs, ino, npath, dir.path, depth >= 0 ? NULL : &shown,
						      depth)) == 0)
				rc = 1;
			free(mt);
		} else {
			struct node next = { .path = npath };

			if (dir_anchor(&next, g->f, &dir, nf, name, npath, fp) != 0) {
				rc = h5_err_set(H5_ERR_NOMEM, "out of memory");
			} else {
				up[nup++] = id;
				free(dir.path);
				free(dir.fpath);
				dir = next;
				npath = NULL;
				h5_file_release_related(f);
				f = nf;
				nf = NULL;
				addr = na;
			}
		}
		free(npath);
		free(fp);
		h5_file_release_related(nf);
		h5_link_clear(&l);
		if (rc != 0)
			break;
	}
	if (rc == 0) {
		*tf = f;
		f = NULL;
		*taddr = addr;
		anc->fpath = dir.fpath;
		anc->a_mnt = dir.a_mnt;
		anc->a_file = dir.a_file;
		dir.fpath = NULL;
	}
out:
	h5_file_release_related(f);
	free(dir.path);
	free(dir.fpath);
	free(up);
	return rc;
}

/* ---- nodes --------------------------------------------------------------- */

static void retire(struct live *lv, char *s)
{
	char **n = realloc(lv->retired, (lv->nretired + 1) * sizeof(*n));

	if (!n)
		return;         /* leaks s rather than free what a log may read */
	lv->retired = n;
	lv->retired[lv->nretired++] = s;
}

/* Record that n was resolved in generation g (lv->mu held): with tmp,
 * the object found there, whose fields (read in g) n takes; NULL: n keeps
 * its fields and the generation they belong to (stale: the path leads
 * elsewhere now). tmp gets n's old fields and is freed here, outside
 * n->lk. */
static void node_swap(h5fs *fs, struct node *n, struct node *tmp, struct gen *g, bool stale)
{
	struct gen *old;
	h5_dataset *old_ds = NULL;
	h5_file *old_f = NULL;

	gen_hold(g);
	pthread_rwlock_wrlock(&n->lk);
	n->checked = g->num;
	n->stale = stale;
	old = n->gen;
	n->gen = g;
	xattr_cache_drop(n);    /* read in the old generation */
	if (!tmp && stale) {
		/* it only answers ESTALE now: let its generation go */
		old_ds = n->ds;
		n->ds = NULL;
		old_f = n->f;
		n->f = n->f ? g->f : NULL;
	}
	if (tmp) {
		h5_dataset *ds = n->ds;
		const h5_view_ops *view = n->view;
		h5_file *f = n->f;
		char *target = n->target;

		n->ds = tmp->ds;
		n->view = tmp->view;
		n->f = tmp->f;
		n->target = tmp->target;
		n->addr = tmp->addr;
		n->kind = tmp->kind;
		n->st = tmp->st;
		tmp->ds = ds;
		tmp->view = view;
		tmp->f = f;
		tmp->target = target;
		tmp->gen = old;
		old = NULL;
	}
	pthread_rwlock_unlock(&n->lk);
	if (tmp && tmp->target)
		retire(fs->lv, tmp->target);   /* readlink may have it */
	if (tmp)
		tmp->target = NULL;
	node_free(tmp);
	if (old_ds)
		h5_dataset_close(old_ds);
	if (old_f)
		h5_file_release_related(old_f);
	gen_release(old);
}

/* The mount path of the group a path's last name is in. */
static char *dir_of(const char *path)
{
	const char *s = strrchr(path, '/');
	size_t n = s ? (size_t)(s - path) : 0;
	char *d = malloc(n + 1);

	if (d) {
		memcpy(d, path, n);
		d[n] = '\0';
	}
	return d;
}

/* Whether directory n's anchors are those a lookup of its path gives now. */
static bool same_anchors(const struct node *n, const struct node *anc)
{
	if (!n->fpath || !anc->fpath)
		return !n->fpath && !anc->fpath;
	return strcmp(n->fpath, anc->fpath) == 0 && n->a_mnt == anc->a_mnt && n->a_file == anc->a_file;
}

/* Re-resolve n by its path in the current generation (lv->mu held):
 * 0, ESTALE when the path leads elsewhere or nowhere now, or EIO (logged:
 * the object is there but cannot be read; n keeps its old generation and
 * is tried again at its next use). A directory (a node per path) stays
 * itself while its path leads to the same group shown from the same
 * anchors; anything else, to the object with its node id. */
static int node_rebuild(h5fs *fs, struct node *n, bool log)
{
	struct gen *g = fs->gen;        /* changes only under lv->mu */
	struct node *tmp = NULL, *link = NULL, anc = { 0 };
	char *vpath = NULL;
	h5_file *tf = NULL;
	uint64_t taddr = 0;
	bool stale = true, same;
	int rc, e = 0;

	if (n->checked == g->num)
		return n->stale ? ESTALE : 0;
	/* a view (views.c) is re-resolved by its dataset's path */
	vpath = n->vkind ? views_base_path(n) : NULL;
	if (n->vkind && !vpath)
		return ENOMEM;
	rc = resolve(&link, &tf, &taddr, &anc, fs, g, vpath ? vpath : n->path, n->ino);
	if (n->type == NT_LINK) {
		if (rc == 1) {
			tmp = link;
			link = NULL;
			stale = false;
		}
	} else if (rc == 0) {
		if (n->ino == FUSE_ROOT_ID)
			same = true;
		else if (n->type == NT_DIR && !n->vkind)
			same = file_ino(tf, taddr) == (uint64_t)n->st.st_ino && same_anchors(n, &anc);
		else    /* its own id; a (parent, name) number's: its object's */
			same = file_nodeid(fs, tf, taddr) ==
			       ((n->ino & H5FS_SYNTH_BIT) && n->f ? file_nodeid(fs, n->f, n->addr) : n->ino);
		if (same) {
			rc = n->vkind ? views_make(&tmp, fs, tf, taddr, n)
				      : node_make_obj(&tmp, fs, tf, taddr, n->ino, n->path);
			if (rc < 0) {
				e = log ? h5err_logged(fs, rc, "refresh", n->path, NULL, taddr) : h5fs_errno(rc);
				goto out;
			}
			stale = !tmp || tmp->type != n->type;
			if (stale) {
				node_free(tmp);
				tmp = NULL;
			}
		}
	}
	h5_err_clear();
	node_swap(fs, n, stale ? NULL : tmp, g, stale);
	e = stale ? ESTALE : 0;
out:
	h5_file_release_related(tf);
	node_free(link);
	free(anc.fpath);
	free(vpath);
	return e;
}

int node_fresh(h5fs *fs, struct node *n)
{
	bool same, stale;
	int e;

	if (!fs->live)
		return 0;
	__atomic_store_n(&fs->lv->accessed, true, __ATOMIC_RELAXED);
	pthread_rwlock_rdlock(&n->lk);
	pthread_mutex_lock(&fs->lock);
	same = n->checked == fs->gen->num;
	pthread_mutex_unlock(&fs->lock);
	stale = n->stale;
	pthread_rwlock_unlock(&n->lk);
	if (same)
		return stale ? ESTALE : 0;
	for (int attempt = 0;; attempt++) {
		char msg[256];

		pthread_mutex_lock(&fs->lv->mu);
		/* a writer mid-flush may explain a failure: logged only when no
		 * fresh generation answers */
		e = node_rebuild(fs, n, false);
		pthread_mutex_unlock(&fs->lv->mu);
		if (e != EIO)
			return e;
		snprintf(msg, sizeof(msg), "%s", h5_err_msg());
		if (!live_retry(fs, attempt)) {
			h5fs_log(fs, LOG_ERR, "refresh %s: EIO: %s", show_path(n->path), msg);
			return e;
		}
	}
}

int node_use(struct use *u, h5fs *fs, struct node *n)
{
	int e = node_fresh(fs, n);

	memset(u, 0, sizeof(*u));
	if (e)
		return e;
	pthread_rwlock_rdlock(&n->lk);
	u->f = n->f;
	u->addr = n->addr;
	u->g = n->gen;
	if (u->g)
		gen_hold(u->g);
	if (u->f)
		h5_file_hold_related(u->f);
	pthread_rwlock_unlock(&n->lk);
	if (u->g && __atomic_load_n(&u->g->broken, __ATOMIC_ACQUIRE)) {
		/* rewritten in place and not readable yet (logged at refresh) */
		node_use_end(u);
		return EIO;
	}
	return 0;
}

void node_use_end(struct use *u)
{
	if (u->f)
		h5_file_release_related(u->f);
	gen_release(u->g);
	memset(u, 0, sizeof(*u));
}

/* ---- refreshing ------------------------------------------------------------ */

static void watch_path(struct live *lv);

/* Open FILE anew when it changed (lv->mu held; doubt: also when the stamp
 * says nothing, after a failed read): 1 when a new generation is current,
 * 0 when nothing changed, or a negative h5_err (logged once) when FILE
 * cannot be opened now. */
static int refresh_locked(h5fs *fs, bool doubt)
{
	struct live *lv = fs->lv;
	struct gen *cur = fs->gen, *g;
	h5_file *f = NULL;
	struct stat st;
	int m, rc = 0;

	m = h5_file_changed(cur->f, lv->local ? lv->path : NULL);
	if (!m && !cur->racy && !doubt)
		return 0;
	if (!lv->local && !m)
		return 0;       /* the same object on the server: nothing to reopen */
	if (m == H5_CHANGED_GONE) {
		/* the descriptor still reads the last state */
		if (!lv->gone_logged)
			h5fs_log(fs, LOG_NOTICE, "%s was deleted: showing its last state", lv->path);
		lv->gone_logged = true;
		return 0;
	}
	lv->gone_logged = false;
	for (int t = 0; t < LIVE_OPEN_TRIES; t++) {
		if (t)
			sleep_ns(5000000LL << (t - 1));
		/* changed within a clock tick: let it be quiet first; a write
		 * still copying in: wait for its event (where none comes,
		 * LIVE_SETTLE_NS at most: a read waits rather than fails) */
		if (lv->local && stat(lv->path, &st) == 0) {
			int64_t at = latest_ns((int64_t)st.st_mtim.tv_sec * 1000000000 + st.st_mtim.tv_nsec,
					       (int64_t)st.st_ctim.tv_sec * 1000000000 + st.st_ctim.tv_nsec);
			int64_t d = now_ns() - at;

			if (d >= 0 && d < LIVE_QUIET_NS)
				sleep_ns(LIVE_QUIET_NS - d);
			for (int64_t w = 0; w < LIVE_SETTLE_NS && !writes_done(lv, at); w += 2000000) {
				sleep_ns(2000000);
				if (read_events(lv))
					(void)!write(lv->wake[1], "k", 1);
			}
		}
		rc = h5_file_open(&f, lv->path, lv->opts);
		if (rc == 0)
			break;
	}
	if (rc < 0) {
		/* written in place and unreadable now: its old bytes are gone */
		if (m & H5_CHANGED_BYTES)
			__atomic_store_n(&cur->broken, true, __ATOMIC_RELEASE);
		if (rc != lv->failed_rc)
			h5fs_log(fs, LOG_ERR, "%s changed and cannot be read now%s: %s", lv->path,
				 (m & H5_CHANGED_BYTES) ? " (reads answer EIO)" : "", h5_err_msg());
		lv->failed_rc = rc;
		return rc;
	}
	lv->failed_rc = 0;
	g = gen_make(fs, f);
	if (!g) {
		h5_file_close(f);
		return h5_err_set(H5_ERR_NOMEM, "out of memory");
	}
	pthread_mutex_lock(&fs->lock);
	fs->gen = g;
	fs->f = f;
	__atomic_store_n(&fs->file_mtime, h5_file_mtime(f), __ATOMIC_RELAXED);
	if (lv->local && stat(lv->path, &st) == 0)
		__atomic_store_n(&fs->file_size, (uint64_t)st.st_size, __ATOMIC_RELAXED);
	pthread_mutex_unlock(&fs->lock);
	/* opened again only because its stamp was racy: the same bytes, the
	 * page cache stays usable */
	if (m)
		__atomic_store_n(&lv->changed_once, true, __ATOMIC_RELAXED);
	kind_forget_all(fs);
	gen_release(cur);
	watch_path(lv);         /* a file renamed over FILE: watch the new one */
	h5fs_log(fs, LOG_DEBUG, "%s changed: generation %llu", lv->path, (unsigned long long)g->num);
	return 1;
}

bool live_retry(h5fs *fs, int attempt)
{
	struct live *lv = fs->lv;
	bool again = false;

	if (!fs->live || attempt + 1 >= H5FS_LIVE_READ_TRIES)
		return false;
	pthread_mutex_lock(&lv->mu);
	/* metadata a writer is still writing (a SWMR writer's flush, a
	 * file being copied): a fresh generation after a pause */
	if (fs->gen->swmr || fs->gen->racy || h5_file_changed(fs->gen->f, lv->local ? lv->path : NULL)) {
		refresh_locked(fs, true);
		again = true;
	}
	pthread_mutex_unlock(&lv->mu);
	h5_err_clear();
	if (again)
		sleep_ns(5000000LL << attempt);
	return again;
}

int live_read_check(h5fs *fs, struct gen *g, int attempt, bool failed, const char *path)
{
	bool ok;

	if (!fs->live || !g)
		return 0;
	/* an answer made on an old generation whose bytes are intact (FILE
	 * renamed over, or deleted) is one version: it may go */
	ok = !__atomic_load_n(&g->broken, __ATOMIC_ACQUIRE) &&
	     (g->swmr || (!g->racy && h5_file_changed(g->f, NULL) == 0));
	if (ok && !(failed && g->swmr))
		return 0;
	if (attempt + 1 >= H5FS_LIVE_READ_TRIES) {
		if (!failed)
			h5fs_log(fs, LOG_ERR, "read %s: %s %s: EIO", show_path(path), fs->lv->path,
				 __atomic_load_n(&g->broken, __ATOMIC_ACQUIRE) ? "was rewritten and cannot be read now"
									: "kept changing while being read");
		return EIO;
	}
	pthread_mutex_lock(&fs->lv->mu);
	if (g == fs->gen)
		refresh_locked(fs, true);
	pthread_mutex_unlock(&fs->lv->mu);
	h5_err_clear();
	if (failed)
		sleep_ns(5000000LL << attempt);   /* a SWMR writer mid-flush */
	return EAGAIN;
}

/* ---- the watcher ---------------------------------------------------------- */

/* After a new generation: every node is resolved in it now (not at its
 * next use), so old generations are closed as soon as no read holds them,
 * and the kernel drops what it caches of every inode and the entries whose
 * path leads elsewhere now. From the watcher, never a request handler (an
 * invalidation can wait on that request's locks). */
static void sweep(h5fs *fs)
{
	struct node **v = NULL;
	uint64_t *parent = NULL;
	struct gen *g = gen_current(fs);
	size_t n = 0, i;

	if (g->num == fs->lv->seen)
		goto out;
	pthread_mutex_lock(&fs->lock);
	v = calloc(fs->nnodes ? fs->nnodes : 1, sizeof(*v));
	parent = calloc(fs->nnodes ? fs->nnodes : 1, sizeof(*parent));
	for (i = 0; v && parent && i < fs->nodes_cap; i++)
		for (struct node *x = fs->nodes[i]; x && n < fs->nnodes; x = x->next) {
			x->busy++;      /* a FORGET meanwhile leaves it to us */
			parent[n] = x->parent;
			v[n++] = x;
		}
	pthread_mutex_unlock(&fs->lock);
	for (i = 0; i < n; i++) {
		struct node *x = v[i];
		const char *name;
		int e;

		pthread_mutex_lock(&fs->lv->mu);
		e = node_rebuild(fs, x, false);   /* tried again at its next use */
		name = strrchr(x->path, '/');     /* changes under mu; retired, never freed */
		pthread_mutex_unlock(&fs->lv->mu);
		h5_err_clear();
		if (!fs->se)
			continue;
		if (e == ESTALE && parent[i] && name && fs_ino_out(fs, parent[i]))
			fuse_lowlevel_notify_inval_entry(fs->se, fs_ino_out(fs, parent[i]), name + 1,
							 strlen(name + 1));
		if (fs_ino_out(fs, x->ino))
			fuse_lowlevel_notify_inval_inode(fs->se, fs_ino_out(fs, x->ino), 0, 0);
	}
	pthread_mutex_lock(&fs->lock);
	for (i = 0; i < n; i++)
		if (--v[i]->busy || !v[i]->dead)
			v[i] = NULL;
	pthread_mutex_unlock(&fs->lock);
	for (i = 0; i < n; i++)
		node_free(v[i]);
	fs->lv->seen = g->num;
out:
	free(v);
	free(parent);
	gen_release(g);
}

static void watch_path(struct live *lv)
{
	char *dir;

	if (lv->ino_fd < 0 || !lv->local)
		return;
	int wd = inotify_add_watch(lv->ino_fd, lv->path, IN_MODIFY | IN_ATTRIB | IN_CLOSE_WRITE | IN_MOVE_SELF |
			  IN_DELETE_SELF);

	/* the first watch: what was written before it sends no event, and
	 * counts as done (a write copying in at this instant is not seen) */
	if (wd >= 0 && __atomic_load_n(&lv->file_wd, __ATOMIC_RELAXED) < 0)
		__atomic_store_n(&lv->event_ns, now_ns(), __ATOMIC_RELEASE);
	if (wd >= 0)
		__atomic_store_n(&lv->file_wd, wd, __ATOMIC_RELAXED);
	dir = dir_of(lv->path);
	if (dir)
		__atomic_store_n(&lv->dir_wd, inotify_add_watch(lv->ino_fd, dir[0] ? dir : "/", IN_MOVED_TO | IN_CREATE | IN_DELETE),
				 __ATOMIC_RELAXED);
	free(dir);
}

/* One look at FILE (and the related files of its generation): a change
 * opens the next generation and re-resolves the nodes. The watcher's, or
 * a collection's one thread for all its members (live_start not called). */
void live_tick(h5fs *fs)
{
	struct live *lv = fs->lv;

	if (!fs->live)
		return;
	/* a remote FILE: one request, only when the mount was used */
	if (!lv->local && __atomic_exchange_n(&lv->accessed, false, __ATOMIC_RELAXED)) {
		struct gen *g = gen_current(fs);

		h5_file_probe(g->f);
		gen_release(g);
	}
	pthread_mutex_lock(&lv->mu);
	refresh_locked(fs, false);
	pthread_mutex_unlock(&lv->mu);
	h5_err_clear();
	sweep(fs);
}

static void *watcher(void *arg)
{
	h5fs *fs = arg;
	struct live *lv = fs->lv;

	for (;;) {
		struct pollfd p[2] = { { lv->wake[0], POLLIN, 0 }, { lv->ino_fd, POLLIN, 0 } };
		int r = poll(p, lv->ino_fd >= 0 ? 2 : 1, (int)(lv->refresh > 86400 ? 86400 : lv->refresh) * 1000);

		if (r < 0 && errno != EINTR)
			sleep_ns(100000000LL);
		if (p[0].revents) {
			char c = 'x';

			/* "k": a reopen read our events; else live_free stops us */
			if (read(lv->wake[0], &c, 1) != 1 || c != 'k')
				break;
		}
		if (lv->ino_fd >= 0 && p[1].revents)
			read_events(lv);
		live_tick(fs);
	}
	return NULL;
}

/* From op_init: after fuse_daemonize's fork, whose child has no threads
 * of the parent. */
void live_start(h5fs *fs)
{
	struct live *lv = fs->lv;

	if (!fs->live || lv->started || pipe(lv->wake) != 0)
		return;
	for (int i = 0; i < 2; i++)
		fcntl(lv->wake[i], F_SETFD, FD_CLOEXEC);
	lv->ino_fd = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);   /* -1: poll only */
	watch_path(lv);
	if (pthread_create(&lv->thread, NULL, watcher, fs) == 0) {
		lv->started = true;
		return;
	}
	h5fs_log(fs, LOG_ERR, "cannot start the watcher of %s: changes are not shown", lv->path);
}

void h5fs_stop_watching(h5fs *fs)
{
	struct live *lv = fs ? fs->lv : NULL;

	if (!lv || !lv->started)
		return;
	(void)!write(lv->wake[1], "x", 1);
	pthread_join(lv->thread, NULL);
	lv->started = false;
}

void live_free(h5fs *fs)
{
	struct live *lv = fs->lv;

	if (!lv)
		return;
	h5fs_stop_watching(fs);
	for (int i = 0; i < 2; i++)
		if (lv->wake[i] >= 0)
			close(lv->wake[i]);
	if (lv->ino_fd >= 0)
		close(lv->ino_fd);
	for (size_t i = 0; i < lv->nretired; i++)
		free(lv->retired[i]);
	free(lv->retired);
	free(lv->path);
	pthread_mutex_destroy(&lv->mu);
	free(lv);
	fs->lv = NULL;
}
