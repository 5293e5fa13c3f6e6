/*
 * metrics_http.c - `synclat metrics --listen ADDR:PORT`: the exposition
 * served over HTTP for a Prometheus server to scrape.
 *
 * One thread and poll(): every connection is non-blocking and has one
 * deadline for its whole request (5 s from its accept) and one for its
 * whole answer (5 s from when it is ready), however slowly it trickles, so
 * a client that sends a byte now and then cannot hold the endpoint. At
 * most MAX_CLIENTS connections are open; one more makes room by closing
 * the oldest that has not finished its request, so idle or slow clients,
 * in any number, never shut a scraper out (a scraper sends its request
 * at once). Memory is bounded: MAX_CLIENTS request buffers of 8 KiB, and
 * an answer per client that has asked for one.
 * GET /metrics (or /) answers the text format, 0.0.4, from a fresh scan;
 * anything else 404 or 405. It listens on loopback unless told otherwise.
 */
#include "metrics.h"

#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "tool.h"

#define REQUEST_MAX 8192

static volatile sig_atomic_t http_stop;

static void on_stop(int sig)
{
	(void)sig;
	http_stop = 1;
}

static int listen_on(const char *addr, FILE *err)
{
	char host[256];
	snprintf(host, sizeof(host), "%s", addr);
	char *port = strrchr(host, ':');
	if (!port || !port[1]) {
		cli_err(err, "--listen '%s': want HOST:PORT, e.g. 127.0.0.1:9464", addr);
		return -1;
	}
	*port++ = '\0';
	if (host[0] == '[' && host[strlen(host) - 1] == ']') { /* [::1]:9464 */
		memmove(host, host + 1, strlen(host));
		host[strlen(host) - 1] = '\0';
	}
	struct addrinfo hints = { .ai_socktype = SOCK_STREAM, .ai_flags = AI_PASSIVE }, *ai = NULL;
	int rc = getaddrinfo(host[0] ? host : "127.0.0.1", port, &hints, &ai);
	if (rc != 0) {
		cli_err(err, "--listen '%s': %s", addr, gai_strerror(rc));
		return -1;
	}
	int fd = socket(ai->ai_family, SOCK_STREAM | SOCK_CLOEXEC, 0), one = 1;
	if (fd >= 0)
		setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (fd < 0 || bind(fd, ai->ai_addr, ai->ai_addrlen) != 0 || listen(fd, 16) != 0) {
		cli_err(err, "--listen '%s': %s", addr, strerror(errno));
		if (fd >= 0)
			close(fd);
		fd = -1;
	}
	freeaddrinfo(ai);
	return fd;
}

#define MAX_CLIENTS 64
#define DEADLINE_MS 5000

struct client {
	int fd;                     /* -1: a free slot */
	uint64_t accepted;          /* order of accept, for "the oldest" */
	double deadline;            /* CLOCK_MONOTONIC s: the request's, then the answer's */
	size_t got;                 /* request bytes so far */
	char req[REQUEST_MAX + 1];
	char *answer;               /* NULL while reading the request */
	size_t len, sent;
};

static void client_close(struct client *c)
{
	if (c->fd >= 0)
		close(c->fd);
	free(c->answer);
	c->fd = -1;
	c->answer = NULL;
}

/* The whole answer, head and body, in one buffer for non-blocking sends. */
static void answer(struct client *c, const char *status, const char *type, const char *body, size_t len)
{
	char head[256];
	int n = snprintf(head, sizeof(head),
			 "HTTP/1.1 %s\r\nContent-Type: %s\r\nContent-Length: %zu\r\nConnection: close\r\n\r\n", status,
			 type, len);
	c->answer = malloc((size_t)n + len);
	if (!c->answer) {
		client_close(c);
		return;
	}
	memcpy(c->answer, head, (size_t)n);
	memcpy(c->answer + n, body, len);
	c->len = (size_t)n + len;
	c->sent = 0;
	c->deadline = tool_mono_s() + DEADLINE_MS / 1000.0;
}

/* The request is complete (or full): its answer. */
static void respond(struct client *c, const struct live_where *w, bool per_file)
{
	const char *req = c->req;
	if (strncmp(req, "GET ", 4) != 0) {
		answer(c, "405 Method Not Allowed", "text/plain", "GET only\n", 9);
		return;
	}
	const char *path = req + 4;
	size_t plen = strcspn(path, " ?\r\n");
	if (!(plen == 8 && !strncmp(path, "/metrics", 8)) && !(plen == 1 && path[0] == '/')) {
		answer(c, "404 Not Found", "text/plain", "try /metrics\n", 13);
		return;
	}
	char *body = NULL;
	size_t len = 0;
	FILE *m = open_memstream(&body, &len);
	struct live_snapshot s;
	int ok = 0;
	if (m) {
		ok = live_scan(w, &s) == 0 && metrics_write(m, &s, per_file) == 0;
		live_snapshot_free(&s);
		fclose(m);
	}
	if (ok)
		answer(c, "200 OK", "text/plain; version=0.0.4; charset=utf-8", body, len);
	else
		answer(c, "500 Internal Server Error", "text/plain", "out of memory\n", 14);
	free(body);
}

/* What poll said about c: read more of its request or send more of its answer. */
static void client_step(struct client *c, const struct live_where *w, bool per_file)
{
	if (!c->answer) {
		ssize_t r = recv(c->fd, c->req + c->got, REQUEST_MAX - c->got, 0);
		if (r == 0 || (r < 0 && errno != EAGAIN && errno != EINTR)) {
			client_close(c);
			return;
		}
		if (r > 0) {
			c->got += (size_t)r;
			c->req[c->got] = '\0';
		}
		if (c->got == REQUEST_MAX || strstr(c->req, "\r\n\r\n"))
			respond(c, w, per_file);
		return;
	}
	ssize_t n = send(c->fd, c->answer + c->sent, c->len - c->sent, MSG_NOSIGNAL);
	if (n > 0)
		c->sent += (size_t)n;
	if ((n < 0 && errno != EAGAIN && errno != EINTR) || c->sent == c->len)
		client_close(c);
}

/* A slot for a new connection: a free one, else the oldest still reading
 * its request (closed), else none. */
static struct client *client_slot(struct client *cl)
{
	struct client *oldest = NULL;
	for (int i = 0; i < MAX_CLIENTS; i++) {
		if (cl[i].fd < 0)
			return &cl[i];
		if (!cl[i].answer && (!oldest || cl[i].accepted < oldest->accepted))
			oldest = &cl[i];
	}
	if (oldest)
		client_close(oldest);
	return oldest;
}

static void accept_all(int lfd, struct client *cl, uint64_t *seq)
{
	for (;;) {
		int fd = accept4(lfd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);
		if (fd < 0)
			return; /* EAGAIN: none left; EINTR, or a client gone */
		struct client *c = client_slot(cl);
		if (!c) {
			close(fd); /* every slot is sending an answer: a rare, short state */
			continue;
		}
		c->fd = fd;
		c->accepted = ++*seq;
		c->deadline = tool_mono_s() + DEADLINE_MS / 1000.0;
		c->got = 0;
		c->req[0] = '\0';
		c->answer = NULL;
	}
}

int metrics_serve(const char *addr, const struct live_where *w, bool per_file, FILE *out, FILE *err)
{
	int lfd = listen_on(addr, err);
	if (lfd < 0)
		return EXIT_USAGE;
	static struct client cl[MAX_CLIENTS];
	for (int i = 0; i < MAX_CLIENTS; i++)
		cl[i].fd = -1;
	uint64_t seq = 0;
	struct sigaction sa = { .sa_handler = on_stop };
	sigemptyset(&sa.sa_mask);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);
	fprintf(out, "synclat metrics: serving http://%s/metrics\n", addr);
	fflush(out);
	int flags = fcntl(lfd, F_GETFL);
	fcntl(lfd, F_SETFL, flags | O_NONBLOCK);
	while (!http_stop) {
		struct pollfd pf[MAX_CLIENTS + 1];
		struct client *who[MAX_CLIENTS + 1];
		int n = 0;
		double now = tool_mono_s(), next = now + 1;
		pf[n++] = (struct pollfd){ .fd = lfd, .events = POLLIN };
		for (int i = 0; i < MAX_CLIENTS; i++) {
			if (cl[i].fd < 0)
				continue;
			if (now >= cl[i].deadline) {
				client_close(&cl[i]);
				continue;
			}
			if (cl[i].deadline < next)
				next = cl[i].deadline;
			who[n] = &cl[i];
			pf[n++] = (struct pollfd){ .fd = cl[i].fd, .events = cl[i].answer ? POLLOUT : POLLIN };
		}
		int timeout_ms = (int)((next - now) * 1000) + 1;
		if (poll(pf, (nfds_t)n, timeout_ms) <= 0)
			continue; /* EINTR from the stop signal, or a deadline */
		for (int i = 1; i < n; i++)
			if (pf[i].revents)
				client_step(who[i], w, per_file);
		if (pf[0].revents & POLLIN)
			accept_all(lfd, cl, &seq);
	}
	for (int i = 0; i < MAX_CLIENTS; i++)
		client_close(&cl[i]);
	close(lfd);
	return 0;
}
