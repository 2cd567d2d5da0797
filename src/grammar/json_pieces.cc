#include "grammar/json_pieces.h"

#include <cmath>

#include <fmt/format.h>

#include "grammar/char_classes.h"
#include "grammar/regex_parser.h"

namespace pagellm::grammar {
namespace {

constexpr int32_t kMaxIntDigits = 15;   // 999,999,999,999,999 < 2^53: exact in JSON parsers
constexpr int32_t kMaxFracDigits = 15;
constexpr double kIntClamp = 9.0e15;

// Content regexes for `format`, each a subset of what ajv-formats ("full") accepts.
struct FormatRegex {
  const char* name;
  const char* regex;
};
constexpr const char* kDate =
    "[0-9]{4}-((0[1-9]|1[0-2])-(0[1-9]|1[0-9]|2[0-8])|(0[13-9]|1[0-2])-(29|30)|(0[13578]|1[02])-31)";
constexpr const char* kTime = "([01][0-9]|2[0-3]):[0-5][0-9]:[0-5][0-9](\\.[0-9]{1,6})?(Z|[+-]([01][0-9]|2[0-3]):[0-5][0-9])";
const FormatRegex kFormats[] = {
    {"date", kDate},
    {"time", kTime},
    {"date-time", nullptr},  // date "T" time
    {"duration", "P[0-9]{1,4}D|P[0-9]{1,4}W|PT[0-9]{1,4}[HMS]"},
    {"email", "[a-z0-9]{1,20}(\\.[a-z0-9]{1,20}){0,3}@([a-z0-9]{1,20}\\.){1,3}[a-z]{2,6}"},
    {"hostname", "[a-z0-9]{1,20}(\\.[a-z0-9]{1,20}){0,4}"},
    {"ipv4", "((25[0-5]|2[0-4][0-9]|1[0-9]{2}|[1-9]?[0-9])\\.){3}(25[0-5]|2[0-4][0-9]|1[0-9]{2}|[1-9]?[0-9])"},
    {"ipv6", "[0-9a-f]{1,4}(:[0-9a-f]{1,4}){7}"},
    {"uuid", "[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}"},
    {"uri", "https?://[a-z0-9]{1,20}(\\.[a-z0-9]{1,20}){0,3}(/[a-zA-Z0-9_~-]{1,20}){0,5}"},
    {"uri-reference", "https?://[a-z0-9]{1,20}(\\.[a-z0-9]{1,20}){0,3}(/[a-zA-Z0-9_~-]{1,20}){0,5}"},
};

bool IsIntegral(double v) { return std::floor(v) == v; }

}  // namespace

JsonPieces::JsonPieces(Grammar& g, const JsonWhitespace& ws) : g_(g), ws_(ws) {}

Status JsonPieces::Init() {
  ws_rule_ = g_.DeclareRule(g_.UniqueName("ws"));
  if (ws_.disable) {
    g_.DefineRule(ws_rule_, g_.AddEmpty());
  } else if (!ws_.pattern.empty()) {
    PAGELLM_ASSIGN_OR_RETURN(int32_t e, CompileRegex(g_, ws_.pattern, {}));
    g_.DefineRule(ws_rule_, e);
  } else {
    int32_t indent = g_.AddRepeat(g_.AddClass({{' ', ' '}, {'\t', '\t'}}), 0, 20);
    int32_t nl = g_.AddSeq({g_.AddLiteral("\n"), indent});
    g_.DefineRule(ws_rule_, g_.AddOptional(g_.AddAlt({g_.AddLiteral(" "), nl})));
  }
  auto hex = [&](std::vector<CodepointRange> r) { return g_.AddClass(std::move(r)); };
  int32_t h = hex({{'0', '9'}, {'a', 'f'}, {'A', 'F'}});
  int32_t u = g_.AddSeq({g_.AddLiteral("u"),
                         g_.AddAlt({g_.AddSeq({hex({{'0', '9'}, {'a', 'c'}, {'A', 'C'}}), h, h, h}),
                                    g_.AddSeq({hex({{'d', 'd'}, {'D', 'D'}}), hex({{'0', '7'}}), h, h}),
                                    g_.AddSeq({hex({{'e', 'f'}, {'E', 'F'}}), h, h, h})})});
  int32_t esc = g_.AddSeq({g_.AddLiteral("\\"), g_.AddAlt({hex({{'"', '"'}, {'\\', '\\'}, {'/', '/'}, {'b', 'b'},
                                                                {'f', 'f'}, {'n', 'n'}, {'r', 'r'}, {'t', 't'}}),
                                                           u})});
  int32_t plain = g_.AddClass({{0, 0x1F}, {'"', '"'}, {'\\', '\\'}}, /*negate=*/true);
  char_rule_ = g_.AddRule(g_.UniqueName("json-char"), g_.AddAlt({plain, esc}));
  DefineAnyValue();
  return OkStatus();
}

int32_t JsonPieces::EncodedClass(const std::vector<CodepointRange>& ranges) {
  std::vector<int32_t> alts;
  auto contains = [&](uint32_t cp) {
    for (auto [lo, hi] : ranges) {
      if (lo <= cp && cp <= hi) return true;
    }
    return false;
  };
  for (uint32_t cp = 0; cp <= '\\'; ++cp) {
    if (!(cp < 0x20 || cp == '"' || cp == '\\') || !contains(cp)) continue;
    std::string lit;
    switch (cp) {
      case '"': lit = "\\\""; break;
      case '\\': lit = "\\\\"; break;
      case '\n': lit = "\\n"; break;
      case '\t': lit = "\\t"; break;
      case '\r': lit = "\\r"; break;
      case '\b': lit = "\\b"; break;
      case '\f': lit = "\\f"; break;
      default: lit = fmt::format("\\u{:04x}", cp);
    }
    alts.push_back(g_.AddLiteral(lit));
  }
  std::vector<CodepointRange> plain = ranges;
  std::vector<CodepointRange> specials = {{0, 0x1F}, {'"', '"'}, {'\\', '\\'}};
  plain = NegateRanges(NormalizeRanges([&] {
    std::vector<CodepointRange> r = NegateRanges(plain);
    r.insert(r.end(), specials.begin(), specials.end());
    return r;
  }()));
  if (!plain.empty()) alts.push_back(g_.AddClass(plain));
  return g_.AddAlt(std::move(alts));
}

int32_t JsonPieces::StringOf(int32_t body_char, int32_t min, int32_t max) {
  return g_.AddSeq({g_.AddLiteral("\""), g_.AddRepeat(body_char, min, max), g_.AddLiteral("\"")});
}

int32_t JsonPieces::Digits(int32_t min, int32_t max) { return g_.AddRepeat(g_.AddClass({{'0', '9'}}), min, max); }

int32_t JsonPieces::SameLength(const std::string& lo, const std::string& hi) {
  size_t n = lo.size();
  if (n == 0) return g_.AddEmpty();
  if (lo == hi) return g_.AddLiteral(lo);
  if (lo[0] == hi[0]) return g_.AddSeq({g_.AddLiteral(lo.substr(0, 1)), SameLength(lo.substr(1), hi.substr(1))});
  bool lo_zero = lo.find_first_not_of('0', 1) == std::string::npos;
  bool hi_nine = hi.find_first_not_of('9', 1) == std::string::npos;
  std::vector<int32_t> alts;
  if (!lo_zero) {
    alts.push_back(g_.AddSeq({g_.AddLiteral(lo.substr(0, 1)), SameLength(lo.substr(1), std::string(n - 1, '9'))}));
  }
  uint32_t m0 = lo[0] + (lo_zero ? 0 : 1), m1 = hi[0] - (hi_nine ? 0 : 1);
  if (m0 <= m1) {
    alts.push_back(g_.AddSeq({g_.AddClass({{m0, m1}}), Digits(static_cast<int32_t>(n - 1), static_cast<int32_t>(n - 1))}));
  }
  if (!hi_nine) {
    alts.push_back(g_.AddSeq({g_.AddLiteral(hi.substr(0, 1)), SameLength(std::string(n - 1, '0'), hi.substr(1))}));
  }
  return g_.AddAlt(std::move(alts));
}

int32_t JsonPieces::NonNegRange(int64_t lo, std::optional<int64_t> hi) {
  std::string a = std::to_string(lo);
  std::vector<int32_t> alts;
  size_t last = hi ? std::to_string(*hi).size() : a.size();
  for (size_t len = a.size(); len <= last; ++len) {
    std::string l = len == a.size() ? a : "1" + std::string(len - 1, '0');
    std::string h = (hi && len == last) ? std::to_string(*hi) : std::string(len, '9');
    alts.push_back(SameLength(l, h));
  }
  if (!hi && static_cast<int32_t>(a.size()) < kMaxIntDigits) {  // every longer number
    alts.push_back(g_.AddSeq({g_.AddClass({{'1', '9'}}), Digits(static_cast<int32_t>(a.size()), kMaxIntDigits - 1)}));
  }
  return g_.AddAlt(std::move(alts));
}

int32_t JsonPieces::IntRange(std::optional<int64_t> lo, std::optional<int64_t> hi) {
  std::vector<int32_t> alts;
  int64_t neg_top = hi ? std::min<int64_t>(*hi, -1) : -1;  // largest negative allowed
  if ((!lo || *lo <= neg_top)) {
    std::optional<int64_t> abs_hi = lo ? std::optional<int64_t>(-*lo) : std::nullopt;
    alts.push_back(g_.AddSeq({g_.AddLiteral("-"), NonNegRange(-neg_top, abs_hi)}));
  }
  int64_t pos_lo = lo ? std::max<int64_t>(*lo, 0) : 0;
  if (!hi || pos_lo <= *hi) alts.push_back(NonNegRange(pos_lo, hi));
  return g_.AddAlt(std::move(alts));
}

StatusOr<int32_t> JsonPieces::Integer(const NumberBounds& b) {
  std::optional<int64_t> lo, hi;
  if (b.minimum) {
    double v = std::ceil(*b.minimum);
    if (b.exclusive_minimum && v == *b.minimum) v += 1;
    lo = static_cast<int64_t>(std::clamp(v, -kIntClamp, kIntClamp));
  }
  if (b.maximum) {
    double v = std::floor(*b.maximum);
    if (b.exclusive_maximum && v == *b.maximum) v -= 1;
    hi = static_cast<int64_t>(std::clamp(v, -kIntClamp, kIntClamp));
  }
  if (lo && hi && *lo > *hi) return InvalidArgumentError("minimum/maximum: no integer lies within the bounds");
  return IntRange(lo, hi);
}

StatusOr<int32_t> JsonPieces::Number(const NumberBounds& b) {
  int32_t frac = g_.AddSeq({g_.AddLiteral("."), Digits(1, kMaxFracDigits)});
  if (!b.minimum && !b.maximum) {
    int32_t exp = g_.AddSeq({g_.AddClass({{'e', 'e'}, {'E', 'E'}}), g_.AddOptional(g_.AddClass({{'+', '+'}, {'-', '-'}})),
                             Digits(1, 2)});
    PAGELLM_ASSIGN_OR_RETURN(int32_t i, Integer(b));
    return g_.AddSeq({i, g_.AddOptional(frac), g_.AddOptional(exp)});
  }
  std::vector<int32_t> alts;
  if (auto i = Integer(b); i.ok()) alts.push_back(*i);
  // Smallest / largest integers within the bounds, for the fraction forms below.
  double lo_int = b.minimum ? std::ceil(*b.minimum) + ((b.exclusive_minimum && IsIntegral(*b.minimum)) ? 1 : 0) : 0;
  double hi_int = b.maximum ? std::floor(*b.maximum) - ((b.exclusive_maximum && IsIntegral(*b.maximum)) ? 1 : 0) : 0;
  // k.fff with k >= 0 lies in [k, k+1): needs k within bounds and k+1 <= maximum.
  double k0 = std::max(0.0, b.minimum ? lo_int : 0.0);
  double k1 = b.maximum ? std::floor(*b.maximum) - 1 : kIntClamp;
  if (k0 <= k1 && k0 <= kIntClamp) {
    alts.push_back(g_.AddSeq({NonNegRange(static_cast<int64_t>(k0), static_cast<int64_t>(std::min(k1, kIntClamp))), frac}));
  }
  // -k.fff lies in (-(k+1), -k]: needs -k within bounds and -(k+1) >= minimum.
  double n0 = std::max(0.0, b.maximum ? -hi_int : 0.0);
  double n1 = b.minimum ? std::floor(-*b.minimum) - 1 : kIntClamp;
  if (n0 <= n1 && n0 <= kIntClamp) {
    alts.push_back(g_.AddSeq({g_.AddLiteral("-"),
                              NonNegRange(static_cast<int64_t>(n0), static_cast<int64_t>(std::min(n1, kIntClamp))), frac}));
  }
  if (alts.empty()) return InvalidArgumentError("minimum/maximum: no number lies within the bounds");
  return g_.AddAlt(std::move(alts));
}

StatusOr<int32_t> JsonPieces::Format(std::string_view format) {
  RegexOptions opts;
  opts.emit_class = [this](Grammar&, const std::vector<CodepointRange>& r) { return EncodedClass(r); };
  if (format == "date-time") {
    PAGELLM_ASSIGN_OR_RETURN(int32_t d, CompileRegex(g_, kDate, opts));
    PAGELLM_ASSIGN_OR_RETURN(int32_t t, CompileRegex(g_, kTime, opts));
    return g_.AddSeq({d, g_.AddLiteral("T"), t});
  }
  for (const FormatRegex& f : kFormats) {
    if (format == f.name && f.regex) return CompileRegex(g_, f.regex, opts);
  }
  return NotFoundError(fmt::format("format '{}' is not supported", format));
}

void JsonPieces::DefineAnyValue() {
  value_rule_ = g_.DeclareRule(g_.UniqueName("json-value"));
  int32_t str = g_.AddRule(g_.UniqueName("json-string"), StringOf(Char(), 0, -1));
  auto sref = [&] { return g_.AddRef(str); };
  auto val = [&] { return g_.AddRef(value_rule_); };
  auto comma = [&] { return g_.AddSeq({Ws(), g_.AddLiteral(","), Ws()}); };
  int32_t member = g_.AddSeq({sref(), Ws(), g_.AddLiteral(":"), Ws(), val()});
  int32_t members = g_.AddSeq({member, g_.AddRepeat(g_.AddSeq({comma(), member}), 0, -1), Ws()});
  int32_t object = g_.AddSeq({g_.AddLiteral("{"), Ws(), g_.AddOptional(members), g_.AddLiteral("}")});
  int32_t items = g_.AddSeq({val(), g_.AddRepeat(g_.AddSeq({comma(), val()}), 0, -1), Ws()});
  int32_t array = g_.AddSeq({g_.AddLiteral("["), Ws(), g_.AddOptional(items), g_.AddLiteral("]")});
  int32_t number = *Number({});
  g_.DefineRule(value_rule_, g_.AddAlt({object, array, sref(), number, g_.AddLiteral("true"), g_.AddLiteral("false"),
                                        g_.AddLiteral("null")}));
}

}  // namespace pagellm::grammar
