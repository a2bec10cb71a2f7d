/* work_preset — built-in work counter sets (see work_preset.h). */
#include "work_preset.h"

#include <string.h>

/* vLLM: its metrics documentation and vllm/engine/metrics.py (labelled
 * model_name); SGLang: python/sglang/srt/metrics/collector.py; TGI: the
 * metrics reference of text-generation-inference (the token counts are
 * histograms: their _sum is a counter of tokens); Triton: its
 * user_guide/metrics.md (labelled model, version). */
static const struct gl_work_preset_counter vllm[] = {
    {"vllm_prompt_tokens", "tokens", "vllm:prompt_tokens_total"},
    {"vllm_generation_tokens", "tokens", "vllm:generation_tokens_total"},
    {"vllm_requests", "requests", "vllm:request_success_total"},
};
static const struct gl_work_preset_counter sglang[] = {
    {"sglang_prompt_tokens", "tokens", "sglang:prompt_tokens_total"},
    {"sglang_generation_tokens", "tokens", "sglang:generation_tokens_total"},
    {"sglang_requests", "requests", "sglang:num_requests_total"},
};
static const struct gl_work_preset_counter tgi[] = {
    {"tgi_input_tokens", "tokens", "tgi_request_input_length_sum"},
    {"tgi_generated_tokens", "tokens", "tgi_request_generated_tokens_sum"},
    {"tgi_requests", "requests", "tgi_request_success"},
};
static const struct gl_work_preset_counter triton[] = {
    {"triton_requests", "requests", "nv_inference_request_success"},
    {"triton_inferences", "inferences", "nv_inference_count"},
};

static const struct {
    const char *name;
    const struct gl_work_preset_counter *c;
    size_t n;
} presets[] = {
    {"vllm", vllm, sizeof vllm / sizeof *vllm},
    {"sglang", sglang, sizeof sglang / sizeof *sglang},
    {"tgi", tgi, sizeof tgi / sizeof *tgi},
    {"triton", triton, sizeof triton / sizeof *triton},
};

const struct gl_work_preset_counter *gl_work_preset(const char *name, size_t *n)
{
    for (size_t i = 0; i < sizeof presets / sizeof *presets; i++)
        if (strcmp(presets[i].name, name) == 0) {
            *n = presets[i].n;
            return presets[i].c;
        }
    *n = 0;
    return NULL;
}

const char *gl_work_preset_names(void) { return "vllm, sglang, tgi, triton"; }
