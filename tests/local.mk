# Tests: Check unit tests per module, test plugins, a test daemon, and
# integration tests that run real processes.
CHECK_CFLAGS_ALL = $(AM_CFLAGS) $(CHECK_CFLAGS) $(LIBCONFIG_CFLAGS)
CHECK_LDADD_ALL = core/libtsrcore.la $(CHECK_LIBS) $(LIBCONFIG_LIBS)

unit_tests = \
	tests/unit/test_crc32c \
	tests/unit/test_encoding
check_PROGRAMS += $(unit_tests)
TESTS += $(unit_tests)

tests_unit_test_crc32c_SOURCES = tests/unit/test_crc32c.c
tests_unit_test_crc32c_CFLAGS = $(CHECK_CFLAGS_ALL)
tests_unit_test_crc32c_LDADD = $(CHECK_LDADD_ALL)
tests_unit_test_encoding_SOURCES = tests/unit/test_encoding.c
tests_unit_test_encoding_CFLAGS = $(CHECK_CFLAGS_ALL)
tests_unit_test_encoding_LDADD = $(CHECK_LDADD_ALL)
