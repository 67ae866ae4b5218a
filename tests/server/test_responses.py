"""POST /v1/responses (OpenAI's Responses API) through the official openai package: text on the
tiny model (the same greedy text as chat completions), reasoning and function calls on the
scripted model (scripted_model.py) with --reasoning-parser qwen3, a tool round trip, streamed
events in OpenAI's order whose deltas add up to the final response, incomplete responses, and
the 400s for what brisk does not do. Raw bodies and events are also validated strictly against
the SDK's pydantic types (the SDK itself parses leniently)."""
import json

import openai
import pydantic
import pytest
from openai.types.responses import Response, ResponseStreamEvent

import scripted_model
from conftest import MODEL_NAME, Server, httpx, metric

WEATHER_TOOL = {"type": "function", "name": "get_weather", "description": "Current weather in a city",
                "parameters": {"type": "object", "properties": {"city": {"type": "string"},
                                                                "unit": {"type": "string"}},
                               "required": ["city"]}}
CHAT_WEATHER_TOOL = {"type": "function", "function": {k: v for k, v in WEATHER_TOOL.items() if k != "type"}}
ARGUMENTS = {"city": "Paris", "unit": "celsius"}
QUESTION = "What is the weather in Paris?"
REASONING = "The user asks for the weather.\n"
# Thinking, then a plain answer in three pieces.
ANSWER_SCRIPT = ["<think>", "\nShort question.\n", "</think>", "\n\n", "It is ", "sunny ", "today."]
EVENTS = pydantic.TypeAdapter(ResponseStreamEvent)


@pytest.fixture(scope="module")
def thinking(tmp_path_factory):
    """The tool-calling script, reasoning split off."""
    s = Server(scripted_model.write(tmp_path_factory.mktemp("scripted-tools")), "--reasoning-parser", "qwen3",
               dummy_weights=False)
    yield s
    assert s.stop() == 0, s.output()


@pytest.fixture(scope="module")
def answering(tmp_path_factory):
    """A script that thinks, then answers in text."""
    s = Server(scripted_model.write(tmp_path_factory.mktemp("scripted-answer"), ANSWER_SCRIPT),
               "--reasoning-parser", "qwen3", dummy_weights=False)
    yield s
    assert s.stop() == 0, s.output()


def post(server, body):
    with httpx.Client(base_url=server.url, timeout=60) as http:
        return http.post("/v1/responses", json=body)


def raw_events(server, body):
    """The named server-sent events of a streamed response, each validated against the SDK's types."""
    events = []
    with httpx.Client(base_url=server.url, timeout=60) as http:
        with http.stream("POST", "/v1/responses", json={**body, "stream": True}) as r:
            assert r.status_code == 200 and r.headers["content-type"].startswith("text/event-stream")
            name = None
            for line in r.iter_lines():
                if line.startswith("event: "):
                    name = line.removeprefix("event: ")
                elif line.startswith("data: "):
                    data = json.loads(line.removeprefix("data: "))
                    assert data["type"] == name
                    EVENTS.validate_python(data)
                    events.append(data)
    assert [e["sequence_number"] for e in events] == list(range(len(events)))
    return events


def prompt_tokens(server, messages, **extra):
    with httpx.Client(base_url=server.url, timeout=60) as http:
        return http.post("/tokenize", json={"messages": messages, **extra}).json()["count"]


def test_text_is_chats_greedy_text(server, client):
    r = client.responses.create(model=MODEL_NAME, instructions="You are terse.", input="Say something.",
                                max_output_tokens=5, temperature=0, metadata={"k": "v"})
    assert r.object == "response" and r.id.startswith("resp_") and r.model == MODEL_NAME
    assert r.status in ("completed", "incomplete") and r.error is None
    [message] = r.output
    assert message.type == "message" and message.role == "assistant" and message.id.startswith("msg_")
    assert [part.type for part in message.content] == ["output_text"]
    messages = [{"role": "system", "content": "You are terse."}, {"role": "user", "content": "Say something."}]
    chat = client.chat.completions.create(model=MODEL_NAME, messages=messages, max_tokens=5, temperature=0)
    assert r.output_text == chat.choices[0].message.content
    assert r.usage.input_tokens == chat.usage.prompt_tokens == prompt_tokens(server, messages)
    assert r.usage.output_tokens == chat.usage.completion_tokens
    assert r.usage.total_tokens == r.usage.input_tokens + r.usage.output_tokens
    assert (r.status == "incomplete") == (chat.choices[0].finish_reason == "length")
    # The request's settings come back.
    assert r.instructions == "You are terse." and r.max_output_tokens == 5 and r.temperature == 0
    assert r.metadata == {"k": "v"} and r.tool_choice == "auto" and r.tools == [] and r.parallel_tool_calls
    assert r.text.format.type == "text"


def test_body_matches_the_sdk_types_strictly(server):
    r = post(server, {"model": MODEL_NAME, "input": [{"role": "user", "content": "hi"}], "max_output_tokens": 3,
                      "store": True, "tools": [WEATHER_TOOL]})
    assert r.status_code == 200, r.text
    response = Response.model_validate(r.json())
    assert response.usage.input_tokens_details.cached_tokens >= 0
    assert response.usage.output_tokens_details.reasoning_tokens == 0
    assert response.tools[0].name == "get_weather"


def test_reasoning_and_function_call(thinking):
    r = thinking.client().responses.create(model=MODEL_NAME, input=QUESTION, tools=[WEATHER_TOOL])
    assert r.status == "completed"
    assert [item.type for item in r.output] == ["reasoning", "function_call"]
    reasoning, call = r.output
    assert reasoning.id.startswith("rs_") and reasoning.summary == []
    assert [(c.type, c.text) for c in reasoning.content] == [("reasoning_text", REASONING)]
    assert call.id.startswith("fc_") and call.call_id.startswith("call_") and call.status == "completed"
    assert call.name == "get_weather" and json.loads(call.arguments) == ARGUMENTS
    assert r.output_text == ""
    Response.model_validate(post(thinking, {"input": QUESTION, "tools": [WEATHER_TOOL]}).json())


def test_tool_choice_none_leaves_the_call_in_the_text(thinking):
    r = thinking.client().responses.create(model=MODEL_NAME, input=QUESTION, tools=[WEATHER_TOOL], tool_choice="none")
    assert [item.type for item in r.output] == ["reasoning", "message"]
    assert r.output_text.startswith("<tool_call>\n{\"name\": \"get_weather\"")


def test_tool_round_trip(thinking):
    """The SDK's documented loop: the first response's items appended to the input, then the
    function's output. The template gets the call (arguments as an object) and the result."""
    client = thinking.client()
    first = client.responses.create(model=MODEL_NAME, input=QUESTION, tools=[WEATHER_TOOL])
    call = first.output[-1]
    items = [{"role": "user", "content": QUESTION}, *first.output,
             {"type": "function_call_output", "call_id": call.call_id, "output": "18 degrees, sunny"}]
    second = client.responses.create(model=MODEL_NAME, input=items, tools=[WEATHER_TOOL])
    assert second.status == "completed" and second.output[-1].type == "function_call"
    messages = [{"role": "user", "content": QUESTION},
                {"role": "assistant", "content": None, "tool_calls": [
                    {"id": call.call_id, "type": "function",
                     "function": {"name": "get_weather", "arguments": call.arguments}}]},
                {"role": "tool", "tool_call_id": call.call_id, "content": "18 degrees, sunny"}]
    with httpx.Client(base_url=thinking.url, timeout=30) as http:
        tokens = http.post("/tokenize", json={"messages": messages, "tools": [CHAT_WEATHER_TOOL]}).json()
        text = http.post("/detokenize", json={"tokens": tokens["tokens"]}).json()["prompt"]
    assert '<tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris", "unit": "celsius"}}\n</tool_call>' in text
    assert "<tool_response>\n18 degrees, sunny\n</tool_response>" in text
    assert second.usage.input_tokens == tokens["count"]


def test_streamed_function_call_events(thinking):
    events = raw_events(thinking, {"model": MODEL_NAME, "input": QUESTION, "tools": [WEATHER_TOOL]})
    kinds = [e["type"] for e in events]
    reasoning_deltas = [e["delta"] for e in events if e["type"] == "response.reasoning_text.delta"]
    argument_deltas = [e["delta"] for e in events if e["type"] == "response.function_call_arguments.delta"]
    # Consecutive deltas of one kind collapse to one "...delta*" entry.
    shape = [k + "*" if k.endswith(".delta") else k for i, k in enumerate(kinds) if i == 0 or k != kinds[i - 1]]
    assert shape == [
        "response.created", "response.in_progress",
        "response.output_item.added", "response.content_part.added", "response.reasoning_text.delta*",
        "response.reasoning_text.done", "response.content_part.done", "response.output_item.done",
        "response.output_item.added", "response.function_call_arguments.delta*",
        "response.function_call_arguments.done", "response.output_item.done",
        "response.completed"]
    assert "".join(reasoning_deltas) == REASONING
    # The arguments stream as the model writes them.
    assert argument_deltas == ["{\"city\": ", "\"Paris\", \"unit\": ", "\"celsius\"}"]
    done = next(e for e in events if e["type"] == "response.function_call_arguments.done")
    assert json.loads(done["arguments"]) == ARGUMENTS
    added = [e for e in events if e["type"] == "response.output_item.added"]
    finished = [e for e in events if e["type"] == "response.output_item.done"]
    assert [e["output_index"] for e in added] == [e["output_index"] for e in finished] == [0, 1]
    assert [e["item"]["id"] for e in added] == [e["item"]["id"] for e in finished]
    assert added[1]["item"]["name"] == "get_weather" and added[1]["item"]["arguments"] == ""
    final = events[-1]["response"]
    assert events[0]["response"]["id"] == final["id"] and events[0]["response"]["status"] == "in_progress"
    assert final["status"] == "completed" and final["output"] == [e["item"] for e in finished]
    assert final["usage"]["output_tokens"] == len(scripted_model.TOOL_SCRIPT) + 1  # and the end-of-turn token


def test_streamed_text_through_the_sdk(answering):
    client = answering.client()
    whole = client.responses.create(model=MODEL_NAME, input="Weather?")
    assert [item.type for item in whole.output] == ["reasoning", "message"]
    assert whole.output_text == "It is sunny today."
    text, reasoning, kinds = "", "", []
    for event in client.responses.create(model=MODEL_NAME, input="Weather?", stream=True):
        kinds.append(event.type)
        if event.type == "response.output_text.delta":
            text += event.delta
        elif event.type == "response.reasoning_text.delta":
            reasoning += event.delta
        elif event.type == "response.output_text.done":
            assert event.text == text
        elif event.type == "response.completed":
            final = event.response
    assert text == final.output_text == whole.output_text
    assert reasoning == final.output[0].content[0].text == whole.output[0].content[0].text
    assert kinds.index("response.output_text.delta") > kinds.index("response.reasoning_text.done")
    # The SDK's stream helper accumulates the same response.
    with client.responses.stream(model=MODEL_NAME, input="Weather?") as stream:
        assert "".join(e.delta for e in stream if e.type == "response.output_text.delta") == "It is sunny today."
        assert stream.get_final_response().output_text == "It is sunny today."


def test_cut_by_max_output_tokens_is_incomplete(answering):
    r = answering.client().responses.create(model=MODEL_NAME, input="Weather?", max_output_tokens=5)
    assert r.status == "incomplete" and r.incomplete_details.reason == "max_output_tokens"
    assert r.usage.output_tokens == 5
    assert r.output[-1].type == "message" and r.output[-1].status == "incomplete"
    assert r.output_text == "It is "
    events = raw_events(answering, {"input": "Weather?", "max_output_tokens": 5})
    assert events[-1]["type"] == "response.incomplete"
    assert events[-1]["response"]["incomplete_details"] == {"reason": "max_output_tokens"}
    assert events[-2]["type"] == "response.output_item.done" and events[-2]["item"]["status"] == "incomplete"


@pytest.mark.parametrize("fields, param, words", [
    ({"previous_response_id": "resp_123"}, "previous_response_id", "keeps no responses"),
    ({"tools": [{"type": "web_search"}]}, "tools[0].type", "web_search"),
    ({"tools": [WEATHER_TOOL, {"type": "file_search", "vector_store_ids": ["vs_1"]}]}, "tools[1].type", "file_search"),
    ({"background": True}, "background", "foreground"),
    ({"tool_choice": "required"}, "tool_choice", "needs 'tools'"),
    ({"text": {"format": {"type": "json_schema", "name": "x", "schema": {"type": "frog"}}}}, "text.format.schema",
     "frog"),
    ({"input": [{"type": "item_reference", "id": "msg_1"}]}, "input[0].type", "keeps no items"),
    ({"max_output_tokens": 100_000}, "max_output_tokens", "lower max_output_tokens"),
])
def test_bad_requests(http, fields, param, words):
    for stream in (False, True):  # refused before any event
        r = http.post("/v1/responses", json={"model": MODEL_NAME, "input": "hi", "stream": stream, **fields})
        assert r.status_code == 400 and r.headers["content-type"] == "application/json", r.text
        error = r.json()["error"]
        assert error["type"] == "invalid_request_error" and error["param"] == param
        assert words in error["message"], error["message"]


def test_sdk_raises_bad_request_and_not_found(client):
    with pytest.raises(openai.BadRequestError) as e:
        client.responses.create(model=MODEL_NAME, input="hi", previous_response_id="resp_123")
    assert "send the whole conversation" in str(e.value)
    with pytest.raises(openai.NotFoundError):
        client.responses.create(model="gpt-5", input="hi")


def test_route_takes_post_only_and_is_counted(http):
    r = http.get("/v1/responses")
    assert r.status_code == 405 and r.headers["allow"] == "POST"
    assert http.post("/v1/responses", json={"input": "hi", "max_output_tokens": 1}).status_code == 200
    text = http.get("/metrics").text
    assert metric(text, "brisk_http_requests_total", 'route="/v1/responses",status="200"') >= 1
    assert metric(text, "brisk_http_requests_total", 'route="/v1/responses",status="405"') >= 1
