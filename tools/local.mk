# The `tessera` command-line tool.
bin_PROGRAMS += tools/tessera/tessera
tools_tessera_tessera_SOURCES = \
	tools/tessera/main.c tools/tessera/cli.h \
	tools/tessera/cmd_plugins.c \
	tools/tessera/cmd_admin.c \
	tools/tessera/cmd_config.c \
	tools/tessera/cli_plugin.c \
	tools/tessera/cli_util.c \
	tools/tessera/cmd_placement.c \
	tools/tessera/cmd_backend.c \
	tools/tessera/cmd_msgr.c
tools_tessera_tessera_LDADD = core/libtessera-core.la
