#include "tokenizer/normalizer.h"

#include <cstdlib>
#include <memory>

#include <fmt/format.h>
#include <utf8proc.h>

#include "tokenizer/unicode.h"

namespace pagellm::tokenizer {
namespace {

// Bit per code point: 1 if Unicode normalization might change text containing it
// (nonzero combining class, any decomposition, Hangul, or the second element of a
// canonical composition). Text without such code points is already normalized.
const std::vector<bool>& MayChangeSet() {
  static const std::vector<bool> set = [] {
    std::vector<bool> s(0x110000, false);
    for (char32_t cp = 0x80; cp < 0x110000; ++cp) {
      if (cp >= 0xD800 && cp <= 0xDFFF) continue;
      const utf8proc_property_t* p = utf8proc_get_property(cp);
      if (p->combining_class != 0 || p->decomp_seqindex != UINT16_MAX) s[cp] = true;
      if (p->decomp_type != 0 || p->decomp_seqindex == UINT16_MAX) continue;
      utf8proc_int32_t buf[8];
      int last_boundclass = 0;
      utf8proc_ssize_t n = utf8proc_decompose_char(cp, buf, 8, UTF8PROC_DECOMPOSE, &last_boundclass);
      for (utf8proc_ssize_t k = 1; k < n && k < 8; ++k) s[buf[k]] = true;
    }
    for (char32_t cp = 0x1100; cp <= 0x11FF; ++cp) s[cp] = true;  // Hangul jamo
    for (char32_t cp = 0xAC00; cp <= 0xD7A3; ++cp) s[cp] = true;  // Hangul syllables
    return s;
  }();
  return set;
}

utf8proc_option_t Options(NormalizationForm form) {
  int o = UTF8PROC_STABLE;
  switch (form) {
    case NormalizationForm::kNFC: o |= UTF8PROC_COMPOSE; break;
    case NormalizationForm::kNFD: o |= UTF8PROC_DECOMPOSE; break;
    case NormalizationForm::kNFKC: o |= UTF8PROC_COMPOSE | UTF8PROC_COMPAT; break;
    case NormalizationForm::kNFKD: o |= UTF8PROC_DECOMPOSE | UTF8PROC_COMPAT; break;
  }
  return static_cast<utf8proc_option_t>(o);
}

// Normalizes a segment free of inert code points. utf8proc may still compose into a
// code point HF does not know (e.g. U+11935 U+11930 -> U+11938); HF would not, so such
// results are decomposed again.
void AppendSegment(std::string_view seg, NormalizationForm form, std::string* out) {
  const auto& may_change = MayChangeSet();
  bool needed = false;
  for (size_t pos = 0; pos < seg.size() && !needed;) {
    if (static_cast<uint8_t>(seg[pos]) < 0x80) { ++pos; continue; }
    needed = may_change[DecodeUtf8(seg, &pos)];
  }
  if (!needed) { out->append(seg); return; }
  utf8proc_uint8_t* dst = nullptr;
  utf8proc_ssize_t n = utf8proc_map(reinterpret_cast<const utf8proc_uint8_t*>(seg.data()),
                                    static_cast<utf8proc_ssize_t>(seg.size()), &dst, Options(form));
  if (n < 0) { out->append(seg); return; }  // cannot happen on valid UTF-8
  std::string_view res(reinterpret_cast<const char*>(dst), n);
  for (size_t pos = 0; pos < res.size();) {
    size_t start = pos;
    char32_t cp = DecodeUtf8(res, &pos);
    if (cp < 0x80 || !IsHfNormalizationInert(cp)) { out->append(res.substr(start, pos - start)); continue; }
    utf8proc_int32_t buf[8];
    int boundclass = 0;
    utf8proc_ssize_t m = utf8proc_decompose_char(cp, buf, 8, UTF8PROC_DECOMPOSE, &boundclass);
    for (utf8proc_ssize_t k = 0; k < m && k < 8; ++k) AppendUtf8(buf[k], out);
  }
  std::free(dst);
}

std::string Lowercase(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (size_t pos = 0; pos < text.size();) {
    char32_t cp = DecodeUtf8(text, &pos);
    if (cp == 0x130) { out.append("i\xCC\x87"); continue; }  // full mapping of U+0130
    AppendUtf8(static_cast<char32_t>(utf8proc_tolower(cp)), &out);
  }
  return out;
}

std::string Strip(std::string_view text, bool left, bool right) {
  size_t begin = 0, end = text.size();
  while (left && begin < end) {
    size_t pos = begin;
    if (!IsUnicodeSpace(DecodeUtf8(text, &pos))) break;
    begin = pos;
  }
  while (right && end > begin) {
    size_t start = end - 1;
    while (start > begin && (static_cast<uint8_t>(text[start]) & 0xC0) == 0x80) --start;
    size_t pos = start;
    if (!IsUnicodeSpace(DecodeUtf8(text, &pos))) break;
    end = start;
  }
  return std::string(text.substr(begin, end - begin));
}

std::string ReplaceAll(std::string_view text, std::string_view from, std::string_view to) {
  if (from.empty()) return std::string(text);
  std::string out;
  size_t pos = 0;
  for (size_t hit; (hit = text.find(from, pos)) != std::string_view::npos; pos = hit + from.size()) {
    out.append(text.substr(pos, hit - pos));
    out.append(to);
  }
  out.append(text.substr(pos));
  return out;
}

Status ParseStep(const Json& j, std::vector<Normalizer::Step>* steps) {
  using Kind = Normalizer::Step::Kind;
  if (!j.is_object() || !j.contains("type")) return InvalidArgumentError("normalizer without a type");
  std::string type = j["type"].get<std::string>();
  Normalizer::Step step;
  if (type == "Sequence") {
    for (const Json& sub : j.value("normalizers", Json::array())) PAGELLM_RETURN_IF_ERROR(ParseStep(sub, steps));
    return OkStatus();
  }
  if (type == "NFC") step.form = NormalizationForm::kNFC;
  else if (type == "NFD") step.form = NormalizationForm::kNFD;
  else if (type == "NFKC") step.form = NormalizationForm::kNFKC;
  else if (type == "NFKD") step.form = NormalizationForm::kNFKD;
  else if (type == "Lowercase") step.kind = Kind::kLowercase;
  else if (type == "Prepend") { step.kind = Kind::kPrepend; step.a = j.value("prepend", ""); }
  else if (type == "Strip") {
    step.kind = Kind::kStrip;
    step.strip_left = j.value("strip_left", true);
    step.strip_right = j.value("strip_right", true);
  } else if (type == "Replace" && j.contains("pattern") && j["pattern"].contains("String")) {
    step.kind = Kind::kReplace;
    step.a = j["pattern"]["String"].get<std::string>();
    step.b = j.value("content", "");
  } else {
    return UnimplementedError(fmt::format("unsupported normalizer: {}", j.dump()));
  }
  steps->push_back(std::move(step));
  return OkStatus();
}

}  // namespace

std::string UnicodeNormalize(std::string_view text, NormalizationForm form) {
  if (IsAscii(text)) return std::string(text);
  std::string out;
  out.reserve(text.size());
  size_t seg_start = 0;
  for (size_t pos = 0; pos < text.size();) {
    size_t start = pos;
    char32_t cp = DecodeUtf8(text, &pos);
    if (cp < 0x80 || !IsHfNormalizationInert(cp)) continue;
    AppendSegment(text.substr(seg_start, start - seg_start), form, &out);
    out.append(text.substr(start, pos - start));
    seg_start = pos;
  }
  AppendSegment(text.substr(seg_start), form, &out);
  return out;
}

StatusOr<Normalizer> Normalizer::FromJson(const Json& json) {
  std::vector<Step> steps;
  if (!json.is_null()) PAGELLM_RETURN_IF_ERROR(ParseStep(json, &steps));
  return Normalizer(std::move(steps));
}

std::string Normalizer::Apply(std::string_view text) const {
  std::string cur(text);
  for (const Step& s : steps_) {
    switch (s.kind) {
      case Step::Kind::kUnicode: cur = UnicodeNormalize(cur, s.form); break;
      case Step::Kind::kLowercase: cur = Lowercase(cur); break;
      case Step::Kind::kPrepend: if (!cur.empty()) cur = s.a + cur; break;
      case Step::Kind::kStrip: cur = Strip(cur, s.strip_left, s.strip_right); break;
      case Step::Kind::kReplace: cur = ReplaceAll(cur, s.a, s.b); break;
    }
  }
  return cur;
}

}  // namespace pagellm::tokenizer
