#include "chat/chat_template.h"

#include <filesystem>

#include <fmt/format.h>

#include "chat/ast.h"
#include "chat/builtins.h"
#include "chat/evaluator.h"
#include "chat/parser.h"
#include "common/mapped_file.h"

namespace pagellm::chat {
namespace {

constexpr const char* kSpecialTokenKeys[] = {"bos_token", "eos_token", "unk_token",  "sep_token",
                                             "pad_token", "cls_token", "mask_token", "additional_special_tokens"};

// A token in tokenizer_config.json is a string or an AddedToken object {"content": ...}.
OrderedJson TokenString(const OrderedJson& token) {
  if (token.is_object() && token.contains("content")) return token["content"];
  return token;
}

OrderedJson SpecialTokensFromConfig(const OrderedJson& config) {
  OrderedJson tokens = OrderedJson::object();
  for (const char* key : kSpecialTokenKeys) {
    if (!config.contains(key) || config[key].is_null()) continue;
    const OrderedJson& value = config[key];
    if (value.is_array()) {
      OrderedJson list = OrderedJson::array();
      for (const auto& t : value) list.push_back(TokenString(t));
      tokens[key] = std::move(list);
    } else {
      tokens[key] = TokenString(value);
    }
  }
  return tokens;
}

StatusOr<std::string> TemplateFromConfig(const OrderedJson& config, const std::string& path) {
  if (!config.contains("chat_template")) return NotFoundError(fmt::format("{} has no chat_template", path));
  const OrderedJson& t = config["chat_template"];
  if (t.is_string()) return t.get<std::string>();
  if (t.is_array()) {
    std::string names;
    for (const auto& entry : t) {
      if (entry.is_object() && entry.value("name", "") == "default" && entry.contains("template") &&
          entry["template"].is_string()) {
        return entry["template"].get<std::string>();
      }
      if (entry.is_object()) names += " " + entry.value("name", "?");
    }
    return InvalidArgumentError(fmt::format("{}: chat_template list has no 'default' entry (has:{})", path, names));
  }
  return InvalidArgumentError(fmt::format("{}: chat_template must be a string or a list", path));
}

StatusOr<OrderedJson> ReadOrderedJson(const std::string& path) {
  PAGELLM_ASSIGN_OR_RETURN(std::string text, ReadFileToString(path));
  OrderedJson parsed = OrderedJson::parse(text, nullptr, /*allow_exceptions=*/false);
  if (parsed.is_discarded() || !parsed.is_object()) return InvalidArgumentError(fmt::format("{}: not a JSON object", path));
  return parsed;
}

// Unknown filters and tests are found at load time, as Jinja's compiler does.
Status ValidateExpr(const Expr* e) {
  if (!e) return OkStatus();
  if (e->kind == ExprKind::kFilter && !FindFilter(e->name)) {
    return InvalidArgumentError(fmt::format("line {}: unknown or unsupported filter '{}'", e->line, e->name));
  }
  if (e->kind == ExprKind::kTest && !FindTest(e->name)) {
    return InvalidArgumentError(fmt::format("line {}: unknown or unsupported test '{}'", e->line, e->name));
  }
  for (const ExprPtr& c : e->children) PAGELLM_RETURN_IF_ERROR(ValidateExpr(c.get()));
  for (const ExprPtr& c : e->args.positional) PAGELLM_RETURN_IF_ERROR(ValidateExpr(c.get()));
  for (const auto& [k, c] : e->args.keyword) PAGELLM_RETURN_IF_ERROR(ValidateExpr(c.get()));
  return OkStatus();
}

Status ValidateNodes(const NodeList& nodes) {
  for (const NodePtr& n : nodes) {
    for (const Expr* e : {n->expr.get(), n->target.get(), n->filter.get()}) PAGELLM_RETURN_IF_ERROR(ValidateExpr(e));
    for (const ExprPtr& d : n->defaults) PAGELLM_RETURN_IF_ERROR(ValidateExpr(d.get()));
    PAGELLM_RETURN_IF_ERROR(ValidateNodes(n->body));
    PAGELLM_RETURN_IF_ERROR(ValidateNodes(n->else_body));
  }
  return OkStatus();
}

}  // namespace

ChatTemplate::ChatTemplate(ChatTemplate&&) noexcept = default;
ChatTemplate& ChatTemplate::operator=(ChatTemplate&&) noexcept = default;
ChatTemplate::~ChatTemplate() = default;

StatusOr<ChatTemplate> ChatTemplate::FromStringWithTokens(std::string source, const OrderedJson& special_tokens) {
  PAGELLM_ASSIGN_OR_RETURN(NodeList program, ParseTemplate(source));
  PAGELLM_RETURN_IF_ERROR(ValidateNodes(program));
  ChatTemplate t;
  t.source_ = std::move(source);
  t.detected_content_format_ = DetectContentFormat(program);
  t.program_ = std::make_unique<NodeList>(std::move(program));
  t.special_tokens_ = OrderedJson::object();
  if (special_tokens.is_object()) {
    for (auto it = special_tokens.begin(); it != special_tokens.end(); ++it) {
      if (!it.value().is_null()) t.special_tokens_[it.key()] = it.value();
    }
  }
  return t;
}

StatusOr<ChatTemplate> ChatTemplate::FromString(std::string source, std::string bos_token, std::string eos_token) {
  OrderedJson tokens = OrderedJson::object();
  if (!bos_token.empty()) tokens["bos_token"] = bos_token;
  if (!eos_token.empty()) tokens["eos_token"] = eos_token;
  return FromStringWithTokens(std::move(source), tokens);
}

StatusOr<ChatTemplate> ChatTemplate::FromTokenizerConfig(const std::string& path) {
  PAGELLM_ASSIGN_OR_RETURN(OrderedJson config, ReadOrderedJson(path));
  PAGELLM_ASSIGN_OR_RETURN(std::string source, TemplateFromConfig(config, path));
  StatusOr<ChatTemplate> t = FromStringWithTokens(std::move(source), SpecialTokensFromConfig(config));
  if (!t.ok()) return t.status().WithPrefix(fmt::format("{}: chat_template", path));
  return t;
}

StatusOr<ChatTemplate> ChatTemplate::FromModelDir(const std::string& model_dir, const std::string& template_path) {
  std::string config_path = model_dir + "/tokenizer_config.json";
  std::string jinja_path = template_path.empty() ? model_dir + "/chat_template.jinja" : template_path;
  if (template_path.empty() && !std::filesystem::exists(jinja_path)) return FromTokenizerConfig(config_path);
  OrderedJson tokens = OrderedJson::object();
  if (std::filesystem::exists(config_path)) {
    PAGELLM_ASSIGN_OR_RETURN(OrderedJson config, ReadOrderedJson(config_path));
    tokens = SpecialTokensFromConfig(config);
  }
  PAGELLM_ASSIGN_OR_RETURN(std::string source, ReadFileToString(jinja_path));
  StatusOr<ChatTemplate> t = FromStringWithTokens(std::move(source), tokens);
  if (!t.ok()) return t.status().WithPrefix(jinja_path);
  return t;
}

StatusOr<std::string> ChatTemplate::Render(const OrderedJson& messages, const OrderedJson& tools,
                                           bool add_generation_prompt, const OrderedJson& extra_kwargs) const {
  if (!messages.is_array()) return InvalidArgumentError("messages must be an array");
  if (!tools.is_null() && !tools.is_array()) return InvalidArgumentError("tools must be an array or null");
  if (!extra_kwargs.is_null() && !extra_kwargs.is_object()) {
    return InvalidArgumentError("chat_template_kwargs must be an object");
  }
  // Same variables, same order of precedence as transformers' render_jinja_template:
  // messages/tools/documents/add_generation_prompt, then special tokens, then kwargs.
  ValueDict globals;
  globals.emplace_back("messages", Value::FromJson(messages));
  globals.emplace_back("tools", Value::FromJson(tools));
  globals.emplace_back("documents", Value::None());
  globals.emplace_back("add_generation_prompt", Value::Bool(add_generation_prompt));
  for (auto it = special_tokens_.begin(); it != special_tokens_.end(); ++it) {
    globals.emplace_back(it.key(), Value::FromJson(it.value()));
  }
  if (extra_kwargs.is_object()) {
    for (auto it = extra_kwargs.begin(); it != extra_kwargs.end(); ++it) {
      const std::string& key = it.key();
      if (key == "messages" || key == "tools" || key == "add_generation_prompt") {
        return InvalidArgumentError(fmt::format("chat_template_kwargs may not set '{}'", key));
      }
      globals.emplace_back(key, Value::FromJson(it.value()));
    }
  }
  Evaluator evaluator(globals);
  return evaluator.Run(*program_);
}

}  // namespace pagellm::chat
