/* The sprout subcommands. Each takes argv starting at its own name and
 * returns the process exit status. They use only the public API. */
#ifndef SPROUT_CLI_COMMANDS_H
#define SPROUT_CLI_COMMANDS_H

int cmd_info(int argc, char **argv);
int cmd_tokenize(int argc, char **argv);
int cmd_template(int argc, char **argv);
int cmd_run(int argc, char **argv);
int cmd_chat(int argc, char **argv);
int cmd_quantize(int argc, char **argv);
int cmd_export_lora(int argc, char **argv);
int cmd_bench(int argc, char **argv);
int cmd_serve(int argc, char **argv);
int cmd_embed(int argc, char **argv);
int cmd_create(int argc, char **argv);
int cmd_list(int argc, char **argv);
int cmd_show(int argc, char **argv);
int cmd_cp(int argc, char **argv);
int cmd_rm(int argc, char **argv);
int cmd_ps(int argc, char **argv);
int cmd_stop(int argc, char **argv);

#endif
