"""Tool calls and reasoning in chat responses, through the official openai package, on the
scripted model (scripted_model.py): it thinks between <think> tags, then calls get_weather in
the Hermes format its chat template describes (so --tool-call-parser auto picks hermes)."""
import json

import pytest

import scripted_model
from conftest import Server, httpx

WEATHER_TOOL = {"type": "function", "function": {
    "name": "get_weather", "description": "Current weather in a city",
    "parameters": {"type": "object", "properties": {"city": {"type": "string"}, "unit": {"type": "string"}},
                   "required": ["city"]}}}
ARGUMENTS = {"city": "Paris", "unit": "celsius"}
MESSAGES = [{"role": "user", "content": "What is the weather in Paris?"}]
REASONING = "The user asks for the weather.\n"


@pytest.fixture(scope="module")
def scripted_dir(tmp_path_factory):
    return scripted_model.write(tmp_path_factory.mktemp("scripted-model"))


@pytest.fixture(scope="module")
def plain(scripted_dir):
    """Default parsers: tool calls (auto: hermes), reasoning left in the content."""
    s = Server(scripted_dir, dummy_weights=False)
    yield s
    assert s.stop() == 0, s.output()


@pytest.fixture(scope="module")
def thinking(scripted_dir):
    s = Server(scripted_dir, "--reasoning-parser", "qwen3", dummy_weights=False)
    yield s
    assert s.stop() == 0, s.output()


def test_server_names_the_parsers_it_chose(plain, thinking):
    assert "tool calls hermes, reasoning not parsed" in plain.output()
    assert "tool calls hermes, reasoning split off" in thinking.output()


def test_tool_call_and_reasoning(thinking):
    r = thinking.client().chat.completions.create(model="tiny", messages=MESSAGES, tools=[WEATHER_TOOL])
    choice = r.choices[0]
    assert choice.finish_reason == "tool_calls"
    assert choice.message.content is None
    assert choice.message.reasoning_content == REASONING.strip() + "\n"
    [call] = choice.message.tool_calls
    assert call.type == "function" and call.id.startswith("call_")
    assert call.function.name == "get_weather"
    assert json.loads(call.function.arguments) == ARGUMENTS


def test_tool_call_without_reasoning_parser_keeps_thinking_in_content(plain):
    r = plain.client().chat.completions.create(model="tiny", messages=MESSAGES, tools=[WEATHER_TOOL],
                                                temperature=0)
    message = r.choices[0].message
    assert message.content == "<think>\n" + REASONING + "</think>"
    assert [c.function.name for c in message.tool_calls] == ["get_weather"]
    assert not hasattr(message, "reasoning_content") or message.reasoning_content is None


def test_no_tools_or_tool_choice_none_leaves_the_text(thinking):
    client = thinking.client()
    for extra in ({}, {"tools": [WEATHER_TOOL], "tool_choice": "none"}):
        r = client.chat.completions.create(model="tiny", messages=MESSAGES, **extra)
        assert r.choices[0].finish_reason == "stop"
        assert r.choices[0].message.tool_calls in (None, [])
        assert r.choices[0].message.content.startswith("<tool_call>\n{\"name\": \"get_weather\"")
        assert r.choices[0].message.reasoning_content == REASONING


def test_streaming_deltas(thinking):
    stream = thinking.client().chat.completions.create(model="tiny", messages=MESSAGES, tools=[WEATHER_TOOL],
                                                        stream=True)
    reasoning, content, calls, finish = "", "", [], None
    for chunk in stream:
        delta = chunk.choices[0].delta
        reasoning += getattr(delta, "reasoning_content", None) or ""
        content += delta.content or ""
        for call in delta.tool_calls or []:
            if call.id:
                assert call.index == len(calls) and call.type == "function"
                calls.append({"id": call.id, "name": call.function.name, "arguments": []})
            else:
                assert call.function.name is None, "the name comes once, with the id"
            calls[call.index]["arguments"].append(call.function.arguments)
        finish = chunk.choices[0].finish_reason or finish
    assert finish == "tool_calls"
    assert reasoning == REASONING and content == ""
    [call] = calls
    assert call["name"] == "get_weather"
    # The arguments stream as the model writes them: the name's delta, then the three pieces.
    assert [a for a in call["arguments"] if a] == ["{\"city\": ", "\"Paris\", \"unit\": ", "\"celsius\"}"]
    assert json.loads("".join(call["arguments"])) == ARGUMENTS


def test_end_of_turn_token_is_not_text_when_special_tokens_are_kept(plain):
    r = plain.client().chat.completions.create(model="tiny", messages=MESSAGES,
                                                extra_body={"skip_special_tokens": False})
    assert r.choices[0].finish_reason == "stop"
    assert r.choices[0].message.content.endswith("</tool_call>")


def test_round_trip(thinking):
    """The openai SDK's second turn: the assistant's tool_calls with null content, then the tool's
    answer. The template receives the arguments as an object, as it expects."""
    client = thinking.client()
    first = client.chat.completions.create(model="tiny", messages=MESSAGES, tools=[WEATHER_TOOL])
    call = first.choices[0].message.tool_calls[0]
    messages = MESSAGES + [
        first.choices[0].message.model_dump(exclude_none=True, include={"role", "content", "tool_calls"}) |
        {"content": None},
        {"role": "tool", "tool_call_id": call.id, "content": "18 degrees, sunny"}]
    second = client.chat.completions.create(model="tiny", messages=messages, tools=[WEATHER_TOOL])
    assert second.choices[0].finish_reason == "tool_calls"
    with httpx.Client(base_url=thinking.url, timeout=30) as http:
        tokens = http.post("/tokenize", json={"model": "tiny", "messages": messages, "tools": [WEATHER_TOOL]}).json()
        text = http.post("/detokenize", json={"model": "tiny", "tokens": tokens["tokens"]}).json()["prompt"]
    assert '<tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris", "unit": "celsius"}}\n</tool_call>' in text
    assert "<tool_response>\n18 degrees, sunny\n</tool_response>" in text
    assert second.usage.prompt_tokens == tokens["count"]


def test_bad_tool_call_arguments_are_a_400(thinking):
    messages = MESSAGES + [{"role": "assistant", "content": None, "tool_calls": [
        {"id": "call_1", "type": "function", "function": {"name": "get_weather", "arguments": "{not json"}}]}]
    with httpx.Client(base_url=thinking.url, timeout=30) as http:
        r = http.post("/v1/chat/completions", json={"model": "tiny", "messages": messages})
    assert r.status_code == 400
    assert r.json()["error"]["param"] == "messages[1].tool_calls"
    assert "not valid JSON" in r.json()["error"]["message"]


def test_unknown_parser_is_refused_at_start(scripted_dir):
    import subprocess
    from conftest import BINARY
    p = subprocess.run([BINARY, "serve", "--model", str(scripted_dir), "--tool-call-parser", "pythonic"],
                       capture_output=True, text=True, timeout=60)
    assert p.returncode != 0 and "--tool-call-parser" in p.stderr and "pythonic" in p.stderr
