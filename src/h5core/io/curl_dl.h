/* curl_dl.h - libcurl, loaded when the first remote FILE is opened.
 *
 * Linking libcurl made every start of h5fs-ls and h5fs map the 35
 * libraries it pulls in (TLS, Kerberos, LDAP, ...): 0.04-0.1 s of each
 * run on the test machine, half of h5fs-ls --refs --concat over 1,000
 * local files (bench/README.md, issue 45). The sources that speak HTTP
 * include this header instead of <curl/curl.h>: each curl_* function they
 * call is a pointer that h5_curl_init() fills from the library (base/dl.h). */
#ifndef H5_CURL_DL_H
#define H5_CURL_DL_H

#include "dl.h"

#define CURL_DISABLE_TYPECHECK  /* its checks are macros over the real names */
#include <curl/curl.h>

/* Every libcurl function the byte sources call (X-macro). */
#define H5_CURL_FUNCTIONS(X) \
	X(curl_global_init) X(curl_easy_init) X(curl_easy_setopt) X(curl_easy_perform) \
	X(curl_easy_cleanup) X(curl_easy_getinfo) X(curl_easy_strerror) X(curl_slist_append) \
	X(curl_slist_free_all) X(curl_share_init) X(curl_share_setopt) X(curl_share_cleanup) \
	X(curl_getdate) X(curl_multi_init) X(curl_multi_add_handle) X(curl_multi_remove_handle) \
	X(curl_multi_perform) X(curl_multi_cleanup) X(curl_multi_info_read) X(curl_multi_poll) \
	X(curl_multi_wakeup)

struct h5_curl_fns {
	H5_CURL_FUNCTIONS(H5_DL_FIELD)
};
extern struct h5_curl_fns h5_curl;

/* Load libcurl and run curl_global_init, once (thread-safe): 0, or
 * H5_ERR_UNSUPPORTED with a message when the library is missing. */
int h5_curl_init(void);

/* curl.h's own function-like wrappers of the variadic three */
#undef curl_easy_setopt
#undef curl_easy_getinfo
#undef curl_share_setopt
#define curl_global_init (h5_curl.p_curl_global_init)
#define curl_easy_init (h5_curl.p_curl_easy_init)
#define curl_easy_setopt (h5_curl.p_curl_easy_setopt)
#define curl_easy_perform (h5_curl.p_curl_easy_perform)
#define curl_easy_cleanup (h5_curl.p_curl_easy_cleanup)
#define curl_easy_getinfo (h5_curl.p_curl_easy_getinfo)
#define curl_easy_strerror (h5_curl.p_curl_easy_strerror)
#define curl_slist_append (h5_curl.p_curl_slist_append)
#define curl_slist_free_all (h5_curl.p_curl_slist_free_all)
#define curl_share_init (h5_curl.p_curl_share_init)
#define curl_share_setopt (h5_curl.p_curl_share_setopt)
#define curl_share_cleanup (h5_curl.p_curl_share_cleanup)
#define curl_getdate (h5_curl.p_curl_getdate)
#define curl_multi_init (h5_curl.p_curl_multi_init)
#define curl_multi_add_handle (h5_curl.p_curl_multi_add_handle)
#define curl_multi_remove_handle (h5_curl.p_curl_multi_remove_handle)
#define curl_multi_perform (h5_curl.p_curl_multi_perform)
#define curl_multi_cleanup (h5_curl.p_curl_multi_cleanup)
#define curl_multi_info_read (h5_curl.p_curl_multi_info_read)
#define curl_multi_poll (h5_curl.p_curl_multi_poll)
#define curl_multi_wakeup (h5_curl.p_curl_multi_wakeup)

#endif
