/*
 * test_install.c - syncshim installed like any other tool: the man pages
 * name everything the code accepts and lint clean, `make install` gives
 * a tree whose syncshim finds its own shim and `make uninstall` takes it
 * all back, `make deb` builds a package that lintian passes and that
 * installs, works and removes cleanly (under `dpkg --root`, not on this
 * system: `make deb-check` does that), the systemd drop-in verifies
 * against the ActiveMQ unit, and the ActiveMQ walkthrough ends with its
 * comparison table.
 *
 * Tests run from the top of the tree; the commands they run start in the
 * test's own directory, so paths into the tree are made absolute.
 */
#include <glob.h>

#include "harness.h"

TestSuite(install, .init = h_setup, .fini = h_teardown, .timeout = 240);

static char *top(void)
{
	char cwd[PATH_MAX];
	cr_assert_not_null(getcwd(cwd, sizeof(cwd)));
	cr_assert_eq(access("docs/man/syncshim.1", R_OK), 0, "tests run from the top of the tree");
	return h_strdup(cwd);
}

static char *in_top(const char *rel)
{
	return h_fmt("%s/%s", top(), rel);
}

static void skip_in_sanitizer_builds(void)
{
	if (h_ctx.asan)
		cr_skip_test("installing and packaging are checked in the plain build (make test), not under a sanitizer");
}

static const char *const pages[] = { "docs/man/syncshim.1", "docs/man/synclat.1", "docs/man/syncshim.ini.5" };

/* ---- man pages ---------------------------------------------------------- */

/* tests/install/check_docs.sh extracts the ini keys and values from
 * policy/policy.c, the variables from every getenv() of shim/ and tools/,
 * the subcommands and options from the tools' usage and getopt tables,
 * and finds each marked up in the pages. It must pass on docs/man, and
 * name what is missing from pages that lack a key, an option, a variable
 * and a subcommand. */
Test(install, man_pages_name_every_key_value_option_and_variable)
{
	char *check = in_top("tests/install/check_docs.sh");
	struct h_result r = h_sh(h_fmt("'%s' '%s'", check, h_ctx.build), 60);
	cr_expect_eq(r.code, 0, "check_docs: exit %d\n%s%s", r.code, r.out, r.err);
	cr_expect(h_has(r.out, "all in"), "%s", r.out);

	char *broken = h_path("man-broken");
	r = h_sh(h_fmt("mkdir '%s' && cp '%s'/docs/man/* '%s'/ && cd '%s' && "
		     "sed -i '/^\\.It Cm max_calls/d' syncshim.ini.5 && "
		     "sed -i 's/summary/summery/g' syncshim.ini.5 && "
		     "sed -i 's/Fl \\\\-salvage/Sy salvage/' synclat.1 && "
		     "sed -i 's/Ev SYNCSHIM_LIB/Sy SYNCSHIM_LIB/; s/Cm check/Sy check/g' syncshim.1",
		     broken, top(), broken, broken), 30);
	h_assert_ok(r, "make broken pages");
	r = h_sh(h_fmt("'%s' '%s' '%s'", check, h_ctx.build, broken), 60);
	cr_expect_eq(r.code, 1, "check_docs on broken pages: exit %d\n%s%s", r.code, r.out, r.err);
	static const char *const want[] = {
		"syncshim.ini.5: missing key max_calls",
		"syncshim.ini.5: missing value summary",
		"synclat.1: missing option --salvage",
		"syncshim.1: missing variable SYNCSHIM_LIB",
		"syncshim.1: missing subcommand check",
	};
	for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++)
		cr_expect(h_has(r.out, want[i]), "check_docs did not say '%s':\n%s", want[i], r.out);
}

/* mandoc -Tlint at warning level (its style notes about manuals not
 * installed on this machine are left out), and groff, which man-db uses
 * to show them, with all its warnings: no message at all. A page with a
 * list left open must draw a message, or the lint checks nothing. */
Test(install, man_pages_lint_clean)
{
	for (size_t i = 0; i < sizeof(pages) / sizeof(pages[0]); i++) {
		char *page = in_top(pages[i]);
		struct h_result r = h_sh(h_fmt("mandoc -Tlint -W warning '%s' 2>&1", page), 30);
		cr_expect(r.code == 0 && !r.out[0], "mandoc -Tlint %s: exit %d\n%s", pages[i], r.code, r.out);
		r = h_sh(h_fmt("groff -mandoc -ww -z -Tutf8 '%s' 2>&1", page), 30);
		cr_expect(r.code == 0 && !r.out[0], "groff -ww %s: exit %d\n%s", pages[i], r.code, r.out);
	}
	char *bad = h_path("bad.1");
	h_write_file(bad, ".Dd December 1, 2026\n.Dt BAD 1\n.Os\n.Sh NAME\n.Nm bad\n.Nd bad\n"
			  ".Sh DESCRIPTION\n.Bl -tag -width Ds\n.It Fl x\nno end\n");
	struct h_result r = h_sh(h_fmt("mandoc -Tlint -W warning '%s' 2>&1", bad), 30);
	cr_expect(r.code != 0 && h_has(r.out, "Bl"), "mandoc -Tlint missed an open list: exit %d\n%s", r.code, r.out);
}

/* ---- make install, make uninstall ---------------------------------------- */

static struct h_result make(const char *args, int timeout_s)
{
	return h_sh(h_fmt("make -C '%s' -s --no-print-directory B='%s' %s", top(), h_ctx.build, args), timeout_s);
}

/* The shim the installed launcher preloads, found with no SYNCSHIM_LIB
 * (the harness's environment has none), must be the installed one; and
 * it works: a dd with conv=fsync under noop is logged, and the installed
 * synclat reports its one fsync. */
static void expect_installed_tools_work(const char *bin, const char *lib)
{
	char real[PATH_MAX];
	cr_assert_not_null(realpath(lib, real), "%s: %s", lib, strerror(errno));
	struct h_result r = h_sh(h_fmt("'%s/syncshim' run -p noop -- sh -c 'printf %%s \"$LD_PRELOAD\"'", bin), 30);
	cr_expect_eq(r.code, 0, "installed syncshim run: exit %d\n%s", r.code, r.err);
	cr_expect_str_eq(r.out, real, "the installed syncshim preloads '%s', not %s\n%s", r.out, real, r.err);

	char *log = h_path("installed.%p.log");
	r = h_sh(h_fmt("'%s/syncshim' run -p noop -o '%s' -- dd if=/dev/zero of='%s' bs=4k count=4 conv=fsync "
		     "status=none && '%s/synclat' report %s", bin, log, h_path("dd.dat"), bin,
		     h_path("installed.*.log")), 30);
	cr_expect_eq(r.code, 0, "installed syncshim + synclat: exit %d\n%s%s", r.code, r.out, r.err);
	cr_expect(h_has(r.out, "policy  : default=noop") && h_has(r.out, "\nfsync                         1 "),
		  "the installed shim did not log dd's fsync:\n%s", r.out);
}

Test(install, make_install_then_uninstall)
{
	skip_in_sanitizer_builds();
	char *dest = h_path("dest");
	struct h_result r = make(h_fmt("install PREFIX=/usr/local DESTDIR='%s'", dest), 120);
	h_assert_ok(r, "make install");

	static const struct {
		const char *path;
		mode_t mode;
	} files[] = {
		{ "bin/syncshim", 0755 },
		{ "bin/synclat", 0755 },
		{ "lib/syncshim/libsyncshim.so", 0644 },
		{ "share/man/man1/syncshim.1", 0644 },
		{ "share/man/man1/synclat.1", 0644 },
		{ "share/man/man5/syncshim.ini.5", 0644 },
		{ "share/doc/syncshim/shim.ini", 0644 },
		{ "share/doc/syncshim/README.md", 0644 },
		{ "share/doc/syncshim/examples/systemd/activemq.service.d/syncshim.conf", 0644 },
		{ "share/doc/syncshim/examples/systemd/activemq.ini", 0644 },
		{ "share/doc/syncshim/examples/systemd/README.md", 0644 },
		{ "share/doc/syncshim/examples/systemd/redis-server.service.d/syncshim.conf", 0644 },
		{ "share/doc/syncshim/examples/systemd/redis.ini", 0644 },
	};
	for (size_t i = 0; i < sizeof(files) / sizeof(files[0]); i++) {
		char *p = h_fmt("%s/usr/local/%s", dest, files[i].path);
		struct stat st;
		cr_expect_eq(stat(p, &st), 0, "make install did not install %s", p);
		cr_expect_eq(st.st_mode & 07777, files[i].mode, "%s: mode %o, want %o", p, st.st_mode & 07777,
			     files[i].mode);
	}
	expect_installed_tools_work(h_fmt("%s/usr/local/bin", dest), h_fmt("%s/usr/local/lib/syncshim/libsyncshim.so", dest));

	r = make(h_fmt("uninstall PREFIX=/usr/local DESTDIR='%s'", dest), 60);
	h_assert_ok(r, "make uninstall");
	r = h_sh(h_fmt("find '%s' ! -type d; find '%s' -name '*syncshim*'", dest, dest), 30);
	cr_expect_str_eq(r.out, "", "make uninstall left these behind:\n%s", r.out);
}

/* ---- the Debian package ---------------------------------------------------- */

/* The value of "Field: " in dpkg-deb --info output, or "". */
static char *field(const char *info, const char *name)
{
	char *key = h_fmt("\n %s: ", name);
	const char *p = strstr(info, key);
	if (!p)
		return h_strdup("");
	p += strlen(key);
	return strndup(p, strcspn(p, "\n"));
}

Test(install, deb_builds_lints_and_round_trips_under_dpkg_root)
{
	skip_in_sanitizer_builds();
	struct h_result r = make("deb", 180);
	cr_assert_eq(r.code, 0, "make deb: exit %d\n%s%s", r.code, r.out, r.err);
	cr_expect(!h_has(r.out, "\nE: ") && strncmp(r.out, "E: ", 3) != 0, "lintian errors:\n%s", r.out);

	glob_t g;
	cr_assert_eq(glob(h_fmt("%s/syncshim_*.deb", h_ctx.build), 0, NULL, &g), 0, "no package in %s", h_ctx.build);
	cr_assert_eq(g.gl_pathc, 1, "%zu packages in %s", g.gl_pathc, h_ctx.build);
	char *deb = h_strdup(g.gl_pathv[0]);
	globfree(&g);

	/* The control file. */
	r = h_sh(h_fmt("dpkg-deb --info '%s'", deb), 30);
	h_assert_ok(r, "dpkg-deb --info");
	char *info = h_fmt("\n%s", r.out);
	cr_expect_str_eq(field(info, "Package"), "syncshim");
	cr_expect(h_has(field(info, "Version"), "-1"), "Version: %s", field(info, "Version"));
	struct h_result arch = h_sh("dpkg --print-architecture | tr -d '\\n'", 30);
	cr_expect_str_eq(field(info, "Architecture"), arch.out);
	char *depends = field(info, "Depends");
	cr_expect(h_has(depends, "libc6 (>= "), "Depends: %s", depends);
	cr_expect(!h_has(depends, "libinih") && !h_has(depends, "libjemalloc"),
		  "Depends: %s (inih and jemalloc are linked statically)", depends);
	cr_expect(field(info, "Maintainer")[0] && field(info, "Description")[0], "%s", info);

	/* The files: all root's, man pages gzipped, the doc files there,
	 * Installed-Size what they add up to (KiB per file, 1 per dir). */
	r = h_sh(h_fmt("dpkg-deb --contents '%s'", deb), 30);
	h_assert_ok(r, "dpkg-deb --contents");
	static const char *const need[] = {
		"./usr/bin/syncshim\n", "./usr/bin/synclat\n", "./usr/lib/syncshim/libsyncshim.so\n",
		"./usr/share/man/man1/syncshim.1.gz\n", "./usr/share/man/man1/synclat.1.gz\n",
		"./usr/share/man/man5/syncshim.ini.5.gz\n", "./usr/share/doc/syncshim/copyright\n",
		"./usr/share/doc/syncshim/changelog.Debian.gz\n", "./usr/share/doc/syncshim/shim.ini\n",
		"./usr/share/doc/syncshim/examples/systemd/activemq.service.d/syncshim.conf\n",
		"./usr/share/doc/syncshim/examples/systemd/redis-server.service.d/syncshim.conf\n",
	};
	for (size_t i = 0; i < sizeof(need) / sizeof(need[0]); i++)
		cr_expect(h_has(r.out, need[i]), "the package lacks %s", need[i]);
	long long kib = 0;
	for (char *line = strtok(r.out, "\n"); line; line = strtok(NULL, "\n")) {
		char perm[16], owner[64], name[PATH_MAX];
		long long size;
		cr_assert_eq(sscanf(line, "%15s %63s %lld %*s %*s %4095s", perm, owner, &size, name), 4, "%s", line);
		cr_expect_str_eq(owner, "root/root", "%s", line);
		cr_expect(!strstr(name, "/man/man") || strstr(name, ".gz") || perm[0] == 'd', "not gzipped: %s", name);
		if (strcmp(name, "./") != 0)
			kib += perm[0] == '-' ? (size + 1023) / 1024 : 1;
	}
	cr_expect_eq(atoll(field(info, "Installed-Size")), kib, "Installed-Size %s, the files add up to %lld KiB",
		     field(info, "Installed-Size"), kib);

	/* Install it into a root of its own, use it, remove it: nothing left. */
	char *root = h_path("root");
	const char *force = geteuid() == 0 ? "" : " --force-not-root";
	r = h_sh(h_fmt("mkdir -p '%s'/var/lib/dpkg/info '%s'/var/lib/dpkg/updates '%s'/var/lib/dpkg/triggers && "
		     ": > '%s'/var/lib/dpkg/status && "
		     "dpkg --root='%s' --force-depends%s -i '%s'", root, root, root, root, root, force, deb), 60);
	h_assert_ok(r, "dpkg --root -i");
	expect_installed_tools_work(h_fmt("%s/usr/bin", root), h_fmt("%s/usr/lib/syncshim/libsyncshim.so", root));
	r = h_sh(h_fmt("man -M '%s/usr/share/man' -w syncshim.ini", root), 30);
	cr_expect_eq(r.code, 0, "man -w: %s", r.err);
	cr_expect(h_has(r.out, h_fmt("%s/usr/share/man/man5/syncshim.ini.5.gz", root)), "man -w: %s", r.out);
	r = h_sh(h_fmt("MANWIDTH=80 man -M '%s/usr/share/man' -P cat syncshim 2>&1", root), 30);
	cr_expect(r.code == 0 && h_has(r.out, "SYNOPSIS") && h_has(r.out, "syncshim run"), "man syncshim:\n%s", r.out);

	r = h_sh(h_fmt("dpkg --root='%s'%s -r syncshim", root, force), 60);
	h_assert_ok(r, "dpkg --root -r");
	r = h_sh(h_fmt("cd '%s' && find . -path ./var -prune -o ! -type d -print -o -name '*syncshim*' -print", root), 30);
	cr_expect_str_eq(r.out, "", "dpkg -r left these behind:\n%s", r.out);
}

/* ---- the systemd drop-in --------------------------------------------------- */

/* systemd-analyze verify loads the unit with the drop-in from
 * SYSTEMD_UNIT_PATH: the drop-in must verify without a word, and a drop-in
 * with a misspelt key must draw one (or verify never read it). The unit
 * is the one systemd makes of Debian's /etc/init.d/activemq (its
 * sysv generator), else, when activemq is not installed, a stand-in. */
Test(install, systemd_dropin_verifies_against_the_activemq_unit)
{
	struct h_result r = h_sh("command -v systemd-analyze", 30);
	cr_assert_eq(r.code, 0, "no systemd-analyze (make deps installs systemd)");
	char *units = h_path("units"), *gen = h_path("gen");
	cr_assert_eq(mkdir(units, 0755), 0);
	const char *generator = "/lib/systemd/system-generators/systemd-sysv-generator";
	if (access("/etc/init.d/activemq", X_OK) == 0 && access(generator, X_OK) == 0) {
		r = h_sh(h_fmt("mkdir -p '%s/n' '%s/e' '%s/l' && %s '%s/n' '%s/e' '%s/l' && cp '%s'/*/activemq.service '%s'/",
			     gen, gen, gen, generator, gen, gen, gen, gen, units), 30);
		h_assert_ok(r, "systemd-sysv-generator");
	} else {
		h_note("activemq is not installed: verifying against a stand-in activemq.service");
		h_write_file(h_fmt("%s/activemq.service", units),
			     "[Unit]\nDescription=ActiveMQ (stand-in)\n[Service]\nType=forking\nExecStart=/bin/true\n");
	}
	char *verify = h_fmt("cd '%s' && SYSTEMD_UNIT_PATH='%s': systemd-analyze verify --man=no activemq.service 2>&1",
			     units, units);
	r = h_sh(verify, 60);
	if (r.code != 0)
		cr_skip_test("systemd-analyze cannot verify even the bare unit in this container (exit %d): %s", r.code,
			     r.out);

	char *dropin = in_top("examples/systemd/activemq.service.d/syncshim.conf");
	char *text = h_read_file(dropin);
	cr_expect(h_has(text, "\nEnvironment=LD_PRELOAD=/usr/lib/syncshim/libsyncshim.so\n"),
		  "the drop-in does not preload the path the package installs:\n%s", text);
	cr_expect(h_has(text, "\nEnvironment=SYNCSHIM_CONFIG=/etc/syncshim/activemq.ini\n"), "%s", text);
	r = h_sh(h_fmt("mkdir '%s/activemq.service.d' && cp '%s' '%s/activemq.service.d/'", units, dropin, units), 30);
	h_assert_ok(r, "copy the drop-in");
	r = h_sh(verify, 60);
	cr_expect(r.code == 0 && !r.out[0], "systemd-analyze verify with the drop-in: exit %d\n%s", r.code, r.out);

	r = h_sh(h_fmt("echo 'Environmnet=SYNCSHIM_POLICY=noop' >> '%s/activemq.service.d/syncshim.conf'", units), 30);
	h_assert_ok(r, "spoil the drop-in");
	r = h_sh(verify, 60);
	cr_expect(h_has(r.out, "syncshim.conf") && h_has(r.out, "Environmnet"),
		  "systemd-analyze verify did not read the drop-in (no word on a misspelt key):\n%s", r.out);

	/* Its rule file is one the shim takes. */
	r = h_sh(h_fmt("'%s/syncshim' check '%s'", h_ctx.build, in_top("examples/systemd/activemq.ini")), 30);
	cr_expect(r.code == 0 && h_has(r.out, "ok, 1 rule"), "syncshim check activemq.ini: %s%s", r.out, r.err);
}

/* Debian's redis-server.service, a closely sandboxed unit, with the
 * example's drop-in: systemd-analyze verify has nothing to say, and the
 * example's rules are ones the shim takes. */
Test(install, systemd_dropin_verifies_against_the_redis_unit)
{
	const char *unit = "/lib/systemd/system/redis-server.service";
	if (access(unit, R_OK) != 0)
		cr_skip_test("redis-server is not installed (make deps installs it)");
	char *units = h_path("units");
	char *verify = h_fmt("cd '%s' && SYSTEMD_UNIT_PATH='%s': systemd-analyze verify --man=no redis-server.service 2>&1",
			     units, units);
	struct h_result r = h_sh(h_fmt("mkdir -p '%s/redis-server.service.d' && cp '%s' '%s'/ && cp '%s' "
				       "'%s/redis-server.service.d/'", units, unit, units,
				       in_top("examples/systemd/redis-server.service.d/syncshim.conf"), units), 30);
	h_assert_ok(r, "copy the unit and the drop-in");
	r = h_sh(verify, 60);
	cr_expect(r.code == 0 && !r.out[0], "systemd-analyze verify with the drop-in: exit %d\n%s", r.code, r.out);
	r = h_sh(h_fmt("'%s/syncshim' check '%s' /var/lib/redis/appendonlydir/appendonly.aof.1.incr.aof", h_ctx.build,
		       in_top("examples/systemd/redis.ini")), 30);
	cr_expect(r.code == 0 && h_has(r.out, "ok, 1 rule") && h_has(r.out, "rule 'aof'") && h_has(r.out, "policy defer"),
		  "syncshim check redis.ini: %s%s", r.out, r.err);
}

/* ---- a unit's sandbox, by hand -------------------------------------------- */

/* Where no systemd runs services (this suite's containers), the sandbox
 * of Debian's redis-server.service reproduced around a real redis-server
 * under the shim: PrivateTmp (a mount namespace with its own /tmp),
 * ProtectSystem=strict with the data and log directories writable (a
 * read-only bind of /, those bound writable again), and the unit's own
 * SystemCallFilter= lines, expanded by systemd-analyze and loaded with
 * seccomp (tests/progs/seccomp_run, killing the process at any other call,
 * as systemd does). All of it outside /tmp, which the namespace hides. */
struct sandbox {
	char *dir, *data, *logs, *ini, *allow, *sock, *out;
};

/* The unit's SystemCallFilter= as one allow-list: the groups of its first
 * line, less those of its "~" line, each expanded to names. */
static void unit_filter(const char *unit, const char *allow)
{
	char *script = h_fmt(
		"expand() { systemd-analyze syscall-filter \"$1\" | sed 1d | grep -v '^ *#' | sed 's/^ *//' |"
		" while read -r n; do case $n in @*) expand \"$n\" ;; '') ;; *) echo \"$n\" ;; esac; done; }\n"
		"want=$(sed -n 's/^SystemCallFilter=\\([^~].*\\)/\\1/p' '%s')\n"
		"deny=$(sed -n 's/^SystemCallFilter=~ *//p' '%s')\n"
		"[ -n \"$want\" ] && [ -n \"$deny\" ] || { echo \"no SystemCallFilter= lines\"; exit 1; }\n"
		"for g in $want; do expand $g; done | sort -u > '%s.all'\n"
		"for g in $deny; do expand $g; done | sort -u > '%s.deny'\n"
		"comm -23 '%s.all' '%s.deny' > '%s'\n"
		"grep -qx pidfd_open '%s' && ! grep -qx pidfd_getfd '%s' && ! grep -qx setpriority '%s'\n",
		unit, unit, allow, allow, allow, allow, allow, allow, allow, allow);
	struct h_result r = h_sh(script, 60);
	cr_assert_eq(r.code, 0, "expanding %s's SystemCallFilter=: %s%s", unit, r.out, r.err);
}

static struct sandbox sandbox_make(void)
{
	struct sandbox b;
	b.dir = h_strdup("/var/tmp/syncshim-unit.XXXXXX");
	cr_assert_not_null(mkdtemp(b.dir), "mkdtemp in /var/tmp: %s", strerror(errno));
	b.data = h_fmt("%s/lib", b.dir);
	b.logs = h_fmt("%s/log", b.dir);
	b.ini = h_fmt("%s/redis.ini", b.dir);
	b.allow = h_fmt("%s/allow", b.dir);
	b.sock = h_fmt("%s/redis.sock", b.data);
	b.out = h_fmt("%s/server.out", b.dir);
	cr_assert_eq(mkdir(b.data, 0755) | mkdir(b.logs, 0755) | mkdir(h_fmt("%s/tmp", b.dir), 01777), 0);
	/* the example's rules, for these directories */
	struct h_result r = h_sh(h_fmt("sed 's|/var/lib/redis|%s|g; s|/var/log/redis|%s|g' '%s' > '%s'", b.data, b.logs,
				       in_top("examples/systemd/redis.ini"), b.ini), 30);
	h_assert_ok(r, "the example's rules");
	unit_filter("/lib/systemd/system/redis-server.service", b.allow);
	return b;
}

static void sandbox_remove(struct sandbox *b)
{
	nftw(b->dir, h_rm_cb, 16, FTW_DEPTH | FTW_PHYS);
}

/* redis-server under the shim in the sandbox (private_tmp: a /tmp of its
 * own, else / 's read-only /tmp), in the background. */
static pid_t sandbox_redis(const struct sandbox *b, bool private_tmp, struct h_cmd *c)
{
	h_cmd_init(c, H_PLAIN);
	h_args(c, "unshare", "-m", "--propagation", "private", "/bin/sh", "-c",
	       h_fmt("rw() { mount --bind \"$1\" \"$2\" && mount -o remount,bind,rw \"$2\"; }; "
		     "mount --bind / / && mount -o remount,bind,ro / && rw '%s' '%s' && rw '%s' '%s' && %s "
		     "{ touch /var/tmp/.syncshim-unit-rw 2>/dev/null && echo 'the root is writable' && exit 3; true; } && "
		     "exec env LD_PRELOAD=%s%s%s SYNCSHIM_CONFIG='%s' '%s' '%s' -- redis-server --port 0 --unixsocket '%s' "
		     "--dir '%s' --appendonly yes --appendfsync always --save '' --daemonize no",
		     b->data, b->data, b->logs, b->logs, private_tmp ? h_fmt("rw '%s/tmp' /tmp &&", b->dir) : "",
		     h_ctx.prefix, h_ctx.prefix[0] ? ":" : "", h_shim_lib(), b->ini, h_prog("seccomp_run"), b->allow,
		     b->sock, b->data),
	       NULL);
	return h_spawn(c);
}

/* A load that works: 20000 SETs answered. */
static void sandbox_load(const struct sandbox *b)
{
	for (double end = h_now() + 20; h_now() < end && access(b->sock, F_OK) != 0; usleep(20000))
		;
	struct h_result r = h_sh(h_fmt("redis-benchmark -s '%s' -t set -n 20000 -c 8 -q | tr '\\r' '\\n' | tail -n 2",
				       b->sock), 60);
	cr_expect(h_has(r.out, "requests per second"), "redis-benchmark: %s%s", r.out, r.err);
}

Test(install, redis_runs_under_the_shim_in_its_units_sandbox)
{
	if (geteuid() != 0 || access("/lib/systemd/system/redis-server.service", R_OK) != 0 ||
	    access("/usr/bin/unshare", X_OK) != 0)
		cr_skip_test("needs root, unshare and Debian's redis-server");
	struct sandbox b = sandbox_make();
	struct h_cmd c;
	pid_t pid = sandbox_redis(&b, true, &c);
	sandbox_load(&b);
	struct h_result st = { 0 };
	for (double end = h_now() + 20; h_now() < end; usleep(100000)) { /* published about once a second */
		st = h_sh(h_fmt("'%s/syncshim' status %d", h_ctx.build, (int)pid), 20);
		if (h_has(st.out, "  rule aof (defer): 1 file matched"))
			break;
	}
	kill(pid, SIGTERM);
	struct h_result r = h_reap(&c, pid, 30, false, 0);
	struct h_result logs = h_sh(h_fmt("ls '%s'", b.logs), 10);
	struct h_result filter = h_sh(h_fmt("'%s' '%s' -- nice -n 1 true; echo \"status $?\"", h_prog("seccomp_run"),
					    b.allow), 20);
	sandbox_remove(&b);
	cr_assert_eq(r.code, 0, "redis-server in the sandbox: exit %d, signal %d (31: SIGSYS, a call outside the "
		     "filter)\n%s%s", r.code, r.sig, r.out, r.err);
	cr_expect(h_has(st.out, h_fmt("counters /proc/%d/root/tmp/syncshim-0/%d.live", (int)pid, (int)pid)),
		  "status did not read the counters in its private /tmp:\n%s", st.out);
	cr_expect(h_has(st.out, "  rule aof (defer): 1 file matched"), "%s", st.out);
	cr_expect(h_has(logs.out, "syncshim."), "no latency log in the writable log directory: %s", logs.out);
	cr_expect(h_has(filter.out, "status 159"), "the filter lets setpriority through (nice): %s", filter.out);
}

/* The same without PrivateTmp: /tmp is read-only, the live counters are
 * off, and saying so from the publisher thread (a descriptor table of its
 * own) must not take a call the filter kills (pidfd_getfd did). */
Test(install, redis_survives_a_read_only_tmp_under_its_units_filter)
{
	if (geteuid() != 0 || access("/lib/systemd/system/redis-server.service", R_OK) != 0 ||
	    access("/usr/bin/unshare", X_OK) != 0)
		cr_skip_test("needs root, unshare and Debian's redis-server");
	struct sandbox b = sandbox_make();
	struct h_cmd c;
	pid_t pid = sandbox_redis(&b, false, &c);
	sandbox_load(&b);
	kill(pid, SIGTERM);
	struct h_result r = h_reap(&c, pid, 30, false, 0);
	struct h_result aof = h_sh(h_fmt("ls '%s/appendonlydir'", b.data), 10);
	sandbox_remove(&b);
	cr_assert_eq(r.code, 0, "redis-server in the sandbox: exit %d, signal %d (31: SIGSYS, a call outside the "
		     "filter)\n%s%s", r.code, r.sig, r.out, r.err);
	cr_expect(h_has(aof.out, "incr.aof"), "%s", aof.out);
}

/* ---- the ActiveMQ walkthrough --------------------------------------------- */

/* examples/activemq/walkthrough.sh with 300 messages, one round of
 * syncshim ab's service form: Debian's broker under passthrough then with
 * its journal under defer, as nobody, the producer's messages/s per side
 * and their ratio, ending with the comparison table; the journal's rows
 * show the defer side's flusher at work and the passthrough side without;
 * nothing is left behind (no broker, no directory). */
Test(install, activemq_walkthrough_ends_with_the_comparison_table)
{
	skip_in_sanitizer_builds();
	if (access("/usr/share/activemq/bin/activemq.jar", R_OK) != 0)
		cr_skip_test("Debian's activemq package is not installed (make deps installs it)");
	cr_assert_eq(chmod(h_ctx.dir, 0755), 0); /* the broker runs as nobody, in here */
	struct h_cmd c;
	h_cmd_init(&c, H_PLAIN);
	c.timeout_s = 180;
	h_envf(&c, "SYNCSHIM_BUILD=%s", h_ctx.build);
	h_envf(&c, "TMPDIR=%s", h_ctx.dir);
	h_args(&c, in_top("examples/activemq/walkthrough.sh"), "-n", "300", NULL);
	struct h_result r = h_run(&c);
	/* ("[-]D": the pattern must not match this sh's own command line.) */
	struct h_result left = h_sh(h_fmt("pgrep -f -- '[-]Dactivemq.base=%s/' && pkill -KILL -f -- '[-]Dactivemq.base=%s/'; "
					"ls -d '%s'/syncshim-activemq.* 2>/dev/null", h_ctx.dir, h_ctx.dir, h_ctx.dir), 30);
	cr_expect_eq(r.code, 0, "walkthrough: exit %d%s\n%s%s", r.code, r.timed_out ? " (timed out)" : "", r.out, r.err);
	cr_expect_str_eq(left.out, "", "the walkthrough left a broker or its directory behind:\n%s", left.out);

	cr_expect(h_has(r.out, "as nobody") || geteuid() != 0, "the broker did not run as nobody:\n%s", r.out);
	/* the live view of each side: the broker, its journal under its rule */
	char *live_row = strstr(r.out, "defer:   defer       journal");
	cr_expect(live_row && strstr(live_row, "/kahadb/db-"), "no live view of the defer side's journal:\n%s", r.out);
	cr_expect(h_has(r.out, "passthrough:   passthrough journal"), "no live view of the passthrough side:\n%s",
		  r.out);
	cr_expect(h_has(r.out, "passthrough: broker on 127.0.0.1:") && h_has(r.out, "defer: broker on 127.0.0.1:") &&
			  h_has(r.out, "1 x 300 persistent messages sent"),
		  "%s", r.out);
	cr_expect(h_has(r.out, "round 1 A (") && h_has(r.out, "round 1 B (") && h_has(r.out, "  B/A "),
		  "no figures of the load per side:\n%s", r.out);

	/* The journal's rows: "A  writes bytes syncs p50 p99 max flushes fs rule path". */
	const char *a = strstr(r.out, "\nA "), *b = strstr(r.out, "\nB ");
	cr_assert(a && b, "no journal rows:\n%s", r.out);
	long long a_syncs = 0, a_flushes = -1, b_syncs = 0, b_flushes = -1;
	cr_expect_eq(sscanf(a, "\nA %*d %*s %*s %lld %*s %*s %*s %*s %*s %*s %lld", &a_syncs, &a_flushes), 2,
		     "%.300s", a);
	cr_expect_eq(sscanf(b, "\nB %*d %*s %*s %lld %*s %*s %*s %*s %*s %*s %lld", &b_syncs, &b_flushes), 2,
		     "%.300s", b);
	cr_expect(a_syncs >= 300 && b_syncs >= 300, "fewer journal syncs than messages: A %lld, B %lld\n%s", a_syncs,
		  b_syncs, r.out);
	cr_expect(a_flushes == 0 && b_flushes > 0,
		  "the flusher should sync the journal under defer only: A %lld flushes, B %lld\n%s", a_flushes,
		  b_flushes, r.out);

	/* It ends with synclat compare's table and its verdict (the plots
	 * went with the directory). */
	const char *cmp = strstr(r.out, "== synclat compare");
	cr_assert_not_null(cmp, "no comparison:\n%s", r.out);
	cr_expect(h_has(cmp, "\nfsync ") && h_has(cmp, "B/A") && h_has(cmp, "\nverdict: ") && h_has(cmp, "B's fsync p50 "), "%s", cmp);
	const char *verdict = strstr(cmp, "\nverdict: ");
	cr_expect(verdict && !strchr(verdict + 1, '\n')[1], "the output does not end with the table:\n%s", cmp);
}
