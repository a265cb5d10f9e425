# stats/: scratchd (the stats daemon) and scratchstat (the CLI), and the
# libraries they are made of, a folder each with its own fragment:
#
#   segread/      the segment reader and what both programs share  libscratch_segread.la
#   audit/        the memory-locality audit                         libscratch_audit.la
#   report/       the HTML report                                   libscratch_report.la
#   scratchd/     the daemon                    libscratch_daemon.la, scratchd
#   scratchstat/  the CLI                                           scratchstat
#
# Includes go one way, programs -> libraries -> the segment reader:
# scratchstat -> report, audit, segread; report -> audit, segread;
# scratchd -> segread; audit -> segread. Each folder's targets have -I for
# their own folder and the folders below it, and nothing else: not src/
# (segread.h includes the segment format, src/segment.h, by its path).
STATS_SEGREAD_CPPFLAGS = -I$(top_builddir) -I$(srcdir)/stats/segread
include $(srcdir)/stats/segread/local.mk
include $(srcdir)/stats/audit/local.mk
include $(srcdir)/stats/report/local.mk
include $(srcdir)/stats/scratchd/local.mk
include $(srcdir)/stats/scratchstat/local.mk

# make demo: the README's first command ends here (stats/demo.sh).
EXTRA_DIST += stats/demo.sh
demo: all
	@if test "x$(SANITIZER)" != xnone; then \
	  echo "make demo: this build uses --enable-sanitizers=$(SANITIZER), which interposes malloc itself; run the demo from a plain build" >&2; \
	  exit 1; fi; \
	SCRATCH_TOP_BUILDDIR='$(abs_top_builddir)' $(SHELL) $(srcdir)/stats/demo.sh
