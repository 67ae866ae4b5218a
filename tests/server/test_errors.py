"""Every bad request gets OpenAI's error body with the right status and a message naming the
field at fault; nothing crashes and the server keeps serving."""
import json
import socket

import openai
import pytest

from conftest import MODEL_NAME, Server, httpx

CHAT = {"model": MODEL_NAME, "messages": [{"role": "user", "content": "hi"}], "max_tokens": 2}
COMPLETION = {"model": MODEL_NAME, "prompt": "hi", "max_tokens": 2}


def expect_error(response, status, param=None, words=()):
    assert response.status_code == status, response.text
    error = response.json()["error"]
    assert set(error) == {"message", "type", "param", "code"}
    assert isinstance(error["message"], str) and error["message"]
    if param is not None:
        assert error["param"] == param, error
    for word in words:
        assert word in error["message"], error
    return error


BAD_CHAT = [
    ({"messages": []}, "messages", ["empty"]),
    ({"messages": "hi"}, "messages", ["list"]),
    ({"messages": [{"role": "wizard", "content": "x"}]}, "messages[0].role", ["wizard"]),
    ({"messages": [{"content": "x"}]}, "messages[0].role", ["required"]),
    ({"messages": [{"role": "user"}]}, "messages[0].content", ["required"]),
    ({"messages": [{"role": "user", "content": [{"type": "image_url", "image_url": {"url": "x"}}]}]},
     "messages[0].content", ["image_url"]),
    ({"temperature": -0.5}, "temperature", ["[0, inf)"]),
    ({"temperature": "hot"}, "temperature", ["number"]),
    ({"top_p": 0}, "top_p", ["(0, 1]"]),
    ({"top_p": 1.5}, "top_p", ["(0, 1]"]),
    ({"top_k": -2}, "top_k", []),
    ({"min_p": 2}, "min_p", []),
    ({"n": 0}, "n", ["[1,"]),
    ({"n": "2"}, "n", ["integer"]),
    ({"max_tokens": 0}, "max_tokens", ["[1,"]),
    ({"prompt_logprobs": 21}, "prompt_logprobs", ["[0, 20]"]),
    ({"stream": True, "prompt_logprobs": 1}, "prompt_logprobs", ["stream"]),
    ({"max_tokens": 1.5}, "max_tokens", ["integer"]),
    ({"max_completion_tokens": -1}, "max_completion_tokens", []),
    ({"presence_penalty": 3}, "presence_penalty", ["[-2, 2]"]),
    ({"frequency_penalty": -3}, "frequency_penalty", ["[-2, 2]"]),
    ({"repetition_penalty": 0}, "repetition_penalty", []),
    ({"seed": "abc"}, "seed", ["integer"]),
    ({"stop": 5}, "stop", ["string"]),
    ({"stop": [""]}, "stop", ["empty"]),
    ({"stream": "yes"}, "stream", ["boolean"]),
    ({"stream_options": {"include_usage": True}}, "stream_options", ["stream"]),
    ({"logprobs": 1}, "logprobs", ["boolean"]),
    ({"top_logprobs": 3}, "top_logprobs", ["logprobs"]),
    ({"logprobs": True, "top_logprobs": 21}, "top_logprobs", ["[0, 20]"]),
    ({"logit_bias": {"x": 10}}, "logit_bias", ["token ids"]),
    ({"logit_bias": {"99999": 10}}, "logit_bias", ["outside the vocabulary"]),
    ({"response_format": {"type": "json_schema"}}, "response_format.json_schema", ["json_schema"]),
    ({"tool_choice": "required"}, "tool_choice", ["needs 'tools'"]),
    ({"tools": "all"}, "tools", ["list"]),
    ({"functions": [{"name": "f"}]}, "functions", ["tools"]),
    ({"best_of": 3}, "best_of", []),
    ({"guided_json": {"type": "frog"}}, "guided_json", ["frog"]),
    ({"max_tokens": 600}, "max_tokens", ["maximum context length is 512"]),
    ({"model": 7}, "model", ["string"]),
]


@pytest.mark.parametrize("fields,param,words", BAD_CHAT, ids=[str(i) for i in range(len(BAD_CHAT))])
def test_bad_chat_request(http, fields, param, words):
    expect_error(http.post("/v1/chat/completions", json={**CHAT, **fields}), 400, param, words)


BAD_COMPLETION = [
    ({"prompt": None}, "prompt", ["required"]),
    ({"prompt": []}, "prompt", ["empty"]),
    ({"prompt": [[]]}, "prompt", ["empty"]),
    ({"prompt": [1, "a"]}, "prompt", ["token ids"]),
    ({"prompt": [-1]}, "prompt", ["token ids"]),
    ({"prompt": {"text": "x"}}, "prompt", []),
    ({"prompt": [99999]}, "prompt", ["outside the vocabulary"]),
    ({"prompt": "x " * 600}, "prompt", ["maximum context length is 512"]),
    ({"suffix": "end"}, "suffix", ["not supported"]),
    ({"max_tokens": 0}, "max_tokens", ["only allowed with 'echo'"]),
    ({"max_tokens": 0, "logprobs": 1}, "max_tokens", ["only allowed with 'echo'"]),
    ({"max_tokens": -1, "echo": True}, "max_tokens", ["[0,"]),
    ({"prompt_logprobs": -1}, "prompt_logprobs", ["[0, 20]"]),
    ({"prompt_logprobs": 2, "stream": True}, "prompt_logprobs", ["stream"]),
    ({"logprobs": 30}, "logprobs", ["[0, 20]"]),
    ({"logprobs": True}, "logprobs", ["integer"]),
    ({"min_tokens": 5, "max_tokens": 2}, "min_tokens", ["max_tokens"]),
    ({"stop_token_ids": [1, "x"]}, "stop_token_ids", []),
]


@pytest.mark.parametrize("fields,param,words", BAD_COMPLETION, ids=[str(i) for i in range(len(BAD_COMPLETION))])
def test_bad_completion_request(http, fields, param, words):
    body = {**COMPLETION, **fields}
    body = {k: v for k, v in body.items() if v is not None}
    expect_error(http.post("/v1/completions", json=body), 400, param, words)


@pytest.mark.parametrize("path", ["/v1/completions", "/v1/chat/completions", "/tokenize", "/detokenize"])
@pytest.mark.parametrize("body", [b"{not json", b"[1, 2]", b"", b"\xff\xfe", b"{\"a\": " * 100 + b"1" + b"}" * 100])
def test_malformed_json(http, path, body):
    error = expect_error(http.post(path, content=body), 400)
    assert error["type"] == "invalid_request_error"


def test_unknown_model_is_404(client):
    with pytest.raises(openai.NotFoundError) as e:
        client.chat.completions.create(model="gpt-4", messages=CHAT["messages"])
    assert "gpt-4" in str(e.value)
    with pytest.raises(openai.NotFoundError):
        client.completions.create(model="other", prompt="x")


def test_openai_client_raises_bad_request(client):
    with pytest.raises(openai.BadRequestError) as e:
        client.chat.completions.create(model=MODEL_NAME, messages=[], max_tokens=2)
    assert e.value.status_code == 400


def test_streaming_errors_come_before_the_stream(http):
    response = http.post("/v1/chat/completions", json={**CHAT, "stream": True, "max_tokens": 10_000})
    expect_error(response, 400, "max_tokens", ["maximum context length"])
    assert response.headers["content-type"] == "application/json"


def test_tokenize_errors(http):
    expect_error(http.post("/tokenize", json={}), 400, "prompt")
    expect_error(http.post("/tokenize", json={"prompt": "x", "messages": []}), 400, "prompt", ["not both"])
    expect_error(http.post("/detokenize", json={"tokens": [5000]}), 400, "tokens", ["outside the vocabulary"])
    expect_error(http.post("/detokenize", json={"tokens": "abc"}), 400, "tokens")


def test_routes(http):
    expect_error(http.get("/v1/nothing"), 404)
    response = http.get("/v1/completions")
    expect_error(response, 405, words=["POST"])
    assert response.headers["allow"] == "POST"
    response = http.delete("/v1/models")
    expect_error(response, 405, words=["GET, HEAD"])
    assert response.headers["allow"] == "GET, HEAD"


def raw_exchange(server, request, until_close=True):
    """Sends raw bytes on a new connection; returns what comes back until the server closes it
    (or, with until_close false, until nothing more arrives for half a second)."""
    host, port = server.url.removeprefix("http://").split(":")
    data = b""
    with socket.create_connection((host, int(port)), timeout=30) as s:
        s.sendall(request)
        if not until_close:
            s.settimeout(0.5)
        try:
            while chunk := s.recv(65536):
                data += chunk
        except socket.timeout:
            pass
    return data


def test_head_answers_without_a_body_and_keeps_the_connection(server, http):
    # HEAD then GET on one keep-alive connection: the GET's response must follow the HEAD's headers
    # directly (a body after HEAD would be read as the next response).
    data = raw_exchange(server, b"HEAD /v1/models HTTP/1.1\r\nHost: x\r\n\r\n"
                                b"GET /version HTTP/1.1\r\nHost: x\r\n\r\n", until_close=False)
    head, rest = data.split(b"\r\n\r\n", 1)
    assert head.startswith(b"HTTP/1.1 200")
    length = int(next(l for l in head.split(b"\r\n") if l.lower().startswith(b"content-length:")).split(b":")[1])
    assert length == len(http.get("/v1/models").content) > 0
    assert rest.startswith(b"HTTP/1.1 200"), rest[:200]
    assert rest.endswith(b'"}'), rest  # the /version body, whole


def test_streaming_to_an_http_1_0_client_is_close_delimited(server):
    body = json.dumps({**COMPLETION, "max_tokens": 4, "stream": True, "ignore_eos": True}).encode()
    data = raw_exchange(server, b"POST /v1/completions HTTP/1.0\r\nContent-Type: application/json\r\n"
                                b"Content-Length: " + str(len(body)).encode() + b"\r\n\r\n" + body)
    head, events = data.split(b"\r\n\r\n", 1)
    assert head.startswith(b"HTTP/1.0 200"), head
    assert b"chunked" not in head.lower()
    assert events.rstrip().endswith(b"data: [DONE]"), events[-200:]
    assert b'"finish_reason":"length"' in events.replace(b" ", b"")


def test_malformed_http_does_not_crash(server, http):
    host, port = server.url.removeprefix("http://").split(":")
    for raw in [b"GARBAGE\r\n\r\n", b"POST /v1/completions HTTP/1.1\r\nContent-Length: 5\r\n\r\n",
                b"POST /v1/completions HTTP/1.1\r\nContent-Length: -1\r\n\r\n", b"\x00" * 100]:
        with socket.create_connection((host, int(port)), timeout=10) as s:
            s.sendall(raw)
            s.shutdown(socket.SHUT_WR)
            s.recv(4096)
    assert http.get("/health").status_code == 200


@pytest.fixture(scope="module")
def guarded(model_dir):
    s = Server(model_dir, "--api-key", "sesame", "--max-request-bytes", "4096")
    yield s
    assert s.stop() == 0, s.output()


def test_api_key(guarded):
    with pytest.raises(openai.AuthenticationError):
        guarded.client(api_key="wrong").models.list()
    response = httpx.get(guarded.base_url + "/models")
    expect_error(response, 401)
    assert guarded.client(api_key="sesame").models.list().data[0].id == MODEL_NAME
    r = guarded.client(api_key="sesame").completions.create(model=MODEL_NAME, prompt="x", max_tokens=1)
    assert r.usage.completion_tokens == 1
    assert httpx.get(guarded.url + "/health").status_code == 200  # health checks need no key


def test_body_limit(guarded):
    headers = {"Authorization": "Bearer sesame"}
    big = {"model": MODEL_NAME, "prompt": "x" * 5000, "max_tokens": 1}
    expect_error(httpx.post(guarded.base_url + "/completions", json=big, headers=headers), 413, None, ["4096"])
    small = {"model": MODEL_NAME, "prompt": "x" * 100, "max_tokens": 1}
    assert httpx.post(guarded.base_url + "/completions", json=small, headers=headers).status_code == 200


@pytest.fixture(scope="module")
def cors(model_dir):
    s = Server(model_dir, "--allowed-origins", "https://a.example,https://b.example", "--api-key", "sesame")
    yield s
    assert s.stop() == 0, s.output()


def test_cors_preflight_and_responses(cors):
    preflight = httpx.options(cors.base_url + "/chat/completions", headers={
        "Origin": "https://b.example", "Access-Control-Request-Method": "POST",
        "Access-Control-Request-Headers": "authorization, content-type"})
    assert preflight.status_code == 204  # without the API key, as browsers send it
    assert preflight.headers["access-control-allow-origin"] == "https://b.example"
    assert "POST" in preflight.headers["access-control-allow-methods"]
    assert preflight.headers["access-control-allow-headers"] == "authorization, content-type"
    auth = {"Authorization": "Bearer sesame", "Origin": "https://a.example"}
    r = httpx.post(cors.base_url + "/completions", json=COMPLETION, headers=auth)
    assert r.status_code == 200 and r.headers["access-control-allow-origin"] == "https://a.example"
    assert r.headers["vary"] == "Origin"
    with httpx.stream("POST", cors.base_url + "/completions", json={**COMPLETION, "stream": True}, headers=auth) as s:
        assert s.headers["access-control-allow-origin"] == "https://a.example"
        s.read()
    denied = httpx.post(cors.base_url + "/completions", json=COMPLETION, headers={"Origin": "https://a.example"})
    assert denied.status_code == 401 and denied.headers["access-control-allow-origin"] == "https://a.example"
    # An origin not on the list gets no CORS headers, and its preflight is an unknown method.
    other = httpx.options(cors.base_url + "/chat/completions", headers={
        "Origin": "https://evil.example", "Access-Control-Request-Method": "POST"})
    assert other.status_code in (401, 405) and "access-control-allow-origin" not in other.headers


def test_no_cors_by_default(server, http):
    r = http.get("/v1/models", headers={"Origin": "https://a.example"})
    assert r.status_code == 200 and "access-control-allow-origin" not in r.headers
    expect_error(http.options("/v1/models", headers={"Origin": "https://a.example"}), 405)
