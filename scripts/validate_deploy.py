#!/usr/bin/env python3
"""`validate_deploy.py RENDERED SETTINGS`, from the project root: the rules no schema states (deploy/README.md,
"Validation") on what `kubectl kustomize deploy/k8s` rendered, against the settings list (README, "Settings")."""
import collections
import json
import pathlib
import re
import subprocess
import sys

import yaml

HARDENED = {"runAsNonRoot": True, "readOnlyRootFilesystem": True, "allowPrivilegeEscalation": False,
            "capabilities": {"drop": ["ALL"]}, "seccompProfile": {"type": "RuntimeDefault"}}
errors = []


def selects(selector, labels):
    """Whether a selector (matchLabels and `In` expressions, or a Service's plain map) picks a pod with these labels."""
    selector = selector or {}
    wanted = selector.get("matchLabels", {} if "matchExpressions" in selector else selector)
    return bool(selector) and all(labels.get(key) == value for key, value in wanted.items()) and all(
        labels.get(expression["key"]) in expression["values"] for expression in selector.get("matchExpressions", []))


def mappings(node):
    """Every mapping in a document, the document first."""
    if isinstance(node, dict):
        yield node
    for child in node.values() if isinstance(node, dict) else node if isinstance(node, list) else []:
        yield from mappings(child)


def check_settings(name, env, known):
    """A service's environment: its own settings only, secrets from Secrets, numbers in range, the required ones set."""
    for key, entry in env.items():
        setting, value = known.get(key), entry.get("value")
        low, high = (setting or {}).get("min"), (setting or {}).get("max")
        if setting is None:
            errors.append(f"Deployment {name}: {key} is not one of {name}'s settings")
        elif setting.get("secret") and "valueFrom" not in entry:
            errors.append(f"Deployment {name}: {key} is a secret; take it from a Secret (secretKeyRef)")
        elif value is not None and low is not None and not (
                re.fullmatch(r"-?\d+", value) and low <= int(value) <= high):
            errors.append(f"Deployment {name}: {key}={value} is not a whole number in {low}…{high}")
    errors.extend(f"Deployment {name}: {key} must be set" for key in known if known[key]["required"] and key not in env)


def check_pod(name, deployment, kinds, shutdown_seconds):
    """Autoscaled, budgeted, behind a Service; each container hardened, sized, probed, and given time to stop."""
    pod, labels = deployment["spec"]["template"]["spec"], deployment["spec"]["template"]["metadata"]["labels"]
    ports = {port["name"] for box in pod["containers"] for port in box.get("ports", [])}
    probes = {"livenessProbe": "/health/live", "readinessProbe": "/health/ready", "startupProbe": "/health/live"}
    probes = probes if shutdown_seconds else {key: probes[key] for key in ("livenessProbe", "readinessProbe")}
    broken = {
        "leave `replicas` out: the autoscaler owns the count, and every apply would reset it":
            "replicas" in deployment["spec"],
        "needs one autoscaler, with minReplicas >= 2": [h["spec"]["minReplicas"] >= 2 for h in kinds[
            "HorizontalPodAutoscaler"].values() if h["spec"]["scaleTargetRef"]["name"] == name] != [True],
        "needs one PodDisruptionBudget": [selects(budget["spec"]["selector"], labels)
                                          for budget in kinds["PodDisruptionBudget"].values()].count(True) != 1,
        "needs a Service that selects its pods, on their named ports": not any(
            selects(s["spec"]["selector"], labels) and {p["targetPort"] for p in s["spec"]["ports"]} <= ports
            for s in kinds["Service"].values()),
    }
    for box in pod["containers"]:
        context = {**pod.get("securityContext", {}), **box.get("securityContext", {})}
        sleep = re.search(r"sleep\D*(\d+)", " ".join(box.get("lifecycle", {}).get("preStop", {}).get("exec", {}).get(
            "command", [])))
        broken |= {
            f"{box['name']}: needs {HARDENED} (restricted), a runAsUser and /tmp": not context.get("runAsUser")
                or any(context.get(key) != want for key, want in HARDENED.items())
                or "/tmp" not in [mount["mountPath"] for mount in box.get("volumeMounts", [])],
            f"{box['name']}: needs CPU and memory requests and limits":
                any({"cpu", "memory"} - set(box.get("resources", {}).get(part, {})) for part in ("requests", "limits")),
            f"{box['name']}: needs {probes} (HTTP GET on a named port)": any(
                box.get(probe, {}).get("httpGet", {}).get("path") != path or box[probe]["httpGet"]["port"] not in ports
                for probe, path in probes.items()),
            f"{box['name']}: needs a preStop sleep, and a grace period longer than it plus {shutdown_seconds or 30} s":
                not sleep or pod.get("terminationGracePeriodSeconds", 30) <= int(sleep[1]) + (shutdown_seconds or 30),
        }
    errors.extend(f"Deployment {name}: {message}" for message, is_broken in broken.items() if is_broken)


def check_wiring(kinds, services, env_of):
    """NetworkPolicies select pods of ours, the Ingress goes to the gateway, services.txt's ports and schemas hold."""
    pods = [d["spec"]["template"]["metadata"]["labels"] for d in kinds["Deployment"].values()]
    pods += [{"cnpg.io/cluster": cluster} for cluster in kinds["Cluster"]]
    for name, policy in kinds["NetworkPolicy"].items():
        peers = [peer for rule in policy["spec"].get("ingress", []) + policy["spec"].get("egress", [])
                 for peer in rule.get("from", []) + rule.get("to", []) if list(peer) == ["podSelector"]]
        for selector in [policy["spec"]["podSelector"]] + [peer["podSelector"] for peer in peers]:
            if selector and not any(selects(selector, labels) for labels in pods):
                errors.append(f"NetworkPolicy {name}: {selector} matches no pods of ours")
    service_ports = {name: {value for port in service["spec"]["ports"] for value in (port["name"], port["port"])}
                     for name, service in kinds["Service"].items()}
    for path in [path for ingress in kinds["Ingress"].values() for rule in ingress["spec"]["rules"]
                 for path in rule["http"]["paths"]]:
        backend = path["backend"]["service"]
        if backend["name"] != "gateway" or [*backend["port"].values()][0] not in service_ports.get("gateway", ()):
            errors.append(f"Ingress: {path['path']} must go to a port of the gateway Service")
    for name, facts in services.items():
        env = {key: entry.get("value") for key, entry in env_of[name].items()}
        if (env.get("HTTP_PORT"), env.get("DATABASE_SCHEMA")) != (facts["port"], facts["schema"]):
            errors.append(f"Deployment {name}: HTTP_PORT and DATABASE_SCHEMA must be {facts['port']} and "
                          f"{facts['schema']}, as in deploy/services.txt")


def check_secrets(docs):
    """Every Secret referenced is described in secrets.example.yaml (with the key) or named in deploy/README.md."""
    described = {s["metadata"]["name"]: {**s.get("stringData", {}), **s.get("data", {})}
                 for s in yaml.safe_load_all(pathlib.Path("deploy/k8s/secrets.example.yaml").read_text()) if s}
    readme = pathlib.Path("deploy/README.md").read_text()
    errors.extend(f"secrets.example.yaml: {name}.{key} must be a placeholder containing REPLACE-ME"
                  for name, values in described.items() for key, value in values.items()
                  if key != "username" and "REPLACE-ME" not in str(value))
    for doc, node in [(doc, node) for doc in docs for node in mappings(doc)]:
        refs = [(node[field]["name"], node[field].get("key", key)) for field, key in (
            ("secretKeyRef", None), ("secretRef", None), ("passwordSecret", "password")) if field in node]
        if "secretName" in node:
            refs += [(node["secretName"], item["key"]) for item in node.get("items", [{"key": None}])]
        for secret, key in refs:
            if secret in described and key not in [None, *described[secret]] or (
                    secret not in described and f"`{secret}`" not in readme):
                errors.append(f"{doc['kind']} {doc['metadata']['name']}: Secret {secret} (key {key}) is described "
                              "neither in secrets.example.yaml nor in deploy/README.md")


# Settings a cluster must set: their defaults only work on one machine.
REQUIRED = {"HTTP_HOST", "DATABASE_URL", "PEER_SECRET", "AUTH_URL", "CATALOG_URL"}


def registry(binary):
    """A service's settings, as it declares them (`<service> settings`): variable -> min, max, secret, default."""
    declared = json.loads(subprocess.run([binary, "settings"], check=True, capture_output=True, text=True).stdout)
    return {s["variable"]: {"min": s.get("minimum"), "max": s.get("maximum"), "secret": s["secret"],
                            "default": s.get("default"), "required": s["variable"] in REQUIRED} for s in declared}


def main(rendered, bin_dir):
    docs = [doc for doc in yaml.safe_load_all(pathlib.Path(rendered).read_text()) if doc]
    kinds = collections.defaultdict(dict)
    for doc in docs:
        kinds[doc["kind"]][doc["metadata"]["name"]] = doc
    rows = [line.split() for line in pathlib.Path("deploy/services.txt").read_text().splitlines()]
    services = {row[0]: {"schema": row[2], "port": row[4]} for row in rows if row and not row[0].startswith("#")}
    settings = collections.defaultdict(dict, {name: registry(pathlib.Path(bin_dir, name)) for name in services})
    if set(kinds["Deployment"]) != {*services, "gateway"} or len(kinds["Cluster"]) != 1:
        errors.append(f"expected the Deployments gateway, {', '.join(services)} and one CloudNativePG Cluster")
    else:
        env_of = {name: {entry["name"]: entry for entry in kinds["Deployment"][name]["spec"]["template"]["spec"][
            "containers"][0].get("env", [])} for name in services}
        for name, deployment in kinds["Deployment"].items():
            if name in services:
                check_settings(name, env_of[name], settings[name])
            shutdown = env_of.get(name, {}).get("SHUTDOWN_TIMEOUT_SECONDS", {}).get("value") or settings[name].get(
                "SHUTDOWN_TIMEOUT_SECONDS", {}).get("default")
            check_pod(name, deployment, kinds, shutdown and int(shutdown))
        check_wiring(kinds, services, env_of)
        check_secrets(docs)
    for message in errors:
        print(f"error: {message}", file=sys.stderr)
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:]))
