// JSON text in the exact shape Python's json.dumps(value, ensure_ascii=False) writes,
// which is what vLLM puts into tool-call `arguments`: ", " between items, ": " after
// keys, non-ASCII left as UTF-8, key order preserved.
//
//   PythonJsonDumps(OrderedJson::parse(R"({"a":[1,2],"b":"é"})"))
//     == R"({"a": [1, 2], "b": "é"})"
#pragma once

#include <string>

#include "common/json.h"

namespace pagellm::parsers {

std::string PythonJsonDumps(const OrderedJson& value);

}  // namespace pagellm::parsers
