/* A template error with its position, shared by the Jinja and Go dialects. */
#ifndef SPROUT_TEMPLATE_ERROR_H
#define SPROUT_TEMPLATE_ERROR_H

#include <stdbool.h>

#include "core/error.h"
#include "sprout.h"

typedef struct tpl_error {
    sprout_status status;
    int line, column; /* 1-based; 0 when unknown */
    bool raised;      /* raise_exception(): message is the template's own text */
    char message[512];
} tpl_error;

/* Records an error at line:column; the first wins (later ones are its
 * consequences). */
void tpl_set_error(tpl_error *err, sprout_status st, int line, int column, const char *fmt, ...) SP_PRINTF(5, 6);

#endif
