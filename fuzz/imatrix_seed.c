/* Writes fuzz_imatrix's GGUF seed: llama-imatrix's file, from the JSON
 * tests/data/quant_iq keeps (the repository holds no GGUF files). */
#include <stdbool.h>
#include <stdio.h>

#include "imatrix_json.h"

int main(int argc, char **argv) {
    if (argc != 3) {
        fprintf(stderr, "usage: imatrix_seed NAME.imatrix.json OUT.gguf\n");
        return 2;
    }
    return imatrix_json_to_gguf(argv[1], argv[2]) ? 0 : 1;
}
