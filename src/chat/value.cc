#include "chat/value.h"

#include <algorithm>
#include <charconv>
#include <cmath>

#include <fmt/format.h>

namespace pagellm::chat {

Value Value::List(ValueList items) {
  Value v(ValueKind::kList);
  v.list_ = std::make_shared<ValueList>(std::move(items));
  return v;
}

Value Value::Tuple(ValueList items) {
  Value v = List(std::move(items));
  v.tuple_ = true;
  return v;
}

Value Value::Dict(ValueDict items) {
  Value v(ValueKind::kDict);
  v.dict_ = std::make_shared<ValueDict>(std::move(items));
  return v;
}

Value Value::Namespace(ValueDict items) {
  Value v = Dict(std::move(items));
  v.kind_ = ValueKind::kNamespace;
  return v;
}

Value Value::Function(std::string name, NativeFunction fn) {
  Value v(ValueKind::kFunction);
  v.fn_ = std::make_shared<std::pair<std::string, NativeFunction>>(std::move(name), std::move(fn));
  return v;
}

Value Value::FromJson(const OrderedJson& json) {
  switch (json.type()) {
    case OrderedJson::value_t::null: return None();
    case OrderedJson::value_t::boolean: return Bool(json.get<bool>());
    case OrderedJson::value_t::number_integer: return Int(json.get<int64_t>());
    case OrderedJson::value_t::number_unsigned: return Int(static_cast<int64_t>(json.get<uint64_t>()));
    case OrderedJson::value_t::number_float: return Float(json.get<double>());
    case OrderedJson::value_t::string: return String(json.get<std::string>());
    case OrderedJson::value_t::array: {
      ValueList items;
      items.reserve(json.size());
      for (const auto& item : json) items.push_back(FromJson(item));
      return List(std::move(items));
    }
    case OrderedJson::value_t::object: {
      ValueDict items;
      items.reserve(json.size());
      for (auto it = json.begin(); it != json.end(); ++it) items.emplace_back(it.key(), FromJson(it.value()));
      return Dict(std::move(items));
    }
    default: return None();  // binary / discarded never come from parsed JSON text
  }
}

const Value* Value::Find(std::string_view key) const {
  if (!dict_) return nullptr;
  for (const auto& [k, v] : *dict_) {
    if (k == key) return &v;
  }
  return nullptr;
}

void Value::Set(const std::string& key, Value value) const {
  PAGELLM_CHECK(dict_ != nullptr);
  for (auto& [k, v] : *dict_) {
    if (k == key) {
      v = std::move(value);
      return;
    }
  }
  dict_->emplace_back(key, std::move(value));
}

bool Value::Truthy() const {
  switch (kind_) {
    case ValueKind::kUndefined:
    case ValueKind::kNone: return false;
    case ValueKind::kBool:
    case ValueKind::kInt: return int_ != 0;
    case ValueKind::kFloat: return float_ != 0.0;
    case ValueKind::kString: return !str_->empty();
    case ValueKind::kList: return !list_->empty();
    case ValueKind::kDict: return !dict_->empty();
    case ValueKind::kNamespace:
    case ValueKind::kFunction: return true;
  }
  return false;
}

std::string FormatPythonFloat(double d) {
  if (std::isnan(d)) return "nan";
  if (std::isinf(d)) return d > 0 ? "inf" : "-inf";
  // Shortest round-trip digits, then Python's repr layout: scientific when the
  // decimal exponent is < -4 or >= 16, otherwise positional with at least ".0".
  char buf[64];
  auto res = std::to_chars(buf, buf + sizeof(buf), d, std::chars_format::scientific);
  std::string sci(buf, res.ptr);
  size_t e_pos = sci.find('e');
  std::string mantissa = sci.substr(0, e_pos);
  int exponent = std::stoi(sci.substr(e_pos + 1));
  bool negative = mantissa[0] == '-';
  if (negative) mantissa.erase(0, 1);
  std::string digits;
  for (char c : mantissa) {
    if (c != '.') digits += c;
  }
  std::string out;
  if (exponent < -4 || exponent >= 16) {
    out = digits.substr(0, 1);
    if (digits.size() > 1) out += "." + digits.substr(1);
    out += fmt::format("e{}{:02d}", exponent < 0 ? '-' : '+', std::abs(exponent));
  } else if (exponent < 0) {
    out = "0." + std::string(-exponent - 1, '0') + digits;
  } else {
    size_t int_len = static_cast<size_t>(exponent) + 1;
    if (digits.size() <= int_len) {
      out = digits + std::string(int_len - digits.size(), '0') + ".0";
    } else {
      out = digits.substr(0, int_len) + "." + digits.substr(int_len);
    }
  }
  return negative ? "-" + out : out;
}

std::string JsonQuote(const std::string& s, bool ensure_ascii) {
  std::string out = "\"";
  for (size_t i = 0; i < s.size(); ++i) {
    unsigned char c = s[i];
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\r': out += "\\r"; break;
      case '\t': out += "\\t"; break;
      case '\b': out += "\\b"; break;
      case '\f': out += "\\f"; break;
      default:
        if (c < 0x20) {
          out += fmt::format("\\u{:04x}", c);
        } else if (c >= 0x80 && ensure_ascii) {
          // Decode one UTF-8 sequence; emit \uXXXX (surrogate pairs above the BMP).
          int len = c >= 0xF0 ? 4 : c >= 0xE0 ? 3 : 2;
          uint32_t cp = c & (0x3F >> (len - 1));
          for (int k = 1; k < len && i + 1 < s.size(); ++k) cp = (cp << 6) | (s[++i] & 0x3F);
          if (cp >= 0x10000) {
            cp -= 0x10000;
            out += fmt::format("\\u{:04x}\\u{:04x}", 0xD800 + (cp >> 10), 0xDC00 + (cp & 0x3FF));
          } else {
            out += fmt::format("\\u{:04x}", cp);
          }
        } else {
          out += static_cast<char>(c);
        }
    }
  }
  return out + "\"";
}

namespace {

// Python repr of a str: single quotes unless the text has ' and no ".
std::string ReprString(const std::string& s) {
  bool has_single = s.find('\'') != std::string::npos;
  bool has_double = s.find('"') != std::string::npos;
  char quote = (has_single && !has_double) ? '"' : '\'';
  std::string out(1, quote);
  for (unsigned char c : s) {
    if (c == quote || c == '\\') {
      out += '\\';
      out += static_cast<char>(c);
    } else if (c == '\n') {
      out += "\\n";
    } else if (c == '\r') {
      out += "\\r";
    } else if (c == '\t') {
      out += "\\t";
    } else if (c < 0x20 || c == 0x7f) {
      out += fmt::format("\\x{:02x}", c);
    } else {
      out += static_cast<char>(c);
    }
  }
  return out + quote;
}

}  // namespace

std::string Value::ToString() const {
  switch (kind_) {
    case ValueKind::kUndefined: return "";
    case ValueKind::kString: return *str_;
    default: return Repr();
  }
}

std::string Value::Repr() const {
  switch (kind_) {
    case ValueKind::kUndefined: return "";
    case ValueKind::kNone: return "None";
    case ValueKind::kBool: return int_ ? "True" : "False";
    case ValueKind::kInt: return std::to_string(int_);
    case ValueKind::kFloat: return FormatPythonFloat(float_);
    case ValueKind::kString: return ReprString(*str_);
    case ValueKind::kList: {
      std::string out = tuple_ ? "(" : "[";
      for (size_t i = 0; i < list_->size(); ++i) out += (i ? ", " : "") + (*list_)[i].Repr();
      if (tuple_) return out + (list_->size() == 1 ? ",)" : ")");
      return out + "]";
    }
    case ValueKind::kDict: {
      std::string out = "{";
      for (size_t i = 0; i < dict_->size(); ++i) {
        out += (i ? ", " : "") + ReprString((*dict_)[i].first) + ": " + (*dict_)[i].second.Repr();
      }
      return out + "}";
    }
    case ValueKind::kNamespace: return "<Namespace>";
    case ValueKind::kFunction: return fmt::format("<function {}>", fn_->first);
  }
  return "";
}

std::optional<std::string> Value::ToJson(const JsonStyle& style, int depth) const {
  std::string pad, child_pad;
  if (style.indent) {
    pad = "\n" + std::string(static_cast<size_t>(*style.indent) * depth, ' ');
    child_pad = pad + std::string(static_cast<size_t>(*style.indent), ' ');
  }
  switch (kind_) {
    case ValueKind::kUndefined:
    case ValueKind::kNone: return "null";
    case ValueKind::kBool: return int_ ? "true" : "false";
    case ValueKind::kInt: return std::to_string(int_);
    case ValueKind::kFloat:
      if (std::isnan(float_)) return "NaN";
      if (std::isinf(float_)) return float_ > 0 ? "Infinity" : "-Infinity";
      return FormatPythonFloat(float_);
    case ValueKind::kString: return JsonQuote(*str_, style.ensure_ascii);
    case ValueKind::kList: {
      if (list_->empty()) return "[]";
      std::string out = "[";
      for (size_t i = 0; i < list_->size(); ++i) {
        auto item = (*list_)[i].ToJson(style, depth + 1);
        if (!item) return std::nullopt;
        out += (i ? style.item_separator : "") + child_pad + *item;
      }
      return out + pad + "]";
    }
    case ValueKind::kDict:
    case ValueKind::kNamespace: {
      if (dict_->empty()) return "{}";
      std::vector<const std::pair<std::string, Value>*> entries;
      for (const auto& entry : *dict_) entries.push_back(&entry);
      if (style.sort_keys) {
        std::stable_sort(entries.begin(), entries.end(), [](auto* a, auto* b) { return a->first < b->first; });
      }
      std::string out = "{";
      for (size_t i = 0; i < entries.size(); ++i) {
        auto item = entries[i]->second.ToJson(style, depth + 1);
        if (!item) return std::nullopt;
        out += (i ? style.item_separator : "") + child_pad + JsonQuote(entries[i]->first, style.ensure_ascii) +
               style.key_separator + *item;
      }
      return out + pad + "}";
    }
    case ValueKind::kFunction: return std::nullopt;
  }
  return std::nullopt;
}

std::string Value::TypeName() const {
  switch (kind_) {
    case ValueKind::kUndefined: return "undefined";
    case ValueKind::kNone: return "NoneType";
    case ValueKind::kBool: return "bool";
    case ValueKind::kInt: return "int";
    case ValueKind::kFloat: return "float";
    case ValueKind::kString: return "str";
    case ValueKind::kList: return "list";
    case ValueKind::kDict: return "dict";
    case ValueKind::kNamespace: return "Namespace";
    case ValueKind::kFunction: return "function";
  }
  return "?";
}

bool operator==(const Value& a, const Value& b) {
  if (a.is_number() && b.is_number()) {
    if (a.is_float() || b.is_float()) return a.as_double() == b.as_double();
    return a.as_int() == b.as_int();
  }
  if (a.kind_ != b.kind_) return false;
  switch (a.kind_) {
    case ValueKind::kUndefined:
    case ValueKind::kNone: return true;
    case ValueKind::kString: return *a.str_ == *b.str_;
    case ValueKind::kList: return *a.list_ == *b.list_;
    case ValueKind::kDict: {
      if (a.dict_->size() != b.dict_->size()) return false;
      for (const auto& [k, v] : *a.dict_) {
        const Value* other = b.Find(k);
        if (!other || !(*other == v)) return false;
      }
      return true;
    }
    default: return a.dict_ == b.dict_ && a.fn_ == b.fn_;  // identity
  }
}

std::optional<Value> CallArgs::Take(size_t index, std::string_view name) {
  if (index < positional.size()) return positional[index];
  for (const auto& [k, v] : keyword) {
    if (k == name) return v;
  }
  return std::nullopt;
}

}  // namespace pagellm::chat
