/* sprout list, cp and rm: the store's names, as Ollama's verbs show and
 * change them. */
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "commands.h"
#include "model_ref.h"
#include "options.h"
#include "sprout.h"

/* Ollama's format.HumanBytes: powers of 1000. */
static void human_bytes(uint64_t n, char *out, size_t cap) {
    static const char *const units[] = {"KB", "MB", "GB", "TB"};
    if (n < 1000) {
        snprintf(out, cap, "%llu B", (unsigned long long)n);
        return;
    }
    double v = (double)n / 1000;
    size_t u = 0;
    for (; v >= 1000 && u < 3; u++) v /= 1000;
    snprintf(out, cap, v < 10 ? "%.1f %s" : "%.0f %s", v, units[u]);
}

/* Ollama's format.HumanTime for the past. */
static void human_time(int64_t when, char *out, size_t cap) {
    int64_t d = (int64_t)time(NULL) - when;
    if (d < 1) snprintf(out, cap, "Less than a second ago");
    else if (d < 60) snprintf(out, cap, "%lld second%s ago", (long long)d, d == 1 ? "" : "s");
    else if (d < 120) snprintf(out, cap, "About a minute ago");
    else if (d < 3600) snprintf(out, cap, "%lld minutes ago", (long long)(d / 60));
    else if (d < 7200) snprintf(out, cap, "About an hour ago");
    else if (d < 86400) snprintf(out, cap, "%lld hours ago", (long long)(d / 3600));
    else if (d < 2 * 86400) snprintf(out, cap, "1 day ago");
    else if (d < 14 * 86400) snprintf(out, cap, "%lld days ago", (long long)(d / 86400));
    else if (d < 60 * 86400) snprintf(out, cap, "%lld weeks ago", (long long)(d / (7 * 86400)));
    else if (d < 730 * 86400) snprintf(out, cap, "%lld months ago", (long long)(d / (30 * 86400)));
    else snprintf(out, cap, "%lld years ago", (long long)(d / (365 * 86400)));
}

static const cli_command list_command = {
    .name = "list",
    .usage = "list",
    .about = "The store's models and Ollama's (read only), as `ollama list` shows them.\n",
    .shared = CLI_SHARED_STORE,
};

int cmd_list(int argc, char **argv) {
    cli_common o;
    const int status = cli_parse(&list_command, &o, NULL, argc, argv);
    if (status != CLI_CONTINUE) return status;
    sprout_store *s = cli_store_open("list", o.models_dir);
    sprout_store_entry *e = NULL;
    size_t n = 0;
    if (!s || sprout_store_list(s, &e, &n) != SPROUT_OK) {
        if (s) fprintf(stderr, "sprout list: %s\n", sprout_last_error());
        sprout_store_free(s);
        return 1;
    }
    int width = 4;
    for (size_t i = 0; i < n; i++)
        if ((int)strlen(e[i].name) > width) width = (int)strlen(e[i].name);
    printf("%-*s    %-12s    %-8s    %s\n", width, "NAME", "ID", "SIZE", "MODIFIED");
    for (size_t i = 0; i < n; i++) {
        char size[32], when[48];
        human_bytes(e[i].size, size, sizeof size);
        human_time(e[i].modified, when, sizeof when);
        printf("%-*s    %-12.12s    %-8s    %s\n", width, e[i].name, e[i].digest + 7, size, when);
    }
    sprout_store_entries_free(e, n);
    sprout_store_free(s);
    return fflush(stdout) == 0 ? 0 : 1;
}

static const cli_command cp_command = {
    .name = "cp",
    .usage = "cp SOURCE DESTINATION",
    .about = "A new name for a model's layers (nothing is copied but the manifest).\n",
    .shared = CLI_SHARED_STORE,
    .max_args = 2,
};

int cmd_cp(int argc, char **argv) {
    cli_common o;
    const int status = cli_parse(&cp_command, &o, NULL, argc, argv);
    if (status != CLI_CONTINUE) return status;
    if (o.n_args != 2) return cli_usage_error(&cp_command, "name the source and the destination");
    sprout_store *s = cli_store_open("cp", o.models_dir);
    sprout_status st = s ? sprout_store_copy(s, o.args[0], o.args[1]) : SPROUT_ERR_IO;
    if (st == SPROUT_OK) printf("copied '%s' to '%s'\n", o.args[0], o.args[1]);
    else if (s) fprintf(stderr, "sprout cp: %s\n", sprout_last_error());
    sprout_store_free(s);
    return st == SPROUT_OK ? 0 : 1;
}

static const cli_command rm_command = {
    .name = "rm",
    .usage = "rm NAME...",
    .about = "Deletes the names, and the blobs no other model uses (never a referenced file).\n",
    .shared = CLI_SHARED_STORE,
    .max_args = CLI_MAX_ARGS,
};

int cmd_rm(int argc, char **argv) {
    cli_common o;
    const int status = cli_parse(&rm_command, &o, NULL, argc, argv);
    if (status != CLI_CONTINUE) return status;
    if (o.n_args < 1) return cli_usage_error(&rm_command, "name a model to delete");
    sprout_store *s = cli_store_open("rm", o.models_dir);
    if (!s) return 1;
    int rc = 0;
    for (int i = 0; i < o.n_args; i++) {
        if (sprout_store_remove(s, o.args[i]) == SPROUT_OK) {
            printf("deleted '%s'\n", o.args[i]);
        } else {
            fprintf(stderr, "sprout rm: %s\n", sprout_last_error());
            rc = 1;
        }
    }
    sprout_store_free(s);
    return rc;
}
