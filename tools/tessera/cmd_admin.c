/* cmd_admin.c — `tessera admin`: talk to a daemon's admin socket. */
#include "cli.h"
#include "daemon/asok.h"
#include "util/sbuf.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

static void
admin_help(FILE *f)
{
	fprintf(f,
		"Usage: tessera admin SOCKET COMMAND [WORDS...]\n"
		"Send one command to a daemon's admin socket (config key admin_socket,\n"
		"by default /run/tessera/TYPE-ID.asok) and print the reply.\n"
		"Exit status 1 if the daemon reports an error or cannot be reached.\n"
		"\n"
		"Every daemon answers:\n"
		"  help                       the commands it answers\n"
		"  status                     name, pid, uptime, state\n"
		"  version                    software version and plugin ABI\n"
		"  config show                every option in effect and where it was set\n"
		"  log level                  the level of every log subsystem\n"
		"  log level [SUBSYS] LEVEL   set a level (error, warn, info, debug, trace)\n"
		"  log reopen                 reopen the log file\n"
		"\n"
		"  -t, --timeout SECONDS      give up after this long (default 10)\n");
}

static int
admin_run(int argc, char **argv)
{
	int timeout_ms = 10000, status = 0, i = 1;
	struct tsr_sbuf cmd, reply;
	char err[1024];

	if (i + 1 < argc && (strcmp(argv[i], "-t") == 0 ||
			     strcmp(argv[i], "--timeout") == 0)) {
		char *end;
		double s = strtod(argv[i + 1], &end);
		if (*end != '\0' || s <= 0 || s > 3600) {
			fprintf(stderr, "tessera admin: --timeout takes seconds in (0, 3600], not '%s'\n",
				argv[i + 1]);
			return CLI_USAGE;
		}
		timeout_ms = (int)(s * 1000);
		i += 2;
	}
	if (argc - i < 2) {
		admin_help(stderr);
		return CLI_USAGE;
	}
	const char *sock = argv[i++];
	tsr_sbuf_init(&cmd);
	tsr_sbuf_init(&reply);
	for (int k = i; k < argc; k++)
		tsr_sbuf_printf(&cmd, "%s%s", k > i ? " " : "", argv[k]);
	int rc = tsr_asok_request(sock, tsr_sbuf_str(&cmd), timeout_ms, &status,
				  &reply, err, sizeof(err));
	tsr_sbuf_release(&cmd);
	if (rc < 0) {
		fprintf(stderr, "tessera admin: %s\n", err);
		tsr_sbuf_release(&reply);
		return CLI_FAIL;
	}
	if (status < 0) {
		fprintf(stderr, "tessera admin: %s: %s", sock, tsr_sbuf_str(&reply));
		if (reply.len == 0 || reply.buf[reply.len - 1] != '\n')
			fprintf(stderr, " (%s)\n", strerror(-status));
	} else {
		fputs(tsr_sbuf_str(&reply), stdout);
	}
	tsr_sbuf_release(&reply);
	return status < 0 ? CLI_FAIL : CLI_OK;
}

const struct cli_cmd cli_admin_cmds[] = {
	{ "admin", "SOCKET COMMAND...", "send a command to a daemon's admin socket",
	  admin_run, admin_help },
	{ NULL, NULL, NULL, NULL, NULL }
};
