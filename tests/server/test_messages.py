"""POST /v1/messages (Anthropic's Messages API) through the official `anthropic` package: text on
the tiny model; thinking, tool_use and a tool round trip on the scripted model (scripted_model.py);
streaming events; Anthropic-shaped errors."""
import json

import anthropic
import pytest

import scripted_model
from conftest import Server, httpx

TOOL = {"name": "get_weather", "description": "Current weather in a city",
        "input_schema": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}}
ASK = [{"role": "user", "content": "What is the weather in Paris?"}]
ARGUMENTS = {"city": "Paris", "unit": "celsius"}
# The installed anthropic package no longer takes sampling arguments; the API still does.
GREEDY = {"temperature": 0}


def anthropic_client(server, **kwargs):
    return anthropic.Anthropic(base_url=server.url, api_key="none", max_retries=0, **kwargs)


@pytest.fixture(scope="module")
def thinking(tmp_path_factory):
    s = Server(scripted_model.write(tmp_path_factory.mktemp("scripted-model")), "--reasoning-parser", "qwen3",
               dummy_weights=False)
    yield s
    assert s.stop() == 0, s.output()


def test_text_message(server):
    m = anthropic_client(server).messages.create(model="tiny", max_tokens=12, system="Be brief.",
                                                 messages=[{"role": "user", "content": "Hello"}],
                                                 extra_body=GREEDY)
    assert m.type == "message" and m.role == "assistant" and m.id.startswith("msg_")
    assert m.stop_reason in ("end_turn", "max_tokens")
    assert m.usage.output_tokens <= 12 and m.usage.input_tokens > 0
    assert [b.type for b in m.content] in (["text"], [])


def test_stop_sequence(server):
    client = anthropic_client(server)
    full = client.messages.create(model="tiny", max_tokens=30, messages=ASK, extra_body=GREEDY)
    text = full.content[0].text
    stop = text[len(text) // 2:len(text) // 2 + 2]
    m = client.messages.create(model="tiny", max_tokens=30, messages=ASK, extra_body=GREEDY, stop_sequences=[stop])
    assert m.stop_reason == "stop_sequence" and m.stop_sequence == stop
    assert m.content[0].text == text[:text.index(stop)]


def test_thinking_and_tool_use(thinking):
    m = anthropic_client(thinking).messages.create(model="tiny", max_tokens=100, messages=ASK, tools=[TOOL])
    assert m.stop_reason == "tool_use"
    assert [b.type for b in m.content] == ["thinking", "tool_use"]
    assert m.content[0].thinking == "The user asks for the weather.\n"
    assert m.content[1].name == "get_weather" and m.content[1].input == ARGUMENTS


def test_streaming_events(thinking):
    client = anthropic_client(thinking)
    with client.messages.stream(model="tiny", max_tokens=100, messages=ASK, tools=[TOOL]) as stream:
        events = list(stream)
        final = stream.get_final_message()
    kinds = [e.type for e in events if e.type.startswith(("message_", "content_block_"))]
    assert kinds[0] == "message_start" and kinds[-2:] == ["message_delta", "message_stop"]
    starts = [e.content_block.type for e in events if e.type == "content_block_start"]
    assert starts == ["thinking", "tool_use"]
    json_pieces = [e.delta.partial_json for e in events if e.type == "content_block_delta"
                   and e.delta.type == "input_json_delta"]
    assert len(json_pieces) == 3 and json.loads("".join(json_pieces)) == ARGUMENTS
    assert final.stop_reason == "tool_use" and final.content[1].input == ARGUMENTS
    assert final.content[0].thinking == "The user asks for the weather.\n"


def test_tool_round_trip(thinking):
    client = anthropic_client(thinking)
    first = client.messages.create(model="tiny", max_tokens=100, messages=ASK, tools=[TOOL])
    use = first.content[1]
    messages = ASK + [{"role": "assistant", "content": [b.model_dump(exclude_none=True) for b in first.content]},
                      {"role": "user", "content": [{"type": "tool_result", "tool_use_id": use.id,
                                                    "content": [{"type": "text", "text": "18 degrees"}]},
                                                   {"type": "text", "text": "Thanks!"}]}]
    second = client.messages.create(model="tiny", max_tokens=100, messages=messages, tools=[TOOL])
    assert second.stop_reason == "tool_use"
    count = client.messages.count_tokens(model="tiny", messages=messages, tools=[TOOL])
    assert count.input_tokens == second.usage.input_tokens + second.usage.cache_read_input_tokens
    # The conversation reached the template as chat messages: the call (arguments as an object)
    # and the result.
    openai_messages = [ASK[0],
                       {"role": "assistant", "content": "", "tool_calls": [{"id": use.id, "type": "function",
                        "function": {"name": "get_weather", "arguments": json.dumps(ARGUMENTS)}}]},
                       {"role": "tool", "tool_call_id": use.id, "content": "18 degrees"},
                       {"role": "user", "content": "Thanks!"}]
    with httpx.Client(base_url=thinking.url, timeout=30) as http:
        tokens = http.post("/tokenize", json={"messages": openai_messages, "tools": [
            {"type": "function", "function": {"name": TOOL["name"], "description": TOOL["description"],
                                              "parameters": TOOL["input_schema"]}}]}).json()
    assert tokens["count"] == count.input_tokens


def test_errors_are_anthropic_shaped(server):
    client = anthropic_client(server)
    with pytest.raises(anthropic.BadRequestError) as e:
        client.messages.create(model="tiny", max_tokens=5, messages=[
            {"role": "user", "content": [{"type": "image", "source": {"type": "url", "url": "http://x/y.png"}}]}])
    assert e.value.body["type"] == "error" and e.value.body["error"]["type"] == "invalid_request_error"
    assert "image" in e.value.body["error"]["message"]
    with pytest.raises(anthropic.BadRequestError, match="not among 'tools'"):
        client.messages.create(model="tiny", max_tokens=5, messages=ASK, tools=[TOOL],
                               tool_choice={"type": "tool", "name": "unknown"})
    with pytest.raises(anthropic.BadRequestError, match="server tools"):
        client.messages.create(model="tiny", max_tokens=5, messages=ASK,
                               tools=[{"type": "web_search_20250305", "name": "web_search"}])
    with pytest.raises(anthropic.NotFoundError):
        client.messages.create(model="claude-sonnet-4", max_tokens=5, messages=ASK)
    with httpx.Client(base_url=server.url, timeout=30) as http:
        r = http.post("/v1/messages", json={"messages": ASK})
        assert r.status_code == 400 and "max_tokens" in r.json()["error"]["message"]
        r = http.post("/v1/messages", content=b"{not json")
        assert r.status_code == 400 and r.json()["type"] == "error"


def test_x_api_key(model_dir):
    s = Server(model_dir, "--api-key", "sekret")
    try:
        m = anthropic.Anthropic(base_url=s.url, api_key="sekret", max_retries=0).messages.create(
            model="tiny", max_tokens=3, messages=ASK)
        assert m.usage.output_tokens <= 3
        with pytest.raises(anthropic.AuthenticationError):
            anthropic.Anthropic(base_url=s.url, api_key="wrong", max_retries=0).messages.create(
                model="tiny", max_tokens=3, messages=ASK)
    finally:
        assert s.stop() == 0
