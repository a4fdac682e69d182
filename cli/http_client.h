/* A small HTTP/1.1 client over sockets, for the commands that talk to a
 * running `sprout serve` (ps, stop): one request a connection, the whole
 * reply read into memory. */
#ifndef SPROUT_CLI_HTTP_CLIENT_H
#define SPROUT_CLI_HTTP_CLIENT_H

#include <stddef.h>

typedef struct cli_http_reply {
    int status;  /* 200, 404, ... */
    char *body;  /* NUL-terminated, chunked encoding undone; free() it */
    size_t len;
} cli_http_reply;

/* The server's address: `flag` if given, else $SPROUT_HOST, else
 * 127.0.0.1:8080. */
const char *cli_server_address(const char *flag);

/* Sends `method path` with `body` (JSON, may be NULL) to `address`
 * ("host", "host:port", "[v6]:port", with or without "http://"), with
 * $SPROUT_API_KEY as the bearer token when set. 0, or -1 with `error`
 * saying why (cannot connect, a malformed reply). */
int cli_http_request(const char *address, const char *method, const char *path, const char *body, cli_http_reply *reply, char *error,
                     size_t error_size);

#endif
