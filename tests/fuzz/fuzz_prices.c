/*
 * fuzz_prices — libFuzzer target of the price CSV reader (engine/base/price.c).
 *
 * Input: the text of a price table CSV (read from a memfd path, as
 * gl_prices_load reads a path), billed in USD like every example. A table
 * that loads is used as invoicing uses it: the overlap check for several
 * models, lookups at each row's edges and the price per GB-hour at several
 * measured capacities (fuzz_use_prices).
 */
#include <string.h>

#include "fuzz.h"
#include "price.h"
#include "util.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct gl_price_table *t = NULL;
    struct gl_error err;
    memset(&err, 0, sizeof err);
    if (gl_prices_load(fuzz_input_path(data, size), "USD", &t, &err) != GL_OK) {
        gl_log(GL_LOG_INFO, "fuzz: rejected: %s", err.msg);
        FUZZ_CHECK(t == NULL && err.msg[0] && memchr(err.msg, '\0', sizeof err.msg));
        return 0;
    }
    fuzz_use_prices(t);
    gl_prices_free(t);
    return 0;
}
