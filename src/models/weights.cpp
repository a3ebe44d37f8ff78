#include "models/weights.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <memory>

#include "core/error.h"
#include "core/limits.h"
#include "kernels/kernels.h"

namespace attnlens::models {

WeightFormat parse_weight_format(const std::string& s) {
  if (s.empty() || s == "none") return WeightFormat::AsStored;
  if (s == "q8_0") return WeightFormat::Q8_0;
  if (s == "q4_0") return WeightFormat::Q4_0;
  if (s == "q4_k" || s == "q4_K") return WeightFormat::Q4_K;
  fail("quantize must be \"none\", \"q8_0\", \"q4_0\" or \"q4_k\", got \"", s, "\"");
}

const char* weight_format_name(WeightFormat f) {
  switch (f) {
    case WeightFormat::AsStored: return "none";
    case WeightFormat::Q8_0: return "q8_0";
    case WeightFormat::Q4_0: return "q4_0";
    case WeightFormat::Q4_K: return "q4_k";
  }
  return "?";
}

namespace {

bool is_float(DType t) { return t == DType::F32 || t == DType::F16 || t == DType::BF16; }

std::string where(const TensorMap& tensors) { return tensors.context.empty() ? "" : tensors.context + ": "; }

}  // namespace

float* Weights::own_floats(size_t floats) {
  storage_.f32.push_back(alloc_floats(floats));
  storage_.bytes += floats * sizeof(float);
  return storage_.f32.back().get();
}

uint8_t* Weights::own_bytes(size_t bytes) {
  storage_.bytes8.emplace_back(bytes);
  storage_.bytes += bytes;
  return storage_.bytes8.back().data();
}

// Every weight the model reads (in place, converted or quantized at load) is checked once, at load, in
// its stored type: a NaN or an infinity in a file is an error naming the tensor, never a model that
// computes NaN later. (Checked before widening: f16 is widened by bit tricks that would turn an
// infinity into a finite number, see kernels/half.h.)
const float* Weights::as_f32(const TensorView& t) {
  check_finite(t.name, t.dtype, t.data, size_t(t.numel()));
  return to_f32(t);
}

const float* Weights::to_f32(const TensorView& t) {
  const size_t n = size_t(t.numel());
  if (t.dtype == DType::F32 && reinterpret_cast<uintptr_t>(t.data) % alignof(float) == 0)
    return reinterpret_cast<const float*>(t.data);
  float* out = own_floats(n);
  if (dtype_is_block(t.dtype)) {  // a quantized vector (ggml quantizes matrices only; read anyway)
    const int64_t cols = t.dim(-1);
    for (int64_t r = 0; r < int64_t(n) / cols; ++r)
      kernels::dequantize_row(t.dtype, t.data + size_t(r) * dtype_bytes(t.dtype, size_t(cols)), out + r * cols,
                              int(cols));
  } else {
    kernels::dequantize_row(t.dtype, t.data, out, int(n));
  }
  return out;
}

const float* Weights::vector(const std::string& name, int64_t n) {
  const TensorView& t = tensors_.get(name);
  used_.insert(name);
  AL_CHECK(t.numel() == n && (t.shape.size() == 1 || (t.shape.size() == 2 && t.shape[0] == 1)), where(tensors_),
           "tensor ", name, " has shape ", t.shape_str(), ", expected [", n, "]");
  count(n, size_t(n) * sizeof(float));
  return as_f32(t);
}

void Weights::check_finite(const std::string& name, DType t, const uint8_t* data, size_t count) const {
  const int64_t i = kernels::first_non_finite(t, data, count);
  if (i < 0) return;
  if (dtype_is_block(t))
    fail(where(tensors_), "tensor ", name, " (", dtype_name(t), ") has a NaN or infinite scale in the block at element ",
         i, " of ", count, " (a weight must be a finite number)");
  float v = 0.f;  // the element itself, widened exactly (NaN stays NaN, ±inf stays ±inf)
  if (t == DType::F32) {
    std::memcpy(&v, data + 4 * size_t(i), 4);
  } else {
    uint16_t h;
    std::memcpy(&h, data + 2 * size_t(i), 2);
    v = (t == DType::F16 ? (h & 0x03FF) : (h & 0x007F)) ? NAN : INFINITY;
  }
  fail(where(tensors_), "tensor ", name, " holds ", std::isnan(v) ? "NaN" : "an infinity", " at element ", i, " of ",
       count, " (a weight must be a finite number)");
}

DType Weights::target_type(DType stored, int64_t cols) const {
  if (!is_float(stored)) return stored;  // already quantized: kept as the file has it
  switch (format_) {
    case WeightFormat::AsStored: return stored;
    case WeightFormat::Q8_0: return cols % 32 == 0 ? DType::Q8_0 : stored;
    case WeightFormat::Q4_0: return cols % 32 == 0 ? DType::Q4_0 : stored;
    case WeightFormat::Q4_K: return cols % 256 == 0 ? DType::Q4_K : cols % 32 == 0 ? DType::Q5_0 : stored;
  }
  return stored;
}

// `data` holds rows × cols elements of `stored`, row-major (the file's bytes or a transposed copy).
nn::Matrix Weights::prepare(const std::string& key, const TensorView& t, const uint8_t* data, DType stored,
                            int64_t rows, int64_t cols) {
  auto it = prepared_.find(key);
  if (it != prepared_.end()) return it->second;
  AL_CHECK(data != t.data || !rearranged_.count(t.name), where(tensors_), "tensor ", t.name,
           " was rewritten in place (transposed, reordered or quantized) for one use and cannot also be read as stored");
  const std::string what = where(tensors_) + "tensor " + t.name;
  const size_t count = limits::checked_bytes(what.c_str(), {uint64_t(rows), uint64_t(cols)});  // elements
  const DType target = target_type(stored, cols);
  nn::Matrix m{target, int(rows), int(cols), data};
  check_finite(t.name, stored, data, count);
  if (target == stored) {
    if (stored == DType::F32 && reinterpret_cast<uintptr_t>(data) % alignof(float) != 0) {
      float* copy = own_floats(count);
      std::memcpy(copy, data, count * sizeof(float));
      m.data = copy;
    }
  } else {
    // Quantize at load, one row at a time from f32 (widened first when f16/bf16).
    const size_t in_row = size_t(cols) * (stored == DType::F32 ? 4 : 2);
    const size_t out_row = dtype_bytes(target, size_t(cols));
    limits::checked_bytes(what.c_str(), {out_row, uint64_t(rows)});
    // Into the file's own bytes when the load owns them: row r is read whole before its quantized
    // row, shorter than a stored one, is written at out_row·r ≤ in_row·r, so no unread row is touched.
    const bool in_place = own_file_bytes_ && data == t.data && out_row <= in_row;
    uint8_t* out = in_place ? const_cast<uint8_t*>(data) : own_bytes(out_row * size_t(rows));
    std::vector<float> row(static_cast<size_t>(cols));
    for (int64_t r = 0; r < rows; ++r) {
      kernels::dequantize_row(stored, data + in_row * size_t(r), row.data(), int(cols));
      kernels::quantize_row(target, row.data(), out + out_row * size_t(r), int(cols));
      // Finite weights can still give a block scale past f16's range (q8_0: |w| > 65504·127; q4_0:
      // > 65504·8; q4_K: a sub-block scale or min > 65504·63): the block would dequantize to
      // infinities and NaN, so it is refused like a non-finite weight.
      const int64_t bad = kernels::first_non_finite(target, out + out_row * size_t(r), size_t(cols));
      if (bad >= 0) {
        const int64_t block = dtype_block_elems(target);
        float amax = 0.f;
        for (int64_t i = bad - bad % block; i < std::min<int64_t>(cols, bad - bad % block + block); ++i)
          amax = std::max(amax, std::fabs(row[size_t(i)]));
        fail(where(tensors_), "tensor ", t.name, " cannot be quantized to ", dtype_name(target), ": the block at element ",
             r * cols + bad - bad % block, " of ", count, " holds a weight of magnitude ", amax,
             ", too large for the block's f16 scale (load it without quantizing)");
      }
    }
    m.data = out;
    if (in_place) rearranged_.insert(t.name);
  }
  DTypeTotals& tt = types_[target];
  tt.tensors += 1;
  tt.params += rows * cols;
  tt.bytes += m.bytes();
  return prepared_[key] = m;
}

void Weights::prepare_copy(const std::string& key, const TensorView& t, const uint8_t* copy, int64_t rows, int64_t cols) {
  const nn::Matrix m = prepare(key, t, copy, t.dtype, rows, cols);
  if (m.data == copy) return;
  // Quantized from the copy: the copy is not needed any more. It is the last f32 buffer, or the
  // bytes before the quantized ones (bytes8 holds [..., copy, quantized]).
  if (t.dtype == DType::F32) {
    storage_.f32.pop_back();
    storage_.bytes -= size_t(rows) * size_t(cols) * sizeof(float);
  } else {
    storage_.bytes -= storage_.bytes8[storage_.bytes8.size() - 2].size();
    storage_.bytes8.erase(storage_.bytes8.end() - 2);
  }
}

nn::Matrix Weights::matrix(const std::string& name, int64_t rows, int64_t cols, bool tied) {
  const TensorView& t = tensors_.get(name, {rows, cols});  // (prepare() reads it once, then hands out that)
  used_.insert(name);
  const nn::Matrix m = prepare(name, t, t.data, t.dtype, rows, cols);
  count(tied ? 0 : rows * cols, m.bytes());
  return m;
}

const TensorView& Weights::stored(const std::string& name, const std::vector<int64_t>& shape) const {
  AL_CHECK(!rearranged_.count(name), where(tensors_), "tensor ", name,
           " was rewritten in place (transposed, reordered or quantized) for one use and cannot also be read as stored");
  return tensors_.get(name, shape);
}

void Weights::rearrange(const std::string& key, const TensorView& t, int64_t rows, int64_t cols, size_t bytes,
                        const std::function<void(uint8_t*)>& fill) {
  if (own_file_bytes_) {
    // The file's bytes are this load's alone: the new layout is made in a buffer that lives for this
    // one tensor and written back, so the model keeps no second copy of the weight beside the file.
    // (new[] without (): fill() writes every byte, so nothing is zeroed first — on a GPT-2 load the
    // zeroing took as long as the transposes, bench/README.md)
    const std::unique_ptr<uint8_t[]> tmp(new uint8_t[bytes]);
    fill(tmp.get());
    std::memcpy(const_cast<uint8_t*>(t.data), tmp.get(), bytes);
    prepare(key, t, t.data, t.dtype, rows, cols);
    rearranged_.insert(t.name);
    return;
  }
  uint8_t* dst = t.dtype == DType::F32 ? reinterpret_cast<uint8_t*>(own_floats(bytes / sizeof(float))) : own_bytes(bytes);
  fill(dst);
  prepare_copy(key, t, dst, rows, cols);
}

nn::Matrix Weights::matrix_transposed(const std::string& name, int64_t rows, int64_t cols) {
  const std::string key = name + ".T";
  if (!prepared_.count(key)) {
    const TensorView& t = stored(name, {cols, rows});
    used_.insert(name);
    AL_CHECK(is_float(t.dtype), where(tensors_), "tensor ", name, " is ", dtype_name(t.dtype),
             " but stored transposed [in, out]; quantized blocks must run along the input dimension");
    // src [cols, rows] → [rows, cols], in the stored element type.
    const size_t es = t.dtype == DType::F32 ? 4 : 2;
    const size_t bytes = limits::checked_bytes((where(tensors_) + "tensor " + name).c_str(), {uint64_t(rows), uint64_t(cols), es});
    rearrange(key, t, rows, cols, bytes, [&](uint8_t* dst) { kernels::transpose(t.data, dst, cols, rows, es); });
  }
  const nn::Matrix m = prepared_.at(key);
  count(rows * cols, m.bytes());
  return m;
}

nn::Matrix Weights::table(const std::string& name, int64_t rows, int64_t cols) {
  const TensorView& t = tensors_.get(name, {rows, cols});  // (as matrix(): one prepared form per tensor)
  used_.insert(name);
  // Only the looked-up rows are read: count the parameters, not the bytes.
  count(rows * cols, 0);
  return prepare(name, t, t.data, t.dtype, rows, cols);
}

const float* Weights::f32_table(const std::string& name, int64_t rows, int64_t cols) {
  const TensorView& t = stored(name, {rows, cols});
  used_.insert(name);
  count(rows * cols, size_t(rows * cols) * sizeof(float));
  return as_f32(t);
}

nn::Linear Weights::linear(const std::string& weight, const std::string& bias, int64_t out, int64_t in) {
  nn::Linear l;
  l.w = matrix(weight, out, in);
  if (!bias.empty()) l.b = vector(bias, out);
  return l;
}

nn::Norm Weights::layer_norm(const std::string& prefix, int dim, float eps) {
  return nn::Norm{nn::NormKind::LayerNorm, dim, vector(prefix + ".weight", dim), vector(prefix + ".bias", dim), eps};
}

nn::Norm Weights::rms_norm(const std::string& weight, int dim, float eps) {
  return nn::Norm{nn::NormKind::RMSNorm, dim, vector(weight, dim), nullptr, eps};
}

nn::Norm Weights::rms_norm(const std::string& weight, int dim, float eps, float offset) {
  nn::Norm n = rms_norm(weight, dim, eps);
  if (offset == 0.f) return n;
  float* g = own_floats(size_t(dim));
  for (int i = 0; i < dim; ++i) g[i] = offset + n.gamma[i];
  n.gamma = g;
  return n;
}

nn::Matrix Weights::matrix_rows(const std::string& name, int64_t rows, int64_t cols,
                                const std::function<int64_t(int64_t)>& src_row) {
  const std::string key = name + ".reordered";
  if (!prepared_.count(key)) {
    const TensorView& t = stored(name, {rows, cols});
    used_.insert(name);
    const size_t rb = dtype_bytes(t.dtype, size_t(cols));
    const size_t bytes = limits::checked_bytes((where(tensors_) + "tensor " + name).c_str(), {rb, uint64_t(rows)});
    rearrange(key, t, rows, cols, bytes, [&](uint8_t* dst) {
      for (int64_t r = 0; r < rows; ++r) {
        const int64_t s = src_row(r);
        AL_CHECK(s >= 0 && s < rows, "row map of ", name, " is out of range");
        std::memcpy(dst + rb * size_t(r), t.data + rb * size_t(s), rb);
      }
    });
  }
  const nn::Matrix m = prepared_.at(key);
  count(rows * cols, m.bytes());
  return m;
}

const float* Weights::vector_rows(const std::string& name, int64_t n, const std::function<int64_t(int64_t)>& src) {
  const float* v = vector(name, n);
  float* dst = own_floats(size_t(n));
  for (int64_t i = 0; i < n; ++i) {
    const int64_t s = src(i);
    AL_CHECK(s >= 0 && s < n, "element map of ", name, " is out of range");
    dst[i] = v[s];
  }
  return dst;
}

void Weights::check_all_used(const std::vector<std::string>& allowed, const std::string& what) const {
  for (const std::string& name : unused()) {
    bool ok = false;
    for (const std::string& a : allowed)
      ok = ok || (!a.empty() && a.back() == '*' ? name.compare(0, a.size() - 1, a, 0, a.size() - 1) == 0 : name == a);
    AL_CHECK(ok, tensors_.context, tensors_.context.empty() ? "" : ": ", "tensor ", name, " ",
             tensors_.get(name).shape_str(), " is not part of ", what,
             " as AttnLens runs it: refusing to run a model without a part of its file");
  }
}

std::vector<std::string> Weights::unused() const {
  std::vector<std::string> out;
  for (const auto& [name, t] : tensors_.all())
    if (!used_.count(name)) out.push_back(name);
  return out;
}

std::string Weights::matrix_dtype() const {
  if (types_.empty()) return "none";
  if (types_.size() == 1) return dtype_name(types_.begin()->first);
  std::vector<std::pair<size_t, DType>> by_bytes;
  for (const auto& [t, tot] : types_) by_bytes.push_back({tot.bytes, t});
  std::sort(by_bytes.begin(), by_bytes.end(), [](const auto& a, const auto& b) { return a.first > b.first; });
  std::string s = "mixed (";
  for (size_t i = 0; i < by_bytes.size(); ++i) s += (i ? ", " : "") + std::string(dtype_name(by_bytes[i].second));
  return s + ")";
}

}  // namespace attnlens::models
