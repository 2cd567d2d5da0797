// JSON Schema (draft 4 to 2020-12, the subset below) and json_object compiled into
// grammar IR. Unsupported keywords are refused with an error naming them; nothing is
// silently dropped, so an accepted schema is always honoured.
//
//   PAGELLM_ASSIGN_OR_RETURN(Grammar g, JsonSchemaToGrammar(schema, {}));
//
// Supported: type (incl. arrays of types), properties, required, additionalProperties
// (objects with declared properties emit only those, in declared order; an object
// without properties is a free map), enum, const, anyOf, oneOf (when the branches are
// provably disjoint), allOf (merged), local $ref (#, #/$defs/.., #/definitions/..,
// any JSON pointer; recursion allowed), items / prefixItems / additionalItems,
// minItems / maxItems, minLength / maxLength, pattern, format (date, time, date-time,
// duration, email, hostname, ipv4, ipv6, uuid, uri, uri-reference), minimum / maximum /
// exclusiveMinimum / exclusiveMaximum, min/maxProperties when implied by the shape.
// Refused: not, if/then/else, dependencies, dependentRequired/Schemas, contains,
// patternProperties, propertyNames, unevaluated*, uniqueItems, multipleOf, remote $ref,
// pattern or format together with a length bound.
#pragma once

#include "common/json.h"
#include "common/status.h"
#include "grammar/grammar_ir.h"
#include "grammar/json_pieces.h"

namespace pagellm::grammar {

StatusOr<Grammar> JsonSchemaToGrammar(const OrderedJson& schema, const JsonWhitespace& ws);
// The same, into an existing grammar (embedding a schema in a larger format, such as a
// tool call); returns an expression. `schema` is the root for its own local $refs.
StatusOr<int32_t> AddJsonSchema(Grammar& g, const OrderedJson& schema, const JsonWhitespace& ws);
// Any JSON object (response_format json_object).
StatusOr<Grammar> JsonObjectGrammar(const JsonWhitespace& ws);

// allOf support: the intersection of two schemas as one schema (refs already resolved
// by the caller). Fails when the combination is not expressible.
StatusOr<OrderedJson> MergeSchemas(const OrderedJson& a, const OrderedJson& b);
// Whether no JSON value our grammar emits for `a` validates against `b` (used to
// accept oneOf only when exactly one branch can match).
bool ExcludesSchema(const OrderedJson& a, const OrderedJson& b);

}  // namespace pagellm::grammar
