/* Model names as Ollama's types/model parses them:
 * [host/][namespace/]model[:tag], each part checked by its own rules, the
 * missing ones filled with registry.ollama.ai, library and latest. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "store/parts.h"

#define DEFAULT_HOST "registry.ollama.ai"
#define DEFAULT_NAMESPACE "library"
#define DEFAULT_TAG "latest"

typedef enum part_kind { PART_HOST, PART_NAMESPACE, PART_MODEL, PART_TAG } part_kind;

static bool alnum_or_underscore(char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
}

/* Ollama's isValidPart: 1 to 80 bytes (350 for a host), a letter, digit or
 * underscore first, then those and '-', '.' (not in a namespace) and ':'
 * (only in a host, for its port). */
static bool part_valid(part_kind kind, const char *s, size_t n) {
    size_t max = kind == PART_HOST ? 350 : 80;
    if (n < 1 || n > max || !alnum_or_underscore(s[0])) return false;
    for (size_t i = 1; i < n; i++) {
        char c = s[i];
        if (alnum_or_underscore(c) || c == '-') continue;
        if (c == '.' && kind != PART_NAMESPACE) continue;
        if (c == ':' && kind == PART_HOST) continue;
        return false;
    }
    return true;
}

static sprout_status set_part(char *dst, part_kind kind, const char *s, size_t n, const char *text) {
    static const char *const kinds[] = {"host", "namespace", "model", "tag"};
    if (!part_valid(kind, s, n))
        return sp_fail(SPROUT_ERR_INVALID_ARGUMENT, "invalid model name '%.200s': bad %s '%.*s'", text, kinds[kind],
                       (int)(n > 100 ? 100 : n), s);
    memcpy(dst, s, n);
    dst[n] = '\0';
    return SPROUT_OK;
}

static const char *last_of(const char *s, size_t n, char c) {
    for (size_t i = n; i-- > 0;)
        if (s[i] == c) return s + i;
    return NULL;
}

sprout_status sp_name_parse(const char *text, sp_name *out) {
    if (!text || !*text) return sp_fail(SPROUT_ERR_INVALID_ARGUMENT, "invalid model name: empty");
    const char *s = text;
    if (!strncmp(s, "https://", 8)) s += 8;
    else if (!strncmp(s, "http://", 7)) s += 7;
    size_t n = strlen(s);
    if (n > 350 + 1 + 80 + 1 + 80 + 1 + 80)
        return sp_fail(SPROUT_ERR_INVALID_ARGUMENT, "invalid model name '%.100s...': too long", text);
    strcpy(out->host, DEFAULT_HOST);
    strcpy(out->ns, DEFAULT_NAMESPACE);
    strcpy(out->tag, DEFAULT_TAG);
    sprout_status st;
    /* a ':' after the last '/' starts the tag; one before it is a host's port */
    const char *colon = last_of(s, n, ':'), *slash = last_of(s, n, '/');
    if (colon && (!slash || colon > slash)) {
        st = set_part(out->tag, PART_TAG, colon + 1, n - (size_t)(colon + 1 - s), text);
        if (st != SPROUT_OK) return st;
        n = (size_t)(colon - s);
    }
    slash = last_of(s, n, '/');
    const char *model = slash ? slash + 1 : s;
    st = set_part(out->model, PART_MODEL, model, n - (size_t)(model - s), text);
    if (st != SPROUT_OK || !slash) return st;
    n = (size_t)(slash - s);
    slash = last_of(s, n, '/');
    const char *ns = slash ? slash + 1 : s;
    st = set_part(out->ns, PART_NAMESPACE, ns, n - (size_t)(ns - s), text);
    if (st != SPROUT_OK || !slash) return st;
    return set_part(out->host, PART_HOST, s, (size_t)(slash - s), text);
}

static char *format_name(const sp_name *n, bool shortest) {
    size_t len = strlen(n->host) + strlen(n->ns) + strlen(n->model) + strlen(n->tag) + 4;
    char *out = malloc(len);
    if (!out) return NULL;
    /* Ollama's DisplayShortest: the default host goes, and with it the
     * default namespace; model and tag always stay */
    if (!shortest || strcmp(n->host, DEFAULT_HOST))
        snprintf(out, len, "%s/%s/%s:%s", n->host, n->ns, n->model, n->tag);
    else if (strcmp(n->ns, DEFAULT_NAMESPACE))
        snprintf(out, len, "%s/%s:%s", n->ns, n->model, n->tag);
    else
        snprintf(out, len, "%s:%s", n->model, n->tag);
    return out;
}

char *sp_name_full(const sp_name *n) { return format_name(n, false); }
char *sp_name_short(const sp_name *n) { return format_name(n, true); }

char *sp_name_manifest_path(const char *root, const sp_name *n) {
    return sp_path_join(root, "manifests", n->host, n->ns, n->model, n->tag, (const char *)NULL);
}

static sprout_status name_out(const char *name, char **out, bool shortest) {
    if (!out) return sp_fail(SPROUT_ERR_INVALID_ARGUMENT, "store: no output pointer");
    *out = NULL;
    sp_name n;
    sprout_status st = sp_name_parse(name, &n);
    if (st != SPROUT_OK) return st;
    if (!(*out = format_name(&n, shortest))) return sp_fail(SPROUT_ERR_OUT_OF_MEMORY, "store: out of memory");
    return SPROUT_OK;
}

sprout_status sprout_store_name_full(const char *name, char **out) { return name_out(name, out, false); }
sprout_status sprout_store_name_short(const char *name, char **out) { return name_out(name, out, true); }
