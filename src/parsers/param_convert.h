// Typing of qwen3_coder parameter values by the request's tool schemas, following
// vLLM's Qwen3CoderToolParser._convert_param_value:
//
//   "null" (any case)                         -> null, whatever the schema says
//   parameter not in the schema               -> string
//   string | str | text | varchar | char | enum -> string (also when no "type")
//   int* | uint* | long* | short* | unsigned*  -> integer, else the string
//   num* | float*                              -> number (integral values as integers,
//                                                as vLLM's float->int step), else string
//   boolean | bool | binary                    -> value.lower() == "true"
//   object | array | arr | dict* | list*       -> JSON, else the fallback below
//   anything else / fallback                   -> JSON literal if it parses, Python
//                                                True/False/None, else the string
// The type is taken from "type" (a string, or the first non-"null" entry of a list),
// else from the first non-null branch of "anyOf"/"oneOf" (Pydantic Optional[T]).
// NOTE: vLLM's last fallback is ast.literal_eval; here JSON plus the three Python
// keywords stand in for it (single-quoted Python strings/dicts stay strings).
//
//   const OrderedJson* props = FindToolProperties(tools, "get_weather");
//   OrderedJson v = ConvertParamValue("42", props, "days");   // 42 if days: integer
#pragma once

#include <string>
#include <string_view>

#include "common/json.h"

namespace pagellm::parsers {

// The "properties" object of function `name` in an OpenAI `tools` array (or its
// "parameters" object when it has no "properties"); nullptr when not found.
const OrderedJson* FindToolProperties(const OrderedJson& tools, std::string_view name);

// Lower-cased schema type of `param`, "string" when the schema gives none, and ""
// when `properties` is null or does not list `param`.
std::string ParamSchemaType(const OrderedJson* properties, std::string_view param);

OrderedJson ConvertParamValue(std::string_view value, const OrderedJson* properties,
                              std::string_view param);

}  // namespace pagellm::parsers
