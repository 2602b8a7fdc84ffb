"""What there is to check: the services of deploy/services.txt, the manifests kustomization.yaml lists, and the
CloudNativePG Cluster among them (checked against our schema, the one custom resource we have)."""
import json

import jsonschema
import yaml

from .common import fail, load_all, name_of


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


# --- kustomization.yaml: lists every manifest, nothing else --------------------------------------------------------
def read_kustomization(k8s_dir):
    """The manifests kustomization.yaml lists, and the names of the ConfigMaps it generates."""
    kustomization = yaml.safe_load((k8s_dir / "kustomization.yaml").read_text()) or {}
    if kustomization.get("namespace") != "favoriteme":
        fail("kustomization.yaml: namespace must be favoriteme")
    resources = kustomization.get("resources") or []
    generated_configmaps = set()
    for resource in resources:
        if (k8s_dir / resource / "kustomization.yaml").is_file():  # a directory of its own (deploy/nginx: generators)
            nested = yaml.safe_load((k8s_dir / resource / "kustomization.yaml").read_text()) or {}
            generated_configmaps |= read_generators(k8s_dir / resource, nested)
        elif not (k8s_dir / resource).is_file():
            fail(f"kustomization.yaml lists {resource}, which does not exist")
        if resource.endswith(".example.yaml"):
            fail(f"kustomization.yaml must not list {resource} (placeholders only)")
    for path in sorted(k8s_dir.glob("*.yaml")):
        if path.name != "kustomization.yaml" and not path.name.endswith(".example.yaml") and path.name not in resources:
            fail(f"{path.name} is not listed in kustomization.yaml")
    return resources, generated_configmaps | read_generators(k8s_dir, kustomization)


def read_generators(directory, kustomization):
    """The names of the ConfigMaps a kustomization generates, each of whose files must exist."""
    names = set()
    for generator in kustomization.get("configMapGenerator") or []:
        names.add(generator.get("name"))
        for entry in (generator.get("files") or []) + (generator.get("envs") or []):
            if not (directory / entry.split("=", 1)[-1]).is_file():
                fail(f"{directory.name}/kustomization.yaml: configMapGenerator {generator.get('name')}: missing {entry}")
    return names


def is_custom(obj):
    group = obj.get("apiVersion", "").rpartition("/")[0]
    return "." in group and not group.endswith(".k8s.io")


class Manifests:
    """The documents of the listed manifests: built-in kinds in `objects`, custom resources in `custom`, each as
    (file, document). Writes the files that hold built-in kinds only (one path a line) to builtin_list."""

    def __init__(self, k8s_dir, resources, builtin_list):
        self.objects, self.custom, builtin_files = [], [], []
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
                (self.custom if is_custom(doc) else self.objects).append((resource, doc))
                namespace = (doc.get("metadata") or {}).get("namespace")
                if namespace not in (None, "favoriteme"):
                    fail(f"{resource}: {doc['kind']} {name_of(doc)} sets namespace {namespace}")
        builtin_list.write_text("".join(f"{path}\n" for path in builtin_files))

    def of_kind(self, kind):
        return [doc for _, doc in self.objects if doc["kind"] == kind]

    def by_name(self, kind):
        return {name_of(doc): doc for doc in self.of_kind(kind)}


# --- custom resources: the CloudNativePG Cluster against our schema ------------------------------------------------
def check_cluster(k8s_dir, manifests):
    """The one CloudNativePG Cluster (an empty stand-in when there is none, so the other rules can still run)."""
    schema = json.loads((k8s_dir / "schemas" / "cnpg-cluster.schema.json").read_text())
    jsonschema.Draft7Validator.check_schema(schema)
    cluster_validator = jsonschema.Draft7Validator(schema)
    clusters = []
    for resource, doc in manifests.custom:
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
    return clusters[0] if clusters else {"metadata": {"name": "?"}, "spec": {}}
