#!/usr/bin/env python3
"""deploy/ without a cluster: every Kubernetes manifest parses (PyYAML) and
has the fields its kind requires, the pieces agree with each other and with
the server (probe paths it serves, a grace period longer than preStop plus
the drain, selectors that match the pods), and the Containerfile is
multi-stage from Debian and runs as a non-root user. Exit 77 without PyYAML."""
import pathlib
import re
import sys

try:
    import yaml
except ImportError:
    print("SKIP: python3-yaml not installed (scripts/deps.sh --test installs it)")
    sys.exit(77)

ROOT = pathlib.Path(__file__).resolve().parents[2]
DEPLOY = ROOT / "deploy"
failed = 0
passed = 0


def check(cond, what):
    global failed, passed
    if cond:
        passed += 1
    else:
        failed += 1
        print(f"check failed: {what}", file=sys.stderr)


def dig(doc, path):
    """The value at a dotted path ("spec.template.spec"), None when absent; a number indexes a list."""
    for key in path.split("."):
        if isinstance(doc, list) and key.isdigit() and int(key) < len(doc):
            doc = doc[int(key)]
        elif isinstance(doc, dict) and key in doc:
            doc = doc[key]
        else:
            return None
    return doc


# The fields each kind cannot do without (its API's required ones, and what this fleet relies on).
REQUIRED = {
    ("apps/v1", "Deployment"): ["metadata.name", "spec.selector.matchLabels", "spec.template.metadata.labels",
                                "spec.template.spec.containers.0.name", "spec.template.spec.containers.0.image",
                                "spec.template.spec.containers.0.readinessProbe.httpGet.path",
                                "spec.template.spec.containers.0.livenessProbe.httpGet.path",
                                "spec.template.spec.containers.0.lifecycle.preStop",
                                "spec.template.spec.terminationGracePeriodSeconds"],
    ("v1", "Service"): ["metadata.name", "spec.selector", "spec.ports.0.port"],
    ("policy/v1", "PodDisruptionBudget"): ["metadata.name", "spec.selector.matchLabels"],
    ("autoscaling/v2", "HorizontalPodAutoscaler"): ["metadata.name", "spec.scaleTargetRef.kind", "spec.scaleTargetRef.name",
                                                    "spec.maxReplicas", "spec.metrics.0.type"],
    ("inference.networking.k8s.io/v1", "InferencePool"): ["metadata.name", "spec.selector.matchLabels", "spec.targetPorts.0.number",
                                                          "spec.endpointPickerRef.name", "spec.endpointPickerRef.port.number"],
    ("gateway.networking.k8s.io/v1", "HTTPRoute"): ["metadata.name", "spec.parentRefs.0.name", "spec.rules.0.backendRefs.0.name"],
}

docs = []
for path in sorted((DEPLOY / "kubernetes").glob("*.yaml")):
    try:
        docs += [(path.name, d) for d in yaml.safe_load_all(path.read_text()) if d is not None]
    except yaml.YAMLError as e:
        check(False, f"{path.name} parses: {e}")
by_kind = {}
for name, d in docs:
    key = (d.get("apiVersion"), d.get("kind"))
    check(key in REQUIRED, f"{name}: a kind this test knows ({key})")
    for field in REQUIRED.get(key, []):
        check(dig(d, field) is not None, f"{name}: {key[1]} has {field}")
    by_kind[key[1]] = d
for kind in ["Deployment", "Service", "PodDisruptionBudget", "HorizontalPodAutoscaler", "InferencePool", "HTTPRoute"]:
    check(kind in by_kind, f"a {kind} manifest")

dep = by_kind.get("Deployment", {})
pod_labels = dig(dep, "spec.template.metadata.labels") or {}
container = dig(dep, "spec.template.spec.containers.0") or {}


def selects_pods(selector):
    return bool(selector) and all(pod_labels.get(k) == v for k, v in selector.items())


check(selects_pods(dig(dep, "spec.selector.matchLabels")), "the Deployment's selector matches its pods")
check(selects_pods(dig(by_kind.get("Service"), "spec.selector")), "the Service selects the pods")
check(selects_pods(dig(by_kind.get("PodDisruptionBudget"), "spec.selector.matchLabels")), "the PDB selects the pods")
check(selects_pods(dig(by_kind.get("InferencePool"), "spec.selector.matchLabels")), "the InferencePool selects the pods")
hpa = by_kind.get("HorizontalPodAutoscaler", {})
check(dig(hpa, "spec.scaleTargetRef.name") == dig(dep, "metadata.name"), "the HPA scales the Deployment")
check("num_requests_waiting" in str(dig(hpa, "spec.metrics.0.pods.metric.name")), "the HPA follows requests waiting")
route = by_kind.get("HTTPRoute", {})
check(dig(route, "spec.rules.0.backendRefs.0.kind") == "InferencePool" and
      dig(route, "spec.rules.0.backendRefs.0.name") == dig(by_kind.get("InferencePool"), "metadata.name"),
      "the HTTPRoute sends to the InferencePool")
ports = {p.get("name"): p.get("containerPort") for p in container.get("ports", [])}
check(dig(by_kind.get("InferencePool"), "spec.targetPorts.0.number") in ports.values(), "the InferencePool's port is the container's")

# The probes ask the paths the server answers before the model is ready (src/server/http.c's routes).
routes = (ROOT / "src/server/http.c").read_text()
for probe in ["readinessProbe", "livenessProbe", "startupProbe"]:
    p = dig(container, f"{probe}.httpGet.path")
    check(p and re.search(r'\{"GET", "%s", \w+, true\}' % re.escape(p), routes), f"{probe} {p}: a route that answers while loading")
check(dig(container, "readinessProbe.httpGet.path") == "/health/ready", "readiness is /health/ready (503 while loading or draining)")
check(dig(container, "livenessProbe.httpGet.path") == "/health/live", "liveness is /health/live (200 while draining)")


def seconds(text):
    m = re.fullmatch(r"(\d+)(s|m)?", str(text))
    return int(m.group(1)) * (60 if m.group(2) == "m" else 1) if m else None


args = [str(a) for a in container.get("args", [])]
drain = seconds(args[args.index("--drain-timeout") + 1]) if "--drain-timeout" in args else 30
pre = dig(container, "lifecycle.preStop.exec.command") or []
pre_stop = seconds(pre[-1]) if pre and pre[0] == "sleep" else None
grace = dig(dep, "spec.template.spec.terminationGracePeriodSeconds")
check(pre_stop is not None, "preStop waits for the endpoints to drop the pod")
check(drain and pre_stop is not None and grace and grace > pre_stop + drain,
      f"terminationGracePeriodSeconds {grace} > preStop {pre_stop} + --drain-timeout {drain}")
check(dig(dep, "spec.template.spec.securityContext.runAsNonRoot") is True, "the pods run as non-root")

# The Containerfile: stages from Debian, the last one a non-root user, the server as its entry point.
cf = (DEPLOY / "Containerfile").read_text()
stages = re.findall(r"^FROM\s+(\S+)", cf, re.M)
check(len(stages) >= 2 and all(s.startswith("debian:") for s in stages), f"multi-stage from Debian: {stages}")
users = re.findall(r"^USER\s+(\S+)", cf, re.M)
check(users and users[-1] not in ("root", "0"), f"runs as a non-root user: {users}")
check(re.search(r'^ENTRYPOINT \["sprout", "serve"', cf, re.M), "the entry point is sprout serve")
check(re.search(r"^VOLUME /models", cf, re.M), "models on a volume")

# HAProxy checks the same readiness path.
cfg = (DEPLOY / "haproxy/haproxy.cfg").read_text()
check("option httpchk GET /health/ready" in cfg, "haproxy checks /health/ready")

print(f"{passed} passed, {failed} failed")
sys.exit(1 if failed else 0)
