#include "chat/lexer.h"

#include <algorithm>
#include <cctype>

#include <fmt/format.h>

namespace pagellm::chat {
namespace {

bool IsSpace(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v'; }
bool IsNameStart(char c) { return std::isalpha(static_cast<unsigned char>(c)) || c == '_'; }
bool IsNameChar(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; }

// Longest operators first so "**" wins over "*".
constexpr std::string_view kOperators[] = {"**", "//", "==", "!=", "<=", ">=", "+", "-", "*", "/", "%", "~",
                                           "<",  ">",  "=",  "(",  ")",  "[",  "]", "{", "}", ".", ",", ":", "|"};

void AppendUtf8(std::string& out, uint32_t cp) {
  if (cp < 0x80) {
    out += static_cast<char>(cp);
  } else if (cp < 0x800) {
    out += static_cast<char>(0xC0 | (cp >> 6));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else if (cp < 0x10000) {
    out += static_cast<char>(0xE0 | (cp >> 12));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else {
    out += static_cast<char>(0xF0 | (cp >> 18));
    out += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  }
}

class Lexer {
 public:
  Lexer(std::string_view src, const LexOptions& options) : src_(src), options_(options) {
    if (!options_.keep_trailing_newline && !src_.empty() && src_.back() == '\n') src_.remove_suffix(1);
  }

  StatusOr<std::vector<Token>> Run() {
    while (pos_ < src_.size()) {
      Status status = LexTextAndTag();
      if (!status.ok()) return status;
    }
    tokens_.push_back({TokenKind::kEof, "", LineAt(src_.size())});
    return std::move(tokens_);
  }

 private:
  int LineAt(size_t offset) {
    // Lines are counted incrementally; offsets only move forward.
    for (; line_offset_ < offset && line_offset_ < src_.size(); ++line_offset_) {
      if (src_[line_offset_] == '\n') ++line_;
    }
    return line_;
  }

  Status Error(size_t offset, const std::string& message) {
    return InvalidArgumentError(fmt::format("line {}: {}", LineAt(offset), message));
  }

  size_t FindTagStart(size_t from) const {
    for (size_t i = from; i + 1 < src_.size(); ++i) {
      if (src_[i] == '{' && (src_[i + 1] == '{' || src_[i + 1] == '%' || src_[i + 1] == '#')) return i;
    }
    return std::string_view::npos;
  }

  void EmitText(std::string_view text, size_t offset) {
    if (!text.empty()) tokens_.push_back({TokenKind::kText, std::string(text), LineAt(offset)});
  }

  // Removes spaces/tabs between the last newline (or the start) and a block tag.
  static std::string_view LstripLine(std::string_view text, bool at_source_start) {
    size_t i = text.size();
    while (i > 0 && (text[i - 1] == ' ' || text[i - 1] == '\t')) --i;
    if (i == 0 ? at_source_start : text[i - 1] == '\n') return text.substr(0, i);
    return text;
  }

  void SkipAfterTag(bool strip, bool trim) {
    if (strip) {
      while (pos_ < src_.size() && IsSpace(src_[pos_])) ++pos_;
    } else if (trim && pos_ < src_.size() && src_[pos_] == '\n') {
      ++pos_;
    }
  }

  Status LexTextAndTag() {
    size_t tag = FindTagStart(pos_);
    if (tag == std::string_view::npos) {
      EmitText(src_.substr(pos_), pos_);
      pos_ = src_.size();
      return OkStatus();
    }
    std::string_view text = src_.substr(pos_, tag - pos_);
    char kind = src_[tag + 1];
    char modifier = tag + 2 < src_.size() ? src_[tag + 2] : '\0';
    if (modifier == '-') {
      while (!text.empty() && IsSpace(text.back())) text.remove_suffix(1);
    } else if (options_.lstrip_blocks && kind != '{' && modifier != '+') {
      text = LstripLine(text, pos_ == 0 || src_[pos_ - 1] == '\n');
    }
    EmitText(text, pos_);
    pos_ = tag + 2 + ((modifier == '-' || modifier == '+') ? 1 : 0);
    if (kind == '#') return LexComment(tag);
    if (kind == '%' && IsRawBegin()) return LexRaw(tag);
    return LexTag(kind == '{' ? TokenKind::kVarBegin : TokenKind::kBlockBegin, tag);
  }

  Status LexComment(size_t tag) {
    size_t end = src_.find("#}", pos_);
    if (end == std::string_view::npos) return Error(tag, "unterminated comment: missing '#}'");
    bool strip = end > pos_ && src_[end - 1] == '-';
    pos_ = end + 2;
    SkipAfterTag(strip, options_.trim_blocks);
    return OkStatus();
  }

  // After "{%" (and modifier): is this "raw %}"?
  bool IsRawBegin() {
    size_t p = pos_;
    while (p < src_.size() && IsSpace(src_[p])) ++p;
    if (src_.substr(p, 3) != "raw" || (p + 3 < src_.size() && IsNameChar(src_[p + 3]))) return false;
    p += 3;
    while (p < src_.size() && IsSpace(src_[p])) ++p;
    if (p < src_.size() && (src_[p] == '-' || src_[p] == '+')) ++p;
    if (src_.substr(p, 2) != "%}") return false;
    raw_strip_begin_ = src_[p - 1] == '-';
    pos_ = p + 2;
    return true;
  }

  Status LexRaw(size_t tag) {
    SkipAfterTag(raw_strip_begin_, options_.trim_blocks);
    for (size_t search = pos_;;) {
      size_t end = src_.find("{%", search);
      if (end == std::string_view::npos) return Error(tag, "unterminated {% raw %} block: missing {% endraw %}");
      size_t p = end + 2;
      bool strip_before = p < src_.size() && src_[p] == '-';
      if (p < src_.size() && (src_[p] == '-' || src_[p] == '+')) ++p;
      while (p < src_.size() && IsSpace(src_[p])) ++p;
      if (src_.substr(p, 6) != "endraw") {
        search = end + 2;
        continue;
      }
      p += 6;
      while (p < src_.size() && IsSpace(src_[p])) ++p;
      bool strip_after = p < src_.size() && src_[p] == '-';
      if (p < src_.size() && (src_[p] == '-' || src_[p] == '+')) ++p;
      if (src_.substr(p, 2) != "%}") return Error(end, "malformed {% endraw %} tag");
      std::string_view body = src_.substr(pos_, end - pos_);
      if (strip_before) {
        while (!body.empty() && IsSpace(body.back())) body.remove_suffix(1);
      } else if (options_.lstrip_blocks) {
        body = LstripLine(body, false);
      }
      EmitText(body, pos_);
      pos_ = p + 2;
      SkipAfterTag(strip_after, options_.trim_blocks);
      return OkStatus();
    }
  }

  // Tokens inside {{ }} or {% %}, up to the closing delimiter at bracket depth 0.
  Status LexTag(TokenKind begin, size_t tag) {
    const bool is_var = begin == TokenKind::kVarBegin;
    tokens_.push_back({begin, is_var ? "{{" : "{%", LineAt(tag)});
    int depth = 0;
    while (true) {
      while (pos_ < src_.size() && IsSpace(src_[pos_])) ++pos_;
      if (pos_ >= src_.size()) return Error(tag, fmt::format("unterminated tag: missing '{}'", is_var ? "}}" : "%}"));
      std::string_view rest = src_.substr(pos_);
      std::string_view close = is_var ? "}}" : "%}";
      bool strip = rest.size() >= 3 && rest[0] == '-' && rest.substr(1, 2) == close;
      bool plus = rest.size() >= 3 && rest[0] == '+' && rest.substr(1, 2) == close;
      if (depth == 0 && (strip || plus || rest.substr(0, 2) == close)) {
        tokens_.push_back({is_var ? TokenKind::kVarEnd : TokenKind::kBlockEnd, std::string(close), LineAt(pos_)});
        pos_ += (strip || plus) ? 3 : 2;
        SkipAfterTag(strip, options_.trim_blocks && !is_var && !plus);
        return OkStatus();
      }
      PAGELLM_RETURN_IF_ERROR(LexOne(depth));
    }
  }

  Status LexOne(int& depth) {
    char c = src_[pos_];
    int line = LineAt(pos_);
    if (c == '\'' || c == '"') return LexString(c);
    bool after_dot = !tokens_.empty() && tokens_.back().kind == TokenKind::kOperator && tokens_.back().text == ".";
    if (std::isdigit(static_cast<unsigned char>(c))) return LexNumber(after_dot);
    if (IsNameStart(c)) {
      size_t start = pos_;
      while (pos_ < src_.size() && IsNameChar(src_[pos_])) ++pos_;
      tokens_.push_back({TokenKind::kName, std::string(src_.substr(start, pos_ - start)), line});
      return OkStatus();
    }
    for (std::string_view op : kOperators) {
      if (src_.substr(pos_, op.size()) == op) {
        if (op == "(" || op == "[" || op == "{") ++depth;
        if (op == ")" || op == "]" || op == "}") depth = std::max(0, depth - 1);
        tokens_.push_back({TokenKind::kOperator, std::string(op), line});
        pos_ += op.size();
        return OkStatus();
      }
    }
    return Error(pos_, fmt::format("unexpected character '{}'", c));
  }

  Status LexNumber(bool integer_only) {
    size_t start = pos_;
    int line = LineAt(pos_);
    auto digits = [&] {
      while (pos_ < src_.size() && (std::isdigit(static_cast<unsigned char>(src_[pos_])) || src_[pos_] == '_')) ++pos_;
    };
    digits();
    bool is_float = false;
    if (!integer_only && pos_ + 1 < src_.size() && src_[pos_] == '.' &&
        std::isdigit(static_cast<unsigned char>(src_[pos_ + 1]))) {
      is_float = true;
      ++pos_;
      digits();
    }
    if (!integer_only && pos_ < src_.size() && (src_[pos_] == 'e' || src_[pos_] == 'E')) {
      size_t p = pos_ + 1;
      if (p < src_.size() && (src_[p] == '+' || src_[p] == '-')) ++p;
      if (p < src_.size() && std::isdigit(static_cast<unsigned char>(src_[p]))) {
        is_float = true;
        pos_ = p;
        digits();
      }
    }
    std::string text(src_.substr(start, pos_ - start));
    text.erase(std::remove(text.begin(), text.end(), '_'), text.end());
    tokens_.push_back({is_float ? TokenKind::kFloat : TokenKind::kInt, text, line});
    return OkStatus();
  }

  // Python string-literal escapes, as Jinja decodes them.
  Status LexString(char quote) {
    size_t start = pos_++;
    int line = LineAt(start);
    std::string value;
    while (true) {
      if (pos_ >= src_.size()) return Error(start, "unterminated string literal");
      char c = src_[pos_++];
      if (c == quote) break;
      if (c != '\\') {
        value += c;
        continue;
      }
      if (pos_ >= src_.size()) return Error(start, "unterminated string literal");
      char e = src_[pos_++];
      switch (e) {
        case 'n': value += '\n'; break;
        case 't': value += '\t'; break;
        case 'r': value += '\r'; break;
        case 'b': value += '\b'; break;
        case 'f': value += '\f'; break;
        case 'v': value += '\v'; break;
        case 'a': value += '\a'; break;
        case '0': value += '\0'; break;
        case '\\': value += '\\'; break;
        case '\'': value += '\''; break;
        case '"': value += '"'; break;
        case '\n': break;  // line continuation
        case 'x':
        case 'u':
        case 'U': {
          size_t len = e == 'x' ? 2 : e == 'u' ? 4 : 8;
          std::string hex(src_.substr(pos_, len));
          if (hex.size() != len || !std::all_of(hex.begin(), hex.end(), ::isxdigit)) {
            return Error(start, fmt::format("invalid \\{} escape in string literal", e));
          }
          AppendUtf8(value, static_cast<uint32_t>(std::stoul(hex, nullptr, 16)));
          pos_ += len;
          break;
        }
        default: value += '\\'; value += e;  // Python keeps unknown escapes verbatim
      }
    }
    tokens_.push_back({TokenKind::kString, std::move(value), line});
    return OkStatus();
  }

  std::string_view src_;
  LexOptions options_;
  size_t pos_ = 0;
  size_t line_offset_ = 0;
  int line_ = 1;
  bool raw_strip_begin_ = false;
  std::vector<Token> tokens_;
};

}  // namespace

StatusOr<std::vector<Token>> Lex(std::string_view source, const LexOptions& options) {
  return Lexer(source, options).Run();
}

const char* TokenKindName(TokenKind kind) {
  switch (kind) {
    case TokenKind::kText: return "text";
    case TokenKind::kVarBegin: return "'{{'";
    case TokenKind::kVarEnd: return "'}}'";
    case TokenKind::kBlockBegin: return "'{%'";
    case TokenKind::kBlockEnd: return "'%}'";
    case TokenKind::kName: return "name";
    case TokenKind::kString: return "string";
    case TokenKind::kInt: return "integer";
    case TokenKind::kFloat: return "float";
    case TokenKind::kOperator: return "operator";
    case TokenKind::kEof: return "end of template";
  }
  return "?";
}

}  // namespace pagellm::chat
