"""Secrets: described in secrets.example.yaml (placeholders) and named in deploy/README.md, and every Secret and key
a manifest references is one of those or one CloudNativePG makes."""
from .common import fail, load_all, name_of


class Secrets:
    def __init__(self, k8s_dir, deploy_readme_text, cluster_name):
        self.documented = {}
        for secret in load_all(k8s_dir / "secrets.example.yaml"):
            if secret.get("kind") != "Secret":
                fail(f"secrets.example.yaml: {secret.get('kind')} {name_of(secret)} is not a Secret")
                continue
            values = dict(secret.get("stringData") or {})
            values.update(secret.get("data") or {})
            self.documented[name_of(secret)] = (secret.get("type", "Opaque"), values)
            for key, value in values.items():
                if key != "username" and "REPLACE-ME" not in str(value):
                    fail(f"secrets.example.yaml: {name_of(secret)}.{key} must be a placeholder containing REPLACE-ME")
        # Made by CloudNativePG for the cluster: its CA (certificate and key) and the database owner's credentials.
        self.operator_made = {f"{cluster_name}-ca": {"ca.crt", "ca.key"}, f"{cluster_name}-app": None}
        for secret in list(self.documented) + list(self.operator_made):
            if secret not in deploy_readme_text:
                fail(f"deploy/README.md does not mention the Secret {secret}")
        self.used = set()

    def check_ref(self, where, secret, key=None):
        """A reference from `where` to Secret `secret` (and its key `key`); remembered as used."""
        if secret in self.operator_made:
            keys = self.operator_made[secret]
            if key is not None and keys is not None and key not in keys:
                fail(f"{where}: Secret {secret} (made by CloudNativePG) has no key {key}")
            return
        if secret not in self.documented:
            fail(f"{where}: Secret {secret} is not described in secrets.example.yaml")
            return
        self.used.add(secret)
        if key is not None and key not in self.documented[secret][1]:
            fail(f"{where}: Secret {secret} has no key {key} in secrets.example.yaml")

    def check_cluster_roles(self, cluster):
        """Each managed role of the Cluster takes its password from a basic-auth Secret with its name."""
        for role in (cluster.get("spec", {}).get("managed") or {}).get("roles") or []:
            secret = (role.get("passwordSecret") or {}).get("name")
            if not secret:
                fail(f"postgres-cluster.yaml: role {role.get('name')} has no passwordSecret")
                continue
            self.check_ref(f"postgres-cluster.yaml role {role.get('name')}", secret, "password")
            if secret in self.documented:
                kind, values = self.documented[secret]
                if kind != "kubernetes.io/basic-auth" or values.get("username") != role.get("name"):
                    fail(f"secrets.example.yaml: {secret} must be kubernetes.io/basic-auth with username "
                         f"{role.get('name')}")

    def check_all_used(self):
        for secret in sorted(set(self.documented) - self.used):
            fail(f"secrets.example.yaml describes {secret}, which no manifest uses")


def check_ingress_tls(manifests, deploy_readme_text):
    for ingress in manifests.of_kind("Ingress"):
        for tls in ingress.get("spec", {}).get("tls") or []:
            if tls.get("secretName") and tls["secretName"] not in deploy_readme_text:
                fail(f"Ingress {name_of(ingress)}: TLS Secret {tls['secretName']} is not mentioned in deploy/README.md")
