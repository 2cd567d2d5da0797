#include "parsers/python_json.h"

namespace pagellm::parsers {
namespace {

void DumpTo(const OrderedJson& value, std::string* out) {
  if (value.is_object()) {
    out->push_back('{');
    bool first = true;
    for (const auto& [key, item] : value.items()) {
      if (!first) out->append(", ");
      first = false;
      out->append(OrderedJson(key).dump(-1, ' ', false, OrderedJson::error_handler_t::replace));
      out->append(": ");
      DumpTo(item, out);
    }
    out->push_back('}');
  } else if (value.is_array()) {
    out->push_back('[');
    bool first = true;
    for (const OrderedJson& item : value) {
      if (!first) out->append(", ");
      first = false;
      DumpTo(item, out);
    }
    out->push_back(']');
  } else {
    // Scalars: nlohmann escapes strings like json.dumps(ensure_ascii=False) and prints
    // the shortest round-trip form of doubles ("3.14", "1e+20"), as Python's repr does.
    out->append(value.dump(-1, ' ', false, OrderedJson::error_handler_t::replace));
  }
}

}  // namespace

std::string PythonJsonDumps(const OrderedJson& value) {
  std::string out;
  DumpTo(value, &out);
  return out;
}

}  // namespace pagellm::parsers
