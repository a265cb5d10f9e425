# stats/audit/: the memory-locality audit (issue 14) as one library. Its
# data sources: the CPU -> node map and threads' nodes (topology), page
# placement (placement), first-toucher sampling (faults), call-site
# symbolization with libdw (symbols); and the audit itself (audit.h): the
# session that gathers them (audit_session), the join (audit_join) and the
# findings it ranks (audit_findings), which share audit_int.h. Each has
# its contract in its header. It reads segments and uses the helpers of
# stats/segread/, so link libscratch_segread.la after it, and $(DW_LIBS)
# where the join (the symbolizer) is linked in.
STATS_AUDIT_CPPFLAGS = $(STATS_SEGREAD_CPPFLAGS) -I$(srcdir)/stats/audit

noinst_LTLIBRARIES += libscratch_audit.la
libscratch_audit_la_SOURCES = stats/audit/audit.h stats/audit/audit_int.h \
	stats/audit/audit_session.c stats/audit/audit_join.c stats/audit/audit_findings.c \
	stats/audit/topology.c stats/audit/topology.h \
	stats/audit/placement.c stats/audit/placement.h \
	stats/audit/faults.c stats/audit/faults.h \
	stats/audit/symbols.c stats/audit/symbols.h
libscratch_audit_la_CPPFLAGS = $(STATS_AUDIT_CPPFLAGS)
libscratch_audit_la_CFLAGS = $(AM_CFLAGS) $(DW_CFLAGS)
