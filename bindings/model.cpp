// ModelHandle: a loaded model with its tokenizer.
#include <emscripten/bind.h>

#include "bindings/handles.h"
#include "kernels/kernels.h"

namespace attnlens::bindings {

using namespace emscripten;

ModelHandle::~ModelHandle() {
  m_.reset();
  kernels::release_scratch();  // every thread's, sized for the largest model so far
}

ModelHandle::ModelHandle(FileSet& files, const std::string& quantize) {
  guarded([&] {
    runtime::LoadOptions o;
    o.format = models::parse_weight_format(quantize);
    m_ = runtime::load_model(files.take(), o);
    return 0;
  });
}

val ModelHandle::info(const SessionHandle& session) const {
  return guarded([&] {
    const models::ModelInfo& i = m_->model().info();
    val o = val::object();
    o.set("architecture", i.architecture);
    o.set("kind", std::string(models::model_kind_name(i.kind)));
    o.set("format", m_->format());
    o.set("params", double(i.n_params));
    o.set("dModel", i.d_model);
    o.set("layers", i.n_layers);
    o.set("encoderLayers", i.n_encoder_layers);
    o.set("heads", i.n_heads);
    o.set("kvHeads", i.n_kv_heads);
    o.set("headDim", i.head_dim);
    o.set("dFF", i.d_ff);
    o.set("vocabSize", i.vocab_size);
    o.set("sourceVocabSize", i.source_vocab_size);
    o.set("contextLength", i.context_length);
    o.set("positions", i.positions);
    o.set("weightDtype", i.weight_dtype);
    val types = val::array();
    for (const models::ModelInfo::TypeTotals& t : i.weight_types) {
      val e = val::object();
      e.set("dtype", t.dtype);
      e.set("tensors", t.tensors);
      e.set("params", double(t.params));
      e.set("bytes", double(t.bytes));
      types.call<void>("push", e);
    }
    o.set("weightTypes", types);
    o.set("weightBytes", double(i.weight_bytes));
    o.set("fileBytes", double(m_->file_bytes()));
    o.set("ownedBytes", double(i.owned_bytes));
    // The KV cache grows with use (nn/kv_cache.h): the card gives what a full context costs, so
    // memoryBytes is what the model takes at most (scratch buffers aside: they follow the passes
    // run; memory() has the live figures).
    const models::Session& s = session.session();
    const double kv_full = double(s.cache.capacity_bytes());
    o.set("kvCacheBytes", kv_full);
    o.set("kvCache", std::string(nn::kv_type_name(s.cache.type())));
    o.set("memoryBytes", double(m_->weight_memory_bytes()) + kv_full);
    o.set("threads", session.threads());
    val files = val::array();
    for (const runtime::FilePtr& f : m_->files()) {
      val e = val::object();
      e.set("name", f->name);
      e.set("bytes", double(f->bytes.size()));
      files.call<void>("push", e);
    }
    o.set("files", files);
    if (const Tokenizer* t = m_->tokenizer())
      o.set("tokenizer", tokenizer_card(*t, m_->tokenizer_config(), m_->prompt_format().special));
    else
      o.set("tokenizer", val::null());
    // Marian's target.spm: the decoder's own tokenizer (its configuration files are the source's).
    if (const Tokenizer* t = m_->has_separate_target_tokenizer() ? m_->output_tokenizer() : nullptr) {
      generate::SpecialTokenFlags own;
      own.bos = t->bos_id();
      own.eos = t->eos_id();
      o.set("targetTokenizer", tokenizer_card(*t, runtime::TokenizerConfig{}, own));
    }
    else
      o.set("targetTokenizer", val::null());
    return o;
  });
}

val ModelHandle::prompt_format() const {
  return guarded([&] {
    const generate::PromptFormat& p = m_->prompt_format();
    val o = val::object();
    o.set("addSpecial", p.add_special);
    o.set("emptyPromptToken", p.empty_prompt_token);
    o.set("stopTokens", to_array(p.stop_tokens));
    o.set("decoderStartToken", p.decoder_start_token);
    o.set("sourceSuffixEos", p.source_suffix_eos);
    o.set("eosToken", p.eos_token);
    o.set("chatTemplates", chat_templates(m_->tokenizer_config()));
    o.set("generation", json_to_val(m_->generation_defaults()));
    // Encoder-only models: the masked-LM placeholder token and how sentence embeddings are pooled.
    const Tokenizer* t = m_->tokenizer();
    int mask = -1;
    if (t) mask = t->token_id("[MASK]") >= 0 ? t->token_id("[MASK]") : t->token_id("<mask>");
    o.set("maskToken", mask);
    const runtime::EmbeddingConfig& e = m_->embedding();
    val emb = val::object();
    emb.set("pooling", std::string(models::pooling_name(e.pooling)));
    emb.set("normalize", e.normalize);
    emb.set("maxLength", e.max_length > 0 ? e.max_length : m_->model().info().context_length);
    emb.set("from", e.from);
    o.set("embedding", emb);
    return o;
  });
}

val ModelHandle::tokenize(const val& text, bool add_special, bool target) const {
  return guarded([&] {
    // A target tokenizer of its own adds its own special tokens (MarianTokenizer's </s>): the
    // configured add_bos/add_eos are the source tokenizer's.
    const bool own = target && m_->has_separate_target_tokenizer();
    const generate::SpecialTokenFlags flags = own ? generate::SpecialTokenFlags{} : m_->prompt_format().special;
    return to_int32_array(generate::encode_text(side(target), flags, utf8(text, "text"), add_special));
  });
}

val ModelHandle::encode_prompt(const val& text) const {
  return guarded([&] {
    return to_int32_array(generate::encode_prompt(m_->require_tokenizer(), m_->prompt_format(), utf8(text, "text")));
  });
}

val ModelHandle::pieces(const val& ids, bool target) const {
  return guarded([&] {
    const Tokenizer& t = side(target);
    val out = val::array();
    for (int id : to_ints(ids, "ids")) out.call<void>("push", val(t.piece(id)));
    return out;
  });
}

val ModelHandle::special(const val& ids, bool target) const {
  return guarded([&] {
    const Tokenizer& t = side(target);
    val out = val::array();
    for (int id : to_ints(ids, "ids")) out.call<void>("push", val(t.is_special(id)));
    return out;
  });
}

std::string ModelHandle::detokenize(const val& ids, bool target) const {
  return guarded([&] { return side(target).decode(to_ints(ids, "ids")); });
}

SessionHandle* ModelHandle::new_session(int capacity, const std::string& kv_cache) const {
  // Nothing big is allocated here: the KV cache grows with use (nn/kv_cache.h reserve()).
  return guarded([&] { return new SessionHandle(m_, capacity, nn::parse_kv_type(kv_cache)); });
}

EMSCRIPTEN_BINDINGS(attnlens_model) {
  class_<ModelHandle>("Model")
      .constructor<FileSet&, const std::string&>()
      .function("info", &ModelHandle::info)
      .function("promptFormat", &ModelHandle::prompt_format)
      .function("hasTokenizer", &ModelHandle::has_tokenizer)
      .function("tokenize", &ModelHandle::tokenize)
      .function("encodePrompt", &ModelHandle::encode_prompt)
      .function("pieces", &ModelHandle::pieces)
      .function("special", &ModelHandle::special)
      .function("detokenize", &ModelHandle::detokenize)
      .function("newSession", &ModelHandle::new_session, allow_raw_pointers());
}

}  // namespace attnlens::bindings
