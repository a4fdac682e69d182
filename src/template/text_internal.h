/* Python's string operations for the built-in library, on UTF-8 text:
 * code points (unicode.c), the str methods that filters share (text.c)
 * and printf-style formatting (format.c). */
#ifndef SPROUT_TEMPLATE_TEXT_INTERNAL_H
#define SPROUT_TEMPLATE_TEXT_INTERNAL_H

#include "template/eval_services.h"

/* --- code points (unicode.c) ------------------------------------------------------------ */

/* The code point at s and its length in *cl; an invalid byte is one
 * character of its own value. */
int32_t tpl_decode(const char *s, size_t n, size_t *cl);
/* Characters of a string as tpl_decode steps through them: an invalid
 * byte counts as one, so iteration and length agree on any bytes. */
size_t tpl_char_count(const char *s, size_t n);
/* The bytes of the first `chars` characters of s (n bytes long), counted
 * as tpl_char_count counts them. */
size_t tpl_char_prefix_bytes(const char *s, size_t n, size_t chars);
void tpl_put_cp(jbuf *b, int32_t cp);
/* Python's str.isspace for one code point. */
bool tpl_isspace(int32_t c);

/* --- str methods (text.c) --------------------------------------------------------------- */

typedef enum { CASE_UPPER, CASE_LOWER, CASE_TITLE, CASE_CAPITALIZE, CASE_SWAP } case_mode;

bool str_change_case(interp *in, const node *at, const jstr *s, case_mode mode, jv *out);
/* str.strip/lstrip/rstrip: whitespace, or the characters of `chars`. */
bool str_strip(interp *in, const node *at, const jstr *s, const jstr *chars, bool left, bool right, jv *out);
bool str_replace(interp *in, const node *at, const jstr *s, const jstr *old, const jstr *new_, int64_t count, jv *out);
/* str.split and str.rsplit: at sep, or at runs of whitespace when sep is NULL. */
bool str_split(interp *in, const node *at, const jstr *s, const jstr *sep, int64_t maxsplit, jv *out);
bool str_rsplit(interp *in, const node *at, const jstr *s, const jstr *sep, int64_t maxsplit, jv *out);
bool str_split_lines(interp *in, const node *at, const jstr *s, bool keepends, jv *out);
/* str.center ('c'), ljust ('l') and rjust ('r'); fill NULL is a space. */
bool str_justify(interp *in, const node *at, const jstr *s, int64_t width, const jstr *fill, char how, jv *out);
/* sep.join(str(item) for item in seq); sep NULL joins with nothing. */
bool str_join(interp *in, const node *at, jv seq, const jstr *sep, jv *out);
/* markupsafe's escape: & < > ' " as entities. */
bool escape_html(interp *in, const node *at, jv v, jv *out);

/* --- formatting (format.c) ----------------------------------------------------------------- */

/* fmt % args, Python's printf-style formatting (the `%` operator on a
 * string, and the `format` filter). */
bool percent_format(interp *in, const node *at, const jstr *fmt, const jv *args, size_t n_args, jv *out);

#endif
