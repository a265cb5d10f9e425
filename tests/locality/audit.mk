# tests/locality/audit.mk - the whole-process audit's tests (issue 24),
# included by tests/locality.mk: the inventory's unit suite in the one
# Check runner, and the scripts and hosts of tests/locality/.
tests_check_scratch_SOURCES += tests/locality/check_maps.c tests/locality/check_touch.c
tests_check_scratch_CPPFLAGS += -I$(srcdir)/tests
