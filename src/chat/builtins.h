// Builtin filters, tests, methods and globals of the chat-template interpreter.
//
// Filters and tests follow Jinja2 3.1 (plus transformers' tojson override); methods are
// the Python str/dict methods templates call (`content.split('</think>')`,
// `tool.get('name')`). All of them throw TemplateError (evaluator.h) on misuse.
//
//   const FilterFn* trim = FindFilter("trim");
//   Value out = (*trim)(evaluator, Value::String(" a "), args);   // "a"
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "chat/value.h"

namespace pagellm::chat {

class Evaluator;

using FilterFn = Value (*)(Evaluator& ev, const Value& operand, CallArgs& args);
using TestFn = bool (*)(Evaluator& ev, const Value& operand, CallArgs& args);

// nullptr if there is no such filter / test.
const FilterFn* FindFilter(std::string_view name);
const TestFn* FindTest(std::string_view name);

// The bound method `object.name` for str and dict values (builtin_methods.cc).
std::optional<Value> GetMethod(const Value& object, const std::string& name);

// range, namespace, dict, raise_exception, strftime_now.
ValueDict MakeGlobalFunctions();

// Argument helpers shared by the builtin files.
std::string ArgString(const std::optional<Value>& v, const char* what, std::string fallback);
int64_t ArgInt(const std::optional<Value>& v, const char* what, int64_t fallback);
bool ArgBool(const std::optional<Value>& v, bool fallback);

}  // namespace pagellm::chat
