// SentencePiece's precompiled charsmap, read the way sentencepiece's normalizer.cc reads it
// (DecodePrecompiledCharsMap, NormalizePrefix) and walked the way darts-clone's
// DoubleArray::commonPrefixSearch walks its units. Every array access is bounds-checked: a broken
// charsmap throws at load (header) or stops matching (a unit or string offset out of range).
#include <cstring>

#include "core/error.h"
#include "tokenizers/normalizers.h"

namespace attnlens::tok {

namespace {
// A darts-clone unit: bit 8 has_leaf, bits 0-30 value (of a leaf), label = bit 31 | bits 0-7,
// offset = (unit >> 10) << ((unit & (1 << 9)) >> 6).
bool has_leaf(uint32_t u) { return (u >> 8) & 1; }
uint32_t value(uint32_t u) { return u & 0x7FFFFFFFu; }
uint32_t label(uint32_t u) { return u & 0x800000FFu; }
uint32_t offset(uint32_t u) { return (u >> 10) << ((u & (1u << 9)) >> 6); }
constexpr size_t kMaxResults = 32;  // sentencepiece's Normalizer::kMaxTrieResultsSize
}  // namespace

PrecompiledNormalizer::PrecompiledNormalizer(std::string charsmap) : blob_(std::move(charsmap)) {
  if (blob_.empty()) return;
  AL_CHECK(blob_.size() > 4, "precompiled charsmap: ", blob_.size(), " bytes is too short for its header");
  const auto* b = reinterpret_cast<const uint8_t*>(blob_.data());
  const uint64_t trie_size = uint64_t(b[0]) | uint64_t(b[1]) << 8 | uint64_t(b[2]) << 16 | uint64_t(b[3]) << 24;
  AL_CHECK(trie_size < blob_.size() - 4 + 1 && trie_size % 4 == 0 && trie_size >= 4,
           "precompiled charsmap: trie size ", trie_size, " does not fit its ", blob_.size(), " bytes");
  units_.resize(size_t(trie_size / 4));
  for (size_t i = 0; i < units_.size(); ++i) {
    const uint8_t* p = b + 4 + 4 * i;
    units_[i] = uint32_t(p[0]) | uint32_t(p[1]) << 8 | uint32_t(p[2]) << 16 | uint32_t(p[3]) << 24;
  }
  strings_ = std::string_view(blob_).substr(size_t(4 + trie_size));
}

size_t PrecompiledNormalizer::longest_match(std::string_view text, size_t pos, std::string_view& replacement) const {
  if (units_.empty()) return 0;
  size_t node = offset(units_[0]), longest = 0, results = 0;
  uint32_t longest_value = 0;
  for (size_t i = pos; i < text.size(); ++i) {
    const uint8_t key = uint8_t(text[i]);
    node ^= key;
    if (node >= units_.size()) break;
    const uint32_t unit = units_[node];
    if (label(unit) != key) break;
    node ^= offset(unit);
    if (node >= units_.size()) break;
    if (has_leaf(unit)) {
      if (results++ < kMaxResults) {
        longest = i + 1 - pos;
        longest_value = value(units_[node]);
      }
    }
  }
  if (longest == 0) return 0;
  if (longest_value >= strings_.size()) return 0;  // broken charsmap: treat as no match
  const std::string_view rest = strings_.substr(longest_value);
  const size_t nul = rest.find('\0');
  replacement = rest.substr(0, nul == std::string_view::npos ? rest.size() : nul);
  return longest;
}

std::string PrecompiledNormalizer::normalize(std::string_view text) const {
  if (units_.empty()) return std::string(text);
  std::string out;
  out.reserve(text.size());
  for (size_t pos = 0; pos < text.size();) {
    std::string_view rep;
    if (const size_t len = longest_match(text, pos, rep)) {
      out.append(rep);
      pos += len;
      continue;
    }
    const unicode::Utf8Step c = unicode::decode_utf8(text, pos);
    if (c.valid) {
      out.append(text.data() + pos, c.len);
      pos += c.len;
    } else {
      out.append("\xEF\xBF\xBD");
      pos += 1;  // sentencepiece consumes one byte of an ill-formed sequence
    }
  }
  return out;
}

}  // namespace attnlens::tok
