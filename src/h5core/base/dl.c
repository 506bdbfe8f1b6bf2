/* dl.c - a shared library loaded on first use (dl.h says why). */
#include <config.h>
#include "dl.h"

#include <dlfcn.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>

/* Loads are rare (one per library per process): one lock for all. */
static pthread_mutex_t dl_lock = PTHREAD_MUTEX_INITIALIZER;

/* dlopen of name, from H5FS_TEST_DL_DIR when a test sets it. */
static void *dl_open(const char *name)
{
	const char *dir = getenv("H5FS_TEST_DL_DIR");
	char path[PATH_MAX];

	if (!dir || !*dir)
		return dlopen(name, RTLD_NOW | RTLD_LOCAL);
	if (snprintf(path, sizeof(path), "%s/%s", dir, name) >= (int)sizeof(path))
		return NULL;
	return dlopen(path, RTLD_NOW | RTLD_LOCAL);
}

static void dl_load(h5_dl *d)
{
	void *lib = NULL;
	const char *name = d->names[0];

	for (size_t i = 0; !lib && d->names[i]; i++)
		lib = dl_open(d->names[i]);
	if (!lib) {
		/* dlerror tells a library absent from one that would not load
		 * (a dependency of its own missing) */
		const char *why = dlerror();

		snprintf(d->err, sizeof(d->err), "%s: %s not found: install %s (%s)", d->what, name, d->package,
			 why ? why : "dlopen failed");
		d->rc = H5_ERR_UNSUPPORTED;
		return;
	}
	for (const h5_dl_sym *s = d->syms; s->name; s++) {
		void *p = dlsym(lib, s->name);

		if (!p) {
			snprintf(d->err, sizeof(d->err), "%s: the library has no %s: too old%s%s%s", d->what,
				 s->name, d->min_version ? " (" : "", d->min_version ? d->min_version : "",
				 d->min_version ? " or later needed)" : "");
			d->rc = H5_ERR_UNSUPPORTED;
			/* the library stays loaded: its symbols may already be in
			 * a table, and nothing would be gained */
			return;
		}
		*s->slot = p;
	}
	if (d->ready)
		d->ready();
}

int h5_dl_need(h5_dl *d)
{
	if (!atomic_load_explicit(&d->done, memory_order_acquire)) {
		pthread_mutex_lock(&dl_lock);
		if (!atomic_load_explicit(&d->done, memory_order_relaxed)) {
			dl_load(d);
			atomic_store_explicit(&d->done, 1, memory_order_release);
		}
		pthread_mutex_unlock(&dl_lock);
	}
	if (d->rc < 0)
		return h5_err_set(d->rc, "%s", d->err);
	return 0;
}
