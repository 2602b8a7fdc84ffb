"""Deployments: probes, resources, the hardened securityContext, the environment (the configuration table's
variables, secrets only through secretKeyRef), a graceful stop; and what each depends on: a Service selecting its
pods, an autoscaler, a disruption budget."""
import re

from .common import fail, name_of, selects


def effective(pod_context, container_context, key):
    value = container_context.get(key)
    return pod_context.get(key) if value is None else value


def probe_port_ok(probe, ports):
    port = (probe.get("httpGet") or {}).get("port")
    return port in ports


def sleep_seconds(handler):
    command = " ".join(((handler or {}).get("exec") or {}).get("command") or [])
    match = re.search(r"sleep\D*(\d+)", command)
    if (handler or {}).get("sleep"):
        return int(handler["sleep"].get("seconds", 0))
    return int(match.group(1)) if match else None


def check_deployments(manifests, service_facts, secrets, generated_configmaps, readme, dockerfile):
    """Returns the labels of each Deployment's pods."""
    operations = (readme.parent / "docs" / "operations.md").read_text()
    config_table = operations.split("\n## Configuration", 1)[-1].split("\n## ", 1)[0]
    config_vars = set(re.findall(r"^\| `([A-Z][A-Z0-9_]*)` \|", config_table, re.M))
    if len(config_vars) < 20:
        fail(f"found only {len(config_vars)} variables in the README's configuration table; has it moved?")
    secret_vars = {"DATABASE_URL", "TICKETMASTER_API_KEY", "NYT_BOOKS_API_KEY", "GOOGLE_BOOKS_API_KEY"}
    user_match = re.search(r"^USER\s+(\d+)", dockerfile.read_text(), re.M)
    image_uid = int(user_match.group(1)) if user_match else None
    shutdown_default = 25  # SHUTDOWN_TIMEOUT_SECONDS' default in the README
    services = manifests.by_name("Service")
    service_names = set(service_facts)
    deployments = manifests.by_name("Deployment")
    if set(deployments) != service_names | {"gateway"}:
        fail(f"expected Deployments {sorted(service_names | {'gateway'})}, found {sorted(deployments)}")

    pod_labels = {}
    for name, deployment in deployments.items():
        where = f"Deployment {name}"
        spec = deployment.get("spec", {})
        template = spec.get("template", {})
        labels = (template.get("metadata") or {}).get("labels") or {}
        pod_labels[name] = labels
        pod = template.get("spec", {})
        if "replicas" in spec:
            fail(f"{where}: has replicas: {spec['replicas']}, but its HorizontalPodAutoscaler owns the count "
                 "(every apply would reset it); leave replicas out")
        if not selects(spec.get("selector"), labels):
            fail(f"{where}: its selector does not match its pod labels")
        if not (pod.get("topologySpreadConstraints") or (pod.get("affinity") or {}).get("podAntiAffinity")):
            fail(f"{where}: needs topologySpreadConstraints or pod anti-affinity")
        pod_context = pod.get("securityContext") or {}
        volumes = {v["name"]: v for v in pod.get("volumes") or []}
        for volume in volumes.values():
            if "secret" in volume:
                secrets.check_ref(f"{where} volume {volume['name']}", volume["secret"].get("secretName"))
                for item in volume["secret"].get("items") or []:
                    secrets.check_ref(f"{where} volume {volume['name']}", volume["secret"].get("secretName"),
                                      item["key"])
            if "configMap" in volume and volume["configMap"].get("name") not in generated_configmaps | {
                    name_of(c) for c in manifests.of_kind("ConfigMap")}:
                fail(f"{where}: volume {volume['name']} names an unknown ConfigMap {volume['configMap'].get('name')}")
        containers = pod.get("containers") or []
        if len(containers) != 1:
            fail(f"{where}: expected one container")
        for container in containers + (pod.get("initContainers") or []):
            cwhere = f"{where} container {container.get('name')}"
            context = container.get("securityContext") or {}
            if effective(pod_context, context, "runAsNonRoot") is not True:
                fail(f"{cwhere}: runAsNonRoot must be true")
            uid = effective(pod_context, context, "runAsUser")
            if not isinstance(uid, int) or uid == 0:
                fail(f"{cwhere}: needs a fixed non-root runAsUser")
            if name in service_names and uid != image_uid:
                fail(f"{cwhere}: runAsUser {uid} is not the Dockerfile's USER {image_uid}")
            if context.get("readOnlyRootFilesystem") is not True:
                fail(f"{cwhere}: readOnlyRootFilesystem must be true")
            if context.get("allowPrivilegeEscalation") is not False:
                fail(f"{cwhere}: allowPrivilegeEscalation must be false")
            if "ALL" not in ((context.get("capabilities") or {}).get("drop") or []):
                fail(f"{cwhere}: capabilities must drop ALL")
            if (effective(pod_context, context, "seccompProfile") or {}).get("type") != "RuntimeDefault":
                fail(f"{cwhere}: seccompProfile must be RuntimeDefault")
            resources = container.get("resources") or {}
            for section in ("requests", "limits"):
                for resource in ("cpu", "memory"):
                    if resource not in (resources.get(section) or {}):
                        fail(f"{cwhere}: resources.{section}.{resource} is missing")
            mounts = {m["mountPath"]: m for m in container.get("volumeMounts") or []}
            for mount in mounts.values():
                if mount["name"] not in volumes:
                    fail(f"{cwhere}: volumeMount {mount['name']} has no volume")
            if "/tmp" not in mounts:
                fail(f"{cwhere}: the root filesystem is read-only, so mount a volume (emptyDir) at /tmp")
            ports = {p.get("name") for p in container.get("ports") or []} | {
                p.get("containerPort") for p in container.get("ports") or []}
            for probe_name, path in (("livenessProbe", "/health/live"), ("readinessProbe", "/health/ready")):
                probe = container.get(probe_name) or {}
                if (probe.get("httpGet") or {}).get("path") != path or not probe_port_ok(probe, ports):
                    fail(f"{cwhere}: {probe_name} must be GET {path} on one of the container's ports")
            if name in service_names and not container.get("startupProbe"):
                fail(f"{cwhere}: needs a startupProbe (migrations run before the port opens)")
            env = container.get("env") or []
            names = [e["name"] for e in env]
            if len(names) != len(set(names)):
                fail(f"{cwhere}: an environment variable is set twice")
            for source in container.get("envFrom") or []:
                if "secretRef" in source:
                    secrets.check_ref(cwhere, source["secretRef"].get("name"))
            values = {}
            for entry in env:
                secret_ref = (entry.get("valueFrom") or {}).get("secretKeyRef")
                if secret_ref:
                    secrets.check_ref(f"{cwhere} env {entry['name']}", secret_ref.get("name"), secret_ref.get("key"))
                elif entry["name"] in secret_vars:
                    fail(f"{cwhere}: {entry['name']} is a secret; take it from a Secret with secretKeyRef")
                else:
                    values[entry["name"]] = entry.get("value")
            if name in service_names:
                for var in names:
                    if var not in config_vars:
                        fail(f"{cwhere}: {var} is not in the README's configuration table")
                if "DATABASE_URL" not in names:
                    fail(f"{cwhere}: DATABASE_URL is not set")
                image = container.get("image", "")
                if not re.fullmatch(rf"ghcr\.io/favoriteme/{re.escape(name)}:[0-9]+\.[0-9]+\.[0-9]+", image):
                    fail(f"{cwhere}: image {image!r} is not ghcr.io/favoriteme/{name}:<version>")
                if container.get("command") != [f"/usr/local/bin/{name}"]:
                    fail(f"{cwhere}: command must be the image's entrypoint /usr/local/bin/{name}")
                http_ports = [p.get("containerPort") for p in container.get("ports") or [] if p.get("name") == "http"]
                if [values.get("HTTP_PORT")] != [str(p) for p in http_ports]:
                    fail(f"{cwhere}: HTTP_PORT must equal the port named http")
                if values.get("HTTP_PORT") != service_facts[name]["port"]:
                    fail(f"{cwhere}: HTTP_PORT must be {service_facts[name]['port']}, {name}'s port in "
                         "deploy/services.txt")
                if values.get("HTTP_HOST") != "0.0.0.0":
                    fail(f"{cwhere}: HTTP_HOST must be 0.0.0.0")
                for var, peer in (("AUTH_URL", "auth-service"), ("CATALOG_URL", "catalog-proxy")):
                    if var in values:
                        peer_spec = (services.get(peer) or {}).get("spec", {})
                        peer_ports = [p.get("port") for p in peer_spec.get("ports", [])]
                        if values[var] not in [f"http://{peer}:{p}" for p in peer_ports]:
                            fail(f"{cwhere}: {var} must be http://{peer}:<port> of the Service {peer}")
            stop = sleep_seconds((container.get("lifecycle") or {}).get("preStop"))
            if stop is None:
                fail(f"{cwhere}: needs a preStop that sleeps, so endpoints are removed before the process stops")
            grace = pod.get("terminationGracePeriodSeconds", 30)
            shutdown = int(values.get("SHUTDOWN_TIMEOUT_SECONDS") or shutdown_default) if name in service_names else 30
            if stop is not None and grace <= stop + shutdown:
                fail(f"{where}: terminationGracePeriodSeconds {grace} must exceed the preStop sleep ({stop} s) plus "
                     f"the shutdown time ({shutdown} s)")
    return pod_labels


def check_dependents(manifests, pod_labels):
    """Each Deployment has its ClusterIP Service, one CPU autoscaler (min 2) and one disruption budget."""
    services, deployments = manifests.by_name("Service"), manifests.by_name("Deployment")
    for name, labels in pod_labels.items():
        ports = {p.get("name") for c in deployments[name]["spec"]["template"]["spec"].get("containers", [])
                 for p in c.get("ports") or []}
        service = services.get(name)
        if not service or not selects({"matchLabels": service["spec"].get("selector") or {}}, labels):
            fail(f"Deployment {name}: no Service {name} selecting its pods")
        else:
            if service["spec"].get("type", "ClusterIP") != "ClusterIP":
                fail(f"Service {name}: must be ClusterIP (the Ingress is the way in)")
            for port in service["spec"].get("ports") or []:
                if port.get("targetPort") not in ports:
                    fail(f"Service {name}: targetPort {port.get('targetPort')} is not a named port of its pods")
        hpas = [h for h in manifests.of_kind("HorizontalPodAutoscaler")
                if (h["spec"].get("scaleTargetRef") or {}).get("name") == name]
        if len(hpas) != 1:
            fail(f"Deployment {name}: expected one HorizontalPodAutoscaler, found {len(hpas)}")
        for hpa in hpas:
            metrics = hpa["spec"].get("metrics") or []
            low, high = hpa["spec"].get("minReplicas", 1), hpa["spec"].get("maxReplicas", 0)
            if low < 2 or high < low:
                fail(f"HorizontalPodAutoscaler {name_of(hpa)}: minReplicas must be at least 2, maxReplicas at least "
                     "that")
            if not any((m.get("resource") or {}).get("name") == "cpu" for m in metrics):
                fail(f"HorizontalPodAutoscaler {name_of(hpa)}: scale on CPU")
        pdbs = [p for p in manifests.of_kind("PodDisruptionBudget") if selects(p["spec"].get("selector"), labels)]
        if len(pdbs) != 1 or pdbs[0]["spec"].get("minAvailable") != 1:
            fail(f"Deployment {name}: expected one PodDisruptionBudget with minAvailable 1")
