#!/usr/bin/env python3
"""The manifest rules of scripts/validate-deploy's k8s check (deploy/k8s/); scripts/validate-deploy describes them.

    validate_deploy.py K8S_DIR README.md deploy/README.md Dockerfile deploy/services.txt BUILTIN_LIST

Prints one `error: …` line per broken rule on stderr and exits 1 when there is any. Writes the manifests that hold
built-in kinds only (one path a line) to BUILTIN_LIST, for kubernetes-validate. Needs jsonschema and PyYAML 6:
scripts/validate-deploy runs it with the k8s tools it installs into its venv (k8s-lib). The rules are in
scripts/manifest_rules/.
"""
import pathlib
import sys

from manifest_rules.common import errors, name_of
from manifest_rules.connections import check_database, check_network
from manifest_rules.inventory import Manifests, check_cluster, read_kustomization, read_services
from manifest_rules.secret_refs import Secrets, check_ingress_tls
from manifest_rules.workloads import check_dependents, check_deployments


def main(argv):
    k8s_dir, readme, deploy_readme, dockerfile, services_file, builtin_list = map(pathlib.Path, argv[1:7])
    service_facts = read_services(services_file)
    resources, generated_configmaps = read_kustomization(k8s_dir)
    manifests = Manifests(k8s_dir, resources, builtin_list)
    cluster = check_cluster(k8s_dir, manifests)
    cluster_name = name_of(cluster)
    deploy_readme_text = deploy_readme.read_text()
    secrets = Secrets(k8s_dir, deploy_readme_text, cluster_name)
    secrets.check_cluster_roles(cluster)
    check_ingress_tls(manifests, deploy_readme_text)
    pod_labels = check_deployments(manifests, service_facts, secrets, generated_configmaps, readme, dockerfile)
    check_dependents(manifests, pod_labels)
    check_network(manifests, service_facts, pod_labels, cluster_name)
    check_database(cluster, manifests, service_facts, secrets)
    secrets.check_all_used()
    for message in errors:
        print(f"error: {message}", file=sys.stderr)
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
