#include "template/template_error.h"

#include <stdarg.h>
#include <stdio.h>

void tpl_set_error(tpl_error *err, sprout_status st, int line, int column, const char *fmt, ...) {
    if (err->status != SPROUT_OK) return;
    err->status = st;
    err->line = line;
    err->column = column;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err->message, sizeof err->message, fmt, ap);
    va_end(ap);
}
