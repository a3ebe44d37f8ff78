#include "interp/interventions.h"

#include <algorithm>
#include <cstring>

#include "core/error.h"

namespace attnlens::interp {

namespace {

std::tuple<int, int, int> key(nn::AttentionKind stack, int layer, nn::HookPoint point) {
  return {int(stack), layer, int(point)};
}

}  // namespace

void Interventions::capture(nn::AttentionKind stack, int layer, nn::HookPoint point) {
  captures_[key(stack, layer, point)];
}

const std::vector<float>* Interventions::captured(nn::AttentionKind stack, int layer, nn::HookPoint point) const {
  auto it = captures_.find(key(stack, layer, point));
  return it == captures_.end() ? nullptr : &it->second.rows;
}

int Interventions::captured_width(nn::AttentionKind stack, int layer, nn::HookPoint point) const {
  auto it = captures_.find(key(stack, layer, point));
  return it == captures_.end() ? 0 : it->second.width;
}

void Interventions::set_patch(const Site& site, const std::vector<float>* source) {
  AL_CHECK(source != nullptr, "patch: no source activation");
  patch_ = site;
  patch_source_ = source;
}

void Interventions::clear() {
  ablations.clear();
  captures_.clear();
  means_.clear();
  patch_source_ = nullptr;
}

void Interventions::ablate(const nn::HookSite& site, float* x) {
  const int hd = head_dim_;
  AL_CHECK(site.width % hd == 0, "ablation: head outputs of width ", site.width, " are not a multiple of head_dim ", hd);
  const int n_heads = site.width / hd;
  bool any = false;
  bool mean = false;
  for (const Ablation& a : ablations)
    if (a.stack == site.stack && a.layer == site.layer) {
      AL_CHECK(a.head >= 0 && a.head < n_heads, "ablation: head ", a.head, " of layer ", a.layer, " is out of range [0, ",
               n_heads, ")");
      any = true;
      mean = mean || a.mode == AblationMode::Mean;
    }
  if (!any) return;
  std::vector<float>* m = nullptr;
  if (mean) {
    m = &means_[{int(site.stack), site.layer}];
    if (site.pos0 == 0 || m->empty()) {  // the first pass of a sequence: its mean over positions
      m->assign(size_t(site.width), 0.f);
      for (int i = 0; i < site.n; ++i)
        for (int c = 0; c < site.width; ++c) (*m)[size_t(c)] += x[size_t(i) * site.width + c];
      for (float& v : *m) v /= float(site.n);
    }
  }
  for (const Ablation& a : ablations) {
    if (a.stack != site.stack || a.layer != site.layer) continue;
    for (int i = 0; i < site.n; ++i) {
      float* h = x + size_t(i) * site.width + size_t(a.head) * hd;
      if (a.mode == AblationMode::Zero) std::fill(h, h + hd, 0.f);
      else std::memcpy(h, m->data() + size_t(a.head) * hd, sizeof(float) * size_t(hd));
    }
  }
}

void Interventions::at(const nn::HookSite& site, float* x) {
  if (site.point == nn::HookPoint::HeadOutputs && !ablations.empty()) ablate(site, x);

  if (patch_source_ && patch_.stack == site.stack && patch_.layer == site.layer && patch_.point == site.point) {
    const int w = site.width;
    const size_t source_rows = patch_source_->size() / size_t(w);
    AL_CHECK(patch_source_->size() % size_t(w) == 0, "patch: the source activation has rows of another width");
    int c0 = 0, c1 = w;
    if (site.point == nn::HookPoint::HeadOutputs && patch_.head >= 0) {
      AL_CHECK((patch_.head + 1) * head_dim_ <= w, "patch: head ", patch_.head, " is out of range [0, ", w / head_dim_, ")");
      c0 = patch_.head * head_dim_;
      c1 = c0 + head_dim_;
    }
    for (int i = 0; i < site.n; ++i) {
      const int pos = site.pos0 + i;
      if (patch_.position >= 0 && pos != patch_.position) continue;
      AL_CHECK(size_t(pos) < source_rows, "patch: position ", pos, " is past the ", source_rows,
               " positions of the source run (the runs must have the same length)");
      const float* src = patch_source_->data() + size_t(pos) * w;
      std::memcpy(x + size_t(i) * w + c0, src + c0, sizeof(float) * size_t(c1 - c0));
    }
  }

  if (!captures_.empty()) {
    auto it = captures_.find(key(site.stack, site.layer, site.point));
    if (it != captures_.end()) {
      Capture& c = it->second;
      if (site.pos0 == 0) c.rows.clear();
      c.width = site.width;
      c.rows.resize(size_t(site.pos0 + site.n) * site.width);
      std::memcpy(c.rows.data() + size_t(site.pos0) * site.width, x, sizeof(float) * size_t(site.n) * site.width);
    }
  }
}

}  // namespace attnlens::interp
