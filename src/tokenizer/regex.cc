#include "tokenizer/regex.h"

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>

#include <cctype>

#include <fmt/format.h>

#include "tokenizer/unicode.h"

namespace pagellm::tokenizer {
namespace {

constexpr std::string_view kOnigWordClass = R"(\p{L}\p{M}\p{Nd}\p{Pc})";

// Per-thread PCRE2 scratch: match data with one ovector pair and a JIT stack big
// enough for long runs of whitespace or letters.
struct ThreadScratch {
  pcre2_match_data* match_data = pcre2_match_data_create(1, nullptr);
  pcre2_jit_stack* jit_stack = pcre2_jit_stack_create(32 * 1024, 8 * 1024 * 1024, nullptr);
  pcre2_match_context* context = [this] {
    pcre2_match_context* c = pcre2_match_context_create(nullptr);
    pcre2_jit_stack_assign(c, nullptr, jit_stack);
    return c;
  }();
  ~ThreadScratch() {
    pcre2_match_context_free(context);
    pcre2_jit_stack_free(jit_stack);
    pcre2_match_data_free(match_data);
  }
};

ThreadScratch& Scratch() {
  thread_local ThreadScratch scratch;
  return scratch;
}

// True if every \p{..}/\P{..} names a general category (L, Lu, N, Nd, ...) and the
// pattern is ASCII, so that running it on ProxyForRegex text changes nothing else.
bool ProxySafe(std::string_view pattern) {
  if (!IsAscii(pattern)) return false;
  for (size_t i = 0; i + 1 < pattern.size(); ++i) {
    if (pattern[i] != '\\') continue;
    char c = pattern[++i];
    if (c != 'p' && c != 'P') continue;
    if (i + 1 >= pattern.size()) return false;
    std::string_view name;
    if (pattern[i + 1] == '{') {
      size_t close = pattern.find('}', i + 2);
      if (close == std::string_view::npos) return false;
      name = pattern.substr(i + 2, close - i - 2);
    } else {
      name = pattern.substr(i + 1, 1);
    }
    if (!name.empty() && name[0] == '^') name.remove_prefix(1);
    bool category = (name.size() == 1 || name.size() == 2) &&
                    std::string_view("LMNPSZC").find(name[0]) != std::string_view::npos;
    if (!category) return false;
  }
  return true;
}

}  // namespace

std::string TranslateOnigPattern(std::string_view pattern) {
  std::string out;
  int class_depth = 0;
  for (size_t i = 0; i < pattern.size(); ++i) {
    char c = pattern[i];
    if (c == '\\' && i + 1 < pattern.size()) {
      char n = pattern[++i];
      if (n == 'w') out += class_depth ? std::string(kOnigWordClass) : fmt::format("[{}]", kOnigWordClass);
      else if (n == 'W' && !class_depth) out += fmt::format("[^{}]", kOnigWordClass);
      else if (n == 'h') out += class_depth ? "0-9a-fA-F" : "[0-9a-fA-F]";  // Oniguruma: hex digit
      else { out += c; out += n; }
      continue;
    }
    if (c == '[') {
      ++class_depth;
      out += c;
      // A ']' right after '[' or '[^' is a literal.
      if (i + 1 < pattern.size() && pattern[i + 1] == '^') out += pattern[++i];
      if (i + 1 < pattern.size() && pattern[i + 1] == ']') out += pattern[++i];
      continue;
    }
    if (c == ']' && class_depth > 0) --class_depth;
    out += c;
  }
  return out;
}

StatusOr<std::unique_ptr<Regex>> Regex::Compile(std::string_view pattern) {
  std::string translated = TranslateOnigPattern(pattern);
  int error_code = 0;
  PCRE2_SIZE error_offset = 0;
  pcre2_code* code = pcre2_compile(reinterpret_cast<PCRE2_SPTR>(translated.data()), translated.size(),
                                   PCRE2_UTF | PCRE2_UCP | PCRE2_NO_UTF_CHECK, &error_code,
                                   &error_offset, nullptr);
  if (code == nullptr) {
    PCRE2_UCHAR message[256];
    pcre2_get_error_message(error_code, message, sizeof(message));
    return InvalidArgumentError(fmt::format("bad pre-tokenizer regex at offset {}: {}: {}", error_offset,
                                            reinterpret_cast<const char*>(message), pattern));
  }
  pcre2_jit_compile(code, PCRE2_JIT_COMPLETE);  // falls back to the interpreter if JIT fails
  return std::unique_ptr<Regex>(new Regex(code, ProxySafe(pattern)));
}

StatusOr<std::unique_ptr<Regex>> Regex::CompileLiteral(std::string_view literal) {
  std::string escaped;
  for (char c : literal) {
    bool plain = static_cast<uint8_t>(c) >= 0x80 || std::isalnum(static_cast<unsigned char>(c));
    if (!plain) escaped += '\\';
    escaped += c;
  }
  return Compile(escaped);
}

Regex::~Regex() { pcre2_code_free(static_cast<pcre2_code*>(code_)); }

void Regex::FindAll(std::string_view text, std::vector<Match>* matches) const {
  std::string proxied;
  std::string_view subject = text;
  if (use_proxy_ && !IsAscii(text)) {
    proxied = ProxyForRegex(text);
    subject = proxied;
  }
  auto* code = static_cast<pcre2_code*>(code_);
  ThreadScratch& scratch = Scratch();
  const auto* data = reinterpret_cast<PCRE2_SPTR>(subject.data());
  size_t search_from = 0;
  bool have_last = false;
  size_t last_match_end = 0;
  while (search_from <= subject.size()) {
    int rc = pcre2_match(code, data, subject.size(), search_from, PCRE2_NO_UTF_CHECK,
                         scratch.match_data, scratch.context);
    if (rc < 0) break;  // PCRE2_ERROR_NOMATCH, or a resource limit: treat as no match
    const PCRE2_SIZE* ov = pcre2_get_ovector_pointer(scratch.match_data);
    size_t begin = ov[0], end = ov[1];
    if (begin == end && have_last && last_match_end == end) {
      if (search_from >= subject.size()) break;
      size_t pos = search_from;
      DecodeUtf8(subject, &pos);  // skip one character, as Oniguruma's find_iter does
      search_from = pos;
      continue;
    }
    matches->push_back({begin, end});
    search_from = end;
    have_last = true;
    last_match_end = end;
  }
}

}  // namespace pagellm::tokenizer
