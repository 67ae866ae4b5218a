"""GET /v1/models, /health, /version, /metrics; POST /tokenize and /detokenize; the chat
template as the server renders it, against Python jinja2 and Hugging Face `tokenizers`."""
import json

import jinja2
import pytest

import tiny_model
from conftest import MODEL_NAME, check_vllm_gauges, metric

MESSAGES = [
    {"role": "system", "content": "Be brief."},
    {"role": "user", "content": "Hello there"},
    {"role": "assistant", "content": "Hi! How can I help?"},
    {"role": "tool", "content": "{\"temperature\": 21}", "tool_call_id": "call_1"},
    {"role": "user", "content": [{"type": "text", "text": "What is"}, {"type": "text", "text": "the weather?"}]},
]
TOOLS = [{"type": "function", "function": {"name": "get_weather", "parameters": {"type": "object"}}},
         {"type": "function", "function": {"name": "get_time"}}]


def render_with_jinja2(messages, tools=None, add_generation_prompt=True):
    """The chat template rendered the way transformers renders it."""
    flat = [dict(m, content="\n".join(p["text"] for p in m["content"]) if isinstance(m["content"], list)
                 else m["content"]) for m in messages]
    env = jinja2.Environment(trim_blocks=True, lstrip_blocks=True)
    return env.from_string(tiny_model.CHAT_TEMPLATE).render(
        messages=flat, tools=tools, add_generation_prompt=add_generation_prompt, bos_token=tiny_model.BOS,
        eos_token=tiny_model.IM_END)


def test_models(client, server):
    models = client.models.list()
    assert [m.id for m in models.data] == [MODEL_NAME]
    assert models.data[0].object == "model"
    assert models.data[0].owned_by == "brisk"


def test_health_and_version(http):
    assert http.get("/health").status_code == 200
    assert http.get("/version").json()["version"]


def test_tokenize_prompt_matches_hf(http, hf_tokenizer):
    text = "Hello world, ｈｅｌｌｏ 日本語!"
    body = http.post("/tokenize", json={"prompt": text}).json()
    assert body["tokens"] == hf_tokenizer.encode(text).ids
    assert body["count"] == len(body["tokens"])
    assert body["max_model_len"] == tiny_model.MAX_MODEL_LEN
    raw = http.post("/tokenize", json={"prompt": text, "add_special_tokens": False}).json()
    assert raw["tokens"] == hf_tokenizer.encode(text, add_special_tokens=False).ids


def test_detokenize_roundtrip(http, hf_tokenizer):
    ids = hf_tokenizer.encode("Hello world").ids
    body = http.post("/detokenize", json={"tokens": ids}).json()
    assert body["prompt"] == hf_tokenizer.decode(ids, skip_special_tokens=False)


@pytest.mark.parametrize("tools", [None, TOOLS])
def test_chat_template_applied(http, hf_tokenizer, tools):
    request = {"messages": MESSAGES}
    if tools:
        request["tools"] = tools
    body = http.post("/tokenize", json=request).json()
    rendered = render_with_jinja2(MESSAGES, tools)
    assert rendered.startswith(tiny_model.BOS + "<|im_start|>")
    assert body["tokens"] == hf_tokenizer.encode(rendered, add_special_tokens=False).ids
    # The same ids through the server's own text path.
    as_text = http.post("/tokenize", json={"prompt": rendered, "add_special_tokens": False}).json()
    assert as_text["tokens"] == body["tokens"]
    without_prompt = http.post("/tokenize", json=dict(request, add_generation_prompt=False)).json()
    assert without_prompt["tokens"] == hf_tokenizer.encode(
        render_with_jinja2(MESSAGES, tools, add_generation_prompt=False), add_special_tokens=False).ids


def test_developer_role_is_system(http):
    system = http.post("/tokenize", json={"messages": [{"role": "system", "content": "x"}]}).json()
    developer = http.post("/tokenize", json={"messages": [{"role": "developer", "content": "x"}]}).json()
    assert developer["tokens"] == system["tokens"]


def test_metrics_exposition(http, client):
    client.completions.create(model=MODEL_NAME, prompt="count me", max_tokens=3, extra_body={"ignore_eos": True})
    response = http.get("/metrics")
    assert response.status_code == 200
    assert response.headers["content-type"].startswith("text/plain")
    text = response.text
    for family, kind in [("brisk_http_requests_total", "counter"), ("brisk_prompt_tokens_total", "counter"),
                         ("brisk_generation_tokens_total", "counter"),
                         ("brisk_time_to_first_token_seconds", "histogram"),
                         ("brisk_inter_token_latency_seconds", "histogram"),
                         ("brisk_e2e_request_latency_seconds", "histogram"),
                         ("brisk_num_requests_running", "gauge"), ("brisk_num_requests_waiting", "gauge"),
                         ("brisk_kv_cache_usage_perc", "gauge"), ("brisk_prefix_cache_hit_rate", "gauge")]:
        assert f"# TYPE {family} {kind}" in text
    assert metric(text, "brisk_http_requests_total", 'route="/v1/completions",status="200"') >= 1
    assert metric(text, "brisk_generation_tokens_total") >= 3
    assert metric(text, "brisk_e2e_request_latency_seconds_count") >= 1
    assert metric(text, "brisk_time_to_first_token_seconds_bucket", 'le="+Inf"') >= 1
    assert metric(text, "brisk_inter_token_latency_seconds_count") >= 2
    assert metric(text, "brisk_kv_cache_blocks_total") > 0
    # Histogram buckets are cumulative.
    buckets = [float(line.rsplit(" ", 1)[1]) for line in text.splitlines()
               if line.startswith("brisk_e2e_request_latency_seconds_bucket")]
    assert buckets == sorted(buckets)
    # The endpoint picker's vLLM names (test_load compares them under load), and the cache
    # configuration its prefix-cache scorer reads from vllm:cache_config_info's labels.
    families = check_vllm_gauges(text)
    [info] = families["vllm:cache_config_info"].samples
    assert info.value == 1 and info.labels["engine"] == "0"
    assert int(info.labels["num_gpu_blocks"]) == metric(text, "brisk_kv_cache_blocks_total")
    assert int(info.labels["block_size"]) * int(info.labels["num_gpu_blocks"]) == \
        metric(text, "brisk_kv_cache_capacity_tokens")


def test_quantized_kv_cache_capacity_in_metrics(model_dir, http):
    """--kv-cache-dtype int8 holds more tokens in the same --kv-cache-memory, and /metrics says so
    (the tiny model's cache is f32 at head_dim 32: 128 bytes a row against 32 + 3)."""
    from conftest import Server, httpx
    capacity = metric(http.get("/metrics").text, "brisk_kv_cache_capacity_tokens")
    s = Server(model_dir, "--kv-cache-dtype", "int8")
    try:
        quantized = metric(httpx.get(s.url + "/metrics").text, "brisk_kv_cache_capacity_tokens")
    finally:
        assert s.stop() == 0
    assert capacity > 0 and quantized / capacity > 3.5


def test_prefix_cache_hit_rate(http, client):
    prompt = "A shared prefix that is long enough to fill a few KV blocks of sixteen tokens each. " * 3
    for _ in range(2):
        client.completions.create(model=MODEL_NAME, prompt=prompt, max_tokens=1)
    text = http.get("/metrics").text
    assert metric(text, "brisk_prefix_cache_hits_total") > 0
    assert 0 < metric(text, "brisk_prefix_cache_hit_rate") <= 1
