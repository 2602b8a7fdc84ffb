"""How the parts connect: the Ingress routes to the gateway, the NetworkPolicies select our pods, and the
services' database roles, schemas and URLs agree with the Cluster."""
import re

from .common import fail, name_of, selects


def check_network(manifests, service_facts, pod_labels, cluster_name):
    """One Ingress, every path of it to the gateway Service and a route for each service; NetworkPolicy selectors
    that match pods of ours."""
    services = manifests.by_name("Service")
    if len(manifests.of_kind("Ingress")) != 1:
        fail(f"expected one Ingress, found {len(manifests.of_kind('Ingress'))}")
    if not manifests.of_kind("NetworkPolicy"):
        fail("no NetworkPolicy")
    for ingress in manifests.of_kind("Ingress"):
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
    for policy in manifests.of_kind("NetworkPolicy"):
        spec = policy.get("spec", {})
        selector = spec.get("podSelector") or {}
        if selector and not any(selects(selector, labels) for labels in [*pod_labels.values(), cluster_labels]):
            fail(f"NetworkPolicy {name_of(policy)}: its podSelector matches no pods of ours")
        for rule in (spec.get("ingress") or []) + (spec.get("egress") or []):
            for peer in (rule.get("from") or []) + (rule.get("to") or []):
                if "podSelector" in peer and "namespaceSelector" not in peer and not any(
                        selects(peer["podSelector"], labels) for labels in [*pod_labels.values(), cluster_labels]):
                    fail(f"NetworkPolicy {name_of(policy)}: a peer podSelector matches no pods of ours")


def check_database(cluster, manifests, service_facts, secrets):
    """The services' DATABASE_URLs and schemas, against what the Cluster creates."""
    cluster_rw = f"{name_of(cluster)}-rw"
    service_names, deployments, documented = set(service_facts), manifests.by_name("Deployment"), secrets.documented
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
            fail(f"Deployment {name}: its database role {role!r} (from the DATABASE_URL in secrets.example.yaml) is "
                 f"not {service_facts[name]['role']}, the role deploy/services.txt gives it")
        if role not in roles:
            fail(f"Deployment {name}: its database role {role!r} (from the DATABASE_URL in secrets.example.yaml) is "
                 "not a managed role of the Cluster")
        if not url.startswith(f"postgresql://{role}:") or f"@{cluster_rw}:5432/{initdb.get('database')}?" not in url:
            fail(f"secrets.example.yaml: {ref.get('name')}.DATABASE_URL must be "
                 f"postgresql://{role}:…@{cluster_rw}:5432/{initdb.get('database')}?…")
        if not schema_name or f"CREATE SCHEMA {schema_name} AUTHORIZATION {role}" not in statements:
            fail(f"postgres-cluster.yaml: postInitApplicationSQL must create schema {schema_name} owned by {role}")
        if f"CREATE ROLE {role} " not in statements + " ":
            fail(f"postgres-cluster.yaml: postInitApplicationSQL must create role {role} (managed roles come later)")
