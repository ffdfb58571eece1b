#!/usr/bin/env bash
# Validates the deployment files with the real tools (scripts/test runs this):
#   deploy/compose.yaml  `docker compose config` (or docker-compose), plus checks of the
#                        resolved model: the services, their images local (matchfarm/)
#                        but the optional Grafana's, no container_name on the workers,
#                        the Docker socket mounted, a stop grace period above the drain,
#                        every secret required (the API token, RabbitMQ's passwords, the
#                        S3 secret keys, the registry's and Grafana's passwords),
#                        the registry's password given to the registry and the workers
#                        only, each S3 key to the S3 server and its own part only
#   deploy/k8s           rendered with `kubectl kustomize` (or, without kubectl, by
#                        reading kustomization.yaml's resources and namespace), checked
#                        against the Kubernetes schemas with kubernetes-validate --strict
#                        (pip-installed if missing), then scripts/validate-deploy.py
#                        (KEDA CRDs against their schemas, the farm's own rules)
# Needs no Docker daemon, registry or cluster.
set -euo pipefail
cd "$(dirname "$0")/.."

log() { printf -- '-- %s\n' "$*" >&2; }
die() { printf 'error: %s\n' "$*" >&2; exit 1; }
WORK=$(mktemp -d "${TMPDIR:-/tmp}/validate-deploy.XXXXXX")
trap 'rm -rf "$WORK"' EXIT

# kubernetes-validate brings PyYAML and jsonschema, which the checks below use too.
if ! python3 -c 'import kubernetes_validate, yaml, jsonschema' >/dev/null 2>&1; then
    log "installing kubernetes-validate (pip)"
    python3 -m pip install -q kubernetes-validate
fi

# --- compose -------------------------------------------------------------------------

if docker compose version >/dev/null 2>&1; then
    compose=(docker compose)
elif command -v docker-compose >/dev/null 2>&1; then
    compose=(docker-compose)
else
    die "neither 'docker compose' nor docker-compose is installed"
fi
log "compose: ${compose[*]} config (deploy/compose.yaml)"
export FARM_API_TOKEN=validate-deploy-token-0123456789
export REGISTRY_PASSWORD=validate-deploy-registry-password
export S3_COORDINATOR_SECRET_KEY=validate-deploy-coordinator-s3-secret S3_WORKER_SECRET_KEY=validate-deploy-worker-s3-secret
export RABBITMQ_PASSWORD=validate-deploy-rabbitmq-password RABBITMQ_COORDINATOR_PASSWORD=validate-deploy-coordinator-password
export GRAFANA_ADMIN_PASSWORD=validate-deploy-grafana-password
"${compose[@]}" -f deploy/compose.yaml config >"$WORK/compose.yaml" ||
    die "deploy/compose.yaml is not valid"
# Without any one secret compose must refuse, naming it (each is required, no default).
for required in FARM_API_TOKEN REGISTRY_PASSWORD S3_COORDINATOR_SECRET_KEY S3_WORKER_SECRET_KEY \
    RABBITMQ_PASSWORD RABBITMQ_COORDINATOR_PASSWORD GRAFANA_ADMIN_PASSWORD; do
    if env -u "$required" "${compose[@]}" -f deploy/compose.yaml config -q >"$WORK/refused.log" 2>&1; then
        die "deploy/compose.yaml resolves without $required"
    fi
    grep -q "set $required" "$WORK/refused.log" ||
        die "deploy/compose.yaml refuses to resolve without $required but does not name it: $(cat "$WORK/refused.log")"
done
python3 - "$WORK/compose.yaml" "$REGISTRY_PASSWORD" <<'EOF'
import os, re, sys, yaml
model = yaml.safe_load(open(sys.argv[1]))
services = model["services"]
errors = []
for name in ("rabbitmq", "s3", "registry", "coordinator", "worker", "prometheus", "grafana"):
    if name not in services:
        errors.append(f"no service {name}")
# Nothing but the optional Grafana may need a registry: every other image is built here.
for name, service in services.items():
    image = service.get("image", "")
    if "grafana" not in service.get("profiles", []) and not image.startswith("matchfarm/"):
        errors.append(f"{name}: image {image!r} is not one built here (matchfarm/...)")
worker = services.get("worker", {})
if "container_name" in worker:
    errors.append("worker has a container_name: it cannot be scaled")
volumes = [v if isinstance(v, str) else f"{v.get('source')}:{v.get('target')}" for v in worker.get("volumes", [])]
if not any(v.startswith("/var/run/docker.sock:/var/run/docker.sock") for v in volumes):
    errors.append("worker does not mount the Docker socket")
def seconds(text):
    match = re.fullmatch(r"(?:(\d+)m)?(?:(\d+)s)?", str(text))
    return int(match.group(1) or 0) * 60 + int(match.group(2) or 0)
drain = int(worker.get("environment", {}).get("FARM_DRAIN_SECS", 60))
if seconds(worker.get("stop_grace_period", "10s")) <= drain:
    errors.append("worker stop_grace_period is not above FARM_DRAIN_SECS")
for name in ("coordinator", "worker"):
    env = services.get(name, {}).get("environment", {})
    if env.get("FARM_STORAGE__KIND") != "s3" or "rabbitmq:5672" not in env.get("FARM_AMQP_URL", ""):
        errors.append(f"{name}: not wired to rabbitmq and the S3 store")
# The registry requires the workers' credentials: its entrypoint writes its htpasswd
# from REGISTRY_USER and REGISTRY_PASSWORD, and the workers sign in with the same pair.
# Nothing else may see the password.
password = sys.argv[2]
registry_env = services.get("registry", {}).get("environment", {})
if registry_env.get("REGISTRY_PASSWORD") != password or not registry_env.get("REGISTRY_USER"):
    errors.append("registry: REGISTRY_USER and REGISTRY_PASSWORD are not set from the variables")
worker_env = worker.get("environment", {})
if worker_env.get("FARM_DOCKER__REGISTRY_PASSWORD") != password:
    errors.append("worker: FARM_DOCKER__REGISTRY_PASSWORD is not REGISTRY_PASSWORD")
if worker_env.get("FARM_DOCKER__REGISTRY_USER") != registry_env.get("REGISTRY_USER"):
    errors.append("worker: FARM_DOCKER__REGISTRY_USER is not the registry's REGISTRY_USER")
for name, service in services.items():
    if name not in ("registry", "worker") and password in yaml.safe_dump(service):
        errors.append(f"{name}: is given the registry's password")
# The S3 keys: the coordinator's and the workers' own (farm-s3 gives each role only its
# part's rights), both known to the s3 service, neither given to another service.
s3_secrets = {part: os.environ[f"S3_{part.upper()}_SECRET_KEY"] for part in ("coordinator", "worker")}
s3_env = services.get("s3", {}).get("environment", {})
for part, secret in s3_secrets.items():
    if services.get(part, {}).get("environment", {}).get("FARM_STORAGE__SECRET_KEY") != secret:
        errors.append(f"{part}: FARM_STORAGE__SECRET_KEY is not S3_{part.upper()}_SECRET_KEY")
    if s3_env.get(f"S3_{part.upper()}_SECRET_KEY") != secret:
        errors.append(f"s3: S3_{part.upper()}_SECRET_KEY is not given to the S3 server")
    for name, service in services.items():
        if name not in ("s3", part) and secret in yaml.safe_dump(service):
            errors.append(f"{name}: is given the {part}'s S3 secret key")
mounts = {name: " ".join(str(v) for v in s.get("volumes", [])) for name, s in services.items()}
if "/etc/prometheus" not in mounts.get("prometheus", ""):
    errors.append("prometheus: no config mounted at /etc/prometheus")
for target in ("/etc/grafana/provisioning", "/var/lib/grafana/dashboards"):
    if target not in mounts.get("grafana", ""):
        errors.append(f"grafana: nothing mounted at {target}")
for error in errors:
    print("error:", error, file=sys.stderr)
sys.exit(1 if errors else 0)
EOF
log "compose: ok ($(python3 -c 'import sys, yaml; print(len(yaml.safe_load(open(sys.argv[1]))["services"]))' "$WORK/compose.yaml") services)"

# --- Kubernetes ----------------------------------------------------------------------

if command -v kubectl >/dev/null 2>&1; then
    log "k8s: kubectl kustomize deploy/k8s"
    kubectl kustomize deploy/k8s >"$WORK/k8s.yaml"
else
    log "k8s: no kubectl; assembling deploy/k8s from kustomization.yaml"
    python3 - deploy/k8s >"$WORK/k8s.yaml" <<'EOF'
import os, sys, yaml
base = sys.argv[1]
kustomization = yaml.safe_load(open(os.path.join(base, "kustomization.yaml")))
namespace = kustomization.get("namespace")
docs = []
for resource in kustomization["resources"]:
    for doc in yaml.safe_load_all(open(os.path.join(base, resource))):
        if not doc:
            continue
        if namespace and doc["kind"] != "Namespace":
            doc["metadata"]["namespace"] = namespace
        docs.append(doc)
yaml.safe_dump_all(docs, sys.stdout, sort_keys=False)
EOF
fi

log "k8s: kubernetes-validate --strict"
# kubernetes-validate has no schema for CRDs: it warns about the KEDA kinds, which
# validate-deploy.py checks.
python3 -m kubernetes_validate --strict --quiet "$WORK/k8s.yaml" 2>&1 | grep -v "Couldn't find schema for kind \(ScaledObject\|TriggerAuthentication\)" >&2 || true
python3 -m kubernetes_validate --strict --quiet "$WORK/k8s.yaml" >/dev/null 2>&1 ||
    die "deploy/k8s does not match the Kubernetes schemas"
log "k8s: KEDA schemas and the farm's rules (scripts/validate-deploy.py)"
python3 scripts/validate-deploy.py "$WORK/k8s.yaml"
log "deploy files valid"
