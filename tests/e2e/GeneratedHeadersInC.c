/*===- GeneratedHeadersInC.c - the generated headers compile as C --------===*\
|*                                                                            *|
|* The headers attnc compile writes are C99 as well as C++: this file         *|
|* includes the decoding libraries' (a program, ids, a key/value cache) in a  *|
|* C translation unit of e2e-aot-tests, and AotDecodeTest calls its one       *|
|* function, which uses each state API.                                       *|
|*                                                                            *|
\*===----------------------------------------------------------------------===*/
#include "decode_lm.h"
#include "decode_mhsa.h"
#include "repeated.h"

/* 1 when each state API answers NULL as its header says. */
int attnc_headers_compile_as_c(void) {
  return decode_lm_state_length(NULL) == 0 &&
         decode_mhsa_state_bytes(NULL) == 0 &&
         repeated_state_length(NULL) == 0 &&
         decode_mhsa_step(NULL, 1, NULL) == ATTN_ERROR_ARGUMENT;
}
