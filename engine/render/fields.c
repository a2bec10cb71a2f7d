/* fields — JSON members and Markdown cells of a row's text (fields.h). */
#include "fields.h"

#include "util.h"

void gl_json_strings(cJSON *o, const char *const (*kv)[2], size_t n)
{
    for (size_t i = 0; i < n; i++)
        cJSON_AddStringToObject(o, kv[i][0], kv[i][1]);
}

void gl_md_parts(FILE *out, const char *seps, const char *const *parts, size_t n)
{
    fputs("| ", out);
    for (size_t i = 0; i < n; i++) {
        if (i)
            fputs(seps[i - 1] == '/' ? "/" : " | ", out);
        gl_md_cell(out, parts[i]);
    }
}
