// safetensors: u64 little-endian header length N, N bytes of JSON
// {name: {"dtype", "shape", "data_offsets": [begin, end]}, "__metadata__": {...}}, then the data
// (offsets relative to its start). Sharded checkpoints add model.safetensors.index.json.
#include <algorithm>
#include <set>
#include <string>
#include <vector>

#include "core/json.h"
#include "formats/byte_reader.h"
#include "formats/model_file.h"

namespace attnlens {
namespace {

using json = nlohmann::json;

json parse_json(const Bytes& file, const uint8_t* p, size_t n, const char* what) {
  return attnlens::parse_json(p, n, str(file.name, ": ", what));
}

// A shape for messages: "[2,3]" when it is a short list of scalars, else a brief description.
std::string shape_text(const json& sh) {
  if (!sh.is_array() || sh.size() > 8) return json_brief(sh);
  std::string s = "[";
  for (const json& d : sh) {
    if (d.is_structured()) return json_brief(sh);
    s += (s.size() > 1 ? "," : "") + json_brief(d);
  }
  return s + "]";
}

struct Entry {
  std::string name;
  std::string dtype_str;
  DType dtype = DType::F32;
  bool skip = false;  // an integer buffer (I64/I32): validated, then left out of the map
  std::vector<int64_t> shape;
  uint64_t begin = 0, end = 0;
};

// Element size of a safetensors dtype we accept; 0 for any other.
uint64_t element_bytes(const std::string& s, DType* dt, bool* skip) {
  *skip = false;
  if (s == "F32") { *dt = DType::F32; return 4; }
  if (s == "F16") { *dt = DType::F16; return 2; }
  if (s == "BF16") { *dt = DType::BF16; return 2; }
  *skip = true;
  if (s == "I64") return 8;
  if (s == "I32") return 4;
  return 0;
}

Entry parse_entry(const ByteReader& r, const std::string& name, const json& info, uint64_t data_size) {
  Entry e;
  e.name = name;
  if (!info.is_object()) r.fail("tensor ", name, ": header entry is ", json_brief(info), ", not an object");
  auto dt = info.find("dtype");
  auto sh = info.find("shape");
  auto off = info.find("data_offsets");
  if (dt == info.end() || !dt->is_string()) r.fail("tensor ", name, " has no \"dtype\" string");
  if (sh == info.end() || !sh->is_array()) r.fail("tensor ", name, " has no \"shape\" array");
  if (off == info.end() || !off->is_array() || off->size() != 2 || !(*off)[0].is_number_unsigned() ||
      !(*off)[1].is_number_unsigned())
    r.fail("tensor ", name, " has no \"data_offsets\" [begin, end] of two non-negative integers");
  e.dtype_str = dt->get<std::string>();
  uint64_t esize = element_bytes(e.dtype_str, &e.dtype, &e.skip);
  if (esize == 0)
    r.fail("tensor ", name, " has dtype ", e.dtype_str, ", supported: F32, F16, BF16 (I64/I32 buffers are skipped)");
  uint64_t numel = 1;
  for (const json& d : *sh) {
    if (!d.is_number_unsigned() || d.get<uint64_t>() > uint64_t(INT64_MAX))
      r.fail("tensor ", name, " has shape ", shape_text(*sh), ": dimensions must be non-negative integers");
    uint64_t v = d.get<uint64_t>();
    if (!checked_mul(numel, v, &numel)) r.fail("tensor ", name, " has shape ", shape_text(*sh), ": the element count overflows");
    e.shape.push_back(static_cast<int64_t>(v));
  }
  e.begin = (*off)[0].get<uint64_t>();
  e.end = (*off)[1].get<uint64_t>();
  if (e.begin > e.end) r.fail("tensor ", name, " data_offsets [", e.begin, ", ", e.end, "] end before they begin");
  if (e.end > data_size)
    r.fail("tensor ", name, " data_offsets [", e.begin, ", ", e.end, "] exceed the ", data_size, " data bytes");
  uint64_t nbytes = 0;
  if (!checked_mul(numel, esize, &nbytes) || nbytes != e.end - e.begin)
    r.fail("tensor ", name, " has shape ", shape_text(*sh), " of ", e.dtype_str, " (", numel, " elements x ", esize,
           " bytes), but data_offsets [", e.begin, ", ", e.end, "] span ", e.end - e.begin, " bytes");
  return e;
}

// The last path component: "dir/model-00001-of-00002.safetensors" -> "model-00001-of-00002.safetensors".
std::string base_name(const std::string& path) {
  size_t slash = path.find_last_of("/\\");
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

}  // namespace

TensorMap read_safetensors(const Bytes& file, std::vector<std::string>* skipped) {
  ByteReader r(file.data, file.size, file.name);
  uint64_t n = r.read<uint64_t>("the header length (u64)");
  if (n > r.remaining()) r.fail("header length ", n, " exceeds the ", r.remaining(), " bytes after it");
  const uint8_t* head = r.take(n, "the JSON header");
  if (n == 0 || head[0] != '{') r.fail("the ", n, "-byte header does not start with '{'");
  json header = parse_json(file, head, static_cast<size_t>(n), "the header");
  if (!header.is_object()) r.fail("the header is not a JSON object");
  const uint8_t* data = r.data() + r.pos();
  const uint64_t data_size = r.remaining();

  std::vector<Entry> entries;
  for (auto it = header.begin(); it != header.end(); ++it) {
    if (it.key() == "__metadata__") continue;
    entries.push_back(parse_entry(r, it.key(), it.value(), data_size));
  }
  // Like the reference implementation: the tensors must tile the data section exactly.
  std::vector<const Entry*> order;
  for (const Entry& e : entries) order.push_back(&e);
  std::sort(order.begin(), order.end(), [](const Entry* a, const Entry* b) {
    return a->begin != b->begin ? a->begin < b->begin : a->end < b->end;
  });
  uint64_t covered = 0;
  const Entry* prev = nullptr;
  for (const Entry* e : order) {
    if (e->begin < covered)
      r.fail("tensor ", e->name, " data_offsets [", e->begin, ", ", e->end, "] overlap tensor ", prev->name, " [",
             prev->begin, ", ", prev->end, "]");
    if (e->begin > covered)
      r.fail("data bytes [", covered, ", ", e->begin, ") before tensor ", e->name, " belong to no tensor");
    covered = e->end;
    prev = e;
  }
  if (covered != data_size)
    r.fail("the tensors end at data byte ", covered, ", but the data section has ", data_size, " bytes (",
           data_size - covered, " trailing)");

  TensorMap map;
  map.context = file.name;
  for (Entry& e : entries) {
    if (e.skip) {
      if (skipped) skipped->push_back(e.name);
      continue;
    }
    TensorView v;
    v.name = std::move(e.name);
    v.dtype = e.dtype;
    v.shape = std::move(e.shape);
    v.data = data + e.begin;
    v.nbytes = static_cast<size_t>(e.end - e.begin);
    map.add(std::move(v));
  }
  return map;
}

SafetensorsIndex read_safetensors_index(const Bytes& file) {
  json j = parse_json(file, file.data, file.size, "the index");
  if (!j.is_object()) fail(file.name, ": the index is not a JSON object");
  auto wm = j.find("weight_map");
  if (wm == j.end() || !wm->is_object()) fail(file.name, ": the index has no \"weight_map\" object");
  if (wm->empty()) fail(file.name, ": the index's weight_map is empty");
  SafetensorsIndex idx;
  idx.name = file.name;
  std::set<std::string> shards;
  for (auto it = wm->begin(); it != wm->end(); ++it) {
    if (!it->is_string()) fail(file.name, ": weight_map[\"", brief_name(it.key()), "\"] is ", json_brief(*it), ", not a file name");
    const std::string& shard = it->get_ref<const std::string&>();
    if (shard.empty() || shard == "." || shard == ".." || shard.find_first_of("/\\") != std::string::npos)
      fail(file.name, ": weight_map[\"", brief_name(it.key()), "\"] is \"", brief_name(shard), "\", not a plain file name");
    idx.weight_map[it.key()] = shard;
    shards.insert(shard);
  }
  idx.shards.assign(shards.begin(), shards.end());
  return idx;
}

void merge_tensors(TensorMap& into, const TensorMap& from) {
  for (const auto& kv : from.all()) {
    if (into.has(kv.first))
      fail(into.context.empty() ? "" : into.context + ": ", "tensor ", kv.first, " from ", from.context,
           " is already present");
    into.add(kv.second);
  }
}

TensorMap read_safetensors_shards(const SafetensorsIndex& index, const std::vector<Bytes>& shards,
                                  std::vector<std::string>* skipped_out) {
  TensorMap out;
  out.context = index.name;
  std::set<std::string> given;
  std::set<std::string> skipped_all;
  for (const Bytes& b : shards) {
    std::string base = base_name(b.name);
    if (!std::binary_search(index.shards.begin(), index.shards.end(), base))
      fail(index.name, ": shard ", b.name, " is not one of the index's ", index.shards.size(), " shards");
    if (!given.insert(base).second) fail(index.name, ": shard ", base, " is given twice");
    std::vector<std::string> skipped;
    TensorMap m = read_safetensors(b, &skipped);
    auto check = [&](const std::string& name) {
      auto it = index.weight_map.find(name);
      if (it == index.weight_map.end()) fail(index.name, ": tensor ", brief_name(name), " in ", base, " is not in the weight_map");
      if (it->second != base) fail(index.name, ": tensor ", brief_name(name), " is in ", base, ", but the weight_map says ", brief_name(it->second));
    };
    for (const auto& kv : m.all()) check(kv.first);
    for (const std::string& s : skipped) check(s);
    skipped_all.insert(skipped.begin(), skipped.end());
    merge_tensors(out, m);
  }
  for (const std::string& s : index.shards)
    if (!given.count(s)) fail(index.name, ": shard ", brief_name(s), " is missing (", given.size(), " of ", index.shards.size(), " given)");
  for (const auto& kv : index.weight_map)
    if (!out.has(kv.first) && !skipped_all.count(kv.first))
      fail(index.name, ": tensor ", brief_name(kv.first), " is listed in ", brief_name(kv.second), ", but that shard does not have it");
  if (skipped_out) skipped_out->insert(skipped_out->end(), skipped_all.begin(), skipped_all.end());
  return out;
}

}  // namespace attnlens
