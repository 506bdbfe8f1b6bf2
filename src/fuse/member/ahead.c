/*
 * ahead.c - the next directory's listing made ahead of its readdir, by a
 * thread of its own (issue 82).
 *
 * Why: a cold walk (find, du) lists a directory, then each subdirectory
 * in the listing's order. Each listing is made at the first readdir of
 * its handle (read.c listing): the symbol table walked, every child's
 * header read for its kind and stat (~1.1 ms of the daemon's CPU for
 * 1,000 datasets), while the walker and the kernel wait; then the daemon
 * waits while the kernel makes the reply's entries and the walker goes
 * on (~2.8 ms: the FUSE floor). Made here while the kernel works on the
 * directory before it, the listing is ready when its readdir comes: the
 * two overlap on a machine of two cores or more.
 *
 * What it is: a listing of several directories (the root of make_many's
 * tree: 1,000 groups) keeps their ids in order; a readdir that takes the
 * listing of one of them asks for the next one's (ahead_listed). The
 * thread makes it as a readdir would (dirsnap_list, in a reader section,
 * with a reference on the directory's node so that a FORGET cannot free
 * it meanwhile) and keeps it until it is taken or the next is made. A
 * directory the kernel has not looked up yet (the entries of the parent's
 * listing past its READDIRPLUS reply come by plain READDIR: 183 of 1,000
 * groups in make_many's root) is looked up by the thread first, its
 * reference given back after, the parent's node referenced meanwhile.
 *
 * A listing made ahead is taken only where it reads as one made at its
 * readdir would (ahead_fits): of the current generation (a live FILE's
 * change makes a new one), and on a mount that writes, after the
 * readdir's commit barrier, none of the mount's changes under way as it
 * was read nor begun since (node/hold.c fs_change_mark: every FILE write,
 * every change by name or stat; the barrier's own commit of names not
 * linked yet is one). Else it is freed and the readdir lists anew.
 *
 * Not for a collection's members (one thread each would be hundreds): a
 * single FILE's mount. Stopped before the unmount's last commits.
 */
#include "dirsnap.h"
#include "table.h"

struct ahead {
	h5fs *fs;
	pthread_mutex_t mu;
	pthread_cond_t cv;
	pthread_t th;
	bool stop;
	uint64_t *dirs;         /* the last listing of several directories': */
	size_t ndirs, at;       /* their ids in its order; at: the last taken */
	uint64_t parent;        /* that listing's directory, */
	char **names;           /* and the names of dirs there */
	uint64_t want;          /* to make next (0: none), */
	size_t want_i;          /* its index in dirs */
	uint64_t busy;          /* being made (0: none) */
	struct dirsnap *ready;  /* made, not taken */
};

/* fs->ahead once stopped: none made again */
static struct ahead ahead_off;

/* The longest a readdir waits for the listing being made of its directory
 * (then it lists on its own) */
#define AHEAD_WAIT_MS 2000

/* A reference on ino's node (a directory the kernel holds, or one it has
 * not looked up yet: looked up here, name in parent), for ahead_make to
 * give back with node_unref; false: none taken */
static bool ahead_ref(h5fs *fs, uint64_t ino, uint64_t parent, const char *name)
{
	struct root_entry e;
	struct node *n, *p = NULL;
	struct rd x;
	int err;

	pthread_mutex_lock(&fs->lock);
	n = node_full_find_locked(fs, ino);
	if (n && n->nlookup) {
		n->nlookup++;
		pthread_mutex_unlock(&fs->lock);
		return true;
	}
	/* (a node the kernel let go, kept for its records: not looked up
	 * here again) */
	if (!n && name && parent != FUSE_ROOT_ID)
		p = node_full_find_locked(fs, parent);
	if (n || !name || (parent != FUSE_ROOT_ID && (!p || !p->nlookup))) {
		pthread_mutex_unlock(&fs->lock);
		return false;
	}
	if (p)
		p->nlookup++;
	pthread_mutex_unlock(&fs->lock);
	x = commit_rd_begin(fs);
	err = member_lookup(fs, &e, parent, name);
	commit_rd_end(&x);
	h5_err_clear();
	if (p)
		node_unref(fs, parent, 1);
	if (!err && e.ino != ino)
		node_unref(fs, e.ino, 1);       /* (another number: not made ahead) */
	return !err && e.ino == ino;
}

/* The listing of ino read as a readdir would, or NULL (not a plain
 * directory, an error: the readdir says) */
static struct dirsnap *ahead_make(h5fs *fs, uint64_t ino, uint64_t parent, const char *name)
{
	struct dirsnap *d = NULL;
	struct node *n;
	struct rd x;
	int err;

	if (!ahead_ref(fs, ino, parent, name))
		return NULL;
	pthread_mutex_lock(&fs->lock);
	n = node_full_find_locked(fs, ino);
	if (!n || n->type != NT_DIR || n->vkind) {
		pthread_mutex_unlock(&fs->lock);
		node_unref(fs, ino, 1);
		return NULL;
	}
	pthread_mutex_unlock(&fs->lock);
	d = calloc(1, sizeof(*d));
	if (d) {
		pthread_mutex_init(&d->mu, NULL);
		d->ino = ino;
		x = commit_rd_begin(fs);
		err = dirsnap_list(d, fs, ino, true);
		commit_rd_end(&x);
		h5_err_clear();
		if (err) {
			dirsnap_free(d);
			d = NULL;
		} else {
			d->built = true;
		}
	}
	node_unref(fs, ino, 1);
	return d;
}

static void *ahead_run(void *arg)
{
	struct ahead *a = arg;
	h5fs *fs = a->fs;

	pthread_mutex_lock(&a->mu);
	for (;;) {
		struct dirsnap *d, *old = NULL;
		uint64_t ino, parent = 0;
		char *name = NULL;

		while (!a->stop && !a->want)
			pthread_cond_wait(&a->cv, &a->mu);
		if (a->stop)
			break;
		ino = a->want;
		a->want = 0;
		if (a->ready && a->ready->ino == ino)
			continue;
		a->busy = ino;
		if (a->want_i < a->ndirs && a->dirs[a->want_i] == ino) {
			parent = a->parent;
			name = strdup(a->names[a->want_i]);     /* (NULL: not looked up) */
		}
		pthread_mutex_unlock(&a->mu);
		d = ahead_make(fs, ino, parent, name);
		free(name);
		pthread_mutex_lock(&a->mu);
		a->busy = 0;
		if (d) {
			old = a->ready;
			a->ready = d;
		}
		pthread_cond_broadcast(&a->cv);
		if (old) {
			pthread_mutex_unlock(&a->mu);
			dirsnap_free(old);
			pthread_mutex_lock(&a->mu);
		}
	}
	pthread_mutex_unlock(&a->mu);
	return NULL;
}

/* fs's, made (with its thread) when make; NULL when none or stopped */
static struct ahead *ahead_get(h5fs *fs, bool make)
{
	struct ahead *a = __atomic_load_n(&fs->ahead, __ATOMIC_ACQUIRE);

	if (a || !make)
		return a == &ahead_off ? NULL : a;
	pthread_mutex_lock(&fs->lock);
	if (!fs->ahead) {
		a = calloc(1, sizeof(*a));
		if (a) {
			a->fs = fs;
			pthread_mutex_init(&a->mu, NULL);
			pthread_cond_init(&a->cv, NULL);
			__atomic_store_n(&fs->ahead, a, __ATOMIC_RELEASE);
			if (pthread_create(&a->th, NULL, ahead_run, a) != 0) {
				pthread_cond_destroy(&a->cv);
				pthread_mutex_destroy(&a->mu);
				free(a);
				__atomic_store_n(&fs->ahead, &ahead_off, __ATOMIC_RELEASE);
			}
		}
	}
	a = fs->ahead;
	pthread_mutex_unlock(&fs->lock);
	return a == &ahead_off ? NULL : a;
}

/* a FILE's own subdirectory, listed as one (its kind known) that may be
 * numbered by its address (lookup.c group_by_addr: the node id a walk's
 * lookup of it gives, what ahead_make finds its node by; one numbered by
 * its path has no node of that id, and is not made ahead) */
static bool ahead_dir(const struct dent *e)
{
	return e->dtype == DT_DIR && !e->link && e->addr != UINT64_MAX && !((e->addr + 2) >> 48);
}

static uint64_t ahead_id(const struct dent *e)
{
	return H5FS_SYNTH_BIT | H5FS_DIRADDR_BIT | (e->addr + 2);
}

void ahead_listed(h5fs *fs, const struct dirsnap *d)
{
	struct ahead *a;
	uint64_t *dirs = NULL, *old = NULL;
	char **names = NULL, **old_names = NULL, *at;
	size_t nd = 0, bytes = 0;

	if (fs->shared_watch)
		return;
	for (size_t i = 0; i < d->n; i++)
		if (ahead_dir(&d->e[i])) {
			nd++;
			bytes += strlen(d->names + d->e[i].name) + 1;
		}
	if (nd >= 2) {
		/* (the names after their pointers, in one block) */
		dirs = malloc(nd * sizeof(*dirs));
		names = malloc(nd * sizeof(*names) + bytes);
		if (!dirs || !names) {
			free(dirs);
			free(names);
			return;         /* (out of memory: nothing made ahead) */
		}
		at = (char *)(names + nd);
		nd = 0;
		for (size_t i = 0; i < d->n; i++)
			if (ahead_dir(&d->e[i])) {
				size_t len = strlen(d->names + d->e[i].name) + 1;

				names[nd] = memcpy(at, d->names + d->e[i].name, len);
				at += len;
				dirs[nd++] = ahead_id(&d->e[i]);
			}
	}
	a = ahead_get(fs, dirs != NULL);
	if (!a) {
		free(dirs);
		free(names);
		return;
	}
	pthread_mutex_lock(&a->mu);
	if (dirs) {
		old = a->dirs;
		old_names = a->names;
		a->dirs = dirs;
		a->names = names;
		a->ndirs = nd;
		a->parent = d->ino;
		a->at = 0;
		a->want = dirs[0];
		a->want_i = 0;
	} else {
		/* one of the listed: the one after it (a walk goes in order:
		 * where the last one taken was, or the next, is looked at first) */
		size_t k = a->ndirs;

		for (size_t j = 0; j < a->ndirs; j++) {
			size_t i = (a->at + j) % a->ndirs;

			if (a->dirs[i] == d->ino) {
				k = i;
				break;
			}
		}
		if (k + 1 < a->ndirs) {
			a->at = k;
			a->want = a->dirs[k + 1];
			a->want_i = k + 1;
		}
	}
	if (a->want)
		pthread_cond_signal(&a->cv);
	pthread_mutex_unlock(&a->mu);
	free(old);
	free(old_names);
}

/* p (made ahead) reads as a listing made now would: see the header */
static bool ahead_fits(h5fs *fs, const struct dirsnap *p)
{
	if (p->err || p->nomem || (p->gen && !gen_is_current(fs, p->gen)))
		return false;
	if (!pager_writes(&fs->pg))
		return true;
	return p->quiet && commit_barrier(fs, COMMIT_NAMES) == 0 && !fs_change_since(fs, p->chg_mark);
}

bool ahead_take(h5fs *fs, struct dirsnap *d)
{
	struct ahead *a = ahead_get(fs, false);
	struct dirsnap *p = NULL;
	struct timespec until;

	if (!a)
		return false;
	clock_gettime(CLOCK_REALTIME, &until);
	until.tv_sec += AHEAD_WAIT_MS / 1000;
	pthread_mutex_lock(&a->mu);
	while (a->busy == d->ino && pthread_cond_timedwait(&a->cv, &a->mu, &until) == 0)
		;
	if (a->ready && a->ready->ino == d->ino) {
		p = a->ready;
		a->ready = NULL;
	}
	if (a->want == d->ino)
		a->want = 0;    /* (asked for, not begun: listed here, not twice) */
	pthread_mutex_unlock(&a->mu);
	if (!p)
		return false;
	if (!ahead_fits(fs, p)) {
		dirsnap_free(p);
		return false;
	}
	/* its contents moved into d (d->mu, ino, link and told stay d's) */
	d->n = p->n;
	d->cap = p->cap;
	d->e = p->e;
	d->st = p->st;
	d->names = p->names;
	d->names_len = p->names_len;
	d->names_cap = p->names_cap;
	d->skipped = p->skipped;
	d->nomem = p->nomem;
	d->keep_soft = p->keep_soft;
	d->err = 0;
	d->quiet = p->quiet;
	d->chg_mark = p->chg_mark;
	d->gen = p->gen;
	d->fs = p->fs;
	d->rf = p->rf;
	d->raddr = p->raddr;
	p->n = 0;
	p->e = NULL;
	p->st = NULL;
	p->names = NULL;
	p->gen = NULL;
	dirsnap_free(p);
	return true;
}

void ahead_stop(h5fs *fs)
{
	struct ahead *a;

	pthread_mutex_lock(&fs->lock);
	a = fs->ahead;
	__atomic_store_n(&fs->ahead, &ahead_off, __ATOMIC_RELEASE);
	pthread_mutex_unlock(&fs->lock);
	if (!a || a == &ahead_off)
		return;
	pthread_mutex_lock(&a->mu);
	a->stop = true;
	pthread_cond_broadcast(&a->cv);
	pthread_mutex_unlock(&a->mu);
	pthread_join(a->th, NULL);
	dirsnap_free(a->ready);
	free(a->dirs);
	free(a->names);
	pthread_cond_destroy(&a->cv);
	pthread_mutex_destroy(&a->mu);
	free(a);
}
