# syncshim - see README.md. `make demo` runs the main job, `make test` the suite.

CC      ?= gcc
PREFIX  ?= /usr/local
DESTDIR ?=
B       ?= build

# The one place the version is written: syncshim_version() returns
# "syncshim $(VERSION)" (shim/init.c), the Debian package is $(VERSION)-1.
VERSION := 0.2

WARN    := -Wall -Wextra -Werror
# -MMD -MP: each object depends on the headers it really includes ($(B)/**/*.d).
BASE    := -std=gnu11 -g -D_GNU_SOURCE -pthread $(WARN) -MMD -MP -DSYNCSHIM_VERSION='"$(VERSION)"'
OPT     ?= -O2
SAN     ?=
# Sources include headers by name ("calls.h", "logread.h"): every folder
# that holds a header is on the include path, so a file moves between
# folders without its #include lines changing.
SRC_INC := $(addprefix -I,$(sort $(patsubst %/,%,$(dir $(shell find shim policy tools -name '*.h')))))
CFLAGS  := $(BASE) $(OPT) $(SAN) -fPIC $(SRC_INC)
LDSAN   := $(SAN)
# The tools, the tests, their programs and libraries: every function that
# is not static is declared in a header first.
TOOL_WARN := -Wmissing-prototypes
TOOL_CFLAGS := $(CFLAGS) $(TOOL_WARN)
TEST_CFLAGS := $(TOOL_CFLAGS) -Itests -Itests/harness

# Debian packages, installed when missing. `make demo` installs only DEMO_PKGS:
# the libraries `make all` builds against (inih and jemalloc, linked into the
# shim statically; liburing's header); no server, no daemon. `make deps`
# (from `make test`) installs the rest.
DEMO_PKGS := libinih-dev libjemalloc-dev liburing-dev
BUILD_PKGS := $(DEMO_PKGS) libcriterion-dev strace libfuse3-dev fuse3 pkg-config libaio-dev libseccomp-dev
# ... and python3 for the durability oracle's generator and checker (tests/oracle/),
# libseccomp for a unit's SystemCallFilter= by hand (tests/progs/seccomp_run.c).
BUILD_PKGS += python3
# ... and for the man pages, the Debian package, the systemd drop-in and the
# ActiveMQ walkthrough (tests/system/test_install.c, make deb, make demo-activemq), and
# sqlite3 for the crash tests' real program (examples/sqlite, tests/system/test_crashtest.c),
# libeatmydata1, the sync-eating preload crashtest must catch behind the shim, and
# redis and postgresql for syncshim ab's service tests (tests/system/test_services.c).
INSTALL_PKGS := mandoc lintian dpkg-dev man-db systemd activemq sqlite3 libeatmydata1 redis-server redis-tools postgresql
# ... and for the live counters' readers (tests/system/test_live.c): promtool
# checks synclat metrics, tmux drives synclat top; Prometheus scrapes
# synclat metrics --listen, curl asks its API, ss (iproute2) finds free ports.
LIVE_PKGS := prometheus tmux curl iproute2
BENCH_PKGS := eatmydata libactivemq-java fio python3 postgresql xfsprogs btrfs-progs zookeeper qemu-utils
# ... and the services the services section and the power-cut campaigns run
# (tools/scripts/bench.sh, crash_campaign.sh): ActiveMQ's broker, MariaDB
# with sysbench, Redis, sqlite3, RocksDB's tools, and javac for the JMS
# and ZooKeeper clients (examples/activemq/, examples/zookeeper/).
BENCH_PKGS += activemq mariadb-server sysbench redis-server redis-tools sqlite3 rocksdb-tools openjdk-17-jdk-headless

# $(call apt_install,PACKAGES): installs those of PACKAGES not installed yet.
define apt_install
@missing=""; for p in $(1); do dpkg -s $$p >/dev/null 2>&1 || missing="$$missing $$p"; done; \
	if [ -n "$$missing" ]; then echo "installing:$$missing"; \
	  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $$missing >/dev/null; fi
endef

# Each library is one folder (docs/ARCHITECTURE.md has the map); a .c
# file added to a folder is built into its library with no line here.
# Pure code shared by the shim, the tools and the unit tests (no interposition).
PURE_SRCS := $(wildcard policy/*.c)
# The on-disk formats, $(SYNCLOG_LIB): shim/format/<format>/ holds each
# format's writer-side encoding (the shim links these, hidden inside it:
# the linker pulls no more than it calls) and its strict reader, for the
# tools and the tests: the latency log (log/), the live counters (live/),
# the undo log of crash-test mode (undo/).
FORMAT_SRCS := $(shell find shim/format -name '*.c' | sort)
# The preloaded library: everything else under shim/, in any folder.
SHIM_SRCS := $(filter-out shim/format/%,$(shell find shim -name '*.c' | sort))
# What synclat computes and prints, $(SYNCLAT_LIB): report, compare, the
# plots, top/, metrics/ and the command line itself (synclat_main);
# tools/synclat/synclat.c is only its main(), so the tests and the fuzz
# targets run the same code.
SYNCLAT_MAIN := tools/synclat/synclat.c
SYNCLAT_LIB_SRCS := $(filter-out $(SYNCLAT_MAIN),$(shell find tools/synclat -name '*.c' | sort))
# Crash-test mode's rollback, $(CRASH_LIB) (docs/CRASHTEST.md), for
# syncshim crashtest and the tests.
CRASH_LIB_SRCS := $(shell find tools/rollback -name '*.c' | sort)
# What both programs share, $(COMMON_LIB).
COMMON_LIB_SRCS := $(shell find tools/common -name '*.c' | sort)
SYNCSHIM_SRCS := $(shell find tools/syncshim -name '*.c' | sort)

PURE_OBJS := $(PURE_SRCS:%.c=$(B)/obj/%.o)
SHIM_OBJS := $(SHIM_SRCS:%.c=$(B)/obj/%.o)
SYNCLOG_LIB := $(B)/libsynclog.a
SYNCLAT_LIB := $(B)/libsynclat.a
CRASH_LIB := $(B)/libcrash.a
COMMON_LIB := $(B)/libtoolcommon.a

EXAMPLES  := $(patsubst examples/%.c,$(B)/examples/%,$(wildcard examples/*.c))
TEST_PROGS := $(patsubst tests/progs/%.c,$(B)/tests/progs/%,$(wildcard tests/progs/*.c))
# tests/lib/ holds preload libraries, and failfs, the FUSE file system the
# tests mount to get real I/O errors on demand (a program).
TEST_FS   := $(B)/tests/lib/failfs
# (tsan_start.c is make tsan's alone: see there.)
TEST_LIBS := $(patsubst tests/lib/%.c,$(B)/tests/lib/%.so,$(filter-out tests/lib/failfs.c tests/lib/tsan_start.c,$(wildcard tests/lib/*.c)))
# The suites: tests/unit/ (in-process), tests/system/ (real programs under
# the shim), tests/tree/ (the tree itself: docs, the map); each
# tests/*/test_NAME.c is $(B)/tests/test_NAME. Those that include
# harness.h link tests/harness/harness.c, compiled once. (A suite left at
# tests/test_NAME.c still builds and runs; tests/tree/ fails until it moves.)
TEST_SRCS := $(shell find tests -maxdepth 2 -name 'test_*.c' | sort)
UNIT_TESTS := $(foreach t,$(TEST_SRCS),$(B)/tests/$(notdir $(t:.c=)))
HARNESS_OBJ := $(B)/obj/tests/harness/harness.o
HARNESS_USERS := $(shell grep -l '^\#include "harness.h"' $(TEST_SRCS))
JAVA_SRCS := $(wildcard examples/java/*.java)

LIBDIR := $(shell gcc -print-multiarch 2>/dev/null)
LIBDIR := /usr/lib/$(if $(LIBDIR),$(LIBDIR),x86_64-linux-gnu)
# The shim's private allocator and ini parser are linked in statically and
# kept hidden, so the host's malloc and symbols are never replaced.
# The ThreadSanitizer build uses libc's allocator (TSan cannot see
# jemalloc's own synchronisation): see shim/core/alloc.c.
SHIM_ALLOC := $(if $(filter -DSYNCSHIM_TSAN,$(SAN)),,$(B)/jemalloc_private.a)
SHIM_STATIC := $(LIBDIR)/libinih.a $(SHIM_ALLOC)
SHIM_LDFLAGS := -shared -Wl,--exclude-libs,ALL -Wl,--version-script=$(B)/exports.map \
	-Wl,-z,now -Wl,-z,relro -Wl,-z,nodelete -Wl,-z,defs -ldl -pthread

.PHONY: all deps bench-deps test test-deps run-tests asan tsan soak bench crash-campaign demo demo-deps install uninstall deb \
	deb-deps deb-check demo-activemq clean java fuzz fuzz-deps replay mutate
all: $(B)/libsyncshim.so $(B)/syncshim $(B)/synclat $(EXAMPLES)

deps:
	$(call apt_install,$(BUILD_PKGS) $(INSTALL_PKGS) $(LIVE_PKGS))

bench-deps: deps
	$(call apt_install,$(BENCH_PKGS))

# init.c returns the version: rebuilt when the Makefile changes it.
$(B)/obj/shim/init.o $(TSAN_DIR)/tsan/obj/shim/init.o: Makefile

# The shim's, the policy's and the formats' objects.
$(B)/obj/%.o: %.c
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -Wmissing-prototypes -ftls-model=initial-exec -fvisibility=hidden -c $< -o $@

# The tools' objects (position-independent too, as everything in
# $(SYNCLOG_LIB) must be: the shim links from it).
$(B)/obj/tools/%.o: tools/%.c
	@mkdir -p $(dir $@)
	$(CC) $(TOOL_CFLAGS) -c $< -o $@

$(HARNESS_OBJ): tests/harness/harness.c
	@mkdir -p $(dir $@)
	$(CC) $(TEST_CFLAGS) -c $< -o $@

$(SYNCLOG_LIB): $(FORMAT_SRCS:%.c=$(B)/obj/%.o)
	@rm -f $@
	$(AR) rcs $@ $^

$(SYNCLAT_LIB): $(SYNCLAT_LIB_SRCS:%.c=$(B)/obj/%.o)
	@rm -f $@
	$(AR) rcs $@ $^

$(CRASH_LIB): $(CRASH_LIB_SRCS:%.c=$(B)/obj/%.o)
	@rm -f $@
	$(AR) rcs $@ $^

$(COMMON_LIB): $(COMMON_LIB_SRCS:%.c=$(B)/obj/%.o)
	@rm -f $@
	$(AR) rcs $@ $^

# The shim takes only the writer side from $(SYNCLOG_LIB) (the linker pulls
# no more than it calls); --exclude-libs keeps all of it hidden.
$(B)/libsyncshim.so: $(SHIM_OBJS) $(PURE_OBJS) $(SYNCLOG_LIB) $(B)/exports.map $(SHIM_ALLOC)
	$(CC) $(LDSAN) -o $@ $(SHIM_OBJS) $(PURE_OBJS) $(SYNCLOG_LIB) $(SHIM_STATIC) $(SHIM_LDFLAGS)

# The export map is made from the one list of interposed calls
# (SHIM_CALLS in shim/core/calls.h) plus SHIM_EXTRA_EXPORTS: a wrapper can
# never be written and silently left unexported.
CALLS_H := shim/core/calls.h
$(B)/exports.map: $(CALLS_H)
	@mkdir -p $(B)
	@{ echo '{'; echo '  global:'; \
	  sed -n 's/^[[:space:]]*X([^,]*, *\([A-Za-z0-9_]*\),.*/    \1;/p' $(CALLS_H); \
	  for s in $$(sed -n 's/^#define SHIM_EXTRA_EXPORTS //p' $(CALLS_H)); do echo "    $$s;"; done; \
	  echo '  local: *;'; echo '};'; } > $@

# The private allocator, deaf to the host's MALLOC_CONF and
# /etc/malloc.conf, with its fork handlers ours to call (shim/core/alloc.c).
$(B)/jemalloc_private.a: $(LIBDIR)/libjemalloc_pic.a Makefile
	@mkdir -p $(B)
	objcopy --redefine-sym secure_getenv=syncshim_je_secure_getenv \
	  --redefine-sym readlink=syncshim_je_readlink \
	  --redefine-sym pthread_atfork=syncshim_je_atfork \
	  --redefine-sym log=syncshim_je_log --redefine-sym exp=syncshim_je_exp \
	  --redefine-sym round=syncshim_je_round \
	  --redefine-sym _Unwind_Backtrace=syncshim_je_unwind_backtrace \
	  --redefine-sym _Unwind_GetIP=syncshim_je_unwind_getip \
	  --remove-section=.init_array $< $@

# Full RELRO for the installed tools, as Debian's hardening asks (the shim
# has it already: SHIM_LDFLAGS).
TOOL_LDFLAGS := -Wl,-z,relro -Wl,-z,now

$(B)/syncshim: $(SYNCSHIM_SRCS:%.c=$(B)/obj/%.o) $(CRASH_LIB) $(SYNCLAT_LIB) $(COMMON_LIB) $(SYNCLOG_LIB) $(PURE_OBJS)
	$(CC) -pthread $(LDSAN) $(TOOL_LDFLAGS) -o $@ $^ $(LIBDIR)/libinih.a -lm

$(B)/synclat: $(SYNCLAT_MAIN:%.c=$(B)/obj/%.o) $(SYNCLAT_LIB) $(COMMON_LIB) $(SYNCLOG_LIB) $(PURE_OBJS)
	$(CC) -pthread $(LDSAN) $(TOOL_LDFLAGS) -o $@ $^ $(LIBDIR)/libinih.a -lm

$(B)/examples/%: examples/%.c
	@mkdir -p $(dir $@)
	$(CC) $(BASE) $(OPT) -MF $@.d -o $@ $< -lm

# A test program's own libraries: PROG_LIBS_<name> (most need none).
PROG_LIBS_uring_ops := -luring -laio
PROG_LIBS_ord_steps := -laio -luring
PROG_LIBS_seccomp_run := -lseccomp
$(B)/tests/progs/%: tests/progs/%.c
	@mkdir -p $(dir $@)
	$(CC) $(BASE) $(OPT) $(TOOL_WARN) -MF $@.d -o $@ $< -lm $(PROG_LIBS_$*)

$(B)/tests/lib/%.so: tests/lib/%.c
	@mkdir -p $(dir $@)
	$(CC) $(BASE) $(OPT) $(TOOL_WARN) -MF $@.d -fPIC -shared -ftls-model=initial-exec -o $@ $< -ldl

# Deferred (=): pkg-config only answers once `make deps` installed libfuse3-dev.
FUSE_CFLAGS = $(shell pkg-config --cflags fuse3)
FUSE_LIBS = $(shell pkg-config --libs fuse3)
$(TEST_FS): tests/lib/failfs.c
	@mkdir -p $(dir $@)
	$(CC) $(BASE) $(OPT) $(TOOL_WARN) -MF $@.d $(FUSE_CFLAGS) -o $@ $< $(FUSE_LIBS)

# The durability oracle (tests/oracle/README.md): runner.c interprets the
# generated cases; oracle.py generates, runs and checks them.
ORACLE_RUNNER := $(B)/tests/oracle/runner
$(ORACLE_RUNNER): tests/oracle/runner.c
	@mkdir -p $(dir $@)
	$(CC) $(BASE) $(OPT) $(TOOL_WARN) -o $@ $<

# Unit tests link the libraries the tools link; none compiles a tool's .c.
TEST_LINK = $(CRASH_LIB) $(SYNCLAT_LIB) $(COMMON_LIB) $(SYNCLOG_LIB) $(PURE_OBJS) $(LIBDIR)/libinih.a
# One rule per suite: $(B)/tests/test_NAME from tests/<kind>/test_NAME.c.
define test_suite
$(B)/tests/$(notdir $(1:.c=)): $(1) $(if $(filter $(1),$(HARNESS_USERS)),$(HARNESS_OBJ)) \
		$(CRASH_LIB) $(SYNCLAT_LIB) $(COMMON_LIB) $(SYNCLOG_LIB) $(PURE_OBJS)
	@mkdir -p $$(dir $$@)
	$(CC) $(TEST_CFLAGS) -MF $$@.d -o $$@ $$< $(if $(filter $(1),$(HARNESS_USERS)),$(HARNESS_OBJ)) \
		$(TEST_LINK) -lcriterion $(LDSAN) -lm
endef
$(foreach t,$(TEST_SRCS),$(eval $(call test_suite,$(t))))

$(B)/java/.stamp: $(JAVA_SRCS)
	@mkdir -p $(B)/java
	javac -d $(B)/java $(JAVA_SRCS)
	@touch $@
java: $(if $(JAVA_SRCS),$(B)/java/.stamp)

# The suite: unit tests, then integration tests that run programs under the
# shim. Each criterion binary prints its own tally.
TEST_DEPS := all $(TEST_PROGS) $(TEST_LIBS) $(TEST_FS) java $(ORACLE_RUNNER)
test-deps: $(TEST_DEPS)
test: deps
	@$(MAKE) --no-print-directory $(TEST_DEPS)
	@$(MAKE) --no-print-directory run-tests
	@$(MAKE) --no-print-directory replay
	@$(MAKE) --no-print-directory oracle-test

# In a sanitizer build the shim needs the ASan runtime loaded ahead of it
# in hosts that were not built with it; the tests put this prefix first.
SAN_RT := $(if $(SAN),$(shell $(CC) -print-file-name=libasan.so))
RUN_TESTS ?= $(UNIT_TESTS)
# A failure is named again at the end (suite, test, first lines of its
# assertion), where a reader of only the last lines of CI's output looks.
run-tests: $(RUN_TESTS)
	@mkdir -p $(B)/test-logs; fail=0; failed=""; for t in $(RUN_TESTS); do \
	  log=$(B)/test-logs/$$(basename $$t).log; \
	  SYNCSHIM_BUILD=$(abspath $(B)) SYNCSHIM_PRELOAD_PREFIX=$(SAN_RT) \
	  SYNCSHIM_ASAN=$(if $(SAN),1,) $$t --jobs 2 >$$log 2>&1 || { fail=1; failed="$$failed $$log"; }; \
	  cat $$log; done; \
	for log in $$failed; do echo "FAILED: $$log"; \
	  grep -E -A6 'Assertion Failed|^\[FAIL\]|CRASH|Timed out' $$log | head -40; done; exit $$fail

# AddressSanitizer + UBSan build of everything, in its own tree, same suite.
asan: deps
	@$(MAKE) --no-print-directory B=build-asan OPT=-O1 \
	  SAN="-fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=undefined" \
	  test

# ThreadSanitizer: the shim alone is built with it (and with libc's
# allocator instead of its private jemalloc, whose synchronisation TSan
# cannot see), into build-tsan/tsan/libsyncshim.so; the hosts, the tests
# and criterion stay plain (criterion's runner cannot live under TSan), and
# the threaded suites run with libtsan preloaded ahead of the shim. A host
# in which TSan finds a race exits 66 and its test fails. Options, each
# for a reason:
#   report_signal_unsafe=0  the shim allocates inside signal handlers by
#     design: it uses its allocator only with shim_busy raised, so a handler
#     never re-enters it (shim/core/alloc.c); TSan's own malloc check cannot know.
#   die_after_fork=0        the tests fork from threaded programs on purpose.
#   report_thread_leaks=0   the shim's threads are joinable (set*id joins
#     them) and never joined at exit, on purpose, so every host "leaks"
#     them; the app's threads are not what make tsan is for. The report
#     was not only noise: symbolizing it at exit opens /proc/self/exe
#     through the shim's (instrumented) open while the report holds TSan's
#     thread registry lock, and an access there that TSan takes for a race
#     (it no longer sees the reporting thread's locks) waits for that lock
#     forever (gdb: shim_fds/shim_never_makes_an_open_fail_with_emfile's
#     nofile in ReportRace under free_take_locked, under SymbolizeStack);
#     and after main's pthread_exit /proc/self/exe is gone (the thread group
#     leader has exited: ENOENT in strace), the stack cannot be symbolized
#     and no suppression matches (endings/pthread_exit_from_main_...).
# The preload prefix is libtsan and tests/lib/tsan_start.c's library, which
# starts the runtime in hosts that run without the shim (crashtest's check
# shells crash otherwise: see that file).
TSAN_DIR := build-tsan
TSAN_CFLAGS := $(BASE) -O1 -fsanitize=thread -DSYNCSHIM_TSAN -fPIC $(SRC_INC)
# (The formats are linked from an instrumented copy of $(SYNCLOG_LIB): the
# shim's writer side has to be instrumented too.)
TSAN_OBJS := $(patsubst %.c,$(TSAN_DIR)/tsan/obj/%.o,$(SHIM_SRCS) $(PURE_SRCS))
TSAN_SYNCLOG := $(TSAN_DIR)/tsan/libsynclog.a
TSAN_SUITES := test_signal_handlers test_host_runtime test_shim_fds test_sync_errors test_unseen_fds test_fd_races test_unlinked_files test_flusher test_shim test_log test_livepub test_crash test_endings test_order test_sched
# Tests the TSan runtime itself cannot run, left out of make tsan alone
# (make test and make asan run them; criterion's pattern, | between them):
# - fifty_forks forks while other threads allocate, and gcc 12's libtsan
#   does not lock its own allocator around fork, so a child can inherit
#   that lock held and hang in its first malloc (gdb: __tsan::user_calloc
#   -> SizeClassAllocator64 mutex). The shipped shim's private allocator is
#   locked around fork by the shim's handlers. The same hang, seen once in
#   two full runs each: only_processes_that_did_something_leave_a_log (the
#   child's first shim allocation, the TSan build's shim_alloc being
#   libc's; a lock of the shim's own around it cannot work: libtsan's own
#   child handler starts its background thread through the shim's
#   pthread_create before the shim's child handler runs) and
#   threads_forks_and_reloads (a child's new thread in GetFromAllocator,
#   its main thread in pthread_create waiting for it).
# - close_all_then_open has the host close every descriptor, the shim's
#   own included, on purpose; libtsan's descriptor tracking reports that
#   close as a race, and its in-process symbolizer then opens
#   /proc/self/exe through the shim's (instrumented) open, whose accesses
#   start a second report that waits for the first one's lock forever (gdb:
#   ReportRace -> SymbolizeStack -> open -> ... -> ReportRace).
# - setid_from_a_threaded_host: libtsan starts a background thread of its
#   own at a process's first pthread_create (here the shim's first thread),
#   with libc's pthread_create, so glibc runs every set*id in it too, and
#   the shim can neither join it nor give it the caller's capabilities:
#   its setresgid fails and glibc aborts (gdb: __nptl_setxid ->
#   setxid_error; the only other thread, in __tsan::BackgroundThread).
#   Stopping that thread first (__sanitizer_sandbox_on_notify) left the
#   host deadlocked in TSan's thread registry at the shim's next join.
# - reload_reads_the_ini_on_no_number_of_the_apps checks what
#   shimfd_isolated gives (the ini read in a clone with a descriptor table
#   of its own), which the TSan build turns off: that clone runs on the
#   caller's thread-local storage, where TSan keeps the thread's clocks
#   (shim/state/shimfd.c). So the ini lands on an app's number, as the test
#   says (make tsan: "the app met the watcher's descriptor: shifted=283").
# - wal_checkpoints_under_defer_keep_the_database_whole: a TSan report in
#   one of a trial's bash processes is symbolized in-process, and libtsan's
#   symbolizer opens /proc/self/exe through the shim's open while the report
#   holds TSan's thread registry lock (or the shim's registry_mu): the open
#   starts a flusher (pthread_create waits for that registry lock) or
#   takes registry_mu again, and the trial never ends (gdb, two trials:
#   open_bind -> shim_start_thread -> ThreadRegistry::CreateThread, and
#   open_bind -> registry_lock under __asan_backtrace_open). It passes with
#   symbolize=0 (alone, 1 run); which report it was is not known yet.
# - rule_table_counts_paths_and_shows_a_rule_that_matched_nothing runs
#   dash, whose redirections dup2 onto and close its descriptor 1 while
#   the live publisher writes its file, number 1 in the publisher's own
#   descriptor table (shimfd_private_table). libtsan keeps one table per
#   process and reports the two as a race on one descriptor; its symbolizer
#   then deadlocks through the shim's open as above (gdb: ReportRace ->
#   __asan_backtrace_open -> open_bind -> registry_lock). A trial's bash
#   with the live counters on could meet the same.
TSAN_SKIP := host_runtime/fifty_forks_from_threads_never_hang|shim_fds/only_processes_that_did_something_leave_a_log|stress/threads_forks_and_reloads|shim_fds/close_all_then_open_never_mixes_log_into_app_files|host_runtime/setid_from_a_threaded_host_never_aborts|livepub/reload_reads_the_ini_on_no_number_of_the_apps|order_sqlite/wal_checkpoints_under_defer_keep_the_database_whole|livepub/rule_table_counts_paths_and_shows_a_rule_that_matched_nothing

$(TSAN_DIR)/tsan/obj/%.o: %.c
	@mkdir -p $(dir $@)
	$(CC) $(TSAN_CFLAGS) -ftls-model=initial-exec -fvisibility=hidden -c $< -o $@

$(TSAN_SYNCLOG): $(FORMAT_SRCS:%.c=$(TSAN_DIR)/tsan/obj/%.o)
	@rm -f $@
	$(AR) rcs $@ $^

$(TSAN_DIR)/tsan/libtsan_start.so: tests/lib/tsan_start.c
	@mkdir -p $(dir $@)
	$(CC) $(BASE) $(OPT) $(TOOL_WARN) -MF $@.d -fPIC -shared -fsanitize=thread -o $@ $<

$(TSAN_DIR)/tsan/libsyncshim.so: $(TSAN_OBJS) $(TSAN_SYNCLOG) $(TSAN_DIR)/exports.map
	$(CC) -fsanitize=thread -o $@ $(TSAN_OBJS) $(TSAN_SYNCLOG) $(LIBDIR)/libinih.a \
	  $(subst $(B)/exports.map,$(TSAN_DIR)/exports.map,$(SHIM_LDFLAGS))

tsan: deps
	@$(MAKE) --no-print-directory B=$(TSAN_DIR) test-deps $(TSAN_SUITES:%=$(TSAN_DIR)/tests/%) \
	  $(TSAN_DIR)/tsan/libsyncshim.so $(TSAN_DIR)/tsan/libtsan_start.so
	@fail=0; for t in $(TSAN_SUITES); do \
	  TSAN_OPTIONS="report_signal_unsafe=0 die_after_fork=0 report_thread_leaks=0 suppressions=$(abspath tests/tsan.supp) $(TSAN_OPTIONS)" \
	  SYNCSHIM_BUILD=$(abspath $(TSAN_DIR)) SYNCSHIM_LIB=$(abspath $(TSAN_DIR))/tsan/libsyncshim.so \
	  SYNCSHIM_PRELOAD_PREFIX=$$($(CC) -print-file-name=libtsan.so):$(abspath $(TSAN_DIR))/tsan/libtsan_start.so \
	  SYNCSHIM_ASAN=1 \
	  $(TSAN_DIR)/tests/$$t --jobs 2 --filter '!($(TSAN_SKIP))' || fail=1; done; exit $$fail

# Soak: the all-at-once stress (tests/system/test_all_at_once.c) going
# round for SOAK_SECONDS, each run longer than in `make test`, then the
# durability oracle for as long. Not part of `make test`.
SOAK_SECONDS ?= 600
soak: deps
	@$(MAKE) --no-print-directory test-deps $(B)/tests/test_all_at_once
	SYNCSHIM_ALL_AT_ONCE_SECONDS=$(SOAK_SECONDS) SYNCSHIM_BUILD=$(abspath $(B)) \
	  $(B)/tests/test_all_at_once --jobs 1 --verbose
	@$(MAKE) --no-print-directory oracle ORACLE_SECONDS=$(SOAK_SECONDS)
	@if [ -n "$(SOAK_MUTATE)" ]; then $(MAKE) --no-print-directory mutate; fi

# The durability oracle: `make oracle` generates and checks random cases
# for ORACLE_SECONDS (every class in turn; ORACLE_CLASS= one of them,
# ORACLE_SEED= the first seed); `make oracle-test` (part of `make test`)
# replays the fixed list in tests/oracle/seeds.txt.
ORACLE_SECONDS ?= 600
ORACLE_ENV = SYNCSHIM_BUILD=$(abspath $(B)) SYNCSHIM_PRELOAD_PREFIX=$(SAN_RT)
.PHONY: oracle oracle-test
oracle: deps
	@$(MAKE) --no-print-directory test-deps
	$(ORACLE_ENV) python3 tests/oracle/oracle.py run --seconds $(ORACLE_SECONDS) \
	  $(if $(ORACLE_CLASS),--class $(ORACLE_CLASS)) $(if $(ORACLE_SEED),--seed $(ORACLE_SEED))
oracle-test: $(ORACLE_RUNNER) $(B)/tests/lib/reclayer.so $(B)/libsyncshim.so $(B)/synclat
	@$(ORACLE_ENV) python3 tests/oracle/oracle.py seeds $$(grep -v '^#' tests/oracle/seeds.txt)

# Power-cut campaigns on real programs (issue 18; tools/scripts/crash_campaign.sh):
# sqlite3 (WAL and rollback journal), git, PostgreSQL and RocksDB under
# passthrough, defer (100 ms) and defer (auto), plain and adversarial
# writeback, judged by each program's own checks (examples/PROGRAM/).
# Opt-in, long (CAMPAIGN_TRIALS trials per row, default 20); CAMPAIGN_PROGRAMS
# picks programs. Not part of `make test`.
CAMPAIGN_PROGRAMS ?=
crash-campaign: bench-deps all
	tools/scripts/crash_campaign.sh $(B) $(CAMPAIGN_PROGRAMS)

# Mutation run: each one-line mutation of tests/mutations/mutations.txt
# applied in turn to a scratch copy of the tree, built, and put to the
# suites it names; reports killed/survived and the kill rate. Opt-in (about
# 20 minutes on 2 cores), and from `make soak` with SOAK_MUTATE=1.
# MUTATIONS="name ..." runs only those; MUTATE_SECONDS bounds each suite run.
MUTATE_SECONDS ?= 600
MUTATE_JOBS ?= 1
mutate: deps
	tools/scripts/mutate.sh -t $(MUTATE_SECONDS) -j $(MUTATE_JOBS) $(MUTATIONS)

# ---- installing ---------------------------------------------------------
# The shim goes to a directory of its own, $(PREFIX)/lib/syncshim/: it is a
# preload object, not a library to link against. An installed syncshim
# finds it there relative to itself (bin/../lib/syncshim/, see
# launcher_library_path() in tools/syncshim/syncshim.c), so a tree installed under
# any PREFIX or DESTDIR works without SYNCSHIM_LIB.
BINDIR  := $(PREFIX)/bin
SHIMDIR := $(PREFIX)/lib/syncshim
MANDIR  := $(PREFIX)/share/man
DOCDIR  := $(PREFIX)/share/doc/syncshim
MAN1 := docs/man/syncshim.1 docs/man/synclat.1
MAN5 := docs/man/syncshim.ini.5
# What goes to $(DOCDIR): the reference config, the README and the docs it
# links to (kept under docs/ so its links work), the systemd drop-in with
# its rule file (examples/systemd/README.md).
DOC_FILES := README.md shim.ini docs/USAGE.md docs/GUARANTEES.md docs/PERFORMANCE.md docs/CRASHTEST.md
SYSTEMD_EXAMPLES := examples/systemd/README.md examples/systemd/activemq.ini \
	examples/systemd/activemq.service.d/syncshim.conf examples/systemd/redis.ini \
	examples/systemd/redis-server.service.d/syncshim.conf
INSTALLED := $(SHIMDIR)/libsyncshim.so $(BINDIR)/syncshim $(BINDIR)/synclat \
	$(MAN1:docs/man/%=$(MANDIR)/man1/%) $(MAN5:docs/man/%=$(MANDIR)/man5/%) \
	$(DOC_FILES:%=$(DOCDIR)/%) $(SYSTEMD_EXAMPLES:examples/%=$(DOCDIR)/examples/%)

install: $(B)/libsyncshim.so $(B)/syncshim $(B)/synclat
	install -d $(DESTDIR)$(BINDIR) $(DESTDIR)$(SHIMDIR) $(DESTDIR)$(MANDIR)/man1 $(DESTDIR)$(MANDIR)/man5 \
	  $(DESTDIR)$(DOCDIR)/examples/systemd/activemq.service.d $(DESTDIR)$(DOCDIR)/examples/systemd/redis-server.service.d \
	  $(DESTDIR)$(DOCDIR)/docs
	install -m 0644 $(B)/libsyncshim.so $(DESTDIR)$(SHIMDIR)/libsyncshim.so
	install -m 0755 $(B)/syncshim $(B)/synclat $(DESTDIR)$(BINDIR)/
	install -m 0644 $(MAN1) $(DESTDIR)$(MANDIR)/man1/
	install -m 0644 $(MAN5) $(DESTDIR)$(MANDIR)/man5/
	for f in $(DOC_FILES); do install -m 0644 $$f $(DESTDIR)$(DOCDIR)/$$f; done
	for f in $(SYSTEMD_EXAMPLES); do install -m 0644 $$f $(DESTDIR)$(DOCDIR)/examples/$${f#examples/}; done

# Removes what install put, and the directories it made once empty; also
# the files of the older layout ($(PREFIX)/lib/libsyncshim.so,
# $(PREFIX)/share/syncshim/shim.ini).
uninstall:
	rm -f $(INSTALLED:%=$(DESTDIR)%) $(DESTDIR)$(PREFIX)/lib/libsyncshim.so $(DESTDIR)$(PREFIX)/share/syncshim/shim.ini
	-rmdir $(DESTDIR)$(SHIMDIR) $(DESTDIR)$(DOCDIR)/docs $(DESTDIR)$(DOCDIR)/examples/systemd/activemq.service.d \
	  $(DESTDIR)$(DOCDIR)/examples/systemd/redis-server.service.d \
	  $(DESTDIR)$(DOCDIR)/examples/systemd $(DESTDIR)$(DOCDIR)/examples $(DESTDIR)$(DOCDIR) \
	  $(DESTDIR)$(PREFIX)/share/syncshim 2>/dev/null

# ---- the Debian package -------------------------------------------------
# `make deb`: $(B)/syncshim_VERSION_ARCH.deb built with dpkg-deb from an
# install with PREFIX=/usr (packaging/deb/mkdeb.sh: stripped binaries,
# gzipped man pages, copyright, changelog.Debian.gz, md5sums, Depends from
# dpkg-shlibdeps, Installed-Size, root-owned files), then lintian on it
# (what it still says, and why, is in packaging/deb/README.md).
# `make deb-check`: the round trip on this machine: dpkg -i, run, man -w,
# dpkg -r, and no file of the package left (root; it changes the system).
DEB_PKGS := dpkg-dev lintian man-db
DEB_VERSION := $(VERSION)-1
DEB_ARCH := $(shell dpkg --print-architecture 2>/dev/null)
DEB_FILE := $(B)/syncshim_$(DEB_VERSION)_$(DEB_ARCH).deb

deb-deps:
	$(call apt_install,$(DEB_PKGS))

deb: deb-deps $(B)/libsyncshim.so $(B)/syncshim $(B)/synclat
	@rm -rf $(B)/deb
	@$(MAKE) --no-print-directory -s install B=$(B) PREFIX=/usr DESTDIR=$(abspath $(B))/deb/debian/syncshim
	packaging/deb/mkdeb.sh $(B)/deb $(DEB_VERSION) $(DEB_FILE)
	@lintian --tag-display-limit 0 $(DEB_FILE) || { echo "lintian found errors in $(DEB_FILE)"; exit 1; }

deb-check: deb
	packaging/deb/roundtrip.sh $(DEB_FILE)

clean:
	rm -rf build build-asan build-tsan

# The main job: a sync-heavy workload (4 KiB append + fsync, KahaDB style)
# under passthrough and under defer, alternating rounds, compared side by
# side, with the latency plot written to $(DEMO_DIR)/compare.svg (.html).
# The build is one line (its output goes to $(B)/demo-build.log, shown only
# if it fails), on every core unless make was given -j itself.
DEMO_DIR ?= $(B)/demo
DEMO_JOBS := $(if $(filter -j% --jobserver%,$(MAKEFLAGS)),,-j$(shell nproc 2>/dev/null || echo 2))
demo-deps:
	$(call apt_install,$(DEMO_PKGS))
demo: demo-deps
	@start=$$(date +%s); mkdir -p $(B); printf 'demo: building the shim, syncshim, synclat and the examples ... '; \
	if $(MAKE) --no-print-directory $(DEMO_JOBS) all >$(B)/demo-build.log 2>&1; then \
	  echo "done in $$(( $$(date +%s) - start )) s"; \
	else echo failed; tail -n 30 $(B)/demo-build.log; echo "demo: the build failed; its output: $(B)/demo-build.log"; exit 1; fi; \
	rm -rf $(DEMO_DIR); run=$$(date +%s); \
	$(B)/syncshim ab -n 3 -o $(DEMO_DIR) passthrough defer -- \
	  $(B)/examples/sync_writes -n 2000 -f $(abspath $(B))/demo.dat || exit $$?; \
	now=$$(date +%s); echo "demo: done in $$((now - start)) s (build $$((run - start)) s, the A/B $$((now - run)) s)"

# The ActiveMQ walkthrough (examples/activemq/walkthrough.sh): Debian's
# broker with its KahaDB journal under passthrough and under defer, A/B with
# syncshim ab, ending with the comparison table. DEMO_ACTIVEMQ_ARGS: its
# options (-p group, -n MESSAGES, -t THREADS, -r ROUNDS, -o DIR ...).
DEMO_ACTIVEMQ_ARGS ?=
demo-activemq: deps all
	SYNCSHIM_BUILD=$(abspath $(B)) examples/activemq/walkthrough.sh $(DEMO_ACTIVEMQ_ARGS)

# Benchmarks: ratios against a baseline run side by side (docs/PERFORMANCE.md;
# every run so far: docs/bench-log.md).
# The window section records real syncs with the tests' recording layer.
bench: bench-deps all $(B)/tests/lib/reclayer.so $(B)/tests/progs/uring_ops $(B)/tests/progs/inline_calls
	tools/scripts/bench.sh $(B) $(SECTIONS)

# ---- fuzzing (see tests/fuzz/) ------------------------------------------
# libFuzzer targets built with clang: the ini parser and rule loader, the
# glob matcher against a reference matcher, the log reader with report,
# compare and the plots, the undo log reader with the rollback's durable
# points, the live counters reader with synclat top and metrics, the rules
# profile and suggest propose, written and read back. `make
# fuzz` runs each for FUZZ_SECONDS from its seed corpus
# (tests/fuzz/corpus/T); what it learns stays in $(B)/fuzz,
# inputs that crash are written to tests/fuzz/crashes/T/ (commit them with
# the fix). `make test` replays both directories through the same targets
# built with $(CC) and no libFuzzer (replay), so no clang is needed there.
FUZZ_TARGETS := ini glob log undo live suggest
FUZZ_SECONDS ?= 60
FUZZ_CC ?= clang
FUZZ_PKGS := clang libclang-rt-dev
FUZZ_CFLAGS := $(BASE) -O1 -fno-omit-frame-pointer $(SRC_INC) -Itests/fuzz
FUZZ_SAN := -fsanitize=address,undefined -fno-sanitize-recover=undefined
REPLAYS := $(FUZZ_TARGETS:%=$(B)/fuzz/replay_%)
# The targets link the same libraries as the tools: built with clang and
# instrumented for libFuzzer into $(B)/fuzz/ (make fuzz), the plain
# $(CRASH_LIB), $(SYNCLAT_LIB) and $(SYNCLOG_LIB) for the replay (make test).
FUZZ_POLICY_OBJS := $(PURE_SRCS:%.c=$(B)/fuzz/obj/%.o)
FUZZ_LIBS := $(B)/fuzz/libcrash.a $(B)/fuzz/libsynclat.a $(B)/fuzz/libtoolcommon.a $(B)/fuzz/libsynclog.a

fuzz-deps:
	$(call apt_install,$(FUZZ_PKGS))

$(B)/fuzz/obj/%.o: %.c tests/fuzz/coverage-ignore.txt
	@mkdir -p $(dir $@)
	$(FUZZ_CC) $(FUZZ_CFLAGS) -fsanitize=fuzzer-no-link $(FUZZ_SAN) \
		-fsanitize-coverage-ignorelist=tests/fuzz/coverage-ignore.txt -c $< -o $@

$(B)/fuzz/libsynclog.a: $(FORMAT_SRCS:%.c=$(B)/fuzz/obj/%.o)
	@rm -f $@
	$(AR) rcs $@ $^

$(B)/fuzz/libsynclat.a: $(SYNCLAT_LIB_SRCS:%.c=$(B)/fuzz/obj/%.o)
	@rm -f $@
	$(AR) rcs $@ $^

$(B)/fuzz/libcrash.a: $(CRASH_LIB_SRCS:%.c=$(B)/fuzz/obj/%.o)
	@rm -f $@
	$(AR) rcs $@ $^

$(B)/fuzz/libtoolcommon.a: $(COMMON_LIB_SRCS:%.c=$(B)/fuzz/obj/%.o)
	@rm -f $@
	$(AR) rcs $@ $^

$(B)/fuzz/fuzz_%: tests/fuzz/fuzz_%.c $(FUZZ_LIBS) $(FUZZ_POLICY_OBJS) tests/fuzz/coverage-ignore.txt
	@mkdir -p $(dir $@)
	$(FUZZ_CC) $(FUZZ_CFLAGS) $(TOOL_WARN) -fsanitize=fuzzer $(FUZZ_SAN) \
		-fsanitize-coverage-ignorelist=tests/fuzz/coverage-ignore.txt \
		-o $@ $< $(FUZZ_LIBS) $(FUZZ_POLICY_OBJS) $(LIBDIR)/libinih.a -lm

$(B)/fuzz/replay_%: tests/fuzz/fuzz_%.c tests/fuzz/replay.c $(CRASH_LIB) $(SYNCLAT_LIB) $(COMMON_LIB) $(SYNCLOG_LIB) \
		$(PURE_OBJS)
	@mkdir -p $(dir $@)
	$(CC) $(TEST_CFLAGS) -Itests/fuzz -DREPLAY_TARGET='"$*"' -o $@ $< tests/fuzz/replay.c \
		$(TEST_LINK) $(LDSAN) -lm

replay: $(REPLAYS)
	@for t in $(FUZZ_TARGETS); do \
	  set -- tests/fuzz/corpus/$$t tests/fuzz/crashes/$$t; \
	  $(B)/fuzz/replay_$$t "$$@" || { REPLAY_VERBOSE=1 $(B)/fuzz/replay_$$t "$$@" 2>&1 | tail -40; exit 1; }; \
	done

fuzz: fuzz-deps $(FUZZ_TARGETS:%=$(B)/fuzz/fuzz_%)
	@for t in $(FUZZ_TARGETS); do \
	  mkdir -p $(B)/fuzz/corpus-$$t tests/fuzz/crashes/$$t; \
	  echo "fuzz $$t: $(FUZZ_SECONDS) s"; \
	  $(B)/fuzz/fuzz_$$t -max_total_time=$(FUZZ_SECONDS) -print_final_stats=1 \
	    -dict=tests/fuzz/$$t.dict -artifact_prefix=tests/fuzz/crashes/$$t/ \
	    $(B)/fuzz/corpus-$$t tests/fuzz/corpus/$$t || exit 1; \
	done

# The header dependencies -MMD -MP wrote beside each object.
-include $(shell find $(B) build-asan build-tsan -type f -name '*.d' 2>/dev/null)
