# The unit tests: one Check runner, tests/unit/check_scratch, with a suite
# per module (suites.h lists them; check_scratch.c runs them, each test
# forked). The pool's suites share check_pool.h.
check_PROGRAMS += tests/unit/check_scratch
tests_unit_check_scratch_SOURCES = tests/unit/check_scratch.c tests/unit/suites.h \
	tests/unit/check_conf.c tests/unit/check_pool.h tests/unit/check_pool.c \
	tests/unit/check_pool_threads.c tests/unit/check_pool_reuse.c tests/unit/check_pool_decay.c \
	tests/unit/check_workers.c tests/unit/check_arena.c tests/unit/check_workspace.c \
	tests/unit/check_stats_abi.c tests/unit/check_debug.c
tests_unit_check_scratch_CPPFLAGS = $(AM_CPPFLAGS)
tests_unit_check_scratch_CFLAGS = $(AM_CFLAGS) $(CHECK_CFLAGS)
tests_unit_check_scratch_LDADD = libscratch.la libscratch_conf.la $(CHECK_LIBS) $(PTHREAD_LIBS)
TESTS += tests/unit/check_scratch

# The segment reader's suite (stats/segread/).
tests_unit_check_scratch_SOURCES += tests/unit/check_segread.c
tests_unit_check_scratch_CPPFLAGS += -I$(srcdir)/stats/segread
tests_unit_check_scratch_LDADD += libscratch_segread.la

# Every JSON key and metric name scratchd serves, pinned
# (stats/scratchd/documents.c).
tests_unit_check_scratch_SOURCES += tests/unit/check_fields.c
tests_unit_check_scratch_CPPFLAGS += -I$(srcdir)/stats/scratchd
tests_unit_check_scratch_CFLAGS += $(JANSSON_CFLAGS)
tests_unit_check_scratch_LDADD += libscratch_daemon.la libscratch_segread.la $(JANSSON_LIBS)

# The HTML report's suite: escaping, and pages rendered from JSON and from
# audit results (the audit's names come from libscratch_audit.la, which
# symbolizes with libdw), and scratchd's thread points
# (libscratch_daemon.la, above).
tests_unit_check_scratch_SOURCES += tests/unit/check_report.c
tests_unit_check_scratch_CPPFLAGS += -I$(srcdir)/stats/audit -I$(srcdir)/stats/report
tests_unit_check_scratch_CFLAGS += $(JANSSON_CFLAGS)
tests_unit_check_scratch_LDADD += libscratch_report.la libscratch_audit.la libscratch_segread.la \
	$(JANSSON_LIBS) $(DW_LIBS)

# The memory-locality audit's data collection modules (stats/audit/).
tests_unit_check_scratch_SOURCES += tests/unit/check_locality.c
tests_unit_check_scratch_CPPFLAGS += -I$(srcdir)/stats/audit
tests_unit_check_scratch_LDADD += libscratch_audit.la libscratch_segread.la $(DW_LIBS)
