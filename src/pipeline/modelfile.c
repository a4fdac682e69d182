/* Ollama's Modelfile parser. The text is hostile: every read is checked
 * against its end, NUL bytes are refused, and every error names its line. */
#include "pipeline/modelfile.h"

#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"

typedef struct cursor {
    const char *s;
    size_t len, pos;
    int line;
} cursor;

static bool at_end(const cursor *c) { return c->pos >= c->len; }
static char peek(const cursor *c) { return at_end(c) ? '\0' : c->s[c->pos]; }
static bool is_blank(char ch) { return ch == ' ' || ch == '\t' || ch == '\r'; }

static void skip_blanks(cursor *c) {
    while (!at_end(c) && is_blank(peek(c))) c->pos++;
}

static bool starts_with(const cursor *c, const char *lit) {
    size_t n = strlen(lit);
    return c->len - c->pos >= n && memcmp(c->s + c->pos, lit, n) == 0;
}

static char *dup_range(const char *s, size_t n) {
    char *d = malloc(n + 1);
    if (!d) return NULL;
    memcpy(d, s, n);
    d[n] = '\0';
    return d;
}

/* Grows an array of `elem`-byte items to hold one more; counts are bounded
 * by the text's length, so the doubling cannot overflow first. */
static bool grow(void **items, size_t n, size_t elem) {
    if (n & (n - 1)) return true; /* capacity is the next power of two */
    size_t cap = n ? n * 2 : 1;
    void *p = realloc(*items, cap * elem);
    if (!p) return false;
    *items = p;
    return true;
}

/* A word: the run of non-blank characters up to the end of the line. */
static size_t read_word(cursor *c, const char **start) {
    *start = c->s + c->pos;
    size_t n = 0;
    while (!at_end(c) && !is_blank(peek(c)) && peek(c) != '\n') {
        c->pos++;
        n++;
    }
    return n;
}

/* Only blanks may follow a closing quote on its line. */
static sprout_status finish_line(cursor *c, const char *what) {
    skip_blanks(c);
    if (!at_end(c) && peek(c) != '\n')
        return sp_fail(SPROUT_ERR_FORMAT, "Modelfile:%d: text after the closing quote of %s", c->line, what);
    return SPROUT_OK;
}

/* A value: """verbatim""", "escaped", or the rest of the line without its
 * trailing blanks. An empty value is an error the caller words. */
static sprout_status read_value(cursor *c, const char *what, char **out) {
    *out = NULL;
    int first_line = c->line;
    if (starts_with(c, "\"\"\"")) {
        c->pos += 3;
        size_t start = c->pos;
        while (!starts_with(c, "\"\"\"")) {
            if (at_end(c))
                return sp_fail(SPROUT_ERR_FORMAT, "Modelfile:%d: %s's \"\"\" is never closed", first_line, what);
            if (peek(c) == '\n') c->line++;
            c->pos++;
        }
        size_t end = c->pos;
        c->pos += 3;
        sprout_status st = finish_line(c, what);
        if (st != SPROUT_OK) return st;
        if (!(*out = dup_range(c->s + start, end - start))) return sp_fail(SPROUT_ERR_OUT_OF_MEMORY, "Modelfile: out of memory");
        return SPROUT_OK;
    }
    if (peek(c) == '"') {
        c->pos++;
        char *buf = malloc(c->len - c->pos + 1);
        if (!buf) return sp_fail(SPROUT_ERR_OUT_OF_MEMORY, "Modelfile: out of memory");
        size_t n = 0;
        for (;;) {
            if (at_end(c)) {
                free(buf);
                return sp_fail(SPROUT_ERR_FORMAT, "Modelfile:%d: %s's \" is never closed", first_line, what);
            }
            char ch = c->s[c->pos++];
            if (ch == '"') break;
            if (ch == '\\' && (peek(c) == '"' || peek(c) == '\\')) ch = c->s[c->pos++];
            if (ch == '\n') c->line++;
            buf[n++] = ch;
        }
        buf[n] = '\0';
        sprout_status st = finish_line(c, what);
        if (st != SPROUT_OK) {
            free(buf);
            return st;
        }
        *out = buf;
        return SPROUT_OK;
    }
    size_t start = c->pos;
    while (!at_end(c) && peek(c) != '\n') c->pos++;
    size_t end = c->pos;
    while (end > start && is_blank(c->s[end - 1])) end--;
    if (end == start) return SPROUT_OK;
    if (!(*out = dup_range(c->s + start, end - start))) return sp_fail(SPROUT_ERR_OUT_OF_MEMORY, "Modelfile: out of memory");
    return SPROUT_OK;
}

static bool word_is(const char *w, size_t n, const char *name) {
    if (strlen(name) != n) return false;
    for (size_t i = 0; i < n; i++) {
        char ch = w[i];
        if (ch >= 'a' && ch <= 'z') ch = (char)(ch - 'a' + 'A');
        if (ch != name[i]) return false;
    }
    return true;
}

static sprout_status push_string(char ***items, size_t *n, char *s) {
    if (!grow((void **)items, *n, sizeof **items)) {
        free(s);
        return sp_fail(SPROUT_ERR_OUT_OF_MEMORY, "Modelfile: out of memory");
    }
    (*items)[(*n)++] = s;
    return SPROUT_OK;
}

/* One instruction, the cursor just after its name and blanks. */
static sprout_status parse_instruction(cursor *c, sp_modelfile *mf, const char *w, size_t wn, int line,
                                       int *from_line) {
    static const char *const names[] = {"FROM", "PARAMETER", "TEMPLATE", "SYSTEM", "ADAPTER", "LICENSE", "MESSAGE"};
    const char *what = NULL;
    for (size_t i = 0; i < sizeof names / sizeof *names; i++)
        if (word_is(w, wn, names[i])) what = names[i];
    if (!what) {
        int shown = wn > 40 ? 40 : (int)wn;
        return sp_fail(SPROUT_ERR_FORMAT, "Modelfile:%d: unknown instruction '%.*s'", line, shown, w);
    }
    const char *key = NULL;
    size_t kn = 0;
    if (!strcmp(what, "PARAMETER") || !strcmp(what, "MESSAGE")) {
        kn = read_word(c, &key);
        if (kn == 0) return sp_fail(SPROUT_ERR_FORMAT, "Modelfile:%d: %s without a %s", line, what,
                                    what[0] == 'P' ? "name" : "role");
        skip_blanks(c);
    }
    char *value;
    sprout_status st = read_value(c, what, &value);
    if (st != SPROUT_OK) return st;
    if (!value) return sp_fail(SPROUT_ERR_FORMAT, "Modelfile:%d: %s without a value", line, what);
    if (!strcmp(what, "FROM")) {
        if (mf->from) {
            free(value);
            return sp_fail(SPROUT_ERR_FORMAT, "Modelfile:%d: a second FROM (the first is at line %d)", line,
                           *from_line);
        }
        mf->from = value;
        mf->from_line = line;
        *from_line = line;
    } else if (!strcmp(what, "TEMPLATE")) {
        free(mf->template_text);
        mf->template_text = value;
    } else if (!strcmp(what, "SYSTEM")) {
        free(mf->system);
        mf->system = value;
    } else if (!strcmp(what, "ADAPTER")) {
        if (!grow((void **)&mf->adapter_lines, mf->n_adapters, sizeof *mf->adapter_lines)) {
            free(value);
            return sp_fail(SPROUT_ERR_OUT_OF_MEMORY, "Modelfile: out of memory");
        }
        mf->adapter_lines[mf->n_adapters] = line;
        return push_string(&mf->adapters, &mf->n_adapters, value);
    } else if (!strcmp(what, "LICENSE")) {
        return push_string(&mf->licenses, &mf->n_licenses, value);
    } else if (!strcmp(what, "MESSAGE")) {
        static const char *const roles[] = {"system", "user", "assistant"};
        const char *role = NULL;
        for (size_t i = 0; i < 3; i++)
            if (strlen(roles[i]) == kn && !memcmp(key, roles[i], kn)) role = roles[i];
        if (!role) {
            free(value);
            int shown = kn > 40 ? 40 : (int)kn;
            return sp_fail(SPROUT_ERR_FORMAT,
                           "Modelfile:%d: MESSAGE role '%.*s' is not system, user or assistant", line, shown, key);
        }
        char *r = dup_range(role, strlen(role));
        if (!r || !grow((void **)&mf->messages, mf->n_messages, sizeof *mf->messages)) {
            free(r);
            free(value);
            return sp_fail(SPROUT_ERR_OUT_OF_MEMORY, "Modelfile: out of memory");
        }
        mf->messages[mf->n_messages++] = (sp_modelfile_message){r, value};
    } else { /* PARAMETER */
        char *name = dup_range(key, kn);
        if (!name || !grow((void **)&mf->params, mf->n_params, sizeof *mf->params)) {
            free(name);
            free(value);
            return sp_fail(SPROUT_ERR_OUT_OF_MEMORY, "Modelfile: out of memory");
        }
        mf->params[mf->n_params++] = (sp_modelfile_param){name, value, line};
    }
    return SPROUT_OK;
}

/* The stop lists' storage, so that applying needs no allocation. */
static sprout_status make_stop_storage(sp_modelfile *mf) {
    size_t n_stop = 0, n_id = 0;
    for (size_t i = 0; i < mf->n_params; i++) {
        if (!strcmp(mf->params[i].name, "stop")) n_stop++;
        if (!strcmp(mf->params[i].name, "stop_id")) n_id++;
    }
    if (n_stop && !(mf->stop_strings = calloc(n_stop, sizeof *mf->stop_strings)))
        return sp_fail(SPROUT_ERR_OUT_OF_MEMORY, "Modelfile: out of memory");
    if (n_id && !(mf->stop_token_ids = calloc(n_id, sizeof *mf->stop_token_ids)))
        return sp_fail(SPROUT_ERR_OUT_OF_MEMORY, "Modelfile: out of memory");
    return SPROUT_OK;
}

sprout_status sp_modelfile_parse(const char *text, size_t len, sp_modelfile **out) {
    if (!out) return sp_fail(SPROUT_ERR_INVALID_ARGUMENT, "Modelfile: no output pointer");
    *out = NULL;
    if (!text && len) return sp_fail(SPROUT_ERR_INVALID_ARGUMENT, "Modelfile: no text");
    cursor c = {text, len, 0, 1};
    for (size_t i = 0; i < len; i++) {
        if (text[i] == '\n') c.line++;
        if (text[i] == '\0') return sp_fail(SPROUT_ERR_FORMAT, "Modelfile:%d: a NUL byte", c.line);
    }
    int last_line = len && text[len - 1] == '\n' ? c.line - 1 : c.line; /* the last line with text */
    c.line = 1;
    sp_modelfile *mf = calloc(1, sizeof *mf);
    if (!mf) return sp_fail(SPROUT_ERR_OUT_OF_MEMORY, "Modelfile: out of memory");
    sprout_status st = SPROUT_OK;
    int from_line = 0;
    while (st == SPROUT_OK) {
        skip_blanks(&c);
        if (at_end(&c)) break;
        if (peek(&c) == '\n') {
            c.pos++;
            c.line++;
            continue;
        }
        if (peek(&c) == '#') {
            while (!at_end(&c) && peek(&c) != '\n') c.pos++;
            continue;
        }
        int line = c.line;
        const char *w;
        size_t wn = read_word(&c, &w);
        skip_blanks(&c);
        st = parse_instruction(&c, mf, w, wn, line, &from_line);
    }
    if (st == SPROUT_OK && !mf->from)
        st = sp_fail(SPROUT_ERR_FORMAT, "Modelfile:%d: no FROM instruction (one is required)", last_line);
    if (st == SPROUT_OK) st = make_stop_storage(mf);
    if (st != SPROUT_OK) {
        sp_modelfile_free(mf);
        return st;
    }
    *out = mf;
    return SPROUT_OK;
}

void sp_modelfile_free(sp_modelfile *mf) {
    if (!mf) return;
    free(mf->from);
    free(mf->template_text);
    free(mf->system);
    for (size_t i = 0; i < mf->n_adapters; i++) free(mf->adapters[i]);
    free(mf->adapters);
    free(mf->adapter_lines);
    for (size_t i = 0; i < mf->n_licenses; i++) free(mf->licenses[i]);
    free(mf->licenses);
    for (size_t i = 0; i < mf->n_messages; i++) {
        free(mf->messages[i].role);
        free(mf->messages[i].content);
    }
    free(mf->messages);
    for (size_t i = 0; i < mf->n_params; i++) {
        free(mf->params[i].name);
        free(mf->params[i].value);
    }
    free(mf->params);
    free((void *)mf->stop_strings);
    free(mf->stop_token_ids);
    free(mf);
}

/* A whole-value integer in [lo, hi]. */
static sprout_status param_int(const sp_modelfile_param *p, long long lo, long long hi, long long *v) {
    errno = 0;
    char *end;
    long long x = strtoll(p->value, &end, 10);
    if (end == p->value || *end || errno == ERANGE || x < lo || x > hi)
        return sp_fail(SPROUT_ERR_FORMAT, "Modelfile:%d: PARAMETER %s wants an integer from %lld to %lld, not '%s'",
                       p->line, p->name, lo, hi, p->value);
    *v = x;
    return SPROUT_OK;
}

/* A whole-value finite number, at least `lo`. */
static sprout_status param_float(const sp_modelfile_param *p, float lo, float *v) {
    char *end;
    float x = strtof(p->value, &end);
    if (end == p->value || *end || !isfinite(x) || x < lo)
        return sp_fail(SPROUT_ERR_FORMAT, "Modelfile:%d: PARAMETER %s wants a number of at least %g, not '%s'",
                       p->line, p->name, (double)lo, p->value);
    *v = x;
    return SPROUT_OK;
}

sprout_status sp_modelfile_apply_parameters(const sp_modelfile *mf, sprout_generation_config *cfg,
                                            sp_modelfile_runner *runner) {
    if (!mf || !cfg) return sp_fail(SPROUT_ERR_INVALID_ARGUMENT, "Modelfile: no Modelfile or config");
    /* Work on copies so that an error changes nothing. */
    sprout_generation_config c = *cfg;
    sp_modelfile_runner r = runner ? *runner : (sp_modelfile_runner){0};
    size_t n_stop = 0, n_id = 0;
    for (size_t i = 0; i < mf->n_params; i++) {
        const sp_modelfile_param *p = &mf->params[i];
        const char *n = p->name;
        sprout_status st = SPROUT_OK;
        long long iv = 0;
        if (!strcmp(n, "num_predict") || !strcmp(n, "max_new_token")) {
            if ((st = param_int(p, 0, INT32_MAX, &iv)) == SPROUT_OK) c.max_new_tokens = (int32_t)iv;
        } else if (!strcmp(n, "temperature")) {
            st = param_float(p, 0.0f, &c.temperature);
        } else if (!strcmp(n, "top_k")) {
            if ((st = param_int(p, 0, INT32_MAX, &iv)) == SPROUT_OK) c.top_k = (int32_t)iv;
        } else if (!strcmp(n, "top_p")) {
            st = param_float(p, 0.0f, &c.top_p);
        } else if (!strcmp(n, "min_p")) {
            st = param_float(p, 0.0f, &c.min_p);
        } else if (!strcmp(n, "typical_p")) {
            st = param_float(p, 0.0f, &c.typical_p);
        } else if (!strcmp(n, "repeat_penalty")) {
            st = param_float(p, 0.0f, &c.repetition_penalty);
        } else if (!strcmp(n, "repeat_last_n")) {
            if ((st = param_int(p, -1, INT32_MAX, &iv)) == SPROUT_OK) c.repeat_last_n = (int32_t)iv;
        } else if (!strcmp(n, "presence_penalty")) {
            st = param_float(p, -2.0f, &c.presence_penalty);
        } else if (!strcmp(n, "frequency_penalty")) {
            st = param_float(p, -2.0f, &c.frequency_penalty);
        } else if (!strcmp(n, "seed")) {
            if ((st = param_int(p, 0, LLONG_MAX, &iv)) == SPROUT_OK) c.seed = (uint64_t)iv;
        } else if (!strcmp(n, "stop")) {
            mf->stop_strings[n_stop++] = p->value;
        } else if (!strcmp(n, "stop_id")) {
            if ((st = param_int(p, 0, INT32_MAX, &iv)) == SPROUT_OK) mf->stop_token_ids[n_id++] = (int32_t)iv;
        } else if (!strcmp(n, "num_ctx")) {
            if ((st = param_int(p, 1, INT32_MAX, &iv)) == SPROUT_OK) r.num_ctx = (int32_t)iv;
        } else if (!strcmp(n, "num_thread")) {
            if ((st = param_int(p, 0, SPROUT_MAX_THREADS, &iv)) == SPROUT_OK) r.num_thread = (int32_t)iv;
        } else if (!strcmp(n, "num_batch")) {
            if ((st = param_int(p, 1, INT32_MAX, &iv)) == SPROUT_OK) r.num_batch = (int32_t)iv;
        } else if (!strcmp(n, "num_keep")) {
            if ((st = param_int(p, -1, INT32_MAX, &iv)) == SPROUT_OK) r.num_keep = (int32_t)iv;
        } else {
            int shown = strlen(n) > 40 ? 40 : (int)strlen(n);
            st = sp_fail(SPROUT_ERR_FORMAT, "Modelfile:%d: unknown PARAMETER '%.*s'", p->line, shown, n);
        }
        if (st != SPROUT_OK) return st;
    }
    if (n_stop) {
        c.stop_strings = mf->stop_strings;
        c.n_stop_strings = n_stop;
    }
    if (n_id) {
        c.stop_token_ids = mf->stop_token_ids;
        c.n_stop_token_ids = n_id;
    }
    *cfg = c;
    if (runner) *runner = r;
    return SPROUT_OK;
}
