"""deploy/ checked offline: the Kubernetes manifests fit together (probes, Service, InferencePool
and HTTPRoute reach the brisk container's port and select its pods, GPUs are requested), every
`brisk serve` flag they and the Dockerfile use exists, and the Dockerfile's stages are the ones
deploy/README.md describes. Building the image needs the network and is not done here."""
import os
import pathlib
import re
import shlex
import subprocess

import pytest
import yaml

REPO = pathlib.Path(__file__).resolve().parents[2]
DEPLOY = REPO / "deploy"
BINARY = os.environ.get("BRISK_BINARY", str(REPO / "build/cpu/bin/brisk"))
POOL_API = "inference.networking.k8s.io/v1"


def load_manifests():
    docs = []
    for path in sorted((DEPLOY / "kubernetes").glob("*.yaml")):
        docs += [(path.name, d) for d in yaml.safe_load_all(path.read_text()) if d]
    return docs


MANIFESTS = load_manifests()


def one(kind):
    found = [d for _, d in MANIFESTS if d["kind"] == kind]
    assert len(found) == 1, f"expected one {kind} in deploy/kubernetes, found {len(found)}"
    return found[0]


def brisk_container():
    [container] = [c for c in one("Deployment")["spec"]["template"]["spec"]["containers"] if c["name"] == "brisk"]
    return container


def container_port(port):
    """A port number or a port name of the brisk container, as a number."""
    ports = brisk_container()["ports"]
    if isinstance(port, int):
        assert port in [p["containerPort"] for p in ports], f"port {port} is not a container port"
        return port
    [number] = [p["containerPort"] for p in ports if p.get("name") == port]
    return number


def serving_port():
    [port] = brisk_container()["ports"]
    return port["containerPort"]


def pod_labels():
    return one("Deployment")["spec"]["template"]["metadata"]["labels"]


def selects_pods(match_labels):
    assert match_labels, "an empty selector selects every pod"
    return all(pod_labels().get(k) == v for k, v in match_labels.items())


def flag_values(args):
    """{--flag: value or None} of a brisk serve argument list (--flag value and --flag=value)."""
    flags, i = {}, 0
    while i < len(args):
        arg = str(args[i])
        assert arg.startswith("--"), f"unexpected positional argument {arg!r}"
        if "=" in arg:
            name, value = arg.split("=", 1)
        elif i + 1 < len(args) and not str(args[i + 1]).startswith("--"):
            name, value = arg, str(args[i + 1])
            i += 1
        else:
            name, value = arg, None
        flags[name] = value
        i += 1
    return flags


def dockerfile():
    """The Dockerfile's instructions as (KEYWORD, text), continuation lines joined, comments dropped."""
    text = re.sub(r"\\\n", " ", (DEPLOY / "Dockerfile").read_text())
    lines = [line.strip() for line in text.splitlines()]
    return [tuple(line.split(None, 1)) for line in lines if line and not line.startswith("#")]


def stages():
    """[(name, base image, [(KEYWORD, text), ...])] per FROM."""
    out = []
    for keyword, text in dockerfile():
        if keyword.upper() == "FROM":
            match = re.fullmatch(r"(\S+)\s+AS\s+(\S+)", text, re.IGNORECASE)
            assert match, f"every stage is named (FROM image AS name): FROM {text}"
            out.append((match.group(2), match.group(1), []))
        elif out:
            out[-1][2].append((keyword.upper(), text))
    return out


def exec_form(stage, keyword):
    [text] = [t for k, t in stage[2] if k == keyword]
    return yaml.safe_load(text)  # a JSON array is YAML


def test_manifests_parse_with_kinds():
    kinds = sorted(d["kind"] for _, d in MANIFESTS)
    assert kinds == ["Deployment", "HTTPRoute", "InferencePool", "Service"], kinds
    for name, d in MANIFESTS:
        assert d.get("apiVersion") and d.get("metadata", {}).get("name"), name


def test_deployment_selects_its_pods_and_asks_for_gpus():
    deployment = one("Deployment")
    assert selects_pods(deployment["spec"]["selector"]["matchLabels"])
    gpus = int(brisk_container()["resources"]["limits"]["nvidia.com/gpu"])
    # One tensor-parallel rank per GPU: a pod asks for as many GPUs as it has ranks.
    ranks = int(flag_values(brisk_container()["args"]).get("--tensor-parallel-size") or 1)
    assert gpus == ranks >= 1, f"{gpus} GPUs for {ranks} tensor-parallel ranks"


def test_probes_are_health_on_the_serving_port():
    container = brisk_container()
    for probe in ("readinessProbe", "livenessProbe", "startupProbe"):
        if probe == "startupProbe" and probe not in container:
            continue
        get = container[probe]["httpGet"]
        assert get["path"] == "/health", probe
        assert container_port(get["port"]) == serving_port(), probe


def test_serve_arguments_match_the_pod():
    container = brisk_container()
    assert container.get("command") in (None, ["brisk", "serve"]), "the image's entrypoint is brisk serve"
    flags = flag_values(container["args"])
    assert flags["--host"] == "0.0.0.0"
    assert int(flags["--port"]) == serving_port()
    assert flags["--backend"] == "cuda"
    # The model folder comes from a mounted volume.
    mounts = {m["mountPath"]: m["name"] for m in container["volumeMounts"]}
    volumes = {v["name"]: v for v in one("Deployment")["spec"]["template"]["spec"]["volumes"]}
    [mount] = [path for path in mounts if flags["--model"].startswith(path.rstrip("/") + "/")]
    assert mounts[mount] in volumes


def test_service_targets_the_serving_port():
    service = one("Service")
    assert selects_pods(service["spec"]["selector"])
    [port] = service["spec"]["ports"]
    assert container_port(port["targetPort"]) == serving_port()


def test_inference_pool_selects_the_pods_on_the_serving_port():
    pool = one("InferencePool")
    assert pool["apiVersion"] == POOL_API
    spec = pool["spec"]
    assert set(spec["selector"]) == {"matchLabels"}, "InferencePool selectors have matchLabels only"
    assert selects_pods(spec["selector"]["matchLabels"])
    assert [p["number"] for p in spec["targetPorts"]] == [serving_port()]
    picker = spec["endpointPickerRef"]
    assert picker["name"]
    if picker.get("kind", "Service") == "Service":
        assert isinstance(picker["port"]["number"], int), "a Service endpoint picker needs port.number"
    assert picker.get("failureMode", "FailClose") in ("FailOpen", "FailClose")


def test_route_sends_traffic_to_the_pool():
    [rule] = one("HTTPRoute")["spec"]["rules"]
    [backend] = rule["backendRefs"]
    assert (backend["group"], backend["kind"], backend["name"]) == (
        POOL_API.split("/")[0], "InferencePool", one("InferencePool")["metadata"]["name"])


def test_dockerfile_stages():
    [builder, runtime] = stages()
    assert re.fullmatch(r"nvidia/cuda:\$\{CUDA_VERSION\}-devel-\S+", builder[1]), builder[1]
    assert re.fullmatch(r"nvidia/cuda:\$\{CUDA_VERSION\}-runtime-\S+", runtime[1]), runtime[1]
    runs = " ".join(t for k, t in builder[2] if k == "RUN")
    assert "scripts/setup" in runs and "--preset cuda" in runs and "--target brisk" in runs
    copies = [t for k, t in runtime[2] if k == "COPY"]
    assert any(t.startswith(f"--from={builder[0]} ") and "/opt/brisk" in t for t in copies), copies
    assert any("cp build/cuda/bin/brisk /opt/brisk/bin/" in t for k, t in builder[2] if k == "RUN")
    assert exec_form(runtime, "ENTRYPOINT") == ["brisk", "serve"]


def test_dockerfile_cuda_matches_the_build():
    """The images' CUDA release is the one nvcc here has (the cuda preset's compiler)."""
    [version] = [t.split("=", 1)[1] for k, t in dockerfile() if k == "ARG" and t.startswith("CUDA_VERSION=")]
    nvcc = pathlib.Path("/usr/local/cuda/bin/nvcc")
    if not nvcc.exists():
        pytest.skip("no nvcc at /usr/local/cuda to compare with")
    release = re.search(r"release (\d+\.\d+)", subprocess.run([nvcc, "--version"], capture_output=True,
                                                                text=True).stdout).group(1)
    assert version.startswith(release + "."), (version, release)


def test_serve_flags_exist():
    if not os.access(BINARY, os.X_OK):
        pytest.skip(f"no brisk binary at {BINARY} (ctest passes BRISK_BINARY)")
    help_text = subprocess.run([BINARY, "serve", "--help"], capture_output=True, text=True, check=True).stdout
    known = set(re.findall(r"(?<![\w-])--[a-z][a-z0-9-]*", help_text))
    assert {"--model", "--host", "--port"} <= known, help_text
    used = {"deployment": set(flag_values(brisk_container()["args"])),
            "Dockerfile CMD": set(flag_values(exec_form(stages()[-1], "CMD")))}
    for place, flags in used.items():
        assert flags <= known, f"{place} uses flags brisk serve does not have: {sorted(flags - known)}"
    # Flags written in the README's commands too.
    readme = (DEPLOY / "README.md").read_text()
    for line in re.findall(r"^\s*brisk serve (.*)$", readme, re.MULTILINE):
        flags = {a.split("=")[0] for a in shlex.split(line) if a.startswith("--")}
        assert flags <= known, f"deploy/README.md: {sorted(flags - known)}"
