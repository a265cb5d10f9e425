# stats/segread/: the validating segment reader (segread), what scratchd
# and scratchstat share beside it - the run directory (rundir), the
# socket's name and protocol version (protocol.h), what they read from the
# system (sys), text for people (text) - and the reader's fuzz target. The
# bottom of stats/: it includes nothing of the other folders.
noinst_LTLIBRARIES += libscratch_segread.la
libscratch_segread_la_SOURCES = stats/segread/segread.c stats/segread/segread.h \
	stats/segread/rundir.c stats/segread/rundir.h stats/segread/protocol.h \
	stats/segread/sys.c stats/segread/sys.h stats/segread/text.c stats/segread/text.h \
	src/segment.h
libscratch_segread_la_CPPFLAGS = $(STATS_SEGREAD_CPPFLAGS)
libscratch_segread_la_CFLAGS = $(AM_CFLAGS)

# The segment reader's fuzz target: a standalone driver that `make check`
# runs briefly over generated segments (tests/stats/stats_hostile.test), and a
# libFuzzer build with `make fuzz` when clang can link -fsanitize=fuzzer
# (that build compiles the reader again, instrumented for coverage).
check_PROGRAMS += stats/segread/fuzz_segment
stats_segread_fuzz_segment_SOURCES = stats/segread/fuzz_segment.c
stats_segread_fuzz_segment_CPPFLAGS = $(STATS_SEGREAD_CPPFLAGS)
stats_segread_fuzz_segment_LDADD = libscratch_segread.la

FUZZ_CC = clang
fuzz: stats/segread/fuzz_segment-libfuzzer
stats/segread/fuzz_segment-libfuzzer: $(srcdir)/stats/segread/fuzz_segment.c \
		$(srcdir)/stats/segread/segread.c $(srcdir)/stats/segread/segread.h \
		$(srcdir)/src/segment.h
	$(AM_V_CC)$(FUZZ_CC) -g -O1 -fsanitize=fuzzer,address,undefined -DSCRATCH_LIBFUZZER \
		$(STATS_SEGREAD_CPPFLAGS) -o $@ \
		$(srcdir)/stats/segread/fuzz_segment.c $(srcdir)/stats/segread/segread.c
CLEANFILES += stats/segread/fuzz_segment-libfuzzer
.PHONY: fuzz
