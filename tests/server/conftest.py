"""Fixtures of the server tests: the real `brisk serve` binary on loopback, serving the tiny
random-weight model of tiny_model.py, driven by the official `openai` package and httpx."""
import os
import pathlib
import re
import signal
import subprocess
import threading

import openai
try:  # the HTTP client the installed openai package brings (newer releases ship it as httpx2)
    import httpx
except ImportError:
    import httpx2 as httpx
import pytest

import tiny_model

REPO = pathlib.Path(__file__).resolve().parents[2]
BINARY = os.environ.get("BRISK_BINARY", str(REPO / "build/cpu/bin/brisk"))
MODEL_NAME = "tiny"


class Server:
    """`brisk serve` on a free port (--port 0; the port is read from its start-up line)."""

    def __init__(self, model_dir, *args, preexec_fn=None, dummy_weights=True):
        defaults = [] if "--kv-cache-memory" in args else ["--kv-cache-memory", "256MiB"]
        if dummy_weights:
            defaults.append("--dummy-weights")
        command = [BINARY, "serve", "--model", str(model_dir), "--port", "0",
                   "--served-model-name", MODEL_NAME, *defaults, *args]
        self.proc = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                                     preexec_fn=preexec_fn)
        self.log = []
        self.url = None
        for line in self.proc.stderr:
            self.log.append(line)
            if match := re.search(r"listening on (http://[\d.]+:\d+)", line):
                self.url = match.group(1)
                break
        assert self.url, "brisk serve did not start:\n" + "".join(self.log)
        self._drain = threading.Thread(target=lambda: self.log.extend(self.proc.stderr), daemon=True)
        self._drain.start()
        assert httpx.get(self.url + "/health", timeout=10).status_code == 200

    @property
    def base_url(self):
        return self.url + "/v1"

    def client(self, api_key="none", **kwargs):
        return openai.OpenAI(base_url=self.base_url, api_key=api_key, max_retries=0, **kwargs)

    def stop(self, sig=signal.SIGTERM, timeout=60):
        """Sends `sig`, waits for the exit and returns the exit code."""
        if self.proc.poll() is None:
            self.proc.send_signal(sig)
        code = self.proc.wait(timeout=timeout)
        self._drain.join(timeout=5)
        return code

    def output(self):
        return "".join(self.log)


def metric(text, name, labels=""):
    """The value of one sample in Prometheus text (0 when absent)."""
    pattern = re.escape(name) + (r"\{" + re.escape(labels) + r"\}" if labels else "") + r" (\S+)$"
    for line in text.splitlines():
        if match := re.match(pattern, line):
            return float(match.group(1))
    return 0.0


# vLLM's names for brisk's gauges: what the inference gateway's endpoint picker reads (docs/scaling.md).
VLLM_GAUGES = {"vllm:num_requests_running": "brisk_num_requests_running",
               "vllm:num_requests_waiting": "brisk_num_requests_waiting",
               "vllm:kv_cache_usage_perc": "brisk_kv_cache_usage_perc",
               "vllm:gpu_cache_usage_perc": "brisk_kv_cache_usage_perc"}


def check_vllm_gauges(text):
    """Parses a /metrics text with prometheus_client (which rejects what the text format does not
    allow, colons included) and checks each of VLLM_GAUGES: a gauge with vLLM's labels and the value
    of brisk's own gauge in the same scrape. Returns the parsed families by name."""
    from prometheus_client.parser import text_string_to_metric_families
    families = {f.name: f for f in text_string_to_metric_families(text)}
    for alias, own in VLLM_GAUGES.items():
        assert alias in families, f"{alias} is missing from /metrics"
        assert families[alias].type == "gauge", alias
        [sample] = families[alias].samples
        assert sample.labels == {"model_name": MODEL_NAME, "engine": "0"}, (alias, sample.labels)
        [own_sample] = families[own].samples
        assert sample.value == own_sample.value, (alias, sample.value, own, own_sample.value)
    return families


@pytest.fixture(scope="session")
def model_dir(tmp_path_factory):
    return tiny_model.write(tmp_path_factory.mktemp("tiny-model"))


@pytest.fixture(scope="session")
def server(model_dir):
    s = Server(model_dir)
    yield s
    code = s.stop()
    assert code == 0, s.output()
    assert "terminate called" not in s.output() and "Sanitizer" not in s.output(), s.output()


@pytest.fixture(scope="session")
def client(server):
    return server.client()


@pytest.fixture(scope="session")
def http(server):
    with httpx.Client(base_url=server.url, timeout=60) as c:
        yield c


@pytest.fixture(scope="session")
def hf_tokenizer(model_dir):
    """The same tokenizer through Hugging Face `tokenizers`: the reference for token counts."""
    import tokenizers
    return tokenizers.Tokenizer.from_file(str(model_dir / "tokenizer.json"))
