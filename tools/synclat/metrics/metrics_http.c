/*
 * metrics_http.c - `synclat metrics --listen ADDR:PORT`: the exposition
 * served over HTTP for a Prometheus server to scrape.
 *
 * One thread, one connection at a time: Prometheus scrapes every few
 * seconds, and a snapshot of the live files takes milliseconds. Each
 * connection is bounded (a request of at most 8 KiB, 5 s to send it and
 * 5 s to take the answer) so a stuck client cannot hold the endpoint.
 * GET /metrics (or /) answers the text format, 0.0.4, from a fresh scan;
 * anything else 404 or 405. It listens on loopback unless told otherwise.
 */
#include "metrics.h"

#include <errno.h>
#include <netdb.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
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

static void send_all(int fd, const char *p, size_t n)
{
	while (n) {
		ssize_t w = send(fd, p, n, MSG_NOSIGNAL);
		if (w <= 0) {
			if (w < 0 && errno == EINTR)
				continue;
			return;
		}
		p += w;
		n -= (size_t)w;
	}
}

static void answer(int fd, const char *status, const char *type, const char *body, size_t len)
{
	char head[256];
	int n = snprintf(head, sizeof(head),
			 "HTTP/1.1 %s\r\nContent-Type: %s\r\nContent-Length: %zu\r\nConnection: close\r\n\r\n", status,
			 type, len);
	send_all(fd, head, (size_t)n);
	send_all(fd, body, len);
}

/* Reads the request head (bounded) and answers it. */
static void serve_one(int fd, const struct live_where *w)
{
	struct timeval tv = { 5, 0 };
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
	char req[REQUEST_MAX + 1];
	size_t got = 0;
	req[0] = '\0';
	while (got < REQUEST_MAX && !strstr(req, "\r\n\r\n")) {
		ssize_t r = recv(fd, req + got, REQUEST_MAX - got, 0);
		if (r <= 0)
			return;
		got += (size_t)r;
		req[got] = '\0';
	}
	req[got] = '\0';
	if (strncmp(req, "GET ", 4) != 0) {
		answer(fd, "405 Method Not Allowed", "text/plain", "GET only\n", 9);
		return;
	}
	const char *path = req + 4;
	size_t plen = strcspn(path, " ?\r\n");
	if (!(plen == 8 && !strncmp(path, "/metrics", 8)) && !(plen == 1 && path[0] == '/')) {
		answer(fd, "404 Not Found", "text/plain", "try /metrics\n", 13);
		return;
	}
	char *body = NULL;
	size_t len = 0;
	FILE *m = open_memstream(&body, &len);
	struct live_snapshot s;
	int ok = 0;
	if (m) {
		ok = live_scan(w, &s) == 0 && metrics_write(m, &s) == 0;
		live_snapshot_free(&s);
	}
	if (m)
		fclose(m);
	if (ok)
		answer(fd, "200 OK", "text/plain; version=0.0.4; charset=utf-8", body, len);
	else
		answer(fd, "500 Internal Server Error", "text/plain", "out of memory\n", 14);
	free(body);
}

int metrics_serve(const char *addr, const struct live_where *w, FILE *out, FILE *err)
{
	int lfd = listen_on(addr, err);
	if (lfd < 0)
		return EXIT_USAGE;
	struct sigaction sa = { .sa_handler = on_stop };
	sigemptyset(&sa.sa_mask);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);
	fprintf(out, "synclat metrics: serving http://%s/metrics\n", addr);
	fflush(out);
	while (!http_stop) {
		int fd = accept4(lfd, NULL, NULL, SOCK_CLOEXEC);
		if (fd < 0)
			continue; /* EINTR from the stop signal, or a client gone */
		serve_one(fd, w);
		close(fd);
	}
	close(lfd);
	return 0;
}
