"""POST /v1/chat/completions through the openai package: roles, max_tokens and
max_completion_tokens, n, stop, sampling parameters, seeds, logprobs and top_logprobs,
streaming with include_usage, usage equal to the rendered prompt's token count."""
from conftest import MODEL_NAME

EOS_OFF = {"ignore_eos": True}
MESSAGES = [{"role": "system", "content": "You are terse."}, {"role": "user", "content": "Say something."}]


def prompt_tokens(http, messages, **extra):
    return http.post("/tokenize", json={"messages": messages, **extra}).json()["count"]


def test_basic_chat(client, http):
    r = client.chat.completions.create(model=MODEL_NAME, messages=MESSAGES, max_tokens=6, extra_body=EOS_OFF)
    assert r.object == "chat.completion" and r.id.startswith("chatcmpl-")
    choice = r.choices[0]
    assert choice.message.role == "assistant" and isinstance(choice.message.content, str)
    assert choice.finish_reason == "length"
    assert r.usage.prompt_tokens == prompt_tokens(http, MESSAGES)
    assert r.usage.completion_tokens == 6
    assert r.usage.total_tokens == r.usage.prompt_tokens + 6


def test_all_roles_and_tools(client, http):
    messages = [
        {"role": "system", "content": "sys"},
        {"role": "user", "content": "What is the weather?"},
        {"role": "assistant", "content": None,
         "tool_calls": [{"id": "call_1", "type": "function",
                         "function": {"name": "get_weather", "arguments": "{}"}}]},
        {"role": "tool", "tool_call_id": "call_1", "content": "sunny"},
        {"role": "user", "content": [{"type": "text", "text": "thanks"}]},
    ]
    tools = [{"type": "function", "function": {"name": "get_weather", "parameters": {"type": "object"}}}]
    r = client.chat.completions.create(model=MODEL_NAME, messages=messages, tools=tools, tool_choice="auto",
                                       max_tokens=3, extra_body=EOS_OFF)
    assert r.usage.prompt_tokens == prompt_tokens(http, messages, tools=tools)
    assert r.usage.prompt_tokens > prompt_tokens(http, messages)  # the template lists the tools


def test_max_completion_tokens_wins(client):
    r = client.chat.completions.create(model=MODEL_NAME, messages=MESSAGES, max_tokens=9, max_completion_tokens=4,
                                       extra_body=EOS_OFF)
    assert r.usage.completion_tokens == 4


def test_default_max_tokens_fills_context(client, http):
    r = client.chat.completions.create(model=MODEL_NAME, messages=MESSAGES, extra_body=EOS_OFF)
    assert r.choices[0].finish_reason == "length"
    assert r.usage.prompt_tokens + r.usage.completion_tokens == 512


def test_n_and_seed(client):
    kwargs = dict(model=MODEL_NAME, messages=MESSAGES, max_tokens=6, n=3, seed=11, temperature=1.0,
                  extra_body=EOS_OFF)
    a, b = client.chat.completions.create(**kwargs), client.chat.completions.create(**kwargs)
    assert [c.index for c in a.choices] == [0, 1, 2]
    assert [c.message.content for c in a.choices] == [c.message.content for c in b.choices]
    assert len({c.message.content for c in a.choices}) > 1
    assert a.usage.completion_tokens == 18


def test_sampling_parameters(client):
    r = client.chat.completions.create(
        model=MODEL_NAME, messages=MESSAGES, max_tokens=5, temperature=0.5, top_p=0.9, presence_penalty=1.0,
        frequency_penalty=-0.5, seed=1, stop=["never-appears"],
        extra_body={"top_k": 5, "min_p": 0.1, "repetition_penalty": 1.2, "ignore_eos": True})
    assert r.usage.completion_tokens == 5 and r.choices[0].finish_reason == "length"


def test_stop(client):
    base = client.chat.completions.create(model=MODEL_NAME, messages=MESSAGES, max_tokens=30, temperature=0,
                                          extra_body=EOS_OFF).choices[0].message.content
    stop = base[len(base) // 2:len(base) // 2 + 2]
    assert stop.strip(), base
    r = client.chat.completions.create(model=MODEL_NAME, messages=MESSAGES, max_tokens=30, temperature=0,
                                       stop=[stop], extra_body=EOS_OFF)
    assert r.choices[0].finish_reason == "stop"
    assert r.choices[0].message.content == base[:base.index(stop)]
    assert r.choices[0].stop_reason == stop  # vLLM's field: which stop string ended it


def test_logprobs_and_top_logprobs(client):
    r = client.chat.completions.create(model=MODEL_NAME, messages=MESSAGES, max_tokens=5, logprobs=True,
                                       top_logprobs=4, extra_body=EOS_OFF)
    content = r.choices[0].logprobs.content
    assert len(content) == 5
    for entry in content:
        assert entry.logprob <= 0 and entry.bytes == list(entry.token.encode())
        assert len(entry.top_logprobs) == 4
        values = [t.logprob for t in entry.top_logprobs]
        assert values == sorted(values, reverse=True)
        assert values[0] >= entry.logprob - 1e-5
    plain = client.chat.completions.create(model=MODEL_NAME, messages=MESSAGES, max_tokens=2, logprobs=True,
                                           extra_body=EOS_OFF)
    assert all(e.top_logprobs == [] for e in plain.choices[0].logprobs.content)


def test_greedy_top_logprob_is_the_chosen_token(client):
    r = client.chat.completions.create(model=MODEL_NAME, messages=MESSAGES, max_tokens=5, temperature=0,
                                       logprobs=True, top_logprobs=1, extra_body=EOS_OFF)
    for entry in r.choices[0].logprobs.content:
        assert abs(entry.top_logprobs[0].logprob - entry.logprob) < 1e-5


def test_stream_with_usage(client, http):
    kwargs = dict(model=MODEL_NAME, messages=MESSAGES, max_tokens=10, temperature=0, extra_body=EOS_OFF)
    full = client.chat.completions.create(**kwargs)
    chunks = list(client.chat.completions.create(stream=True, stream_options={"include_usage": True}, **kwargs))
    assert chunks[0].choices[0].delta.role == "assistant"
    text = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
    assert text == full.choices[0].message.content
    finishes = [c.choices[0].finish_reason for c in chunks if c.choices]
    assert finishes[-1] == "length" and all(f is None for f in finishes[:-1])
    usage = chunks[-1].usage
    assert chunks[-1].choices == [] and all(c.usage is None for c in chunks[:-1])
    assert usage.prompt_tokens == prompt_tokens(http, MESSAGES) and usage.completion_tokens == 10


def test_stream_n_and_logprobs(client):
    chunks = list(client.chat.completions.create(model=MODEL_NAME, messages=MESSAGES, max_tokens=4, n=2,
                                                 logprobs=True, top_logprobs=2, stream=True, extra_body=EOS_OFF))
    per_choice = {0: 0, 1: 0}
    for c in chunks:
        if c.choices[0].logprobs:
            per_choice[c.choices[0].index] += len(c.choices[0].logprobs.content)
            assert all(len(e.top_logprobs) == 2 for e in c.choices[0].logprobs.content)
    assert per_choice == {0: 4, 1: 4}
    assert sorted(c.choices[0].index for c in chunks if c.choices[0].finish_reason) == [0, 1]
