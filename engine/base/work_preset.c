/* work_preset — built-in work counter sets (see work_preset.h). */
#include "work_preset.h"

#include <stdio.h>
#include <string.h>
#include <threads.h>

/* vLLM: its metrics documentation and vllm/engine/metrics.py (labelled
 * model_name); SGLang: python/sglang/srt/metrics/collector.py; TGI: the
 * metrics reference of text-generation-inference (the token counts are
 * histograms: their _sum is a counter of tokens); Triton: its
 * user_guide/metrics.md (labelled model, version). One row a counter, a
 * preset's counters next to each other. */
static const struct gl_work_preset_counter counters[] = {
    {"vllm", "vllm_prompt_tokens", "tokens", "vllm:prompt_tokens_total"},
    {"vllm", "vllm_generation_tokens", "tokens", "vllm:generation_tokens_total"},
    {"vllm", "vllm_requests", "requests", "vllm:request_success_total"},
    {"sglang", "sglang_prompt_tokens", "tokens", "sglang:prompt_tokens_total"},
    {"sglang", "sglang_generation_tokens", "tokens", "sglang:generation_tokens_total"},
    {"sglang", "sglang_requests", "requests", "sglang:num_requests_total"},
    {"tgi", "tgi_input_tokens", "tokens", "tgi_request_input_length_sum"},
    {"tgi", "tgi_generated_tokens", "tokens", "tgi_request_generated_tokens_sum"},
    {"tgi", "tgi_requests", "requests", "tgi_request_success"},
    {"triton", "triton_requests", "requests", "nv_inference_request_success"},
    {"triton", "triton_inferences", "inferences", "nv_inference_count"},
};
#define NCOUNTERS (sizeof counters / sizeof *counters)

const struct gl_work_preset_counter *gl_work_preset(const char *name, size_t *n)
{
    size_t first = 0;
    while (first < NCOUNTERS && strcmp(counters[first].preset, name) != 0)
        first++;
    size_t end = first;
    while (end < NCOUNTERS && strcmp(counters[end].preset, name) == 0)
        end++;
    *n = end - first;
    return *n ? &counters[first] : NULL;
}

static char names[128];

/* names from the table, once: "vllm, sglang, ..." */
static void names_init(void)
{
    size_t len = 0;
    for (size_t i = 0; i < NCOUNTERS; i++)
        if (i == 0 || strcmp(counters[i].preset, counters[i - 1].preset) != 0) {
            int w = snprintf(names + len, sizeof names - len, "%s%s", i ? ", " : "",
                             counters[i].preset);
            if (w < 0 || (size_t)w >= sizeof names - len)
                break; /* a longer list than the buffer: cut, never overrun */
            len += (size_t)w;
        }
}

const char *gl_work_preset_names(void)
{
    static once_flag once = ONCE_FLAG_INIT;
    call_once(&once, names_init);
    return names;
}
