"""What the rule modules share: the list of broken rules, loading manifests, names, label selectors."""
import yaml

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
