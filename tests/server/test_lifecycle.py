"""The server's life: graceful shutdown on SIGTERM/SIGINT (in-flight requests finish, or are
cancelled after the grace period; exit 0; a second signal exits at once), running out of file
descriptors, clients that disconnect while waiting for a non-streaming answer, and the `brisk
chat` and `brisk serve --help` commands."""
import json
import os
import resource
import signal
import socket
import subprocess
import threading
import time

import pytest

import tiny_model
from conftest import BINARY, MODEL_NAME, Server, httpx, metric
from test_load import wait_idle

LONG = {"model": MODEL_NAME, "prompt": "a long answer", "max_tokens": 450, "ignore_eos": True}


def stream_in_thread(url, body, results):
    """Streams a completion in a thread; appends its SSE data lines to `results` (None when the
    connection was refused, or closed before any answer: a server shutting down closes the
    connections whose request it has not read yet)."""

    def run():
        try:
            with httpx.stream("POST", url + "/v1/completions", json={**body, "stream": True}, timeout=60) as r:
                # SSE lines end at "\n" only (iter_lines would also split at U+2028 in the noise text)
                text = "".join(r.iter_text())
            results.append([line for line in text.split("\n") if line.startswith("data: ")])
        except (httpx.ConnectError, httpx.RemoteProtocolError):
            results.append(None)

    thread = threading.Thread(target=run)
    thread.start()
    return thread


def wait_submitted(url, num_requests, timeout=20):
    """Waits until a fresh server has submitted `num_requests` LONG prompts to the engine."""
    prompt_len = httpx.post(url + "/tokenize", json={"prompt": LONG["prompt"]}).json()["count"]
    wanted = num_requests * prompt_len
    deadline = time.monotonic() + timeout
    while metric(httpx.get(url + "/metrics").text, "brisk_prompt_tokens_total") < wanted:
        assert time.monotonic() < deadline, "the requests did not arrive"
        time.sleep(0.02)


def finish_reasons(events):
    return [json.loads(e[6:])["choices"][0]["finish_reason"] for e in events if e != "data: [DONE]"]


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT])
def test_graceful_shutdown_finishes_in_flight_requests(model_dir, sig):
    server = Server(model_dir, "--shutdown-timeout", "60", "--max-num-seqs", "2")
    results = []
    threads = [stream_in_thread(server.url, LONG, results) for _ in range(4)]  # two wait for a slot
    wait_submitted(server.url, 4)
    assert server.stop(sig) == 0, server.output()
    for t in threads:
        t.join()
    assert len(results) == 4 and None not in results
    for events in results:
        assert events[-1] == "data: [DONE]"
        assert finish_reasons(events)[-1] == "length"
    with pytest.raises(httpx.ConnectError):
        httpx.get(server.url + "/health")


def test_grace_period_over_cancels_requests(model_dir):
    server = Server(model_dir, "--shutdown-timeout", "0.3", "--max-num-seqs", "1")
    results = []
    # One at a time, 40 long answers take seconds even on the tiny model.
    threads = [stream_in_thread(server.url, LONG, results) for _ in range(40)]
    wait_submitted(server.url, 10)
    start = time.monotonic()
    assert server.stop() == 0, server.output()
    assert time.monotonic() - start < 10
    for t in threads:
        t.join()
    streamed = [events for events in results if events is not None]  # late ones may be refused
    reasons = [finish_reasons(events)[-1] for events in streamed]
    assert "abort" in reasons, reasons
    assert all(events[-1] == "data: [DONE]" for events in streamed)


def test_second_signal_exits_at_once(model_dir):
    server = Server(model_dir, "--shutdown-timeout", "60", "--max-num-seqs", "1")

    def request():
        try:
            httpx.post(server.url + "/v1/completions", json=LONG, timeout=60)
        except httpx.HTTPError:  # the process is gone mid-answer
            pass

    threads = [threading.Thread(target=request) for _ in range(20)]
    for t in threads:
        t.start()
    wait_submitted(server.url, 1)
    server.proc.send_signal(signal.SIGINT)
    time.sleep(0.5)  # inside the 60 s grace period, requests still running
    assert server.proc.poll() is None
    start = time.monotonic()
    assert server.stop(signal.SIGINT, timeout=10) == 128 + signal.SIGINT, server.output()
    assert time.monotonic() - start < 5
    assert "second signal" in server.output()
    for t in threads:
        t.join()


def test_accept_backs_off_when_descriptors_run_out(model_dir):
    """With 64 descriptors and 80 idle connections, failed accepts wait and are logged a few times
    (not a warning per retry on a spinning core); the server serves again once they close."""
    server = Server(model_dir, preexec_fn=lambda: resource.setrlimit(resource.RLIMIT_NOFILE, (64, 64)))
    host, port = server.url.removeprefix("http://").split(":")
    idle = [socket.create_connection((host, int(port)), timeout=10) for _ in range(80)]
    cpu_before = cpu_seconds(server.proc.pid)
    time.sleep(3)
    assert cpu_seconds(server.proc.pid) - cpu_before < 1.0  # not spinning
    warnings = server.output().count("accept failed")
    assert 1 <= warnings <= 3, server.output()[-2000:]
    for s in idle:
        s.close()
    deadline = time.monotonic() + 10
    while True:  # the backlog drains as descriptors free up
        try:
            assert httpx.get(server.url + "/health", timeout=2).status_code == 200
            break
        except httpx.HTTPError:
            assert time.monotonic() < deadline, server.output()[-2000:]
    assert server.stop() == 0, server.output()[-2000:]


def cpu_seconds(pid):
    """User + system CPU time of a process so far (Linux /proc)."""
    fields = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def test_idle_keep_alive_connections_do_not_block_shutdown(model_dir):
    server = Server(model_dir)
    with httpx.Client() as c:
        assert c.get(server.url + "/health").status_code == 200  # the connection stays open
        start = time.monotonic()
        assert server.stop() == 0
        assert time.monotonic() - start < 5


def test_disconnect_while_waiting_cancels(tmp_path):
    # A context of 128k tokens: each answer of 120k tokens takes the tiny model many seconds, so
    # every request is still running when its client goes, however loaded the machine (with 450
    # tokens one sometimes finished first: 6 cancelled samples, not 8).
    server = Server(tiny_model.write(tmp_path, max_model_len=131072), "--max-model-len", "131072")
    try:
        text = httpx.get(server.url + "/metrics").text
        before = metric(text, "brisk_request_success_total", 'finished_reason="cancelled"')
        host, port = server.url.removeprefix("http://").split(":")
        body = json.dumps({**LONG, "max_tokens": 120000, "n": 2}).encode()
        sockets = []
        for _ in range(4):
            s = socket.create_connection((host, int(port)))
            s.sendall(b"POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                      b"Content-Length: " + str(len(body)).encode() + b"\r\n\r\n" + body)
            sockets.append(s)
        wait_submitted(server.url, 4)  # every request is in the engine before its client goes
        for s in sockets:
            s.close()
        text = wait_idle(server.url)
        assert metric(text, "brisk_kv_cache_blocks_in_use") == 0
        cancelled = metric(text, "brisk_request_success_total", 'finished_reason="cancelled"') - before
        assert cancelled == 8  # 4 requests of 2 samples
        assert metric(text, "brisk_http_requests_total", 'route="/v1/completions",status="499"') >= 4
    finally:
        server.stop()


def test_chat_command(model_dir):
    script = "Hello there\n/help\n/reset\n/unknown\nSecond question\n/exit\nnever read\n"
    r = subprocess.run([BINARY, "chat", "--model", str(model_dir), "--dummy-weights", "--max-tokens", "8",
                        "--ignore-eos", "--system", "Be brief.", "--kv-cache-memory", "64MiB"],
                       input=script, capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    assert "(conversation cleared)" in r.stderr
    assert "unknown command /unknown" in r.stderr
    assert "/reset" in r.stderr  # the help text
    assert r.stderr.count("[reply cut at 8 tokens]") == 2  # two replies, nothing after /exit
    assert r.stdout.strip()


def test_chat_command_needs_a_template(tmp_path, model_dir):
    for name in ("config.json", "tokenizer.json"):
        (tmp_path / name).write_bytes((model_dir / name).read_bytes())
    r = subprocess.run([BINARY, "chat", "--model", str(tmp_path), "--dummy-weights"], input="hi\n",
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 1
    assert "chat template" in r.stderr


def test_serve_help_and_option_errors():
    r = subprocess.run([BINARY, "serve", "--help"], capture_output=True, text=True, timeout=30)
    assert r.returncode == 0
    for text in ("--model", "--host", "--port", "--api-key", "--served-model-name", "--max-num-seqs",
                 "--kv-cache-memory", "--max-model-len", "--dummy-weights", "Server", "Engine", "Model"):
        assert text in r.stdout, text
    bad = subprocess.run([BINARY, "serve", "--model", ".", "--port", "70000"], capture_output=True, text=True,
                         timeout=30)
    assert bad.returncode != 0 and "--port" in bad.stderr
    missing = subprocess.run([BINARY, "serve"], capture_output=True, text=True, timeout=30)
    assert missing.returncode != 0 and "--model" in missing.stderr


def test_port_in_use_is_a_clear_error(server, model_dir):
    port = server.url.rsplit(":", 1)[1]
    r = subprocess.run([BINARY, "serve", "--model", str(model_dir), "--dummy-weights", "--port", port],
                       capture_output=True, text=True, timeout=30)
    assert r.returncode == 1
    assert f"cannot listen on 127.0.0.1:{port}" in r.stderr
