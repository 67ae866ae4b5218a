"""Prompt logprobs: completions with echo + logprobs (the echoed prompt's logprobs lead the
choice's, the first null), max_tokens 0 with echo (score only: lm-evaluation-harness's
loglikelihood requests), and vLLM's prompt_logprobs field on completions and chat.

lm-evaluation-harness itself needs torch, which CI does not install: these tests send the
requests its `local-completions` model sends and read the fields it reads."""
import math

import pytest

from conftest import MODEL_NAME

EOS_OFF = {"ignore_eos": True}


def lm_eval_loglikelihood(http, requests):
    """What lm-eval's local-completions does for loglikelihood: one batched request of context +
    continuation token ids, then per choice the continuation's summed logprob and whether every
    continuation token was the most likely one."""
    body = {"model": MODEL_NAME, "prompt": [ctx + cont for ctx, cont in requests], "max_tokens": 0,
            "temperature": 0, "logprobs": 1, "echo": True, "seed": 1234}
    response = http.post("/v1/completions", json=body)
    assert response.status_code == 200, response.text
    out = []
    choices = response.json()["choices"]
    assert len(choices) == len(requests)
    for choice, (ctx, cont) in zip(sorted(choices, key=lambda c: c["index"]), requests):
        lp = choice["logprobs"]
        continuation = lp["token_logprobs"][len(ctx):]
        is_greedy = all(max(top, key=top.get) == token
                        for token, top in zip(lp["tokens"][len(ctx):], lp["top_logprobs"][len(ctx):]))
        out.append((sum(continuation), is_greedy, choice, response.json()["usage"]))
    return out


def test_lm_eval_loglikelihood_request(http, hf_tokenizer):
    ctx = hf_tokenizer.encode("The quick brown fox").ids
    cont = hf_tokenizer.encode(" jumps over").ids
    [(logprob, _, choice, usage)] = lm_eval_loglikelihood(http, [(ctx, cont)])
    lp = choice["logprobs"]
    n = len(ctx) + len(cont)
    assert len(lp["tokens"]) == len(lp["token_logprobs"]) == len(lp["top_logprobs"]) == len(lp["text_offset"]) == n
    assert lp["token_logprobs"][0] is None and lp["top_logprobs"][0] is None
    assert all(x is not None and x <= 0 for x in lp["token_logprobs"][1:])
    for token, logprob, top in zip(lp["tokens"][1:], lp["token_logprobs"][1:], lp["top_logprobs"][1:]):
        assert top[token] == logprob and 1 <= len(top) <= 2  # the prompt token and the most likely one
    assert choice["text"] == hf_tokenizer.decode(ctx + cont, skip_special_tokens=False)
    assert choice["finish_reason"] == "length"
    assert usage["prompt_tokens"] == n and usage["completion_tokens"] == 0
    assert math.isfinite(logprob) and logprob < 0


def test_scores_equal_what_generation_reports(client, http, hf_tokenizer):
    """Position i of a scored prompt is what the model predicts after tokens [0, i): its best
    alternative is the greedy token generated from that prefix, with the same logprob."""
    ids = hf_tokenizer.encode("Scoring must agree with sampling").ids
    [(_, _, choice, _)] = lm_eval_loglikelihood(http, [(ids, [])])
    top = choice["logprobs"]["top_logprobs"]
    for i in (1, len(ids) // 2, len(ids) - 1):
        r = client.completions.create(model=MODEL_NAME, prompt=ids[:i], max_tokens=1, temperature=0, logprobs=1,
                                      extra_body=EOS_OFF)
        generated = r.choices[0].logprobs
        best = max(top[i], key=top[i].get)
        assert best == generated.tokens[0], i
        assert top[i][best] == pytest.approx(generated.token_logprobs[0], abs=1e-4), i


def test_lm_eval_batch_shares_the_context_scores(http, hf_tokenizer):
    """A batch of continuations of one context: the context's positions score the same in every
    choice, whatever runs beside it."""
    ctx = hf_tokenizer.encode("Once upon a time there").ids
    conts = [hf_tokenizer.encode(" was a king").ids, hf_tokenizer.encode(" lived a cat").ids, [ctx[0]]]
    results = lm_eval_loglikelihood(http, [(ctx, cont) for cont in conts])
    context_scores = [r[2]["logprobs"]["token_logprobs"][:len(ctx)] for r in results]
    for scores in context_scores[1:]:
        assert scores == pytest.approx(context_scores[0], abs=1e-5)
    for (logprob, is_greedy, choice, _), cont in zip(results, conts):
        assert len(choice["logprobs"]["tokens"]) == len(ctx) + len(cont)
        assert logprob < 0 and isinstance(is_greedy, bool)
    assert results[0][3]["prompt_tokens"] == 3 * len(ctx) + sum(len(c) for c in conts)
    assert results[0][3]["completion_tokens"] == 0


def test_echo_logprobs_with_generation(client):
    prompt = "Hello there"
    kwargs = dict(model=MODEL_NAME, prompt=prompt, max_tokens=3, temperature=0, logprobs=2, extra_body=EOS_OFF)
    echoed = client.completions.create(echo=True, **kwargs)
    plain = client.completions.create(**kwargs)
    lp, generated = echoed.choices[0].logprobs, plain.choices[0].logprobs
    num_prompt = echoed.usage.prompt_tokens
    assert echoed.choices[0].text == prompt + plain.choices[0].text
    assert len(lp.tokens) == num_prompt + 3 and echoed.usage.completion_tokens == 3
    assert lp.token_logprobs[0] is None and lp.top_logprobs[0] is None
    assert lp.tokens[num_prompt:] == generated.tokens
    assert lp.token_logprobs[num_prompt:] == pytest.approx(generated.token_logprobs, abs=1e-5)
    assert lp.text_offset[0] == 0
    for i in range(1, len(lp.tokens)):  # continuous over prompt and completion (brisk counts UTF-8 bytes)
        assert lp.text_offset[i] == lp.text_offset[i - 1] + len(lp.tokens[i - 1].encode())
    for token, logprob, top in zip(lp.tokens[1:], lp.token_logprobs[1:], lp.top_logprobs[1:]):
        assert top[token] == logprob and 2 <= len(top) <= 3


def test_echo_logprobs_streaming(client):
    prompt = "Stream the echo"
    kwargs = dict(model=MODEL_NAME, prompt=prompt, max_tokens=4, temperature=0, logprobs=1, echo=True,
                  extra_body=EOS_OFF)
    whole = client.completions.create(**kwargs).choices[0].logprobs
    chunks = list(client.completions.create(stream=True, n=2, **kwargs))
    for index in (0, 1):
        mine = [c.choices[0] for c in chunks if c.choices[0].index == index]
        assert mine[0].text == prompt  # the echoed prompt comes first, with its logprobs
        assert mine[0].logprobs.token_logprobs[0] is None and mine[0].logprobs.top_logprobs[0] is None
        assert len(mine[0].logprobs.tokens) == len(whole.tokens) - 4
        tokens = [t for c in mine if c.logprobs for t in c.logprobs.tokens]
        logprobs = [x for c in mine if c.logprobs for x in c.logprobs.token_logprobs]
        assert tokens == whole.tokens
        assert logprobs[0] is None and logprobs[1:] == pytest.approx(whole.token_logprobs[1:], abs=1e-5)
        generated = [c for c in mine[1:] if c.logprobs and c.logprobs.tokens]
        assert generated[0].logprobs.text_offset[0] == len(prompt.encode())  # offsets continue after the echo
        assert sum(1 for c in mine if c.finish_reason == "length") == 1


def test_echo_max_tokens_zero_streaming_and_without_logprobs(client):
    chunks = list(client.completions.create(model=MODEL_NAME, prompt="only the prompt", max_tokens=0, echo=True,
                                            stream=True, stream_options={"include_usage": True}))
    texts = "".join(c.choices[0].text for c in chunks if c.choices)
    assert texts == "only the prompt"
    assert [c.choices[0].finish_reason for c in chunks if c.choices and c.choices[0].finish_reason] == ["length"]
    assert chunks[-1].usage.completion_tokens == 0 and chunks[-1].usage.prompt_tokens > 0
    r = client.completions.create(model=MODEL_NAME, prompt="only the prompt", max_tokens=0, echo=True)
    assert r.choices[0].text == "only the prompt" and r.choices[0].logprobs is None
    assert r.usage.completion_tokens == 0


def check_vllm_prompt_logprobs(scores, prompt_ids, num_top):
    """vLLM's shape: null, then per position {"<id>": {logprob, rank, decoded_token}} holding the
    prompt token and the num_top most likely tokens (ranks 1..num_top)."""
    assert len(scores) == len(prompt_ids) and scores[0] is None
    for position, token in zip(scores[1:], prompt_ids[1:]):
        mine = position[str(token)]
        assert all(set(v) == {"logprob", "rank", "decoded_token"} for v in position.values())
        assert mine["logprob"] <= 0 and mine["rank"] >= 1
        assert num_top <= len(position) <= num_top + 1
        others = sorted(v["rank"] for k, v in position.items() if k != str(token))
        assert set(others) <= set(range(1, num_top + 1))
        best = max(v["logprob"] for v in position.values())
        assert (mine["rank"] == 1) == (mine["logprob"] == best)
        if num_top > 0:
            assert [v["logprob"] for v in position.values() if v["rank"] == 1][0] == best


def test_prompt_logprobs_on_completions(http, hf_tokenizer):
    ids = hf_tokenizer.encode("vLLM's prompt logprobs").ids
    body = {"model": MODEL_NAME, "prompt": ids, "max_tokens": 2, "temperature": 0, "prompt_logprobs": 2, "n": 2,
            "logprobs": 1, "echo": True, **EOS_OFF}
    response = http.post("/v1/completions", json=body).json()
    for choice in response["choices"]:
        check_vllm_prompt_logprobs(choice["prompt_logprobs"], ids, 2)
        echoed = choice["logprobs"]["token_logprobs"][:len(ids)]
        assert echoed[1:] == pytest.approx([p[str(t)]["logprob"] for p, t in
                                            zip(choice["prompt_logprobs"][1:], ids[1:])], abs=1e-6)
    assert response["usage"]["completion_tokens"] == 4
    plain = http.post("/v1/completions", json={"model": MODEL_NAME, "prompt": ids, "max_tokens": 1}).json()
    assert "prompt_logprobs" not in plain["choices"][0]


def test_prompt_logprobs_on_chat(client, http):
    messages = [{"role": "user", "content": "Score my prompt"}]
    r = client.chat.completions.create(model=MODEL_NAME, messages=messages, max_tokens=2, temperature=0,
                                       extra_body={"prompt_logprobs": 0, **EOS_OFF})
    scores = r.model_extra["prompt_logprobs"]
    assert len(scores) == r.usage.prompt_tokens and scores[0] is None
    assert all(len(p) == 1 and next(iter(p.values()))["rank"] >= 1 for p in scores[1:])
    assert r.usage.completion_tokens == 2
    with_top = http.post("/v1/chat/completions", json={"model": MODEL_NAME, "messages": messages, "max_tokens": 1,
                                                       "prompt_logprobs": 3}).json()["prompt_logprobs"]
    prompt_ids = [None] + [int(next(iter(p))) for p in scores[1:]]
    check_vllm_prompt_logprobs(with_top, prompt_ids, 3)
    for mine, top in zip(scores[1:], with_top[1:]):
        token, value = next(iter(mine.items()))
        assert top[token]["logprob"] == pytest.approx(value["logprob"], abs=1e-6)
        assert top[token]["rank"] == value["rank"]
