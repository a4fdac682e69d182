#include "sampler/json_constraint.h"

#include <string.h>

#include "core/text_stream.h"

enum {
    J_ROOT,       /* before the object: whitespace, then '{' */
    J_VALUE,      /* a value: after ':' or ',' in an array */
    J_ARR_FIRST,  /* after '[': a value or ']' */
    J_OBJ_FIRST,  /* after '{': a key or '}' */
    J_OBJ_KEY,    /* after ',' in an object: a key */
    J_COLON,      /* after a key */
    J_AFTER,      /* after a value: ',' or the container's close */
    J_STRING,     /* sub: 0 plain, 1 after '\', 2-5 the \u digits read */
    J_NUMBER,     /* sub: one of the N_ phases */
    J_LITERAL,    /* sub: bytes of "true", "false" or "null" read */
    J_DONE,
};

enum { N_MINUS, N_ZERO, N_INT, N_DOT, N_FRAC, N_E, N_ESIGN, N_EXP };

static const char *const literals[3] = {"true", "false", "null"};

void sp_json_init(sp_json_state *st) { memset(st, 0, sizeof *st); }

bool sp_json_done(const sp_json_state *st) { return !st->failed && st->mode == J_DONE; }

static bool is_digit(char c) { return c >= '0' && c <= '9'; }
static bool is_hex(char c) { return is_digit(c) || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F'); }

static bool open_container(sp_json_state *st, bool object) {
    if (st->depth >= SP_JSON_MAX_DEPTH) return false;
    if (object) st->objects |= 1ull << st->depth;
    else st->objects &= ~(1ull << st->depth);
    st->depth++;
    st->mode = object ? J_OBJ_FIRST : J_ARR_FIRST;
    return true;
}

static bool in_object(const sp_json_state *st) { return st->depth > 0 && ((st->objects >> (st->depth - 1)) & 1); }

/* A value ended: the next byte decides in the container around it. */
static void value_done(sp_json_state *st) { st->mode = st->depth == 0 ? J_DONE : J_AFTER; }

static bool close_container(sp_json_state *st, char c) {
    if (st->depth == 0 || (c == '}') != in_object(st)) return false;
    st->depth--;
    value_done(st);
    return true;
}

/* The first byte of a value (not whitespace). */
static bool start_value(sp_json_state *st, char c) {
    if (c == '{' || c == '[') return open_container(st, c == '{');
    if (c == '"') {
        st->mode = J_STRING, st->sub = 0, st->key = false;
        return true;
    }
    if (c == '-' || is_digit(c)) {
        st->mode = J_NUMBER, st->sub = c == '-' ? N_MINUS : c == '0' ? N_ZERO : N_INT;
        return true;
    }
    for (int k = 0; k < 3; k++)
        if (c == literals[k][0]) {
            st->mode = J_LITERAL, st->sub = 1, st->literal = (uint8_t)k;
            return true;
        }
    return false;
}

static bool number_byte(sp_json_state *st, char c, bool *ended) {
    *ended = false;
    switch (st->sub) {
    case N_MINUS:
        if (!is_digit(c)) return false;
        st->sub = c == '0' ? N_ZERO : N_INT;
        return true;
    case N_ZERO:
    case N_INT:
        if (is_digit(c) && st->sub == N_INT) return true;
        if (c == '.') return st->sub = N_DOT, true;
        if (c == 'e' || c == 'E') return st->sub = N_E, true;
        break;
    case N_DOT:
        if (!is_digit(c)) return false;
        return st->sub = N_FRAC, true;
    case N_FRAC:
        if (is_digit(c)) return true;
        if (c == 'e' || c == 'E') return st->sub = N_E, true;
        break;
    case N_E:
        if (c == '+' || c == '-') return st->sub = N_ESIGN, true;
        if (is_digit(c)) return st->sub = N_EXP, true;
        return false;
    case N_ESIGN:
        if (!is_digit(c)) return false;
        return st->sub = N_EXP, true;
    case N_EXP:
        if (is_digit(c)) return true;
        break;
    }
    *ended = true; /* a complete number, and c belongs to what follows */
    return true;
}

/* The first byte of a multi-byte character: how many follow, and the
 * range of the next (no overlongs, surrogates or code points past U+10FFFF). */
static bool utf8_start(sp_json_state *st, unsigned char c) {
    st->utf8_lo = 0x80, st->utf8_hi = 0xBF;
    if (c >= 0xC2 && c <= 0xDF) st->utf8_left = 1;
    else if (c >= 0xE0 && c <= 0xEF) {
        st->utf8_left = 2;
        if (c == 0xE0) st->utf8_lo = 0xA0;
        if (c == 0xED) st->utf8_hi = 0x9F;
    } else if (c >= 0xF0 && c <= 0xF4) {
        st->utf8_left = 3;
        if (c == 0xF0) st->utf8_lo = 0x90;
        if (c == 0xF4) st->utf8_hi = 0x8F;
    } else return false;
    return true;
}

static bool feed_byte(sp_json_state *st, char c) {
    switch (st->mode) {
    case J_STRING:
        if (st->utf8_left) { /* inside a multi-byte character */
            if ((unsigned char)c < st->utf8_lo || (unsigned char)c > st->utf8_hi) return false;
            st->utf8_left--, st->utf8_lo = 0x80, st->utf8_hi = 0xBF;
            return true;
        }
        if (st->sub == 0 && (unsigned char)c >= 0x80) return utf8_start(st, (unsigned char)c);
        if (st->sub == 0) {
            if (c == '"') {
                st->mode = J_COLON;
                if (!st->key) value_done(st);
                return true;
            }
            if (c == '\\') return st->sub = 1, true;
            return (unsigned char)c >= 0x20;
        }
        if (st->sub == 1) {
            if (c == 'u') return st->sub = 2, true;
            if (!strchr("\"\\/bfnrt", c) || !c) return false;
            return st->sub = 0, true;
        }
        if (!is_hex(c)) return false;
        st->sub = st->sub == 5 ? 0 : (uint8_t)(st->sub + 1);
        return true;
    case J_LITERAL: {
        const char *lit = literals[st->literal];
        if (c != lit[st->sub]) return false;
        if (lit[++st->sub] == 0) value_done(st);
        return true;
    }
    case J_NUMBER: {
        bool ended;
        if (!number_byte(st, c, &ended)) return false;
        if (!ended) return true;
        value_done(st);
        return feed_byte(st, c);
    }
    default: break;
    }
    if (sp_json_space(c)) return ++st->ws <= SP_JSON_MAX_WHITESPACE && (c != '\n' || ++st->newlines <= 1);
    st->ws = st->newlines = 0;
    switch (st->mode) {
    case J_ROOT: return c == '{' && open_container(st, true);
    case J_VALUE: return start_value(st, c);
    case J_ARR_FIRST: return c == ']' ? close_container(st, c) : start_value(st, c);
    case J_OBJ_FIRST:
    case J_OBJ_KEY:
        if (c == '}' && st->mode == J_OBJ_FIRST) return close_container(st, c);
        if (c != '"') return false;
        st->mode = J_STRING, st->sub = 0, st->key = true;
        return true;
    case J_COLON:
        if (c != ':') return false;
        st->mode = J_VALUE;
        return true;
    case J_AFTER:
        if (c == ',') return st->mode = in_object(st) ? J_OBJ_KEY : J_VALUE, true;
        if (c == '}' || c == ']') return close_container(st, c);
        return false;
    default: return false; /* J_DONE: the object is closed */
    }
}

bool sp_json_feed(sp_json_state *st, const char *bytes, size_t n) {
    for (size_t i = 0; i < n && !st->failed; i++)
        if (!feed_byte(st, bytes[i])) st->failed = true;
    return !st->failed;
}

bool sp_json_in_string(const sp_json_state *st) { return !st->failed && st->mode == J_STRING && st->sub == 0 && st->utf8_left == 0; }

bool sp_json_state_equal(const sp_json_state *a, const sp_json_state *b) {
    const uint64_t open = a->depth >= 64 ? ~0ull : (1ull << a->depth) - 1; /* bits past the depth are stale */
    return a->depth == b->depth && ((a->objects ^ b->objects) & open) == 0 && a->mode == b->mode && a->sub == b->sub && a->ws == b->ws &&
           a->newlines == b->newlines && a->literal == b->literal && a->utf8_left == b->utf8_left && a->utf8_lo == b->utf8_lo &&
           a->utf8_hi == b->utf8_hi && a->key == b->key && a->failed == b->failed;
}

bool sp_json_plain_text(const char *s, size_t n) {
    sp_json_state st = {.mode = J_STRING};
    for (size_t i = 0; i < n; i++)
        if (s[i] == '"' || s[i] == '\\' || !feed_byte(&st, s[i])) return false;
    return st.utf8_left == 0;
}
