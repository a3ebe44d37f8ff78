// detect_file_kind: classify a file by its content (see model_file.h for the rules).
#include <cmath>
#include <cstring>
#include <string_view>

#include "core/json.h"
#include "core/limits.h"
#include "formats/internal.h"
#include "formats/model_file.h"
#include "formats/sentencepiece_model.h"

namespace attnlens {
namespace {

bool is_gguf(const Bytes& f) { return f.size >= 4 && std::memcmp(f.data, "GGUF", 4) == 0; }

bool is_safetensors(const Bytes& f) {
  if (f.size < 9) return false;
  uint64_t n;
  std::memcpy(&n, f.data, 8);
  return n >= 1 && n <= f.size - 8 && f.data[8] == '{';
}

bool is_llama2c(const Bytes& f) {
  if (f.size < formats_internal::kLlama2cHeaderBytes) return false;
  formats_internal::Llama2cConfig c;
  return formats_internal::llama2c_check(f.data, f.size, &c).empty();
}

// int32 max_token_length, then {f32 score, i32 len, len bytes} records ending exactly at the end.
bool is_llama_tokenizer(const Bytes& f) {
  constexpr int32_t kMaxPlausibleTokenLength = 1024;
  if (f.size < 4 + 8) return false;
  int32_t max_len;
  std::memcpy(&max_len, f.data, 4);
  if (max_len < 1 || max_len > kMaxPlausibleTokenLength) return false;
  size_t pos = 4;
  while (pos < f.size) {
    if (f.size - pos < 8) return false;
    float score;
    int32_t len;
    std::memcpy(&score, f.data + pos, 4);
    std::memcpy(&len, f.data + pos + 4, 4);
    if (!std::isfinite(score) || len < 0 || len > max_len) return false;
    pos += 8;
    if (f.size - pos < size_t(len)) return false;
    pos += size_t(len);
  }
  return true;
}

bool starts_with_brace(const Bytes& f) {
  for (size_t i = 0; i < f.size; ++i) {
    uint8_t c = f.data[i];
    if (c == ' ' || c == '\t' || c == '\n' || c == '\r') continue;
    return c == '{' || c == '[';  // a JSON object, or a list (sentence-transformers' modules.json)
  }
  return false;
}

bool is_safetensors_index(const Bytes& f) {
  const char* text = reinterpret_cast<const char*>(f.data);
  // The name without its opening quote: string_view::find stops at each occurrence of the first
  // character, and a 9 MB tokenizer.json has a '"' every few bytes but few 'w's.
  if (std::string_view(text, f.size).find("weight_map\"") == std::string_view::npos) return false;
  // Too deep to be an index: a plain JSON file, whose reader then says what is wrong with it.
  if (json_depth_exceeds(text, text + f.size, limits::kMaxJsonDepth)) return false;
  nlohmann::json j;
  if (!parse_json_dom(text, text + f.size, j, /*allow_exceptions=*/false) || !j.is_object()) return false;  // not JSON / not an object
  auto wm = j.find("weight_map");
  return wm != j.end() && wm->is_object();
}

}  // namespace

const char* file_kind_name(FileKind k) {
  switch (k) {
    case FileKind::Llama2c: return "llama2c";
    case FileKind::LlamaTokenizerBin: return "llama2c-tokenizer";
    case FileKind::Gguf: return "gguf";
    case FileKind::Safetensors: return "safetensors";
    case FileKind::SafetensorsIndex: return "safetensors-index";
    case FileKind::Json: return "json";
    case FileKind::SentencePieceModel: return "sentencepiece";
    case FileKind::Unknown: return "unknown";
  }
  return "?";
}

FileKind detect_file_kind(const Bytes& f) {
  if (!f.data || f.size == 0) return FileKind::Unknown;
  if (is_gguf(f)) return FileKind::Gguf;
  if (is_safetensors(f)) return FileKind::Safetensors;
  // Before JSON: a checkpoint with dim=123 starts with the byte '{', but its exact size is decisive.
  if (is_llama2c(f)) return FileKind::Llama2c;
  if (is_llama_tokenizer(f)) return FileKind::LlamaTokenizerBin;
  if (starts_with_brace(f)) return is_safetensors_index(f) ? FileKind::SafetensorsIndex : FileKind::Json;
  if (looks_like_sentencepiece_model(f)) return FileKind::SentencePieceModel;
  return FileKind::Unknown;
}

}  // namespace attnlens
