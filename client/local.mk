# The object client library (tessera/client.h).
#
# As with the core: the code is built once into a convenience library
# (libtsrclient.la) that the tools of this tree link with the core's, and
# the installed shared library wraps both, exporting the client's API
# only (client/libtessera-client.sym).
noinst_LTLIBRARIES += client/libtsrclient.la
client_libtsrclient_la_SOURCES = client/client.c client/include/tessera/client.h \
	client/client_int.h client/fs.c client/include/tessera/fs.h \
	client/dcache.c client/dcache.h client/wbuf.c client/wbuf.h
client_libtsrclient_la_CPPFLAGS = $(AM_CPPFLAGS) -I$(top_srcdir)/client/include
client_libtsrclient_la_CFLAGS = $(AM_CFLAGS) $(LIBCONFIG_CFLAGS)

lib_LTLIBRARIES += client/libtessera-client.la
client_libtessera_client_la_SOURCES =
client_libtessera_client_la_LIBADD = client/libtsrclient.la core/libtsrcore.la
client_libtessera_client_la_LDFLAGS = $(AM_LDFLAGS) -version-info 0:0:0 -no-undefined \
	-Wl,--version-script=$(srcdir)/client/libtessera-client.sym -Wl,--gc-sections
EXTRA_client_libtessera_client_la_DEPENDENCIES = client/libtessera-client.sym
EXTRA_DIST += client/libtessera-client.sym

tesseraclientincludedir = $(includedir)/tessera
tesseraclientinclude_HEADERS = client/include/tessera/client.h \
	client/include/tessera/fs.h
pkgconfig_DATA += tessera-client.pc
