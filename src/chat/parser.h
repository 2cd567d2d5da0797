// Parser: tokens (lexer.h) -> syntax tree (ast.h), with Jinja2's operator precedence.
//
//   PAGELLM_ASSIGN_OR_RETURN(NodeList program, ParseTemplate(source));
//
// Unsupported syntax fails with the construct and its line, e.g.
// "line 4: unknown statement 'include'" or "line 2: expected '%}', got name 'x'".
#pragma once

#include <string_view>

#include "chat/ast.h"
#include "chat/lexer.h"
#include "common/status.h"

namespace pagellm::chat {

StatusOr<NodeList> ParseTemplate(std::string_view source, const LexOptions& options = {});

}  // namespace pagellm::chat
