/* setup.c - the mount state: h5fs_new, h5fs_free. */
#include "member.h"
#include "batch.h"
#include "npystream.h"
#include "handle.h"

/* ---- setup ------------------------------------------------------------------ */

void h5fs_set_write_busy(h5fs *fs)
{
	fs->write_busy = !fs->cfg.read_only && !pager_writes(&fs->pg);
}

int h5fs_new(h5fs **out, h5_file *f, const h5fs_config *cfg)
{
	h5fs *fs;
	struct node *root = NULL;
	struct stat fst;
	int rc;

	*out = NULL;
	fs = calloc(1, sizeof(*fs));
	if (!fs)
		return h5_err_set(H5_ERR_NOMEM, "out of memory");
	fs->f = f;
	fs->cfg = *cfg;
	pager_init(&fs->pg, !cfg->read_only && h5_file_writable(f));
	/* the write-behind kinds, each registered the same way (commit.h):
	 * their policies, admits and stops known from here on */
	if (commit_kind_register(fs, &lbatch_kind) || commit_kind_register(fs, &xbatch_kind) ||
	    commit_kind_register(fs, &npy_kind_desc) || commit_kind_register(fs, &idle_kind)) {
		commit_kinds_free(fs);
		free(fs);
		return h5_err_set(H5_ERR_NOMEM, "out of memory");
	}
	fs->file_mtime = h5_file_mtime(f);
	/* Defaults follow FILE: whoever may read FILE may read the mount (the
	 * kernel enforces it: main.c mounts with default_permissions). Nothing
	 * is writable or executable; directories are searchable where FILE is
	 * readable. In-memory images (no FILE) show the caller's, 0444/0555. */
	fs->uid = getuid();
	fs->gid = getgid();
	fs->file_mode = 0444;
	/* the descriptor mounted, not what FILE's name leads to by now */
	if (h5_file_fd(f) >= 0 ? fstat(h5_file_fd(f), &fst) == 0 : stat(h5_file_path(f), &fst) == 0) {
		fs->file_size = (uint64_t)fst.st_size;
		fs->uid = fst.st_uid;
		fs->gid = fst.st_gid;
		fs->file_mode = fst.st_mode & 0444;
		fs->write_mode = fst.st_mode & 0222;
	}
	fs->dir_mode = fs->file_mode | (fs->file_mode >> 2);   /* r -> r-x */
	if (cfg->umask_set) {
		fs->file_mode = 0444 & ~cfg->umask;
		fs->dir_mode = 0555 & ~cfg->umask;
		fs->write_mode = 0222 & ~cfg->umask;
	}
	/* Who may write FILE may change it through the mount, and only they:
	 * groups (mkdir, setfattr, new datasets in them) and the datasets
	 * whose bytes can be written show FILE's write bits, and the kernel
	 * checks them for every caller (default_permissions) */
	if (!pager_writes(&fs->pg))
		fs->write_mode = 0;
	if (cfg->uid_set)
		fs->uid = cfg->uid;
	if (cfg->gid_set)
		fs->gid = cfg->gid;
	fs->next_synth = 1;
	pthread_mutex_init(&fs->lock, NULL);
	pthread_cond_init(&fs->idle_cv, NULL);
	pthread_mutex_init(&fs->wmu, NULL);
	nc_ids_init(&fs->nc_ids);
	fs->open_dirs.prev = fs->open_dirs.next = &fs->open_dirs;
	fs->open_wfiles.prev = fs->open_wfiles.next = &fs->open_wfiles;
	fs->freed_locked = export_freed_locked;     /* (node/gone.c is below export.c) */
	fs->nodes_cap = fs->synth_cap = 1024;
	fs->nodes = calloc(fs->nodes_cap, sizeof(*fs->nodes));
	fs->synth = calloc(fs->synth_cap, sizeof(*fs->synth));
	if (!fs->nodes || !fs->synth) {
		rc = h5_err_set(H5_ERR_NOMEM, "out of memory");
		goto out;
	}
	rc = live_new(fs, f, node_sweep);
	if (rc < 0)
		goto out;
	rc = node_make_obj(&root, fs, f, h5_file_root(f), FUSE_ROOT_ID, "");
	if (rc < 0) {
		h5_err_wrap(rc, "root group at 0x%llx: ", (unsigned long long)h5_file_root(f));
		goto out;
	}
	if (root->type != NT_DIR) {
		rc = h5_err_set(H5_ERR_FORMAT, "root object at 0x%llx is not a group",
				(unsigned long long)h5_file_root(f));
		goto out;
	}
	root->nlookup = 1;   /* never forgotten */
	root->gen = fs->gen;
	root->checked = fs->gen->num;
	gen_hold(root->gen);
	node_insert_locked(fs, root);
	root = NULL;
out:
	node_free(root);
	if (rc < 0) {
		fs->f = NULL;    /* the caller keeps the file on failure */
		if (fs->gen)
			fs->gen->f = NULL;
		h5fs_free(fs);
		return rc;
	}
	*out = fs;
	return 0;
}


void h5fs_free(h5fs *fs)
{
	size_t i;

	if (!fs)
		return;
	ahead_stop(fs);         /* (its thread reads the tables too) */
	live_free(fs);       /* the watcher stops first: it reads the tables */
	commit_sched_stop(fs);  /* (every kind's stop, then the thread) */
	commit_kinds_free(fs);
	fs->se = NULL;          /* the session may be gone: handles left are freed, no notices */
	handles_free(fs);
	npy_pending_free(fs);
	for (i = 0; fs->nodes && i < fs->nodes_cap; i++) {
		struct node *n = fs->nodes[i];

		while (n) {
			struct node *next = n->next;

			node_free(n);
			n = next;
		}
	}
	for (i = 0; fs->synth && i < fs->synth_cap; i++) {
		struct synth *s = fs->synth[i];

		while (s) {
			struct synth *next = s->next;

			free(s->name);
			free(s);
			s = next;
		}
	}
	free(fs->nodes);
	light_free_all(fs);     /* (records hold generations; the kind map too) */
	free(fs->synth);
	u64set_free(&fs->freed);
	pthread_mutex_destroy(&fs->lock);
	pthread_cond_destroy(&fs->idle_cv);
	pthread_mutex_destroy(&fs->wmu);
	nc_ids_destroy(&fs->nc_ids);
	/* FILE (fs->f) belongs to its generation: closed with the last one */
	gen_release(fs->gen);
	free(fs->label);
	free(fs->mnt);
	free(fs);
}

/* Handles whose release never came (FILE unmounted while they were
 * open): free them at exit, after the session loop. */
void handles_free(h5fs *fs)
{
	if (!fs->open_dirs.next)
		return;         /* h5fs_new failed before the lists existed */
	while (fs->open_dirs.next != &fs->open_dirs) {
		struct hlink *h = fs->open_dirs.next;   /* the first member of a dirsnap */

		handle_del(fs, h);
		dirsnap_free((struct dirsnap *)(void *)h);
	}
	wfile_free_all(fs);
}
