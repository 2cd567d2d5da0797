// Evaluator tests. Expected strings are Python Jinja2 3.1 results (checked by hand and,
// for the cross-checked cases, by tests/chat/compare_with_jinja2.py).
#include "chat/evaluator.h"

#include <gtest/gtest.h>

#include "chat/parser.h"

namespace pagellm::chat {
namespace {

std::string Render(std::string_view src, const char* vars_json = "{}") {
  auto program = ParseTemplate(src);
  if (!program.ok()) return "PARSE ERROR: " + program.status().message();
  ValueDict globals;
  OrderedJson vars = OrderedJson::parse(vars_json);
  for (auto it = vars.begin(); it != vars.end(); ++it) globals.emplace_back(it.key(), Value::FromJson(it.value()));
  Evaluator ev(globals);
  auto out = ev.Run(*program);
  return out.ok() ? *out : "ERROR: " + out.status().message();
}

TEST(EvaluatorTest, PythonStyleRendering) {
  EXPECT_EQ(Render("{{ none }}|{{ true }}|{{ [1, 'a', none, 1.5] }}|{{ {'a': 1} }}|{{ 1e20 }}|{{ 2.0 }}"),
            "None|True|[1, 'a', None, 1.5]|{'a': 1}|1e+20|2.0");
  EXPECT_EQ(Render("{{ 0.1 + 0.2 }}|{{ 1 / 3 }}|{{ 7 // 2 }}|{{ -7 // 2 }}|{{ -7 % 3 }}|{{ 2 ** 10 }}"),
            "0.30000000000000004|0.3333333333333333|3|-4|2|1024");
  EXPECT_EQ(Render("{{ 3 * 'ab' }}|{{ 'a' ~ 1 ~ none }}|{{ [1] + [2] }}"), "ababab|a1None|[1, 2]");
}

TEST(EvaluatorTest, UndefinedBehavesLikeJinjaDefault) {
  EXPECT_EQ(Render("[{{ x }}]{{ x|length }}{{ x is defined }}{{ x is none }}{% if not x %}F{% endif %}"),
            "[]0FalseFalseF");
  EXPECT_EQ(Render("{% for i in x %}{{ i }}{% else %}empty{% endfor %}"), "empty");
  EXPECT_EQ(Render("{{ d.missing is defined }}{{ d.missing }}", R"({"d": {}})"), "False");
  EXPECT_EQ(Render("{{ x.y }}"), "ERROR: chat template line 1: 'x' is undefined (while reading attribute 'y')");
  EXPECT_EQ(Render("{{ x + 1 }}"), "ERROR: chat template line 1: 'x' is undefined");
}

TEST(EvaluatorTest, LoopVariablesAndScoping) {
  EXPECT_EQ(Render("{% for x in 'abc' %}{{ loop.index }}{{ loop.index0 }}{{ loop.first }}{{ loop.last }}"
                   "{{ loop.length }}{{ loop.previtem }}{{ loop.nextitem }};{% endfor %}"),
            "10TrueFalse3b;21FalseFalse3ac;32FalseTrue3b;");
  // set inside an iteration neither leaks out nor carries over; namespaces do.
  EXPECT_EQ(Render("{% set x = 0 %}{% set ns = namespace(n=0) %}{% for i in [1, 2] %}[{{ y }}]"
                   "{% set y = i %}{% set x = i %}{% set ns.n = ns.n + i %}{% endfor %}{{ x }}{{ ns.n }}"),
            "[][]03");
  EXPECT_EQ(Render("{% for k, v in d.items() %}{{ k }}={{ v }},{% endfor %}", R"({"d": {"b": 1, "a": 2}})"),
            "b=1,a=2,");
  EXPECT_EQ(Render("{% for x in range(10) if x is odd %}{{ x }}{% if loop.last %}!{% endif %}{% endfor %}"),
            "13579!");
  EXPECT_EQ(Render("{% for x in range(5) %}{% if x == 3 %}{% break %}{% endif %}{% if x == 1 %}{% continue %}"
                   "{% endif %}{{ x }}{% endfor %}"),
            "02");
}

TEST(EvaluatorTest, MacrosAndCallBlocks) {
  EXPECT_EQ(Render("{% macro m(a, b=2) %}{{ a }}-{{ b }}-{{ g }}{% endmacro %}{% set g = 5 %}{{ m(1) }}|{{ m(1, b=3) }}"),
            "1-2-5|1-3-5");
  EXPECT_EQ(Render("{% macro w(t) %}<{{ caller() }}{{ t }}>{% endmacro %}{% call w('!') %}body{% endcall %}"),
            "<body!>");
  EXPECT_EQ(Render("{% set x %}a{{ 1 }}b{% endset %}{{ x }}|{% filter upper %}hi {{ 'x' }}{% endfilter %}"),
            "a1b|HI X");
}

TEST(EvaluatorTest, StringMethodsFollowPython) {
  EXPECT_EQ(Render("{{ '\\n\\nx\\n '.strip('\\n') }}|{{ ' a b '.split() }}|{{ 'a,b,,c'.split(',', 2) }}"),
            "x\n |['a', 'b']|['a', 'b', ',c']");
  EXPECT_EQ(Render("{{ 'hello'.startswith(('x', 'he')) }}{{ 'abc'[::-1] }}{{ 'héllo'[1] }}{{ 'héllo'|length }}"),
            "Truecbaé5");
  EXPECT_EQ(Render("{{ 'a<think>b</think>c'.split('</think>')[0].split('<think>')[-1] }}"), "b");
  EXPECT_EQ(Render("{{ 'hello WORLD'|title }}|{{ 'hELLO'|capitalize }}|{{ 'aXa'.replace('a', 'b', 1) }}"),
            "Hello World|Hello|bXa");
}

TEST(EvaluatorTest, FiltersAndTests) {
  EXPECT_EQ(Render("{{ {'a': 1.0, 'b': [true, none], 'c': 'é\"'}|tojson }}"),
            "{\"a\": 1.0, \"b\": [true, null], \"c\": \"é\\\"\"}");
  EXPECT_EQ(Render("{{ {'a': [1, 2], 'b': {}}|tojson(indent=2) }}"),
            "{\n  \"a\": [\n    1,\n    2\n  ],\n  \"b\": {}\n}");
  EXPECT_EQ(Render("{{ [3, 1, 2]|sort|join(',') }}|{{ ['b', 'A', 'a']|unique|list }}|{{ [1, 2, 3, 4, 5]|batch(2)|list }}"),
            "1,2,3|['b', 'A']|[[1, 2], [3, 4], [5]]");
  EXPECT_EQ(Render("{{ users|selectattr('admin')|map(attribute='name')|join(' ') }}|{{ users|rejectattr('admin')|length }}",
                   R"({"users": [{"name": "a", "admin": true}, {"name": "b", "admin": false}, {"name": "c", "admin": true}]})"),
            "a c|1");
  EXPECT_EQ(Render("{{ 10 is divisibleby 3 }}{{ 9 is divisibleby(3) }}{{ [1, 2] is sequence }}{{ {} is mapping }}"
                   "{{ 1 is number }}{{ true is integer }}{{ 'a' is not string }}"),
            "FalseTrueTrueTrueTrueFalseFalse");
  EXPECT_EQ(Render("{{ x|default('d') }}{{ ''|default('e', true) }}{{ '3.7'|int }}{{ 'x'|int(5) }}{{ 2.5|round }}"),
            "de352.0");
  EXPECT_EQ(Render("{{ 'a\\nb\\n\\nc'|indent(2) }}|{{ '<a href=\"x\">'|e }}"), "a\n  b\n\n  c|&lt;a href=&#34;x&#34;&gt;");
}

TEST(EvaluatorTest, RaiseExceptionKeepsMessage) {
  EXPECT_EQ(Render("a{{ raise_exception('No messages provided.') }}"), "ERROR: No messages provided.");
}

TEST(EvaluatorTest, RuntimeErrorsNameTheLine) {
  EXPECT_EQ(Render("\n\n{{ 1 + 'a' }}"), "ERROR: chat template line 3: unsupported operand type(s) for +: 'int' and 'str'");
  EXPECT_EQ(Render("{% for x in 3 %}{% endfor %}"), "ERROR: chat template line 1: 'int' object is not iterable");
  EXPECT_EQ(Render("{% set d = {} %}{% set d.x = 1 %}"),
            "ERROR: chat template line 1: cannot assign attribute on non-namespace object");
}

}  // namespace
}  // namespace pagellm::chat
