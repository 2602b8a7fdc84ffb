#!/usr/bin/env python3
"""The manifest rules of scripts/validate-deploy's k8s check (deploy/k8s/); scripts/validate-deploy describes them.

    validate_deploy.py K8S_DIR README.md deploy/README.md Dockerfile deploy/services.txt BUILTIN_LIST

Prints one `error: …` line per broken rule on stderr and exits 1 when there is any. Writes the manifests that hold
built-in kinds only (one path a line) to BUILTIN_LIST, for kubernetes-validate. Needs jsonschema and PyYAML 6:
scripts/validate-deploy runs it with the k8s tools it installs into .local/venv-deploy/k8s-lib.
"""
import json
import pathlib
import re
import sys

import jsonschema
import yaml

k8s_dir, readme, deploy_readme, dockerfile, services_file, builtin_list = map(pathlib.Path, sys.argv[1:7])
errors = []


def fail(message):
    errors.append(message)


def load_all(path):
    try:
        return [doc for doc in yaml.safe_load_all(path.read_text()) if doc is not None]
    except yaml.YAMLError as error:
        fail(f"{path.name}: not valid YAML: {error}")
        return []


def name_of(obj):
    return (obj.get("metadata") or {}).get("name", "?")


# --- deploy/services.txt: the services, their roles, schemas, routes and ports -------------------------------------
def read_services(path):
    facts = {}
    for number, line in enumerate(path.read_text().splitlines(), 1):
        fields = line.split()
        if not fields or fields[0].startswith("#"):
            continue
        if len(fields) != 6 or not fields[4].isdigit() or not fields[5].isdigit():
            fail(f"{path.name}:{number}: expected six columns (service role schema route port stack-base)")
            continue
        name, role, schema, route, port, _ = fields
        facts[name] = {"role": role, "schema": schema, "route": route, "port": port}
    if not facts:
        fail(f"{path.name}: no services")
    return facts


service_facts = read_services(services_file)


# --- kustomization.yaml: lists every manifest, nothing else --------------------------------------------------------
kustomization = yaml.safe_load((k8s_dir / "kustomization.yaml").read_text()) or {}
if kustomization.get("namespace") != "favoriteme":
    fail("kustomization.yaml: namespace must be favoriteme")
resources = kustomization.get("resources") or []
for resource in resources:
    if not (k8s_dir / resource).is_file():
        fail(f"kustomization.yaml lists {resource}, which does not exist")
    if resource.endswith(".example.yaml"):
        fail(f"kustomization.yaml must not list {resource} (placeholders only)")
for path in sorted(k8s_dir.glob("*.yaml")):
    if path.name != "kustomization.yaml" and not path.name.endswith(".example.yaml") and path.name not in resources:
        fail(f"{path.name} is not listed in kustomization.yaml")
generated_configmaps = set()
for generator in kustomization.get("configMapGenerator") or []:
    generated_configmaps.add(generator.get("name"))
    for entry in generator.get("files") or []:
        if not (k8s_dir / entry.split("=", 1)[-1]).is_file():
            fail(f"kustomization.yaml: configMapGenerator {generator.get('name')}: missing file {entry}")


def is_custom(obj):
    group = obj.get("apiVersion", "").rpartition("/")[0]
    return "." in group and not group.endswith(".k8s.io")


objects, custom, builtin_files = [], [], []
for resource in resources:
    path = k8s_dir / resource
    if not path.is_file():
        continue
    docs = load_all(path)
    kinds = {is_custom(doc) for doc in docs}
    if len(kinds) > 1:
        fail(f"{resource}: keep custom resources and built-in kinds in separate files")
    elif kinds == {False}:
        builtin_files.append(str(path))
    for doc in docs:
        if not isinstance(doc, dict) or "kind" not in doc:
            fail(f"{resource}: a document without kind")
            continue
        (custom if is_custom(doc) else objects).append((resource, doc))
        namespace = (doc.get("metadata") or {}).get("namespace")
        if namespace not in (None, "favoriteme"):
            fail(f"{resource}: {doc['kind']} {name_of(doc)} sets namespace {namespace}")
builtin_list.write_text("".join(f"{path}\n" for path in builtin_files))


def of_kind(kind):
    return [doc for _, doc in objects if doc["kind"] == kind]


# --- custom resources: the CloudNativePG Cluster against our schema ------------------------------------------------
schema = json.loads((k8s_dir / "schemas" / "cnpg-cluster.schema.json").read_text())
jsonschema.Draft7Validator.check_schema(schema)
cluster_validator = jsonschema.Draft7Validator(schema)
clusters = []
for resource, doc in custom:
    if doc.get("apiVersion") == "postgresql.cnpg.io/v1" and doc.get("kind") == "Cluster":
        clusters.append(doc)
        for error in sorted(cluster_validator.iter_errors(doc), key=lambda e: [str(p) for p in e.absolute_path]):
            where = ".".join(str(p) for p in error.absolute_path) or "(document)"
            fail(f"{resource}: {where}: {error.message}")
    else:
        fail(f"{resource}: no schema for {doc.get('apiVersion')} {doc.get('kind')}; add one to deploy/k8s/schemas/ "
             "and to scripts/validate-deploy")
if len(clusters) != 1:
    fail(f"expected one CloudNativePG Cluster, found {len(clusters)}")
cluster = clusters[0] if clusters else {"metadata": {"name": "?"}, "spec": {}}
cluster_name = name_of(cluster)

# --- Secrets: described in secrets.example.yaml (placeholders) and named in deploy/README.md ----------------------
deploy_readme_text = deploy_readme.read_text()
documented = {}
for secret in load_all(k8s_dir / "secrets.example.yaml"):
    if secret.get("kind") != "Secret":
        fail(f"secrets.example.yaml: {secret.get('kind')} {name_of(secret)} is not a Secret")
        continue
    values = dict(secret.get("stringData") or {})
    values.update(secret.get("data") or {})
    documented[name_of(secret)] = (secret.get("type", "Opaque"), values)
    for key, value in values.items():
        if key != "username" and "REPLACE-ME" not in str(value):
            fail(f"secrets.example.yaml: {name_of(secret)}.{key} must be a placeholder containing REPLACE-ME")
# Made by CloudNativePG for the cluster: its CA (certificate and key) and the database owner's credentials.
operator_made = {f"{cluster_name}-ca": {"ca.crt", "ca.key"}, f"{cluster_name}-app": None}
for secret in list(documented) + list(operator_made):
    if secret not in deploy_readme_text:
        fail(f"deploy/README.md does not mention the Secret {secret}")

used = set()


def check_secret_ref(where, secret, key=None):
    if secret in operator_made:
        keys = operator_made[secret]
        if key is not None and keys is not None and key not in keys:
            fail(f"{where}: Secret {secret} (made by CloudNativePG) has no key {key}")
        return
    if secret not in documented:
        fail(f"{where}: Secret {secret} is not described in secrets.example.yaml")
        return
    used.add(secret)
    if key is not None and key not in documented[secret][1]:
        fail(f"{where}: Secret {secret} has no key {key} in secrets.example.yaml")


for role in (cluster.get("spec", {}).get("managed") or {}).get("roles") or []:
    secret = (role.get("passwordSecret") or {}).get("name")
    if not secret:
        fail(f"postgres-cluster.yaml: role {role.get('name')} has no passwordSecret")
        continue
    check_secret_ref(f"postgres-cluster.yaml role {role.get('name')}", secret, "password")
    if secret in documented:
        kind, values = documented[secret]
        if kind != "kubernetes.io/basic-auth" or values.get("username") != role.get("name"):
            fail(f"secrets.example.yaml: {secret} must be kubernetes.io/basic-auth with username {role.get('name')}")

for ingress in of_kind("Ingress"):
    for tls in ingress.get("spec", {}).get("tls") or []:
        if tls.get("secretName") and tls["secretName"] not in deploy_readme_text:
            fail(f"Ingress {name_of(ingress)}: TLS Secret {tls['secretName']} is not mentioned in deploy/README.md")

# --- Deployments -------------------------------------------------------------------------------------------------
config_table = (readme.parent / "docs" / "operations.md").read_text().split("\n## Configuration", 1)[-1].split("\n## ", 1)[0]
config_vars = set(re.findall(r"^\| `([A-Z][A-Z0-9_]*)` \|", config_table, re.M))
if len(config_vars) < 20:
    fail(f"found only {len(config_vars)} variables in the README's configuration table; has it moved?")
secret_vars = {"DATABASE_URL", "TICKETMASTER_API_KEY", "NYT_BOOKS_API_KEY", "GOOGLE_BOOKS_API_KEY"}
user_match = re.search(r"^USER\s+(\d+)", dockerfile.read_text(), re.M)
image_uid = int(user_match.group(1)) if user_match else None
shutdown_default = 25  # SHUTDOWN_TIMEOUT_SECONDS' default in the README
services = {name_of(s): s for s in of_kind("Service")}
service_names = set(service_facts)
deployments = {name_of(d): d for d in of_kind("Deployment")}
if set(deployments) != service_names | {"gateway"}:
    fail(f"expected Deployments {sorted(service_names | {'gateway'})}, found {sorted(deployments)}")
cluster_rw = f"{cluster_name}-rw"


def selects(selector, labels):
    selector = selector or {}
    if not selector:
        return False
    for key, value in (selector.get("matchLabels") or {}).items():
        if labels.get(key) != value:
            return False
    for expression in selector.get("matchExpressions") or []:
        present = expression["key"] in labels
        value = labels.get(expression["key"])
        operator = expression["operator"]
        if operator == "In" and value not in expression.get("values", []):
            return False
        if operator == "NotIn" and value in expression.get("values", []):
            return False
        if operator == "Exists" and not present or operator == "DoesNotExist" and present:
            return False
    return True


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


pod_labels = {}
for name, deployment in deployments.items():
    where = f"Deployment {name}"
    spec = deployment.get("spec", {})
    template = spec.get("template", {})
    labels = (template.get("metadata") or {}).get("labels") or {}
    pod_labels[name] = labels
    pod = template.get("spec", {})
    if (spec.get("replicas") or 1) < 2:
        fail(f"{where}: replicas must be at least 2")
    if not selects(spec.get("selector"), labels):
        fail(f"{where}: its selector does not match its pod labels")
    if not (pod.get("topologySpreadConstraints") or (pod.get("affinity") or {}).get("podAntiAffinity")):
        fail(f"{where}: needs topologySpreadConstraints or pod anti-affinity")
    pod_context = pod.get("securityContext") or {}
    volumes = {v["name"]: v for v in pod.get("volumes") or []}
    for volume in volumes.values():
        if "secret" in volume:
            check_secret_ref(f"{where} volume {volume['name']}", volume["secret"].get("secretName"))
            for item in volume["secret"].get("items") or []:
                check_secret_ref(f"{where} volume {volume['name']}", volume["secret"].get("secretName"), item["key"])
        if "configMap" in volume and volume["configMap"].get("name") not in generated_configmaps | {
                name_of(c) for c in of_kind("ConfigMap")}:
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
                check_secret_ref(cwhere, source["secretRef"].get("name"))
        values = {}
        for entry in env:
            secret_ref = (entry.get("valueFrom") or {}).get("secretKeyRef")
            if secret_ref:
                check_secret_ref(f"{cwhere} env {entry['name']}", secret_ref.get("name"), secret_ref.get("key"))
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
                fail(f"{cwhere}: HTTP_PORT must be {service_facts[name]['port']}, {name}'s port in deploy/services.txt")
            if values.get("HTTP_HOST") != "0.0.0.0":
                fail(f"{cwhere}: HTTP_HOST must be 0.0.0.0")
            for var, peer in (("AUTH_URL", "auth-service"), ("CATALOG_URL", "catalog-proxy")):
                if var in values:
                    peer_ports = [p.get("port") for p in (services.get(peer) or {}).get("spec", {}).get("ports", [])]
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

# --- what the Deployments depend on: Service, autoscaler, disruption budget ---------------------------------------
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
    hpas = [h for h in of_kind("HorizontalPodAutoscaler")
            if (h["spec"].get("scaleTargetRef") or {}).get("name") == name]
    if len(hpas) != 1:
        fail(f"Deployment {name}: expected one HorizontalPodAutoscaler, found {len(hpas)}")
    for hpa in hpas:
        metrics = hpa["spec"].get("metrics") or []
        low, high = hpa["spec"].get("minReplicas", 1), hpa["spec"].get("maxReplicas", 0)
        if low < 2 or high < low:
            fail(f"HorizontalPodAutoscaler {name_of(hpa)}: minReplicas must be at least 2, maxReplicas at least that")
        if not any((m.get("resource") or {}).get("name") == "cpu" for m in metrics):
            fail(f"HorizontalPodAutoscaler {name_of(hpa)}: scale on CPU")
    pdbs = [p for p in of_kind("PodDisruptionBudget") if selects(p["spec"].get("selector"), labels)]
    if len(pdbs) != 1 or pdbs[0]["spec"].get("minAvailable") != 1:
        fail(f"Deployment {name}: expected one PodDisruptionBudget with minAvailable 1")

# --- Ingress backends, NetworkPolicy selectors --------------------------------------------------------------------
if len(of_kind("Ingress")) != 1:
    fail(f"expected one Ingress, found {len(of_kind('Ingress'))}")
if not of_kind("NetworkPolicy"):
    fail("no NetworkPolicy")
for ingress in of_kind("Ingress"):
    if ingress["spec"].get("ingressClassName") != "nginx":
        fail(f"Ingress {name_of(ingress)}: ingressClassName must be nginx")
    paths = set()
    for rule in ingress["spec"].get("rules") or []:
        for path in (rule.get("http") or {}).get("paths") or []:
            paths.add(path.get("path"))
            backend = (path.get("backend") or {}).get("service") or {}
            target = services.get(backend.get("name"))
            port = backend.get("port") or {}
            known = {p.get("name") for p in (target or {}).get("spec", {}).get("ports", [])} | {
                p.get("port") for p in (target or {}).get("spec", {}).get("ports", [])}
            if backend.get("name") != "gateway" or (port.get("name") or port.get("number")) not in known:
                fail(f"Ingress {name_of(ingress)}: {path.get('path')} must go to a port of the gateway Service")
    for required in [f"/v1/{facts['route']}" for facts in service_facts.values()] + ["/.well-known/jwks.json"]:
        if required not in paths:
            fail(f"Ingress {name_of(ingress)}: no route for {required}")

cluster_labels = {"cnpg.io/cluster": cluster_name}
for policy in of_kind("NetworkPolicy"):
    spec = policy.get("spec", {})
    selector = spec.get("podSelector") or {}
    if selector and not any(selects(selector, labels) for labels in [*pod_labels.values(), cluster_labels]):
        fail(f"NetworkPolicy {name_of(policy)}: its podSelector matches no pods of ours")
    for rule in (spec.get("ingress") or []) + (spec.get("egress") or []):
        for peer in (rule.get("from") or []) + (rule.get("to") or []):
            if "podSelector" in peer and "namespaceSelector" not in peer and not any(
                    selects(peer["podSelector"], labels) for labels in [*pod_labels.values(), cluster_labels]):
                fail(f"NetworkPolicy {name_of(policy)}: a peer podSelector matches no pods of ours")

# --- the database: what the services' DATABASE_URLs and schemas need from the Cluster ----------------------------
initdb = ((cluster.get("spec") or {}).get("bootstrap") or {}).get("initdb") or {}
statements = " ;".join(initdb.get("postInitApplicationSQL") or [])
roles = {role.get("name"): role for role in ((cluster.get("spec") or {}).get("managed") or {}).get("roles") or []}
for name in sorted(service_names & set(deployments)):
    container = deployments[name]["spec"]["template"]["spec"]["containers"][0]
    env = {e["name"]: e for e in container.get("env") or []}
    schema_name = (env.get("DATABASE_SCHEMA") or {}).get("value")
    if schema_name != service_facts[name]["schema"]:
        fail(f"Deployment {name}: DATABASE_SCHEMA must be {service_facts[name]['schema']} (deploy/services.txt)")
    ref = ((env.get("DATABASE_URL") or {}).get("valueFrom") or {}).get("secretKeyRef") or {}
    if ref.get("name") not in documented:
        continue  # reported above
    url = str(documented[ref["name"]][1].get(ref.get("key"), ""))
    role = (re.match(r"postgresql://([a-z_][a-z0-9_]*)[:@]", url) or [None, None])[1]
    if role != service_facts[name]["role"]:
        fail(f"Deployment {name}: its database role {role!r} (from the DATABASE_URL in secrets.example.yaml) is not "
             f"{service_facts[name]['role']}, the role deploy/services.txt gives it")
    if role not in roles:
        fail(f"Deployment {name}: its database role {role!r} (from the DATABASE_URL in secrets.example.yaml) is "
             "not a managed role of the Cluster")
    if not url.startswith(f"postgresql://{role}:") or f"@{cluster_rw}:5432/{initdb.get('database')}?" not in url:
        fail(f"secrets.example.yaml: {ref.get('name')}.DATABASE_URL must be postgresql://{role}:…@{cluster_rw}:5432/"
             f"{initdb.get('database')}?…")
    if not schema_name or f"CREATE SCHEMA {schema_name} AUTHORIZATION {role}" not in statements:
        fail(f"postgres-cluster.yaml: postInitApplicationSQL must create schema {schema_name} owned by {role}")
    if f"CREATE ROLE {role} " not in statements + " ":
        fail(f"postgres-cluster.yaml: postInitApplicationSQL must create role {role} (managed roles come later)")

for secret in sorted(set(documented) - used):
    fail(f"secrets.example.yaml describes {secret}, which no manifest uses")

for message in errors:
    print(f"error: {message}", file=sys.stderr)
sys.exit(1 if errors else 0)
