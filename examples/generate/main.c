/*===- main.c - a C app that generates token ids with a FLASH library ----===*\
|*                                                                            *|
|* This file is the generating example of attnc: it links the library that   *|
|* attnc_add_model(... DECODE) compiled from tiny_lm.attn, loads weights      *|
|* (converted from a FLASH-pytorch checkpoint by                              *|
|* tools/convert-flash-pytorch, or saved by `attnc run --save-weights`),      *|
|* prefills a prompt, then generates greedily one token per step and prints   *|
|* the ids. The state it keeps is the same size at every length.              *|
|*                                                                            *|
|*   generate_app WEIGHTS.safetensors PROMPT_IDS STEPS                        *|
|*   generate_app w.safetensors 3,1,4,1,5 24                                  *|
|*                                                                            *|
\*===----------------------------------------------------------------------===*/
#include "tiny_lm.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>

/* The vocabulary of tiny_lm.attn (its logits' last axis). */
#define VOCAB 50

/* Parses "3,1,4" into a new array of *count ids; NULL on bad input. */
static int32_t *parse_ids(const char *text, int64_t *count) {
  int64_t n = 1, i = 0;
  const char *c;
  int32_t *ids;
  for (c = text; *c; ++c)
    n += *c == ',';
  ids = (int32_t *)malloc(sizeof(int32_t) * (size_t)n);
  if (!ids)
    return NULL;
  for (c = text; i < n; ++i) {
    char *end;
    long id;
    errno = 0;
    id = strtol(c, &end, 10);
    if (end == c || errno || id < INT32_MIN || id > INT32_MAX ||
        (*end != ',' && *end != '\0')) {
      free(ids);
      return NULL;
    }
    ids[i] = (int32_t)id;
    c = *end ? end + 1 : end;
  }
  *count = n;
  return ids;
}

/* The largest logit's index (the first of equal ones). */
static int32_t argmax(const float *logits) {
  int32_t best = 0, v;
  for (v = 1; v < VOCAB; ++v)
    if (logits[v] > logits[best])
      best = v;
  return best;
}

int main(int argc, char **argv) {
  attn_weights *set = NULL;
  tiny_lm_weights weights;
  tiny_lm_state *state = NULL;
  float logits[VOCAB];
  int64_t count = 0, steps, k;
  int32_t *prompt, token;
  int status = 1;
  if (argc != 4) {
    fprintf(stderr, "usage: %s WEIGHTS.safetensors PROMPT_IDS STEPS\n",
            argv[0]);
    return 2;
  }
  prompt = parse_ids(argv[2], &count);
  steps = atoll(argv[3]);
  if (!prompt || steps < 1) {
    fprintf(stderr, "error: PROMPT_IDS are comma-separated ids (got '%s'), "
                    "STEPS at least 1 (got '%s')\n", argv[2], argv[3]);
    free(prompt);
    return 2;
  }
  if (attn_weights_load(argv[1], &set) != ATTN_OK ||
      tiny_lm_weights_bind(set, &weights) != ATTN_OK ||
      tiny_lm_state_new(&weights, &state) != ATTN_OK)
    goto fail;
  /* The prompt but its last id in one prefill (their logits not wanted),
     then one step per token: the last prompt id, then each generated. */
  if (count > 1) {
    attn_ids ids = {prompt, 2, {1, count - 1}};
    if (tiny_lm_prefill(state, &ids, NULL) != ATTN_OK)
      goto fail;
  }
  token = prompt[count - 1];
  printf("generated:");
  for (k = 0; k < steps; ++k) {
    if (tiny_lm_step(state, token, logits) != ATTN_OK)
      goto fail;
    token = argmax(logits);
    printf(" %d", (int)token);
  }
  printf("\nstate %lld bytes at %lld tokens\n",
         (long long)tiny_lm_state_bytes(state),
         (long long)tiny_lm_state_length(state));
  status = 0;
fail:
  if (status != 0)
    fprintf(stderr, "\nerror: %s\n", attn_error_message());
  tiny_lm_state_free(state);
  attn_weights_free(set);
  free(prompt);
  return status;
}
