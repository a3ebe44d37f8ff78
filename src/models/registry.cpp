#include "models/registry.h"

#include "core/error.h"
#include "models/config.h"

namespace attnlens::models {

std::unique_ptr<Model> build_from_gguf(const nlohmann::json& meta, const TensorMap& tensors, const BuildOptions& o) {
  const std::string arch = ConfigReader(meta, o.source).string("general.architecture");
  if (arch == "llama") return build_llama_gguf(meta, tensors, o);
  if (arch == "qwen2" || arch == "qwen3") return build_qwen_gguf(arch, meta, tensors, o);
  if (arch == "gemma" || arch == "gemma2" || arch == "gemma3") return build_gemma_gguf(arch, meta, tensors, o);
  if (arch == "phi3") return build_phi3_gguf(meta, tensors, o);
  if (arch == "gptneox") return build_gptneox_gguf(meta, tensors, o);
  if (arch == "gpt2") return build_gpt2_gguf(meta, tensors, o);
  if (arch == "t5") return build_t5_gguf(meta, tensors, o);
  if (arch == "bert") return build_bert_gguf(meta, tensors, o);
  fail(o.source, ": unsupported architecture \"", arch,
       "\" (supported in GGUF: llama, qwen2, qwen3, gemma, gemma2, gemma3, phi3, gptneox, gpt2, t5, bert)");
}

std::unique_ptr<Model> build_from_hf_config(const nlohmann::json& config, const TensorMap& tensors, const BuildOptions& o) {
  AL_CHECK(config.is_object(), o.source, ": config.json must be a JSON object");
  ConfigReader r(config, o.source);
  std::string arch;
  if (r.has("architectures") && config.at("architectures").is_array() && !config.at("architectures").empty() &&
      config.at("architectures")[0].is_string())
    arch = config.at("architectures")[0].get<std::string>();
  const std::string type = r.string("model_type", "");
  auto is = [&](const char* a, const char* t) { return arch == a || (arch.empty() && type == t); };
  if (is("LlamaForCausalLM", "llama") || is("MistralForCausalLM", "mistral")) return build_llama_hf(config, tensors, o);
  if (is("Qwen2ForCausalLM", "qwen2") || is("Qwen3ForCausalLM", "qwen3")) return build_qwen_hf(config, tensors, o);
  if (is("GemmaForCausalLM", "gemma") || is("Gemma2ForCausalLM", "gemma2") || is("Gemma3ForCausalLM", "gemma3_text"))
    return build_gemma_hf(config, tensors, o);
  if (is("Phi3ForCausalLM", "phi3")) return build_phi3_hf(config, tensors, o);
  if (is("GPTNeoXForCausalLM", "gpt_neox")) return build_gptneox_hf(config, tensors, o);
  if (arch == "GPT2LMHeadModel" || arch == "GPT2Model" || (arch.empty() && type == "gpt2"))
    return build_gpt2_hf(config, tensors, o);
  if (arch == "BertModel" || arch == "BertForMaskedLM" || arch == "BertForPreTraining" || (arch.empty() && type == "bert"))
    return build_bert_hf(config, tensors, o);
  if (arch == "RobertaModel" || arch == "RobertaForMaskedLM" || arch == "XLMRobertaModel" || arch == "XLMRobertaForMaskedLM" ||
      (arch.empty() && (type == "roberta" || type == "xlm-roberta")))
    return build_encoder_hf("roberta", config, tensors, o);
  if (arch == "DistilBertModel" || arch == "DistilBertForMaskedLM" || (arch.empty() && type == "distilbert"))
    return build_encoder_hf("distilbert", config, tensors, o);
  if (arch == "AlbertModel" || arch == "AlbertForMaskedLM" || arch == "AlbertForPreTraining" || (arch.empty() && type == "albert"))
    return build_encoder_hf("albert", config, tensors, o);
  if (arch == "MPNetModel" || arch == "MPNetForMaskedLM" || (arch.empty() && type == "mpnet"))
    return build_encoder_hf("mpnet", config, tensors, o);
  if (arch == "AttnLensSeq2Seq" || type == "attnlens-seq2seq") return build_seq2seq_hf(config, tensors, o);
  if (arch == "T5ForConditionalGeneration" || arch == "T5WithLMHeadModel" || arch == "MT5ForConditionalGeneration" ||
      arch == "UMT5ForConditionalGeneration" || (arch.empty() && (type == "t5" || type == "mt5" || type == "umt5")))
    return build_t5_hf(config, tensors, o);
  if (arch == "BartForConditionalGeneration" || (arch.empty() && type == "bart")) return build_bart_hf(config, tensors, o);
  if (arch == "MarianMTModel" || (arch.empty() && type == "marian")) return build_marian_hf(config, tensors, o);
  fail(o.source, ": unsupported architecture \"", arch.empty() ? type : arch,
       "\" (supported: LlamaForCausalLM, MistralForCausalLM, Qwen2ForCausalLM, Qwen3ForCausalLM, GemmaForCausalLM, ",
       "Gemma2ForCausalLM, Gemma3ForCausalLM, Phi3ForCausalLM, GPTNeoXForCausalLM, GPT2LMHeadModel, BertModel, ",
       "BertForMaskedLM, RobertaModel, RobertaForMaskedLM, XLMRobertaModel, XLMRobertaForMaskedLM, DistilBertModel, ",
       "DistilBertForMaskedLM, AlbertModel, AlbertForMaskedLM, MPNetModel, MPNetForMaskedLM, T5ForConditionalGeneration, ",
       "MT5ForConditionalGeneration, UMT5ForConditionalGeneration, BartForConditionalGeneration, MarianMTModel, ",
       "AttnLensSeq2Seq)");
}

}  // namespace attnlens::models
