/*
 * abserve.h - `syncshim ab` in front of a service (abserve.c).
 */
#ifndef SYNCSHIM_ABSERVE_H
#define SYNCSHIM_ABSERVE_H

struct ab_service {
	const char *setup;      /* sh -c, before each server start; NULL for none */
	const char *ready;      /* tcp:HOST:PORT, unix:PATH, file:PATH, cmd:CMD, pgsql:PSQL-ARGS */
	const char *load;       /* sh -c, without the shim */
	const char *metric;     /* ERE over the load's output; NULL: its wall time */
	double ready_timeout_s;
};

struct ab_round {
	int round;
	const char *side;       /* "A" or "B" */
	const char *dir;        /* the run directory */
};

/* 0 when the probe has one of the five shapes. */
int ab_probe_valid(const char *probe);
/* The probe once, its helpers' output (cmd:, pgsql:) to out: 0 when the
 * server answered, -1 not yet (syncshim crashtest's server form). */
int service_probe_once(const char *probe, const char *out);
/* One round of one side; 0 and the load's figure, or -1 after one line
 * naming the round and side (nothing left running either way). */
int ab_service_round(const struct ab_service *svc, const struct ab_round *r, char **server,
		     const char *config, const char *policy, const char *log, const char *mode, double *figure);
/* SIGTERM, SIGINT, SIGHUP of syncshim ab: forwarded, then everything stopped. */
void ab_service_signals(void);
int ab_service_signalled(void);
/* Median of n > 0 values, and their least and greatest. */
double ab_median(const double *v, int n, double *lo, double *hi);

#endif
