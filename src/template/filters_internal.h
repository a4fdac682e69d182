/* The filters that live outside filters.c, which holds the table of all
 * of them: those of sequences (filters_seq.c) and of text
 * (filters_text.c). */
#ifndef SPROUT_TEMPLATE_FILTERS_INTERNAL_H
#define SPROUT_TEMPLATE_FILTERS_INTERNAL_H

#include "template/eval_services.h"

/* value | name(args...) */
typedef bool filter_fn(interp *in, const node *at, jv value, const call_args *a, jv *out);

/* filters_seq.c */
filter_fn filter_batch, filter_dictsort, filter_groupby, filter_max, filter_min, filter_reject, filter_rejectattr, filter_select,
    filter_selectattr, filter_slice, filter_sort, filter_unique;

/* filters_text.c */
filter_fn filter_filesizeformat, filter_indent, filter_striptags, filter_truncate, filter_urlencode, filter_wordwrap;

#endif
