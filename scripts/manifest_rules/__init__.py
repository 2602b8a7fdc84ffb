"""The manifest rules of scripts/validate-deploy's k8s check, one module per subject; scripts/validate_deploy.py runs
them in a fixed order, so that a report lists its errors the same way every time."""
