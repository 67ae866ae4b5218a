"""POST /v1/completions through the openai package: prompt forms, echo, logprobs, n, stop,
seeds, sampling parameters, streaming, and usage equal to the tokenizer's counts."""
import pytest

from conftest import MODEL_NAME

EOS_OFF = {"ignore_eos": True}  # random weights may emit eos at any step: exact counts need it off


def test_string_prompt_usage_matches_tokenizer(client, hf_tokenizer):
    prompt = "Once upon a time"
    r = client.completions.create(model=MODEL_NAME, prompt=prompt, max_tokens=7, extra_body=EOS_OFF)
    assert r.object == "text_completion" and r.id.startswith("cmpl-") and r.model == MODEL_NAME
    assert len(r.choices) == 1 and r.choices[0].finish_reason == "length"
    assert r.usage.prompt_tokens == len(hf_tokenizer.encode(prompt).ids)
    assert r.usage.completion_tokens == 7
    assert r.usage.total_tokens == r.usage.prompt_tokens + 7


def test_default_max_tokens_is_16(client):
    r = client.completions.create(model=MODEL_NAME, prompt="x", extra_body=EOS_OFF)
    assert r.usage.completion_tokens == 16


def test_model_may_be_omitted(http):
    body = http.post("/v1/completions", json={"prompt": "x", "max_tokens": 2}).json()
    assert body["model"] == MODEL_NAME


def test_list_of_prompts_and_token_ids(client, hf_tokenizer):
    prompts = ["first prompt", "the second, longer prompt"]
    r = client.completions.create(model=MODEL_NAME, prompt=prompts, max_tokens=3, extra_body=EOS_OFF)
    assert [c.index for c in r.choices] == [0, 1]
    assert r.usage.prompt_tokens == sum(len(hf_tokenizer.encode(p).ids) for p in prompts)
    assert r.usage.completion_tokens == 6
    ids = hf_tokenizer.encode("first prompt").ids
    by_ids = client.completions.create(model=MODEL_NAME, prompt=ids, max_tokens=3, temperature=0, extra_body=EOS_OFF)
    by_text = client.completions.create(model=MODEL_NAME, prompt="first prompt", max_tokens=3, temperature=0,
                                        extra_body=EOS_OFF)
    assert by_ids.choices[0].text == by_text.choices[0].text
    batch = client.completions.create(model=MODEL_NAME, prompt=[ids, ids[:2]], max_tokens=2, extra_body=EOS_OFF)
    assert len(batch.choices) == 2 and batch.usage.prompt_tokens == len(ids) + 2


def test_echo(client):
    r = client.completions.create(model=MODEL_NAME, prompt="Echo this", max_tokens=2, echo=True, temperature=0)
    plain = client.completions.create(model=MODEL_NAME, prompt="Echo this", max_tokens=2, temperature=0)
    assert r.choices[0].text == "Echo this" + plain.choices[0].text


def test_logprobs(client):
    r = client.completions.create(model=MODEL_NAME, prompt="Hello", max_tokens=5, logprobs=3, extra_body=EOS_OFF)
    lp = r.choices[0].logprobs
    assert len(lp.tokens) == len(lp.token_logprobs) == len(lp.top_logprobs) == len(lp.text_offset) == 5
    assert all(x <= 0 for x in lp.token_logprobs)
    assert lp.text_offset == sorted(lp.text_offset)
    for token, logprob, top in zip(lp.tokens, lp.token_logprobs, lp.top_logprobs):
        assert top[token] == logprob


def test_top_logprobs(client):
    r = client.completions.create(model=MODEL_NAME, prompt="Hello", max_tokens=4, logprobs=3, extra_body=EOS_OFF)
    for token, logprob, top in zip(*(getattr(r.choices[0].logprobs, k) for k in ("tokens", "token_logprobs",
                                                                               "top_logprobs"))):
        # the 3 most likely alternatives plus the chosen token, keyed by text (distinct byte
        # pieces may share the text "\ufffd", so the map can hold fewer entries)
        assert 1 <= len(top) <= 4
        assert max(top.values()) >= logprob


def test_n_samples(client):
    r = client.completions.create(model=MODEL_NAME, prompt=["a", "b"], max_tokens=4, n=3, seed=5,
                                  extra_body=EOS_OFF)
    assert [c.index for c in r.choices] == list(range(6))
    assert r.usage.completion_tokens == 24
    texts = [c.text for c in r.choices[:3]]
    assert len(set(texts)) > 1, "samples of one prompt must differ"


def test_seed_reproducible(client):
    kwargs = dict(model=MODEL_NAME, prompt="seeded", max_tokens=8, temperature=1.0, top_p=0.9, seed=1234,
                  extra_body=EOS_OFF)
    a, b = client.completions.create(**kwargs), client.completions.create(**kwargs)
    c = client.completions.create(**dict(kwargs, seed=4321))
    assert a.choices[0].text == b.choices[0].text
    assert a.choices[0].text != c.choices[0].text or a.choices[0].logprobs != c.choices[0].logprobs


def test_sampling_parameters_accepted(client):
    r = client.completions.create(
        model=MODEL_NAME, prompt="params", max_tokens=4, temperature=0.7, top_p=0.8, presence_penalty=0.5,
        frequency_penalty=0.5, seed=3, stop=["zzzz"],
        extra_body={"top_k": 20, "min_p": 0.05, "repetition_penalty": 1.1, "min_tokens": 2, "ignore_eos": True})
    assert r.usage.completion_tokens == 4


def test_logit_bias(client, hf_tokenizer):
    """A bias of 100 on one token makes greedy decoding choose it every step, at a logprob near 0."""
    token = hf_tokenizer.encode(" the", add_special_tokens=False).ids[0]
    r = client.completions.create(model=MODEL_NAME, prompt="bias", max_tokens=5, temperature=0, logprobs=1,
                                  logit_bias={str(token): 100}, extra_body=EOS_OFF)
    assert r.choices[0].logprobs.tokens == [hf_tokenizer.decode([token])] * 5
    assert all(lp > -1e-3 for lp in r.choices[0].logprobs.token_logprobs)


def test_greedy_is_deterministic(client):
    kwargs = dict(model=MODEL_NAME, prompt="greedy", max_tokens=10, temperature=0, extra_body=EOS_OFF)
    assert client.completions.create(**kwargs).choices[0].text == client.completions.create(**kwargs).choices[0].text


def test_stop_string(client):
    base = client.completions.create(model=MODEL_NAME, prompt="stop test", max_tokens=24, temperature=0,
                                     extra_body=EOS_OFF).choices[0].text
    visible = base.strip()
    if len(visible) < 4:
        pytest.skip("the greedy continuation is too short to cut")
    stop = visible[len(visible) // 2:len(visible) // 2 + 2]
    r = client.completions.create(model=MODEL_NAME, prompt="stop test", max_tokens=24, temperature=0, stop=stop,
                                  extra_body=EOS_OFF)
    assert r.choices[0].finish_reason == "stop"
    assert r.choices[0].text == base[:base.index(stop)]


def test_stream_matches_non_stream(client):
    kwargs = dict(model=MODEL_NAME, prompt="stream me", max_tokens=12, temperature=0, extra_body=EOS_OFF)
    full = client.completions.create(**kwargs)
    chunks = list(client.completions.create(stream=True, **kwargs))
    assert "".join(c.choices[0].text for c in chunks) == full.choices[0].text
    assert chunks[-1].choices[0].finish_reason == "length"
    assert all(c.choices[0].finish_reason is None for c in chunks[:-1])
    assert all(c.usage is None for c in chunks)


def test_stream_include_usage(client, hf_tokenizer):
    chunks = list(client.completions.create(model=MODEL_NAME, prompt="usage please", max_tokens=5, stream=True,
                                            stream_options={"include_usage": True}, extra_body=EOS_OFF))
    assert chunks[-1].choices == []
    assert chunks[-1].usage.prompt_tokens == len(hf_tokenizer.encode("usage please").ids)
    assert chunks[-1].usage.completion_tokens == 5


def test_stream_n_and_echo(client):
    chunks = list(client.completions.create(model=MODEL_NAME, prompt="ab", max_tokens=3, n=2, echo=True,
                                            stream=True, extra_body=EOS_OFF))
    texts = {0: "", 1: ""}
    for c in chunks:
        texts[c.choices[0].index] += c.choices[0].text
    assert all(t.startswith("ab") for t in texts.values())
    assert sum(1 for c in chunks if c.choices[0].finish_reason == "length") == 2


def test_stream_logprobs(client):
    chunks = list(client.completions.create(model=MODEL_NAME, prompt="lp", max_tokens=6, logprobs=0, stream=True,
                                            extra_body=EOS_OFF))
    tokens = [t for c in chunks if c.choices[0].logprobs for t in c.choices[0].logprobs.tokens]
    assert len(tokens) == 6


def test_stream_sends_a_chunk_per_token_without_a_tokenizer(tmp_path, model_dir):
    """A model folder without a tokenizer streams token-id prompts with a chunk per token (empty
    text), as vLLM does: benchmark clients time and count tokens by chunks."""
    from conftest import Server
    (tmp_path / "config.json").write_text((model_dir / "config.json").read_text())
    server = Server(tmp_path)
    try:
        chunks = list(server.client().completions.create(
            model=MODEL_NAME, prompt=[5, 6, 7], max_tokens=6, stream=True, stream_options={"include_usage": True},
            extra_body=EOS_OFF))
    finally:
        assert server.stop() == 0, server.output()
    tokens = [c for c in chunks if c.choices and c.choices[0].finish_reason is None]
    assert len(tokens) == 6 and all(c.choices[0].text == "" for c in tokens)
    assert chunks[-1].usage.completion_tokens == 6
