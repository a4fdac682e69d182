/* The web chat page: GET / for a browser and GET /webui/NAME for its files,
 * from the copies the build embedded (gzipped for clients that take it) or,
 * with --webui-path, from a folder read at each request for development.
 * Every file is revalidated (no-cache) against an ETag of its content, so a
 * new binary's page is never mixed with an old one's scripts. Clients that
 * do not ask for HTML at / (Ollama's, curl) still get "sprout is running". */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "server/server_internal.h"
#include "server/webui.h"
#include "server/webui_assets.h"

/* A page file read from --webui-path is at most this large. */
#define WEBUI_FILE_MAX (16u << 20)

/* The page talks to this server only; nothing else may be fetched or run. */
static const char page_policy[] = "default-src 'self'; connect-src 'self'; img-src 'self' data:; style-src 'self'; script-src 'self'; "
                                  "object-src 'none'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'";

static const char *content_type(const char *name) {
    static const struct {
        const char *ext, *type;
    } types[] = {
        {".html", "text/html; charset=utf-8"}, {".js", "text/javascript; charset=utf-8"}, {".css", "text/css; charset=utf-8"},
        {".svg", "image/svg+xml"},            {".json", "application/json"},              {".png", "image/png"},
        {".ico", "image/x-icon"},             {".txt", "text/plain; charset=utf-8"},
    };
    const char *dot = strrchr(name, '.');
    for (size_t i = 0; dot && i < sizeof types / sizeof types[0]; i++)
        if (!strcmp(dot, types[i].ext)) return types[i].type;
    return "application/octet-stream";
}

/* Whether a comma-separated header lists `token` (case aside) without q=0. */
static bool header_lists(const char *header, const char *token) {
    const size_t n = strlen(token);
    for (const char *p = header; p && *p;) {
        p += strspn(p, " \t,");
        const char *end = p + strcspn(p, ",");
        if (!strncasecmp(p, token, n) && (p + n == end || strchr(" \t;", p[n]))) {
            const char *q = strstr(p, "q=");
            return !(q && q < end && strtod(q + 2, NULL) == 0);
        }
        p = end;
    }
    return false;
}

static bool accepts_gzip(struct MHD_Connection *c) {
    const char *h = MHD_lookup_connection_value(c, MHD_HEADER_KIND, MHD_HTTP_HEADER_ACCEPT_ENCODING);
    return h && header_lists(h, "gzip");
}

/* Whether If-None-Match names `etag` (weak or strong: the comparison for GET is the weak one). */
static bool etag_matches(struct MHD_Connection *c, const char *etag) {
    const char *h = MHD_lookup_connection_value(c, MHD_HEADER_KIND, MHD_HTTP_HEADER_IF_NONE_MATCH);
    if (!h) return false;
    const size_t n = strlen(etag);
    for (const char *p = h; *p;) {
        p += strspn(p, " \t,");
        if (!strncmp(p, "W/", 2)) p += 2;
        if (*p == '*' || (!strncmp(p, etag, n) && strchr(" \t,", p[n]))) return *p != 0;
        p += strcspn(p, ",");
    }
    return false;
}

/* A page file (or its 304): `data` must outlive the response unless `copy`. */
static enum MHD_Result send_file(struct MHD_Connection *c, const char *name, const void *data, size_t len, bool gzipped,
                                 bool varies, const char *etag, bool copy) {
    const bool unchanged = etag_matches(c, etag);
    struct MHD_Response *r = unchanged ? MHD_create_response_from_buffer(0, "", MHD_RESPMEM_PERSISTENT)
                                       : MHD_create_response_from_buffer(len, (void *)data, copy ? MHD_RESPMEM_MUST_COPY : MHD_RESPMEM_PERSISTENT);
    if (!r) return MHD_NO;
    MHD_add_response_header(r, "ETag", etag);
    MHD_add_response_header(r, "Cache-Control", "no-cache");
    if (varies) MHD_add_response_header(r, "Vary", "Accept-Encoding");
    MHD_add_response_header(r, "Server", "sprout");
    if (!unchanged) {
        MHD_add_response_header(r, "Content-Type", content_type(name));
        if (gzipped) MHD_add_response_header(r, "Content-Encoding", "gzip");
        MHD_add_response_header(r, "X-Content-Type-Options", "nosniff");
        MHD_add_response_header(r, "Referrer-Policy", "no-referrer");
        if (!strcmp(name, "index.html")) MHD_add_response_header(r, "Content-Security-Policy", page_policy);
    }
    enum MHD_Result res = MHD_queue_response(c, unchanged ? 304 : 200, r);
    MHD_destroy_response(r);
    return res;
}

static enum MHD_Result send_embedded(struct MHD_Connection *c, const sp_webui_asset *a) {
    const bool gz = a->gz && accepts_gzip(c);
    /* the two encodings are two representations: each has its own tag */
    char etag[40];
    snprintf(etag, sizeof etag, "\"%s%s\"", a->hash, gz ? "-gz" : "");
    return send_file(c, a->name, gz ? a->gz : a->data, gz ? a->gz_len : a->len, gz, a->gz != NULL, etag, false);
}

/* A file of the --webui-path folder: a plain name, resolving (symbolic links
 * followed) to a regular file inside the folder. */
static enum MHD_Result send_from_folder(sp_server *srv, struct MHD_Connection *c, const char *name) {
    char root[PATH_MAX], path[PATH_MAX], real[PATH_MAX];
    const bool plain = name[0] != '.' && !strstr(name, "..") &&
                       strspn(name, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-") == strlen(name);
    if (!plain) return sp_reply_error(srv, c, SP_STYLE_OPENAI, 404, NULL, "no such file: %s", name);
    if (!realpath(srv->opt.webui_path, root) || snprintf(path, sizeof path, "%s/%s", root, name) >= (int)sizeof path)
        return sp_reply_error(srv, c, SP_STYLE_OPENAI, 500, NULL, "cannot read the --webui-path folder: %s", strerror(errno));
    const size_t root_len = strlen(root);
    if (!realpath(path, real) || strncmp(real, root, root_len) || (real[root_len] != '/' && root[root_len - 1] != '/'))
        return sp_reply_error(srv, c, SP_STYLE_OPENAI, 404, NULL, "no such file: %s", name);
    /* O_NONBLOCK: a FIFO put there must not hold the connection's thread (fstat then turns it away) */
    const int fd = open(real, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
    struct stat st;
    if (fd < 0 || fstat(fd, &st) || !S_ISREG(st.st_mode) || (uint64_t)st.st_size > WEBUI_FILE_MAX) {
        if (fd >= 0) close(fd);
        return sp_reply_error(srv, c, SP_STYLE_OPENAI, 404, NULL, "no such file: %s", name);
    }
    unsigned char *data = malloc(st.st_size ? (size_t)st.st_size : 1);
    size_t len = 0;
    while (data && len < (size_t)st.st_size) {
        const ssize_t got = read(fd, data + len, (size_t)st.st_size - len);
        if (got <= 0) break;
        len += (size_t)got;
    }
    close(fd);
    if (!data || len != (size_t)st.st_size) {
        free(data);
        return sp_reply_error(srv, c, SP_STYLE_OPENAI, 500, NULL, "cannot read %s", name);
    }
    char etag[40];
    snprintf(etag, sizeof etag, "\"%016llx\"", (unsigned long long)sp_webui_hash(data, len));
    const enum MHD_Result res = send_file(c, name, data, len, false, false, etag, true);
    free(data);
    return res;
}

static bool wants_html(struct MHD_Connection *c) {
    const char *h = MHD_lookup_connection_value(c, MHD_HEADER_KIND, MHD_HTTP_HEADER_ACCEPT);
    return h && header_lists(h, "text/html");
}

enum MHD_Result sp_handle_webui(sp_server *srv, struct MHD_Connection *c, const char *url, const char *body, size_t len) {
    (void)body, (void)len;
    const bool root = !strcmp(url, "/");
    if (root && !wants_html(c)) return sp_reply_text(srv, c, 200, "text/plain", "sprout is running");
    if (srv->opt.no_webui) return sp_reply_error(srv, c, SP_STYLE_OPENAI, 404, NULL, "the web page is turned off (--no-webui)");
    const char *name = root ? "index.html" : url + strlen(SP_WEBUI_PREFIX);
    if (srv->opt.webui_path) return send_from_folder(srv, c, name);
    for (size_t i = 0; i < sp_webui_n_assets; i++)
        if (!strcmp(sp_webui_assets[i].name, name)) return send_embedded(c, &sp_webui_assets[i]);
    return sp_reply_error(srv, c, SP_STYLE_OPENAI, 404, NULL, "no such file: %s", name);
}
