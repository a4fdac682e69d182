/* The web chat page's handler (webui.c), routed at / and under SP_WEBUI_PREFIX. */
#ifndef SPROUT_WEBUI_H
#define SPROUT_WEBUI_H

#include "server/server_internal.h"

#define SP_WEBUI_PREFIX "/webui/"

/* GET / (the page for a client that asks for HTML, "sprout is running" for
 * others) and GET /webui/NAME (the page's files). */
enum MHD_Result sp_handle_webui(sp_server *srv, struct MHD_Connection *c, const char *url, const char *body, size_t len);

#endif
