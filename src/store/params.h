/* A Modelfile's PARAMETER lines as Ollama's params layer holds them (a JSON
 * object: numbers as numbers, stop as an array) and back, so that stored
 * parameters are applied by the Modelfile parser's one piece of code. */
#ifndef SPROUT_STORE_PARAMS_H
#define SPROUT_STORE_PARAMS_H

#include "pipeline/modelfile.h"
#include "sprout.h"

/* Checks the PARAMETER lines (errors name the line) and writes them as the
 * params layer's JSON text (malloc'd; "{}" when none). Ollama's options
 * sprout has no use for (num_gpu, mirostat, ...) are kept but not checked. */
sprout_status sp_params_to_json(const sp_modelfile *mf, char **json);
/* The MESSAGE lines as [{"role","content"}] (malloc'd). */
sprout_status sp_messages_to_json(const sp_modelfile *mf, char **json);
/* A Modelfile holding only the params JSON's PARAMETER lines (a stand-in
 * FROM), parsed, for sp_modelfile_apply_parameters. */
sprout_status sp_params_from_json(const char *json, sp_modelfile **out);
/* The messages layer ([{"role","content"}]) back as a parsed Modelfile's
 * MESSAGE lines (a stand-in FROM). */
sprout_status sp_messages_from_json(const char *json, sp_modelfile **out);
/* The PARAMETER lines of the params JSON, as Modelfile text (malloc'd). */
sprout_status sp_params_modelfile_lines(const char *json, char **text);

#endif
