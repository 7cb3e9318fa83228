/* main_backend.c — the backend suite as `make check` runs it: the plugins
 * from BACKEND_PLUGINS, everything else from the environment
 * (test_backend.c says which variables). */
#include "conformance.h"

int
main(void)
{
	return cf_env_main(cf_backend_run, "BACKEND_PLUGINS");
}
