/* main_placement.c — the placement suite as `make check` runs it: the
 * plugins from PLACEMENT_PLUGINS. */
#include "conformance.h"

int
main(void)
{
	return cf_env_main(cf_placement_run, "PLACEMENT_PLUGINS");
}
