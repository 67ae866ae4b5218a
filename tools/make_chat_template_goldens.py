#!/usr/bin/env python3
"""Renders the shared Hugging Face chat templates with Python jinja2 exactly as transformers'
apply_chat_template does, and writes goldens for brisk's C++ Jinja2 interpreter.

transformers (utils/chat_template_utils.py) compiles templates with
  ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True,
                                extensions=[AssistantTracker, jinja2.ext.loopcontrols])
overrides the `tojson` filter with json.dumps(x, ensure_ascii=False, indent=indent,
separators=separators, sort_keys=sort_keys), adds the globals raise_exception(message) and
strftime_now(format), and renders with
  messages=..., tools=tools or None, documents=documents or None,
  add_generation_prompt=..., **special_tokens, **kwargs.
strftime_now is pinned to FIXED_NOW here; the C++ test passes the same time.

Usage: scripts/python tools/make_chat_template_goldens.py [templates_dir] [out_dir]
  (defaults: ../shared/testdata/chat-templates and tests/data/chat_templates)
Writes conversations.json (the inputs, shared by all templates) and one <template>.json per
template with, per conversation, either {"output": text} or {"error": message,
"error_type": "raise_exception" | the Python exception class}.
"""

import json
import sys
from datetime import datetime
from pathlib import Path

import jinja2
import jinja2.ext
from jinja2.sandbox import ImmutableSandboxedEnvironment

FIXED_NOW = datetime(2024, 9, 5, 14, 30, 0)
BOS_TOKEN = "<|bos|>"
EOS_TOKEN = "<|eos|>"


class TemplateRaised(jinja2.exceptions.TemplateError):
    """What raise_exception throws (transformers raises a plain TemplateError)."""


class GenerationBlock(jinja2.ext.Extension):
    """transformers' AssistantTracker without the tracking: {% generation %} renders its body."""

    tags = {"generation"}

    def parse(self, parser):
        lineno = next(parser.stream).lineno
        body = parser.parse_statements(["name:endgeneration"], drop_needle=True)
        return jinja2.nodes.CallBlock(self.call_method("_render"), [], [], body).set_lineno(lineno)

    def _render(self, caller):
        return caller()


def make_environment():
    def raise_exception(message):
        raise TemplateRaised(message)

    def tojson(x, ensure_ascii=False, indent=None, separators=None, sort_keys=False):
        return json.dumps(x, ensure_ascii=ensure_ascii, indent=indent, separators=separators,
                          sort_keys=sort_keys)

    def strftime_now(format):
        return FIXED_NOW.strftime(format)

    env = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True,
                                        extensions=[GenerationBlock, jinja2.ext.loopcontrols])
    env.filters["tojson"] = tojson
    env.globals["raise_exception"] = raise_exception
    env.globals["strftime_now"] = strftime_now
    return env


WEATHER_TOOL = {
    "type": "function",
    "function": {
        "name": "get_current_weather",
        "description": "Get the current weather in a given location",
        "parameters": {
            "type": "object",
            "properties": {
                "location": {"type": "string",
                             "description": "The city and state, e.g. San Francisco, CA"},
                "unit": {"type": "string", "enum": ["celsius", "fahrenheit"],
                         "description": "The temperature unit"},
                "days": {"type": "integer", "description": "Forecast days"},
                # (Hermes' template recurses forever on "null" in a type union, and prints a
                # generator's address for arrays, so the schema avoids both.)
                "hourly": {"type": ["boolean", "integer"], "description": "Hourly detail"},
            },
            "required": ["location"],
        },
        "return": {"type": "number", "description": "The temperature"},
    },
}
SEARCH_TOOL = {
    "type": "function",
    "function": {
        "name": "search",
        "description": "Search the web",
        "parameters": {
            "type": "object",
            "properties": {"query": {"type": "string", "description": "What to look for"}},
            "required": ["query"],
        },
    },
}


def tool_call(arguments):
    return {"id": "call12345", "type": "function",
            "function": {"name": "get_current_weather", "arguments": arguments}}


WEATHER_ARGS = {"location": "Paris, France", "unit": "celsius"}


def conversations():
    system = {"role": "system", "content": "You are a concise assistant."}
    user1 = {"role": "user", "content": "Hello! Who are you?"}
    assistant1 = {"role": "assistant", "content": "I am an assistant. How can I help?"}
    user2 = {"role": "user", "content": "Tell me a joke about \"cats\" & <dogs>."}
    weather_q = {"role": "user", "content": "What's the weather in Paris?"}
    tool_result = {"role": "tool", "tool_call_id": "call12345", "name": "get_current_weather",
                   "content": "22.5"}
    answer = {"role": "assistant", "content": "It is 22.5 degrees Celsius in Paris."}

    def call_message(arguments, content=None):
        return {"role": "assistant", "content": content, "tool_calls": [tool_call(arguments)]}

    return {
        "system_user": {"messages": [system, user1], "add_generation_prompt": True},
        "user_only": {"messages": [user1], "add_generation_prompt": True},
        "user_only_no_prompt": {"messages": [user1], "add_generation_prompt": False},
        "multi_turn": {"messages": [system, user1, assistant1, user2],
                       "add_generation_prompt": True},
        "multi_turn_no_system": {"messages": [user1, assistant1, user2, assistant1],
                                 "add_generation_prompt": False},
        "tools_prompt": {"messages": [system, weather_q], "tools": [WEATHER_TOOL, SEARCH_TOOL],
                         "add_generation_prompt": True},
        "tool_call_result": {
            "messages": [weather_q, call_message(WEATHER_ARGS), tool_result, answer],
            "tools": [WEATHER_TOOL], "add_generation_prompt": False},
        "tool_call_string_args": {
            "messages": [weather_q, call_message(json.dumps(WEATHER_ARGS), ""), tool_result],
            "tools": [WEATHER_TOOL], "add_generation_prompt": True},
        "content_parts": {
            "messages": [{"role": "user", "content": [{"type": "text", "text": "Describe this."},
                                                      {"type": "text", "text": "Briefly."}]}],
            "add_generation_prompt": True},
        "thinking": {
            "messages": [user1, {"role": "assistant",
                                 "content": "<think>\nThe user greets me.\n</think>\n\nHi there!"},
                         user2],
            "add_generation_prompt": True, "enable_thinking": False},
        "unicode_whitespace": {
            "messages": [{"role": "system", "content": "  Réponds en français. 日本語も OK. 🙂  \n"},
                         {"role": "user", "content": "\n\tTabs,\nnewlines and 'quotes' \\ here  "}],
            "add_generation_prompt": True},
        "documents": {
            "messages": [weather_q],
            "documents": [{"doc_id": 1, "title": "Weather", "text": "Paris is sunny today."},
                          {"doc_id": 2, "title": "Climate", "text": "Summers are warm."}],
            "add_generation_prompt": True},
        "bad_roles": {"messages": [user1, user2], "add_generation_prompt": True},
        "parallel_tool_calls": {
            "messages": [weather_q,
                         {"role": "assistant", "content": "",
                          "tool_calls": [tool_call(WEATHER_ARGS),
                                         {"id": "call67890", "type": "function",
                                          "function": {"name": "search",
                                                       "arguments": {"query": "Paris news"}}}]},
                         tool_result,
                         {"role": "tool", "tool_call_id": "call67890", "name": "search",
                          "content": '{"headline": "Sunny"}'}],
            "tools": [WEATHER_TOOL, SEARCH_TOOL], "add_generation_prompt": True},
        "reasoning_content": {
            "messages": [user1, {"role": "assistant", "content": "Hi!",
                                 "reasoning_content": "A greeting; answer briefly."},
                         user2,
                         {"role": "assistant", "content": "<think>\nJoke time.\n</think>\n\nMeow."}],
            "add_generation_prompt": False},
        "no_think_system": {
            "messages": [{"role": "system", "content": "Answer tersely. /no_think"}, user1],
            "add_generation_prompt": True, "enable_thinking": True},
        "builtin_tools_date": {
            "messages": [system, weather_q,
                         {"role": "assistant", "content": None,
                          "tool_calls": [{"id": "call12345", "type": "function",
                                          "function": {"name": "brave_search",
                                                       "arguments": {"query": "Paris weather"}}}]}],
            "builtin_tools": ["brave_search", "code_interpreter"], "date_string": "01 Jan 2025",
            "tools_in_user_message": False, "tools": [SEARCH_TOOL],
            "add_generation_prompt": False},
        "controls_thinking": {
            "messages": [weather_q],
            "documents": [{"doc_id": 7, "text": "Rain expected."}],
            "controls": {"citations": True, "hallucinations": True, "length": "short"},
            "thinking": True, "add_generation_prompt": True},
        "assistant_prefill": {"messages": [user1, {"role": "assistant", "content": "Sure, "}],
                              "add_generation_prompt": False},
        "empty_messages": {"messages": [], "add_generation_prompt": True},
    }


# Small templates covering each construct; rendered with the same environment into
# snippets.json so the C++ interpreter is checked against jinja2 construct by construct.
# Each entry: (template, variables).
SNIPPET_VARS = {"messages": [{"role": "system", "content": "Be brief."},
                             {"role": "user", "content": "Hi"},
                             {"role": "assistant", "content": "Hello", "tool_calls": None}],
                "d": {"b": 2, "a": 1, "items": "x"}, "s": "  Hello World  ", "n": 7,
                "f": 2.5, "l": [3, 1, 2], "u": "héllo wörld", "none": None, "t": True}
SNIPPETS = [
    # whitespace control, trim_blocks, lstrip_blocks
    "a\n  {% if true %}\n  x\n  {% endif %}\n  b",
    "a  {%- if true %} x {% endif -%}  \n b",
    "a {{- ' x ' -}} b",
    "a\n    {{ 'v' }}\n    {% if true %}y{% endif %}\nz",
    "  {%+ if true %}x{% endif +%}\ny",
    "{# c #}\n  {# c2 #}  \nx {#- c3 -#}  y",
    "x {% if true %} {# note #}\n{% endif %}|",
    "{% for m in messages %}\n    {{ m.role }}\n{% endfor %}\n",
    "line1\n{% raw %}{{ not evaluated }}{% endraw %}\nline2",
    "{%- raw -%}  {{ x }}  {%- endraw -%}  !",
    "{{ 'a' }}\r\n{{ 'b' }}\n\n",
    "a\n  {# c +#}\nb\n  {#+ c #}\nd",
    "a\n  {% raw %}\n  x\n  {% endraw %}\nb",
    "{% if true %}  \n  x{% endif %}",
    "a\n\t {% if true -%}\n\n  x\n {%- endif %}\n\n",
    "{{ 'a' -}}\n\n  {% if true %}\n  b\n  {% endif %}",
    "x\u3000 {%- if true %}y{% endif %}",
    "{% for i in range(2) %}\n  {%- if i %}, {% endif %}{{ i }}\n{% endfor %}",
    "{%- set x = {'a': {'b': 1}} -%}\n{{ x.a.b }}{{ {'k': {'j': 2}}['k'] }}",
    "  {% set x = 1 %}\n{{ x }}\n",
    "\t{%- for i in range(3) -%}\n\t\t{{ i }}\n\t{%- endfor %}\n",
    # for loops
    "{% for m in messages %}{{ loop.index }}{{ loop.index0 }}{{ loop.first }}{{ loop.last }}"
    "{{ loop.length }}{{ loop.revindex }}{{ loop.revindex0 }};{% endfor %}",
    "{% for m in messages %}{{ loop.previtem.role if loop.previtem is defined else '-' }}>"
    "{{ loop.nextitem.role if loop.nextitem else '-' }} {% endfor %}",
    "{% for k, v in d.items() %}{{ k }}={{ v }},{% endfor %}",
    "{% for k in d %}{{ k }}{% endfor %}|{% for k, v in d|items %}{{ k }}{{ v }}{% endfor %}",
    "{% for x in l if x > 1 %}{{ x }}{{ loop.length }}{% else %}none{% endfor %}",
    "{% for x in [] %}{{ x }}{% else %}empty{% endfor %}",
    "{% for x in l %}{% if x == 1 %}{% continue %}{% endif %}{{ x }}{% if x == 1 %}{% break %}{% endif %}{% endfor %}",
    "{% for x in l %}{% if x == 1 %}{% break %}{% endif %}{{ x }}{% endfor %}",
    "{% for c in 'ab' %}{{ c }}{{ loop.cycle('x', 'y') }}{% endfor %}",
    "{% for a in [1, 2] %}{% for b in 'xy' %}{{ a }}{{ b }}{{ loop.index }} {% endfor %}{{ loop.index }}|{% endfor %}",
    "{% for x in missing %}{{ x }}{% endfor %}ok",
    "{% for a, b in [(1, 2), (3, 4)] %}{{ a + b }}{% endfor %}",
    # scoping
    "{% set y = 5 %}{% for x in [1, 2] %}{% if loop.first %}{% set y = 1 %}{% endif %}[{{ y }}]{% endfor %}{{ y }}",
    "{% set ns = namespace(c=0, items=[]) %}{% for x in l %}{% set ns.c = ns.c + x %}"
    "{% set ns.items = ns.items + [x] %}{% endfor %}{{ ns.c }} {{ ns.items }}",
    "{% set ns = namespace() %}{% set ns.a = 'z' %}{{ ns.a }}{{ ns.b }}|",
    "{% set a, b = 1, 2 %}{{ a }}{{ b }}{% set t = 1, 2 %}{{ t }}",
    "{% set x %}block {{ n }}{% endset %}[{{ x }}]",
    "{% set x | upper %}shout{% endset %}{{ x }}",
    "{% with a = 1, b = n %}{{ a + b }}{% endwith %}{{ a }}|",
    "{% filter upper %}loud {{ n }}{% endfilter %}",
    # macros
    "{% macro greet(name, punct='!') %}Hi {{ name }}{{ punct }}{% endmacro %}{{ greet('A') }} {{ greet('B', '?') }} {{ greet(name='C', punct='.') }}",
    "{% macro f(a) %}{{ a }}{{ varargs }}{{ kwargs }}{% endmacro %}{{ f(1, 2, 3, k=4) }}",
    "{% macro rec(n) %}{% if n > 0 %}{{ n }}{{ rec(n - 1) }}{% endif %}{% endmacro %}{{ rec(3) }}",
    "{% macro wrap() %}<{{ caller() }}>{% endmacro %}{% call wrap() %}inner {{ n }}{% endcall %}",
    "{% macro m() %}{{ n }}{% endmacro %}{% set n = 9 %}{{ m() }}",
    "{% macro m(x) %}  {{ x }}\n{% endmacro %}[{{ m(1) }}]",
    # expressions
    "{{ 1 + 2 * 3 }} {{ (1 + 2) * 3 }} {{ 7 // 2 }} {{ -7 // 2 }} {{ 7 % 3 }} {{ -7 % 3 }} {{ 2 ** 10 }} {{ 2 ** -1 }} {{ 7 / 2 }} {{ 6 / 3 }}",
    "{{ 1.0 }} {{ 0.1 + 0.2 }} {{ 1e20 }} {{ 1e-5 }} {{ 3.0 * 2 }} {{ 10 / 4 }} {{ 1_000 }} {{ -0.0 }} {{ 123456789.123 }}",
    "{{ 'a' ~ 1 ~ none ~ true ~ 2.0 }} {{ 'x' + 'y' }} {{ [1] + [2] }} {{ 'ab' * 3 }} {{ 2 * [0] }}",
    "{{ 1 < 2 < 3 }} {{ 3 > 2 > 2 }} {{ 1 == 1.0 }} {{ 'a' != 'b' }} {{ 'b' >= 'a' }} {{ [1, 2] < [1, 3] }}",
    "{{ 'a' in 'cat' }} {{ 'z' not in 'cat' }} {{ 2 in l }} {{ 'a' in d }} {{ 'q' in missing }}",
    "{{ true and 'x' }} {{ false or 'y' }} {{ none or 0 }} {{ not none }} {{ not 'a' }} {{ 0 and 1 }}",
    "{{ 'yes' if t else 'no' }} {{ 'yes' if none else 'no' }} [{{ 'a' if false }}]",
    "{{ s[2:7] }} {{ s[::-1] }} {{ l[1:] }} {{ l[:-1] }} {{ l[::2] }} {{ l[-1] }} {{ u[1] }} {{ u[::-1] }} {{ l[5:] }}",
    "{{ d.a }} {{ d['b'] }} {{ d['items'] }} {{ d.missing }}| {{ messages[1].content }} {{ messages.0.role }}",
    "{{ [1, 'a', none, true, 1.5, {'k': (1, 2)}] }} {{ (1,) }} {{ () }} {{ {'a': [1, {'b': none}]} }}",
    "{{ \"it's\" }} {{ ['it\\'s', \"q\\\"\", 'tab\\t', 'nl\\n', 'é'] }}",
    "{{ 'line\\nnext' }}|{{ '\\x41\\u00e9\\t' }}|{{ 'a' 'b' }}",
    "{{ messages }}",
    "{{ none }} {{ true }} {{ false }} {{ missing }}|{{ t }}",
    "{{ -n }} {{ +f }} {{ - 2 ** 2 }} {{ -n|abs }}",
    "{{ d.get('a') }} {{ d.get('zz') }} {{ d.get('zz', 'dflt') }} {{ d.keys() | list }} {{ d.values() | list }}",
    "{{ '%s is %d, %.2f%%' % ('Bob', 42, 3.14159) }} {{ '%5s|%-5s|%05d|%x|%r|%+d' % ('a', 'b', 42, 255, 'q', 3) }}",
    "{{ '%(a)s-%(b)s' % {'a': 1, 'b': 2} }} {{ '%s' % 'one' }} {{ '%s and %s'|format('x', 'y') }} {{ '%.3e %g %d' % (12345.678, 0.0001, 2.9) }}",
    "{{ '%s %s' % ('only',) }}",
    # string methods
    "{{ s.strip() }}|{{ s.lstrip() }}|{{ s.rstrip() }}|{{ 'xxhixx'.strip('x') }}|{{ '\\n\\nhi'.lstrip('\\n') }}",
    "{{ 'a,b,,c'.split(',') }} {{ ' a  b '.split() }} {{ 'a,b,c'.split(',', 1) }} {{ 'a b c'.split(none, 1) }} {{ 'a,b,c'.rsplit(',', 1) }}",
    "{{ 'Hello'.startswith('He') }} {{ 'Hello'.endswith(('x', 'lo')) }} {{ 'Hello'.upper() }} {{ 'Hello'.lower() }} {{ 'hello world'.title() }} {{ 'hELLO'.capitalize() }}",
    "{{ 'banana'.find('na') }} {{ 'banana'.find('x') }} {{ 'banana'.count('a') }} {{ 'banana'.replace('a', 'o') }} {{ 'banana'.replace('a', 'o', 2) }} {{ '-'.join(['a', 'b']) }}",
    "{{ '{} and {}'.format('x', 1) }} {{ '{0}{0}'.format('ab') }} {{ '{name}!'.format(name='N') }}",
    "{{ '<think>a</think>b'.split('</think>')[-1] }} {{ u.upper() }} {{ u.title() }} {{ u|length }}",
    # filters
    "{{ s|trim }}|{{ 'xxyxx'|trim('x') }}|{{ s|length }} {{ l|count }} {{ d|length }} {{ missing|length }}",
    "{{ s|lower }}{{ s|upper }}{{ 'foo bar'|title }}{{ 'foo Bar'|capitalize }}{{ 'aXa'|replace('a', 'b') }}",
    "{{ l|join(',') }} {{ l|join }} {{ messages|map(attribute='role')|join('/') }} {{ messages|join(', ', attribute='role') }}",
    "{{ missing|default('dflt') }} {{ ''|default('e') }} {{ ''|default('e', true) }} {{ none|d('n') }} {{ none|d('n', boolean=true) }}",
    "{{ l|first }} {{ l|last }} {{ 'abc'|first }} {{ l|sort }} {{ l|sort(reverse=true) }} {{ ['b', 'A', 'c']|sort }} {{ ['b', 'A', 'c']|sort(case_sensitive=true) }}",
    "{{ messages|selectattr('role', 'equalto', 'user')|list|length }} {{ messages|rejectattr('role', 'eq', 'user')|map(attribute='role')|list }}",
    "{{ l|select('odd')|list }} {{ l|reject('odd')|list }} {{ [0, 1, '', 'a']|select|list }} {{ messages|selectattr('tool_calls', 'defined')|list|length }}",
    "{{ messages|selectattr('tool_calls')|list|length }} {{ ['a', 'B']|map('upper')|list }} {{ [1, 2]|map('string')|join('-') }}",
    "{{ d|items|list }} {{ d|dictsort }} {{ {'x': 2, 'y': 1, 'z': 3}|dictsort(by='value', reverse=true) }} {{ l|list }} {{ 'ab'|list }}",
    "{{ '3'|int + 1 }} {{ 'x'|int }} {{ '2.5'|float }} {{ 3|float }} {{ 2.7|int }} {{ 'x'|int(7) }} {{ -3|abs }} {{ 2.5|round }} {{ 3.14159|round(2) }} {{ 2.5|round(0, 'floor') }}",
    "{{ [1, 2, 1, 3]|unique|list }} {{ ['a', 'A']|unique|list }} {{ l|sum }} {{ l|min }} {{ l|max }} {{ l|reverse|list }} {{ 'abc'|reverse }}",
    "{{ n|string ~ 'x' }} {{ [1]|string }} {{ '<a&b>'|e }} {{ '<a>'|safe }} {{ 'a b  c'|wordcount }} {{ 'x'|center(5) }}|",
    "{{ 'a\\nb\\n\\nc'|indent }}|{{ 'a\\nb'|indent(2, true) }}|{{ 'a\\n\\nb'|indent(2, blank=true) }}|{{ 'a\\nb\\n'|indent('> ') }}",
    "{{ d|tojson }} {{ l|tojson }} {{ 'é\"<\\n'|tojson }} {{ none|tojson }} {{ t|tojson }} {{ f|tojson }} {{ 1.0|tojson }}",
    "{{ {'a': [1, {'b': []}], 'c': {}}|tojson(indent=2) }}",
    "{{ messages[0]|tojson(indent=4) }}|{{ d|tojson(sort_keys=true) }}|{{ d|tojson(separators=(',', ':')) }}|{{ 'é'|tojson(ensure_ascii=true) }}",
    "{{ messages|map(attribute='missing', default='?')|list }} {{ d|attr('a') }}",
    # tests
    "{{ missing is defined }} {{ missing is undefined }} {{ none is none }} {{ 1 is none }} {{ 'a' is string }} {{ 1 is string }}",
    "{{ 1 is number }} {{ 1.5 is number }} {{ true is number }} {{ 1 is integer }} {{ 1.0 is integer }} {{ true is integer }} {{ 1.0 is float }}",
    "{{ d is mapping }} {{ l is mapping }} {{ l is iterable }} {{ 'a' is iterable }} {{ 1 is iterable }} {{ missing is iterable }} {{ l is sequence }} {{ d is sequence }}",
    "{{ true is boolean }} {{ 1 is boolean }} {{ true is true }} {{ 1 is true }} {{ false is false }} {{ 0 is false }}",
    "{{ 2 is even }} {{ 3 is odd }} {{ 9 is divisibleby 3 }} {{ 9 is divisibleby(2) }} {{ 'a' is equalto 'a' }} {{ 1 is eq 2 }} {{ 1 is ne 2 }}",
    "{{ 1 is lt 2 }} {{ 2 is gt 1 }} {{ 1 is in [1] }} {{ none is sameas none }} {{ 'abc' is lower }} {{ 'ABC' is upper }} {{ d.get is callable }}",
    "{{ missing is not defined }} {{ none is not none }} {{ not missing is defined }}",
    # globals
    "{{ range(3)|list }} {{ range(1, 7, 2)|list }} {{ range(3, 0, -1)|list }} {{ dict(a=1, b='x') }} {{ namespace(a=1).a }}",
    "{% generation %}gen {{ n }}{% endgeneration %}",
    "{{ raise_exception('boom: ' ~ n) }}",
    "{{ strftime_now('%Y-%m-%d %d %b %Y %B %A %H:%M') }}",
    # runtime errors jinja2 raises (the C++ side must fail too)
    "{{ missing.attr }}",
    "{{ missing() }}",
    "{{ 'a' + 1 }}",
    "{{ none + 1 }}",
    "{{ 1 // 0 }}",
    "{{ d.a.b.c }}",
    "{% for x in none %}{% endfor %}",
    "{{ 1 in 'abc' }}",
    "{% set l2 = [1] %}{{ l2.append(2) }}",
    "{{ n < 'a' }}",
    "{{ missing|tojson }}",
    "{% macro f(a) %}{{ a }}{% endmacro %}{{ f(1, 2) }}",
    "{% macro f(a) %}{{ a }}{% endmacro %}{{ f(1, b=2) }}",
    "{% macro f(a) %}{{ a }}{% endmacro %}{{ f(1, a=2) }}",
    "{{ 'a' is nosuchtest }}",
    "{% if x %}",
]


def render_snippets(env):
    cases = []
    for source in SNIPPETS:
        case = {"template": source}
        try:
            case["output"] = env.from_string(source).render(**SNIPPET_VARS)
        except TemplateRaised as e:
            case.update(error=str(e), error_type="raise_exception")
        except Exception as e:
            case.update(error=str(e), error_type=type(e).__name__)
        cases.append(case)
    return {"variables": SNIPPET_VARS, "cases": cases}


def render(env, source, conversation):
    template = env.from_string(source)
    kwargs = dict(conversation)
    messages = kwargs.pop("messages")
    tools = kwargs.pop("tools", None)
    documents = kwargs.pop("documents", None)
    add_generation_prompt = kwargs.pop("add_generation_prompt", False)
    return template.render(messages=messages, tools=tools, documents=documents,
                           add_generation_prompt=add_generation_prompt, bos_token=BOS_TOKEN,
                           eos_token=EOS_TOKEN, **kwargs)


def main():
    repo = Path(__file__).resolve().parent.parent
    templates_dir = Path(sys.argv[1]) if len(sys.argv) > 1 else repo.parent / "shared/testdata/chat-templates"
    out_dir = Path(sys.argv[2]) if len(sys.argv) > 2 else repo / "tests/data/chat_templates"
    out_dir.mkdir(parents=True, exist_ok=True)
    convs = conversations()
    meta = {"bos_token": BOS_TOKEN, "eos_token": EOS_TOKEN,
            "now": [FIXED_NOW.year, FIXED_NOW.month, FIXED_NOW.day, FIXED_NOW.hour,
                    FIXED_NOW.minute, FIXED_NOW.second],
            "conversations": convs}
    (out_dir / "conversations.json").write_text(json.dumps(meta, indent=1, ensure_ascii=False) + "\n")
    env = make_environment()
    (out_dir / "snippets.json").write_text(
        json.dumps(render_snippets(env), indent=1, ensure_ascii=False) + "\n")
    for path in sorted(templates_dir.glob("*.jinja")):
        source = path.read_text()
        cases = {}
        for name, conversation in convs.items():
            try:
                cases[name] = {"output": render(env, source, conversation)}
            except TemplateRaised as e:
                cases[name] = {"error": str(e), "error_type": "raise_exception"}
            except Exception as e:  # jinja2 itself fails: the C++ side must fail too
                cases[name] = {"error": str(e), "error_type": type(e).__name__}
        golden = {"template": path.name, "cases": cases}
        (out_dir / (path.stem + ".json")).write_text(
            json.dumps(golden, indent=1, ensure_ascii=False) + "\n")
        print(f"{path.name}: " + ", ".join(
            f"{n}={'ok' if 'output' in c else c['error_type']}" for n, c in cases.items()))


if __name__ == "__main__":
    main()
