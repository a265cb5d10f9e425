# examples/: one short program per part of libscratch (arena, workspace,
# worker pool), built and run by `make check`. They are also the examples
# of libscratch(3).
check_PROGRAMS += examples/example_arena examples/example_workspace examples/example_workers
examples_example_arena_SOURCES = examples/arena.c
examples_example_arena_LDADD = libscratch.la
examples_example_workspace_SOURCES = examples/workspace.c
examples_example_workspace_LDADD = libscratch.la $(PTHREAD_LIBS)
examples_example_workers_SOURCES = examples/workers.c
examples_example_workers_LDADD = libscratch.la $(PTHREAD_LIBS)
TESTS += examples/example_arena examples/example_workspace examples/example_workers
