/* authconf.c — a daemon's or client's key, from its configuration (kept
 * apart from auth.c so that the decoders' fuzz target links auth.c
 * without the configuration code). */
#include "auth/auth.h"
#include "config/config.h"

#include <stdio.h>

int
tsr_auth_conf(struct tsr_conf *conf, const char *name, struct tsr_auth **out,
	      char *err, size_t errlen)
{
	char why[512];
	int rc = tsr_auth_load(tsr_conf_str(conf, "keyring"), name, out, why,
			       sizeof(why));

	if (rc < 0)
		snprintf(err, errlen, "%s (keyring: %s)", why,
			 tsr_conf_where(conf, "keyring"));
	return rc;
}
