/* placeholder: the owning module's author replaces this file */
#include "testutil.h"
static Suite *make_suite(void) { return suite_create("append"); }
H5_TEST_MAIN(make_suite)
