"""Structured output through the official openai and anthropic packages on the tiny random-weight
model: response_format, vLLM's guided_* and structured_outputs fields, Responses' text.format and
forced tool choices, streamed and not, with n > 1; the 400s for what cannot be followed.

What is required of every output: one that finishes with "stop" follows its constraint (the JSON
parses and validates with jsonschema, a regex output fullmatches, a choice is one of the
choices), and one cut by max_tokens ("length") is what the grammar allowed so far. The schemas
are chosen so that their outputs are bounded: compact JSON (disable_any_whitespace), enums,
booleans, bounded integers, strings with maxLength. A bounded language of at most L bytes ends
within L + 1 tokens, so with a larger max_tokens every sample must stop. Where whitespace is
free (response_format, tool schemas) outputs are unbounded and a sample may run to max_tokens:
the seeds below make the tests deterministic (same seed, same output), and the outcomes they
require beyond the constraint are stated where they are asserted. The Responses and Messages
APIs take no seed: their tests use bounded languages or a single token."""
import json
import re

import anthropic
import jsonschema
import pytest

from conftest import MODEL_NAME, Server, httpx

MESSAGES = [{"role": "user", "content": "Answer in JSON."}]
SCHEMA = {"type": "object",
          "properties": {"answer": {"type": "string", "enum": ["yes", "no", "maybe"]},
                         "score": {"type": "integer", "minimum": 0, "maximum": 99},
                         "ok": {"type": "boolean"},
                         "note": {"type": "string", "maxLength": 3}},
          "required": ["answer", "score", "ok", "note"], "additionalProperties": False}
# Compact: {"answer":"maybe","score":99,"ok":false,"note":"..."} is at most 55 bytes, and a
# character of the note at most 4 bytes: never more than 70.
COMPACT = {"structured_outputs": {"json": SCHEMA, "disable_any_whitespace": True}}
BOUNDED_TOKENS = 80
WEATHER = {"type": "function", "function": {
    "name": "get_weather", "description": "Current weather in a city",
    "parameters": {"type": "object", "properties": {"city": {"type": "string", "enum": ["Paris", "Oslo"]},
                                                    "unit": {"type": "string", "enum": ["c", "f"]}},
                   "required": ["city", "unit"]}}}
TIME = {"type": "function", "function": {"name": "get_time", "parameters": {
    "type": "object", "properties": {"zone": {"type": "integer", "minimum": -12, "maximum": 12}},
    "required": ["zone"]}}}
TOOLS = [WEATHER, TIME]
PARAMETERS = {t["function"]["name"]: t["function"]["parameters"] for t in TOOLS}


def chat(client, **kwargs):
    return client.chat.completions.create(model=MODEL_NAME, messages=MESSAGES, **kwargs)


def stream_chat(client, **kwargs):
    """Each choice's content, tool calls (id, name, argument pieces) and finish reason, from the chunks."""
    choices = {}
    for chunk in chat(client, stream=True, **kwargs):
        for c in chunk.choices:
            out = choices.setdefault(c.index, {"content": "", "calls": [], "finish": None})
            out["content"] += c.delta.content or ""
            for call in c.delta.tool_calls or []:
                if call.id:
                    assert call.index == len(out["calls"]) and call.type == "function" and call.function.name
                    out["calls"].append({"id": call.id, "name": call.function.name, "arguments": ""})
                else:
                    assert call.index == len(out["calls"]) - 1 and not call.function.name, "id and name come once"
                out["calls"][call.index]["arguments"] += call.function.arguments or ""
            if c.finish_reason:
                assert out["finish"] is None
                out["finish"] = c.finish_reason
    return [choices[i] for i in sorted(choices)]


def check_json(text, schema=SCHEMA):
    # strict=False: a string with minLength/maxLength admits raw control characters other than \r
    # and \n, as xgrammar's grammar for it does (docs/grammar.md); strict parsers refuse them.
    value = json.loads(text, strict=False)
    jsonschema.validate(value, schema)
    return value


def test_json_schema_bounded_output_always_stops_and_validates(client):
    r = chat(client, n=3, seed=1, max_tokens=BOUNDED_TOKENS, extra_body=COMPACT)
    assert len(r.choices) == 3
    for c in r.choices:
        assert c.finish_reason == "stop", c  # required: the language is bounded
        assert c.message.tool_calls in (None, [])
        check_json(c.message.content)
        assert not re.search(r"\s", re.sub(r'"(?:[^"\\]|\\.)*"', '""', c.message.content)), "compact JSON"
    assert r.usage.completion_tokens <= 3 * BOUNDED_TOKENS


def test_json_schema_streams_what_it_returns(client):
    whole = chat(client, n=2, seed=2, max_tokens=BOUNDED_TOKENS, extra_body=COMPACT)
    streamed = stream_chat(client, n=2, seed=2, max_tokens=BOUNDED_TOKENS, extra_body=COMPACT)
    for w, s in zip(whole.choices, streamed):
        assert s["finish"] == w.finish_reason == "stop"
        assert s["content"] == w.message.content  # same seed, same output
        check_json(s["content"])


def test_response_format_json_schema(client):
    """Free whitespace: a sample may run to max_tokens. Required: each sample that stops validates,
    one cut off is a prefix of the grammar's language (it starts the object); with seed 3, at least
    one of the four samples stops."""
    rf = {"type": "json_schema", "json_schema": {"name": "verdict", "strict": True, "schema": SCHEMA}}
    r = chat(client, n=4, seed=3, max_tokens=200, response_format=rf)
    stopped = [c for c in r.choices if c.finish_reason == "stop"]
    for c in r.choices:
        if c.finish_reason == "stop":
            check_json(c.message.content)
        else:
            assert c.finish_reason == "length" and c.message.content.lstrip().startswith("{")
    assert stopped, [c.message.content for c in r.choices]


def test_json_object(client):
    """response_format json_object: any JSON object or array. One token cannot hold a whole value
    and the stop token, so max_tokens 1 always ends with "length" on what the grammar allows."""
    r = chat(client, n=4, seed=4, max_tokens=1, response_format={"type": "json_object"})
    for c in r.choices:
        assert c.finish_reason == "length"
        assert c.message.content.lstrip()[:1] in ("{", "["), c.message.content
    # With seed 4 both samples close their value and stop.
    r = chat(client, n=2, seed=4, max_tokens=120, response_format={"type": "json_object"})
    for c in r.choices:
        assert c.finish_reason == "stop" and isinstance(json.loads(c.message.content), (dict, list))


def test_guided_choice(client):
    choices = ["alpha", "beta", "gamma delta"]
    for body in ({"guided_choice": choices}, {"structured_outputs": {"choice": choices}}):
        r = chat(client, n=4, seed=5, max_tokens=20, extra_body=body)
        for c in r.choices:
            assert c.finish_reason == "stop" and c.message.content in choices, c
    # Streamed, the pieces add up to one of the choices.
    for s in stream_chat(client, n=2, seed=5, max_tokens=20, extra_body={"guided_choice": choices}):
        assert s["finish"] == "stop" and s["content"] in choices


def test_guided_regex_on_completions(client):
    pattern = r"(red|green|blue)-[0-9]{2}( ok)?"
    r = client.completions.create(model=MODEL_NAME, prompt="Colour code:", n=3, seed=6, max_tokens=20,
                                  extra_body={"guided_regex": pattern})
    for c in r.choices:
        assert c.finish_reason == "stop" and re.fullmatch(pattern, c.text), c
    text, finish = "", None
    for chunk in client.completions.create(model=MODEL_NAME, prompt="Colour code:", seed=6, max_tokens=20,
                                           stream=True, extra_body={"structured_outputs": {"regex": pattern}}):
        text += chunk.choices[0].text
        finish = chunk.choices[0].finish_reason or finish
    assert finish == "stop" and re.fullmatch(pattern, text)


def test_guided_grammar(client):
    grammar = 'root ::= "(" num (op num){0,3} ")"\nop ::= "+" | "*"\nnum ::= [1-9] [0-9]?'
    r = chat(client, n=3, seed=7, max_tokens=30, extra_body={"guided_grammar": grammar})
    for c in r.choices:
        assert c.finish_reason == "stop", c
        assert re.fullmatch(r"\([1-9][0-9]?([+*][1-9][0-9]?){0,3}\)", c.message.content), c.message.content


def test_grammar_that_never_ends_is_cut_by_length(client):
    """No stop token is ever allowed: the sample runs to max_tokens and returns what it made."""
    r = chat(client, max_tokens=8, seed=8, extra_body={"guided_grammar": 'root ::= "ab" root | "a" root'})
    c = r.choices[0]
    assert c.finish_reason == "length" and r.usage.completion_tokens == 8
    assert re.fullmatch(r"(ab|a)+", c.message.content), c.message.content


def test_named_tool_choice(client):
    """The output is get_weather's arguments, returned as its call; the finish reason stays "stop",
    as OpenAI and vLLM report a named tool choice. Free whitespace: with seed 9 both samples stop."""
    named = {"type": "function", "function": {"name": "get_weather"}}
    r = chat(client, n=2, seed=9, max_tokens=150, tools=TOOLS, tool_choice=named)
    for c in r.choices:
        assert c.finish_reason == "stop", c
        assert c.message.content is None
        [call] = c.message.tool_calls
        assert call.type == "function" and call.id.startswith("call_") and call.function.name == "get_weather"
        check_json(call.function.arguments, PARAMETERS["get_weather"])
    for s, c in zip(stream_chat(client, n=2, seed=9, max_tokens=150, tools=TOOLS, tool_choice=named), r.choices):
        assert s["finish"] == "stop" and s["content"] == ""
        [call] = s["calls"]
        assert call["name"] == "get_weather" and call["arguments"] == c.message.tool_calls[0].function.arguments


def test_required_tool_choice(client):
    """The output is a list of calls to the offered tools; finish reason "tool_calls". With seed 10
    both samples stop."""
    r = chat(client, n=2, seed=10, max_tokens=300, tools=TOOLS, tool_choice="required")
    for c in r.choices:
        assert c.finish_reason == "tool_calls", c
        assert c.message.content is None and c.message.tool_calls
        for call in c.message.tool_calls:
            check_json(call.function.arguments, PARAMETERS[call.function.name])
    for s, c in zip(stream_chat(client, n=2, seed=10, max_tokens=300, tools=TOOLS, tool_choice="required"),
                    r.choices):
        assert s["finish"] == "tool_calls" and s["content"] == ""
        assert [(x["name"], x["arguments"]) for x in s["calls"]] == \
            [(x.function.name, x.function.arguments) for x in c.message.tool_calls]
    # Without parallel tool calls, one call.
    r = chat(client, seed=10, max_tokens=300, tools=TOOLS, tool_choice="required", parallel_tool_calls=False)
    assert r.choices[0].finish_reason == "tool_calls" and len(r.choices[0].message.tool_calls) == 1


def test_responses_text_format(client):
    """A JSON string from a list: a bounded language, so the response completes."""
    fmt = {"format": {"type": "json_schema", "name": "verdict", "schema": {"type": "string", "enum": ["yes", "no"]}}}
    r = client.responses.create(model=MODEL_NAME, input="Yes or no?", text=fmt, max_output_tokens=20)
    assert r.status == "completed" and json.loads(r.output_text) in ("yes", "no"), r.output_text
    assert r.text.format.type == "json_schema" and r.text.format.name == "verdict"  # echoed
    r = client.responses.create(model=MODEL_NAME, input="JSON?", text={"format": {"type": "json_object"}},
                                max_output_tokens=1)
    assert r.status == "incomplete" and r.output_text.lstrip()[:1] in ("{", "[")


def test_responses_forced_function_call(client):
    """The named function's call begins with the output's first token: one token is enough for the
    function_call item (its arguments cut off)."""
    tool = {"type": "function", "name": "get_weather", "parameters": PARAMETERS["get_weather"]}
    r = client.responses.create(model=MODEL_NAME, input="Weather?", tools=[tool], max_output_tokens=1,
                                tool_choice={"type": "function", "name": "get_weather"})
    assert r.status == "incomplete" and r.tool_choice.name == "get_weather"
    [call] = r.output
    assert call.type == "function_call" and call.name == "get_weather" and call.arguments.startswith("{")


def test_anthropic_forced_tool(server):
    """Anthropic's tool choice "tool" makes a tool_use block from the first token on; "any" a list
    of calls. Without a seed (the Messages API has none) the longer outputs vary: each one that
    ends with tool_use must validate."""
    client = anthropic.Anthropic(base_url=server.url, api_key="none", max_retries=0)
    tool = {"name": "get_weather", "input_schema": PARAMETERS["get_weather"]}
    m = client.messages.create(model=MODEL_NAME, max_tokens=1, messages=MESSAGES, tools=[tool],
                               tool_choice={"type": "tool", "name": "get_weather"})
    assert m.stop_reason == "max_tokens" and [(b.type, b.name) for b in m.content] == [("tool_use", "get_weather")]
    for choice in ({"type": "tool", "name": "get_weather"}, {"type": "any"}):
        m = client.messages.create(model=MODEL_NAME, max_tokens=300, messages=MESSAGES, tools=[tool],
                                   tool_choice=choice)
        assert m.stop_reason in ("tool_use", "max_tokens")
        if m.stop_reason == "tool_use":
            uses = [b for b in m.content if b.type == "tool_use"]
            assert uses and all(b.name == "get_weather" for b in uses)
            for b in uses:
                jsonschema.validate(b.input, PARAMETERS["get_weather"])


@pytest.mark.parametrize("fields, param, words", [
    ({"guided_json": {"type": "object", "properties": {"a": {"type": "frog"}}}}, "guided_json",
     ["/properties/a", "frog"]),
    ({"response_format": {"type": "json_schema", "json_schema": {"name": "x", "schema": {
        "type": "string", "minLength": 4, "maxLength": 1}}}}, "response_format.json_schema.schema", ["minLength"]),
    ({"guided_regex": "(ab"}, "guided_regex", ["regular expression"]),
    ({"guided_grammar": "root ::= (\"a\""}, "guided_grammar", ["line 1"]),
    ({"guided_choice": []}, "guided_choice", ["non-empty"]),
    ({"guided_json": {}, "guided_regex": "a"}, "guided_regex", ["'guided_json' and 'guided_regex'"]),
    ({"response_format": {"type": "json_object"}, "structured_outputs": {"choice": ["a"]}},
     "structured_outputs.choice", ["'response_format' and 'structured_outputs.choice'"]),
    ({"tools": TOOLS, "tool_choice": {"type": "function", "function": {"name": "get_date"}}}, "tool_choice",
     ["get_date", "get_weather, get_time"]),
    ({"tool_choice": "required"}, "tool_choice", ["needs 'tools'"]),
    ({"tools": TOOLS, "tool_choice": "required", "guided_json": {}}, "tool_choice", ["both constrain"]),
])
def test_invalid_constraints_are_400s(http, fields, param, words):
    for stream in (False, True):  # refused before any event
        r = http.post("/v1/chat/completions", json={"model": MODEL_NAME, "messages": MESSAGES, "stream": stream,
                                                    **fields})
        assert r.status_code == 400, r.text
        error = r.json()["error"]
        assert error["type"] == "invalid_request_error" and error["param"] == param, error
        for word in words:
            assert word in error["message"], error["message"]


@pytest.fixture(scope="module")
def no_tokenizer(model_dir, tmp_path_factory):
    folder = tmp_path_factory.mktemp("no-tokenizer")
    for name in ("config.json", "generation_config.json"):
        (folder / name).write_bytes((model_dir / name).read_bytes())
    s = Server(folder)
    yield s
    assert s.stop() == 0, s.output()


def test_constraint_without_a_tokenizer_is_a_400(no_tokenizer):
    with httpx.Client(base_url=no_tokenizer.url, timeout=30) as http:
        r = http.post("/v1/completions", json={"model": MODEL_NAME, "prompt": [1, 2], "max_tokens": 2,
                                               "guided_choice": ["a"]})
        assert r.status_code == 400 and r.json()["error"]["param"] == "guided_choice", r.text
        assert "tokenizer" in r.json()["error"]["message"]
        ok = http.post("/v1/completions", json={"model": MODEL_NAME, "prompt": [1, 2], "max_tokens": 2})
        assert ok.status_code == 200
