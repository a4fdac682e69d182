/* The HTTP client of `sprout ps` and `sprout stop`: enough HTTP/1.1 for
 * the server's JSON replies (Content-Length or chunked, Connection:
 * close), written on plain sockets so the CLI needs no new library. */
#include "http_client.h"

#include <errno.h>
#include <netdb.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

enum { TIMEOUT_S = 30, MAX_REPLY = 64 << 20 };

const char *cli_server_address(const char *flag) {
    if (flag && *flag) return flag;
    const char *env = getenv("SPROUT_HOST");
    return env && *env ? env : "127.0.0.1:8080";
}

/* host and port from an address; false when it cannot be one. */
static bool split_address(const char *address, char *host, size_t host_cap, char *port, size_t port_cap) {
    if (!strncmp(address, "http://", 7)) address += 7;
    const char *end = address + strcspn(address, "/");
    const char *colon = NULL;
    if (*address == '[') { /* [v6]:port */
        const char *close = memchr(address, ']', (size_t)(end - address));
        if (!close || (size_t)(close - address - 1) >= host_cap) return false;
        snprintf(host, host_cap, "%.*s", (int)(close - address - 1), address + 1);
        colon = close + 1 < end && close[1] == ':' ? close + 1 : NULL;
    } else {
        colon = memchr(address, ':', (size_t)(end - address));
        const size_t n = (size_t)((colon ? colon : end) - address);
        if (n == 0 || n >= host_cap) return false;
        snprintf(host, host_cap, "%.*s", (int)n, address);
    }
    if (!colon) return snprintf(port, port_cap, "8080") > 0;
    const size_t n = (size_t)(end - colon - 1);
    if (n == 0 || n >= port_cap || strspn(colon + 1, "0123456789") < n) return false;
    snprintf(port, port_cap, "%.*s", (int)n, colon + 1);
    return true;
}

static int connect_to(const char *host, const char *port, char *error, size_t error_size) {
    struct addrinfo hints = {.ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM}, *list = NULL;
    const int gai = getaddrinfo(host, port, &hints, &list);
    if (gai) {
        snprintf(error, error_size, "%s: %s", host, gai_strerror(gai));
        return -1;
    }
    int fd = -1, why = 0;
    for (const struct addrinfo *a = list; a && fd < 0; a = a->ai_next) {
        fd = socket(a->ai_family, a->ai_socktype, a->ai_protocol);
        if (fd < 0) continue;
        const struct timeval tv = {.tv_sec = TIMEOUT_S};
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
        setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
        if (connect(fd, a->ai_addr, a->ai_addrlen) == 0) break;
        why = errno;
        close(fd);
        fd = -1;
    }
    freeaddrinfo(list);
    if (fd < 0) snprintf(error, error_size, "cannot connect to %s:%s (%s): is `sprout serve` running?", host, port, strerror(why));
    return fd;
}

static bool send_all(int fd, const char *data, size_t len) {
    while (len) {
        const ssize_t n = send(fd, data, len, MSG_NOSIGNAL);
        if (n <= 0) {
            if (n < 0 && errno == EINTR) continue;
            return false;
        }
        data += n;
        len -= (size_t)n;
    }
    return true;
}

/* The whole reply, until the server closes. */
static char *read_all(int fd, size_t *len) {
    size_t cap = 4096, n = 0;
    char *buf = malloc(cap + 1);
    while (buf) {
        if (n == cap) {
            char *more = cap < MAX_REPLY ? realloc(buf, 2 * cap + 1) : NULL;
            if (!more) break;
            buf = more;
            cap *= 2;
        }
        const ssize_t got = recv(fd, buf + n, cap - n, 0);
        if (got < 0 && errno == EINTR) continue;
        if (got < 0) break;
        if (got == 0) {
            buf[n] = 0;
            *len = n;
            return buf;
        }
        n += (size_t)got;
    }
    free(buf);
    return NULL;
}

/* Undoes chunked transfer coding in place; false when malformed. */
static bool unchunk(char *body, size_t *len) {
    const char *in = body, *end = body + *len;
    size_t out = 0;
    for (;;) {
        char *after;
        const unsigned long size = strtoul(in, &after, 16);
        const char *line_end = strstr(after, "\r\n");
        if (after == in || !line_end || line_end >= end) return false;
        in = line_end + 2;
        if (size == 0) break;
        if (size > (size_t)(end - in)) return false;
        memmove(body + out, in, size);
        out += size;
        in += size;
        if (end - in < 2 || memcmp(in, "\r\n", 2)) return false;
        in += 2;
    }
    body[out] = 0;
    *len = out;
    return true;
}

/* Splits a raw reply into status and body. */
static bool parse_reply(char *raw, size_t raw_len, cli_http_reply *reply) {
    int status = 0;
    if (sscanf(raw, "HTTP/1.%*d %d", &status) != 1) return false;
    char *head_end = strstr(raw, "\r\n\r\n");
    if (!head_end) return false;
    *head_end = 0;
    bool chunked = false;
    for (char *line = strstr(raw, "\r\n"); line; line = strstr(line + 2, "\r\n"))
        if (!strncasecmp(line + 2, "Transfer-Encoding:", 18) && strstr(line + 20, "chunked")) chunked = true;
    char *body = head_end + 4;
    size_t len = raw_len - (size_t)(body - raw);
    memmove(raw, body, len + 1);
    if (chunked && !unchunk(raw, &len)) return false;
    reply->status = status;
    reply->body = raw;
    reply->len = len;
    return true;
}

int cli_http_request(const char *address, const char *method, const char *path, const char *body, cli_http_reply *reply, char *error,
                     size_t error_size) {
    *reply = (cli_http_reply){0};
    char host[256], port[16];
    if (!split_address(address, host, sizeof host, port, sizeof port)) {
        snprintf(error, error_size, "%s is not a server address (HOST:PORT)", address);
        return -1;
    }
    const int fd = connect_to(host, port, error, error_size);
    if (fd < 0) return -1;
    const char *key = getenv("SPROUT_API_KEY");
    const bool v6 = strchr(host, ':') != NULL;
    char head[1024];
    const size_t body_len = body ? strlen(body) : 0;
    const int n = snprintf(head, sizeof head,
                           "%s %s HTTP/1.1\r\nHost: %s%s%s:%s\r\nConnection: close\r\nAccept: application/json\r\n%s%s%s"
                           "Content-Type: application/json\r\nContent-Length: %zu\r\n\r\n",
                           method, path, v6 ? "[" : "", host, v6 ? "]" : "", port, key && *key ? "Authorization: Bearer " : "",
                           key && *key ? key : "", key && *key ? "\r\n" : "", body_len);
    if (n < 0 || (size_t)n >= sizeof head || !send_all(fd, head, (size_t)n) || (body_len && !send_all(fd, body, body_len))) {
        snprintf(error, error_size, "cannot send the request to %s:%s", host, port);
        close(fd);
        return -1;
    }
    size_t raw_len = 0;
    char *raw = read_all(fd, &raw_len);
    close(fd);
    if (!raw || !parse_reply(raw, raw_len, reply)) {
        snprintf(error, error_size, "%s:%s sent no HTTP reply that could be read", host, port);
        free(raw);
        return -1;
    }
    return 0;
}
