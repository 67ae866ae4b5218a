"""Structured output on the bundled default model (models/tiny-austen: real weights, trained on
Austen's novels, never on JSON): the grammar alone makes its text valid. Every sample that
finishes "stop" validates against its schema with jsonschema; with compact separators the
language is bounded, so every sample must stop."""
import json

import jsonschema
import pytest

from conftest import MODEL_NAME, REPO, Server

SCHEMA = {"type": "object",
          "properties": {"name": {"type": "string", "maxLength": 24},
                         "age": {"type": "integer", "minimum": 16, "maximum": 90},
                         "married": {"type": "boolean"},
                         "town": {"type": "string", "enum": ["Bath", "London", "Highbury", "Meryton"]}},
          "required": ["name", "age", "married", "town"], "additionalProperties": False}
PROMPT = "Describe Miss Elizabeth Bennet as a record:"


@pytest.fixture(scope="module")
def austen():
    s = Server(REPO / "models/tiny-austen", dummy_weights=False)
    yield s.client()
    assert s.stop() == 0, s.output()


def test_compact_schema_always_stops_and_validates(austen):
    r = austen.completions.create(model=MODEL_NAME, prompt=PROMPT, n=6, seed=0, temperature=0.8, max_tokens=120,
                                  extra_body={"structured_outputs": {"json": SCHEMA, "disable_any_whitespace": True}})
    for c in r.choices:
        assert c.finish_reason == "stop", c.text  # bounded language: at most ~100 bytes
        jsonschema.validate(json.loads(c.text, strict=False), SCHEMA)


def test_response_format_schema_validates_where_it_stops(austen):
    """vLLM's default whitespace ([ \n\t]* between tokens): this model, which never saw JSON,
    spends its tokens on newlines after the brace (as models do under vLLM's default; compact
    separators are the remedy, above). Required: a sample that stops validates, one cut off is the
    start of the object followed by what the grammar allows."""
    rf = {"type": "json_schema", "json_schema": {"name": "record", "schema": SCHEMA}}
    r = austen.chat.completions.create(model=MODEL_NAME, messages=[{"role": "user", "content": PROMPT}], n=4,
                                       seed=1, temperature=0.8, max_tokens=64, response_format=rf)
    for c in r.choices:
        if c.finish_reason == "stop":
            jsonschema.validate(json.loads(c.message.content, strict=False), SCHEMA)
        else:
            assert c.finish_reason == "length" and c.message.content.lstrip().startswith("{"), c.message.content


@pytest.fixture(scope="module")
def austen_jump():
    s = Server(REPO / "models/tiny-austen", "--enable-jump-forward", dummy_weights=False)
    yield s.client()
    assert s.stop() == 0, s.output()


def test_jump_forward_outputs_validate_and_stream_alike(austen_jump):
    """--enable-jump-forward: the keys and separators the schema forces are appended without being
    sampled. Samples still validate, and a stream carries the same text as the response."""
    extra = {"structured_outputs": {"json": SCHEMA, "disable_any_whitespace": True}}
    r = austen_jump.completions.create(model=MODEL_NAME, prompt=PROMPT, n=4, seed=0, temperature=0.8, max_tokens=120,
                                       extra_body=extra)
    for c in r.choices:
        assert c.finish_reason == "stop", c.text
        jsonschema.validate(json.loads(c.text, strict=False), SCHEMA)
    one = austen_jump.completions.create(model=MODEL_NAME, prompt=PROMPT, seed=3, temperature=0.8, max_tokens=120,
                                         extra_body=extra)
    assert one.choices[0].text.startswith('{"name":"'), one.choices[0].text
    chunks = austen_jump.completions.create(model=MODEL_NAME, prompt=PROMPT, seed=3, temperature=0.8, max_tokens=120,
                                            extra_body=extra, stream=True)
    assert "".join(chunk.choices[0].text for chunk in chunks if chunk.choices) == one.choices[0].text


def test_jump_forward_leaves_requests_with_logprobs_whole(austen_jump):
    """Forced tokens have no logprob: a request that asks for logprobs samples every token."""
    rf = {"type": "json_schema", "json_schema": {"name": "record", "schema": SCHEMA}}
    r = austen_jump.chat.completions.create(model=MODEL_NAME, messages=[{"role": "user", "content": PROMPT}], seed=2,
                                            temperature=0.8, max_tokens=48, response_format=rf, logprobs=True,
                                            top_logprobs=2)
    content = r.choices[0].logprobs.content
    assert len(content) == r.usage.completion_tokens
    assert all(len(entry.top_logprobs) == 2 for entry in content)  # a forced token would have none
