/*
 * status.c - `syncshim status [PID...]`: is this process running under
 * syncshim, with which rules, how much is at risk now.
 *
 * A process is under the shim when its /proc/PID/maps names
 * libsyncshim.so: that holds whatever started it (syncshim run, a systemd
 * unit's LD_PRELOAD, /etc/ld.so.preload) and in any mount namespace. Its
 * live counters are then looked for where it publishes them, through
 * /proc/PID/root when its /tmp is not ours (systemd's PrivateTmp), as
 * `synclat top` does (livescan.c). Per process: its command, ini and
 * default policy, then one line per rule: its policy, the files it
 * matched, the data at risk now and its oldest age, sync errors.
 */
#include <dirent.h>
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "liveread.h"
#include "report.h"
#include "syncshim_cli.h"
#include "tool.h"

static int status_usage(FILE *to)
{
	fprintf(to, "usage: syncshim %s\n"
		    "  for each process with the shim loaded (all, or each PID): its ini and default\n"
		    "  policy, and per rule the files it matched, the data at risk now and sync errors,\n"
		    "  from its live counters (found in any mount namespace, e.g. systemd's PrivateTmp)\n"
		    "  --dir DIR   read live counters from DIR only\n"
		    "  exit 0 when every PID asked for (or at least one process) is under the shim, else 1\n",
		STATUS_SYNOPSIS);
	return 0;
}

/* "12.3 kB" */
static void human_bytes(char *buf, size_t len, uint64_t b)
{
	if (b < 1000)
		snprintf(buf, len, "%llu B", (unsigned long long)b);
	else if (b < 1000000)
		snprintf(buf, len, "%.1f kB", (double)b / 1e3);
	else
		snprintf(buf, len, "%.1f MB", (double)b / 1e6);
}

static const struct live_proc *live_of(const struct live_snapshot *s, pid_t pid)
{
	for (size_t i = 0; i < s->nprocs; i++)
		if ((pid_t)s->procs[i].h.pid == pid)
			return &s->procs[i];
	return NULL;
}

/* The command line of pid, NULs as spaces. */
static void cmdline_of(pid_t pid, char *buf, size_t len)
{
	char path[64];
	snprintf(path, sizeof(path), "/proc/%d/cmdline", (int)pid);
	FILE *f = fopen(path, "re");
	size_t n = f ? fread(buf, 1, len - 1, f) : 0;
	if (f)
		fclose(f);
	buf[n] = '\0';
	for (size_t i = 0; i + 1 < n; i++)
		if (buf[i] == '\0')
			buf[i] = ' ';
	for (char *c = buf; *c; c++)
		if ((unsigned char)*c < 0x20)
			*c = '?';
	if (!n)
		snprintf(buf, len, "?");
}

/* One rule's line: its policy, the files it matched, at risk, errors. */
static void rule_line(FILE *out, const char *name, unsigned policy, unsigned nfiles, bool approximate,
		      const struct live_file *sum)
{
	char risk[32];
	human_bytes(risk, sizeof(risk), sum ? sum->risk_bytes : 0);
	fputs(name[0] ? "  rule " : "  ", out);
	put_clean(out, name[0] ? name : "default");
	fprintf(out, " (%s): %s%u file%s matched", live_policy_name(policy), approximate ? "about " : "", nfiles,
		nfiles == 1 ? "" : "s");
	if (!nfiles) {
		fputs("\n", out);
		return;
	}
	fprintf(out, "; at risk %s", sum && sum->risk_bytes ? risk : "nothing");
	if (sum && sum->risk_bytes)
		fprintf(out, ", oldest %.1f ms", (double)sum->risk_age_ns / 1e6);
	uint64_t errors = sum ? sum->errors : 0;
	fprintf(out, "; %llu sync error%s\n", (unsigned long long)errors, errors == 1 ? "" : "s");
}

/* Per rule: from the process's rule table (every rule in force, those
 * that matched nothing too), else (a writer before the table) from the
 * files it publishes. */
static void print_rules(FILE *out, const struct live_proc *p)
{
	size_t room = p->h.nfiles > p->h.nrules ? p->h.nfiles : p->h.nrules;
	struct live_file *sum = calloc(room ? room : 1, sizeof(*sum));
	unsigned *nfiles = calloc(room ? room : 1, sizeof(*nfiles));
	if (!sum || !nfiles) {
		free(sum);
		free(nfiles);
		return;
	}
	size_t n = live_by_rule(p, sum, nfiles);
	unsigned unmatched = 0;
	for (uint32_t i = 0; i < p->h.nrules; i++) {
		const struct live_rule *r = &p->rules[i];
		const struct live_file *s = NULL;
		for (size_t j = 0; j < n && !s; j++)
			if (sum[j].rule == r->rule)
				s = &sum[j];
		rule_line(out, r->name, r->policy, r->files, r->flags & LIVER_APPROXIMATE, s);
		unmatched += r->rule && !r->files;
	}
	if (!p->h.nrules && !n)
		fprintf(out, "  no file yet under any rule\n");
	for (size_t i = 0; !p->h.nrules && i < n; i++)
		rule_line(out, sum[i].rule ? sum[i].rule_name : "", sum[i].policy, nfiles[i], false, &sum[i]);
	if (unmatched)
		fprintf(out, "  warning: %u rule%s matched no file: %s path glob names none this process opened "
			"(rules match absolute paths: syncshim check INI PATH says which rule a path gets)\n",
			unmatched, unmatched == 1 ? "" : "s", unmatched == 1 ? "its" : "their");
	if (p->h.omitted)
		fprintf(out, "  (%u more file%s with activity did not fit in the live counters)\n", p->h.omitted,
			p->h.omitted == 1 ? "" : "s");
	free(sum);
	free(nfiles);
}

static void print_one(FILE *out, pid_t pid, const struct live_snapshot *s)
{
	/* the command as it was started (the live counters keep it), not a
	 * title the server set since (redis-server pads its with spaces) */
	char cmd[256], label[128];
	const struct live_proc *p = live_of(s, pid);
	if (p && !p->busy && p->h.cmdline[0])
		snprintf(cmd, sizeof(cmd), "%s", p->h.cmdline);
	else
		cmdline_of(pid, cmd, sizeof(cmd));
	command_label(label, sizeof(label), cmd, 100);
	fprintf(out, "%d ", (int)pid);
	put_clean(out, label);
	fputs(": under syncshim\n", out);
	if (!p) {
		fprintf(out, "  no live counters found: live = off in its ini, or its live directory is not one "
			     "this user may read (synclat top --dir DIR, as that user)\n");
		return;
	}
	if (p->busy) {
		fprintf(out, "  its live counters were being rewritten: try again\n");
		return;
	}
	fprintf(out, "  ini %s, default policy %s%s; counters %s\n", p->h.config[0] ? p->h.config : "(none)",
		p->h.default_policy[0] ? p->h.default_policy : "?", p->stalled ? " (not published lately)" : "",
		p->path);
	if (p->h.config_errors) {
		fprintf(out, "  config errors: %u, the latest: ", p->h.config_errors);
		put_clean(out, p->h.config_error[0] ? p->h.config_error : "?");
		fputc('\n', out);
	}
	print_rules(out, p);
}

int cmd_status(int argc, char **argv, FILE *out, FILE *err)
{
	static const struct option longopts[] = {
		{ "dir", required_argument, NULL, 'D' }, { "help", no_argument, NULL, 'h' }, { NULL, 0, NULL, 0 },
	};
	const char *dir = NULL;
	int c;
	optind = 0;
	opterr = 0;
	while ((c = getopt_long(argc, argv, "+h", longopts, NULL)) != -1) {
		switch (c) {
		case 'D': dir = optarg; break;
		case 'h': return status_usage(out);
		default: return cli_bad_option(argc, argv, err);
		}
	}
	pid_t want[256];
	int nwant = 0;
	for (int i = optind; i < argc; i++) {
		char *end;
		long v = strtol(argv[i], &end, 10);
		if (end == argv[i] || *end || v <= 0 || v > 0x7fffffffL || nwant == 256) {
			cli_err(err, "'%s' is not a process id; syncshim status -h says more", argv[i]);
			return EXIT_USAGE;
		}
		want[nwant++] = (pid_t)v;
	}
	struct live_where w;
	live_where_init(&w, dir);
	w.keep_stale = true; /* a look, not a clean-up */
	struct live_snapshot s;
	if (live_scan(&w, &s) != 0) {
		cli_err(err, "out of memory");
		return EXIT_INPUT;
	}
	int found = 0, missing = 0;
	if (nwant) {
		for (int i = 0; i < nwant; i++) {
			if (live_pid_shimmed(w.proc, want[i])) {
				print_one(out, want[i], &s);
				found++;
			} else {
				fprintf(out, "%d: not under syncshim (no libsyncshim.so in /proc/%d/maps%s)\n", (int)want[i],
					(int)want[i], access(w.proc, R_OK) == 0 && kill(want[i], 0) != 0 ? ", or no such process" : "");
				missing++;
			}
		}
	} else {
		DIR *d = opendir(w.proc);
		for (struct dirent *e; d && (e = readdir(d));) {
			char *end;
			long v = strtol(e->d_name, &end, 10);
			if (end == e->d_name || *end || v <= 0 || v == (long)getpid() || !live_pid_shimmed(w.proc, (pid_t)v))
				continue;
			print_one(out, (pid_t)v, &s);
			found++;
		}
		if (d)
			closedir(d);
		if (!found)
			fprintf(out, "no process is running under syncshim%s\n",
				geteuid() ? " (of this user's; root sees every user's)" : "");
	}
	live_snapshot_free(&s);
	return found && !missing ? 0 : 1;
}
