#!/usr/bin/env python3
"""Checks the Kubernetes manifests of deploy/k8s that no Kubernetes schema covers, and
some farm-specific rules over all of them.

Usage: scripts/validate-deploy.py RENDERED.yaml

RENDERED.yaml is the kustomize output (`kubectl kustomize deploy/k8s`, or what
scripts/validate-deploy.sh assembles from kustomization.yaml without kubectl). The
built-in kinds are checked against the Kubernetes OpenAPI schemas by
kubernetes-validate (in scripts/validate-deploy.sh); here:

- KEDA's ScaledObject and TriggerAuthentication (CRDs) against JSON schemas written
  from KEDA's documented fields (keda.sh/docs: ScaledObject spec, RabbitMQ scaler,
  TriggerAuthentication), unknown fields rejected;
- the farm's own rules: the ScaledObject scales the worker StatefulSet on farm.jobs;
  each worker's id is its pod's name, and the Secret farm-worker-identities (its keys
  the pods' names, mounted at FARM_IDENTITY_DIR) holds their broker identities;
  its TriggerAuthentication and the Secret key it reads exist; the workers' grace
  period is longer than FARM_DRAIN_SECS; every container has resource requests and
  limits, limits no lower than requests; pods carry prometheus.io scrape annotations;
  the coordinator's ledger is on a PersistentVolumeClaim; env references resolve; the
  workers read the image registry's user and password from a Secret that no other
  workload reads (whoever holds them can push over any bot's image); the coordinator
  and the workers each read an S3 key from a Secret of their own (the store gives each
  key only its part's rights).
"""

import re
import sys

import jsonschema
import yaml

NAME = {"type": "string", "pattern": r"^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$"}
METADATA = {
    "type": "object",
    "required": ["name"],
    "properties": {"name": NAME, "namespace": NAME, "labels": {"type": "object"}, "annotations": {"type": "object"}},
}
INT_STRING = {"type": "string", "pattern": r"^[0-9]+(\.[0-9]+)?$"}

RABBITMQ_TRIGGER = {
    "type": "object",
    "additionalProperties": False,
    "required": ["type", "metadata"],
    "properties": {
        "type": {"const": "rabbitmq"},
        "name": {"type": "string"},
        "useCachedMetrics": {"type": "boolean"},
        "metricType": {"enum": ["AverageValue", "Value", "Utilization"]},
        "authenticationRef": {
            "type": "object",
            "additionalProperties": False,
            "required": ["name"],
            "properties": {"name": NAME, "kind": {"enum": ["TriggerAuthentication", "ClusterTriggerAuthentication"]}},
        },
        "metadata": {
            "type": "object",
            "additionalProperties": False,
            "required": ["queueName", "mode", "value"],
            "properties": {
                "host": {"type": "string"},
                "hostFromEnv": {"type": "string"},
                "protocol": {"enum": ["amqp", "http", "auto"]},
                "queueName": {"type": "string", "minLength": 1},
                "mode": {"enum": ["QueueLength", "MessageRate"]},
                "value": INT_STRING,
                "activationValue": INT_STRING,
                "vhostName": {"type": "string"},
                "useRegex": {"enum": ["true", "false"]},
                "excludeUnacknowledged": {"enum": ["true", "false"]},
                "operation": {"enum": ["sum", "max", "avg"]},
                "timeout": INT_STRING,
                "unsafeSsl": {"enum": ["true", "false"]},
            },
        },
    },
}

SCALED_OBJECT = {
    "type": "object",
    "additionalProperties": False,
    "required": ["apiVersion", "kind", "metadata", "spec"],
    "properties": {
        "apiVersion": {"const": "keda.sh/v1alpha1"},
        "kind": {"const": "ScaledObject"},
        "metadata": METADATA,
        "spec": {
            "type": "object",
            "additionalProperties": False,
            "required": ["scaleTargetRef", "triggers"],
            "properties": {
                "scaleTargetRef": {
                    "type": "object",
                    "additionalProperties": False,
                    "required": ["name"],
                    "properties": {
                        "apiVersion": {"type": "string"},
                        "kind": {"type": "string"},
                        "name": NAME,
                        "envSourceContainerName": {"type": "string"},
                    },
                },
                "pollingInterval": {"type": "integer", "minimum": 1},
                "cooldownPeriod": {"type": "integer", "minimum": 0},
                "initialCooldownPeriod": {"type": "integer", "minimum": 0},
                "idleReplicaCount": {"type": "integer", "minimum": 0},
                "minReplicaCount": {"type": "integer", "minimum": 0},
                "maxReplicaCount": {"type": "integer", "minimum": 1},
                "fallback": {
                    "type": "object",
                    "required": ["failureThreshold", "replicas"],
                    "properties": {"failureThreshold": {"type": "integer"}, "replicas": {"type": "integer"}},
                },
                "advanced": {
                    "type": "object",
                    "additionalProperties": False,
                    "properties": {
                        "restoreToOriginalReplicaCount": {"type": "boolean"},
                        "horizontalPodAutoscalerConfig": {
                            "type": "object",
                            "additionalProperties": False,
                            "properties": {"name": {"type": "string"}, "behavior": {"type": "object"}},
                        },
                        "scalingModifiers": {"type": "object"},
                    },
                },
                "triggers": {"type": "array", "minItems": 1, "items": RABBITMQ_TRIGGER},
            },
        },
    },
}

TRIGGER_AUTHENTICATION = {
    "type": "object",
    "additionalProperties": False,
    "required": ["apiVersion", "kind", "metadata", "spec"],
    "properties": {
        "apiVersion": {"const": "keda.sh/v1alpha1"},
        "kind": {"const": "TriggerAuthentication"},
        "metadata": METADATA,
        "spec": {
            "type": "object",
            "additionalProperties": False,
            "minProperties": 1,
            "properties": {
                "secretTargetRef": {
                    "type": "array",
                    "minItems": 1,
                    "items": {
                        "type": "object",
                        "additionalProperties": False,
                        "required": ["parameter", "name", "key"],
                        "properties": {"parameter": {"type": "string"}, "name": NAME, "key": {"type": "string"}},
                    },
                },
                "env": {"type": "array"},
                "podIdentity": {"type": "object"},
                "hashiCorpVault": {"type": "object"},
                "azureKeyVault": {"type": "object"},
                "awsSecretManager": {"type": "object"},
                "gcpSecretManager": {"type": "object"},
                "configMapTargetRef": {"type": "array"},
            },
        },
    },
}

CPU = re.compile(r"^([0-9.]+)(m?)$")
MEMORY = re.compile(r"^([0-9.]+)(Ki|Mi|Gi|Ti|k|M|G|T)?$")
MEMORY_UNITS = {None: 1, "k": 1e3, "M": 1e6, "G": 1e9, "T": 1e12, "Ki": 2**10, "Mi": 2**20, "Gi": 2**30, "Ti": 2**40}


def quantity(kind, value):
    value = str(value)
    if kind == "cpu":
        number, milli = CPU.match(value).groups()
        return float(number) / (1000 if milli else 1)
    number, unit = MEMORY.match(value).groups()
    return float(number) * MEMORY_UNITS[unit]


def main(path):
    with open(path, encoding="utf-8") as file:
        docs = [doc for doc in yaml.safe_load_all(file) if doc]
    errors = []
    by_kind = {}
    for doc in docs:
        by_kind.setdefault(doc["kind"], {})[doc["metadata"]["name"]] = doc

    for kind, schema in (("ScaledObject", SCALED_OBJECT), ("TriggerAuthentication", TRIGGER_AUTHENTICATION)):
        if not by_kind.get(kind):
            errors.append(f"no {kind}")
        for name, doc in by_kind.get(kind, {}).items():
            for error in jsonschema.Draft202012Validator(schema).iter_errors(doc):
                errors.append(f"{kind}/{name}: {'/'.join(map(str, error.path))}: {error.message}")

    secrets = by_kind.get("Secret", {})
    config_maps = by_kind.get("ConfigMap", {})

    def secret_keys(name):
        secret = secrets.get(name, {})
        return set(secret.get("stringData", {})) | set(secret.get("data", {}))

    # KEDA: the worker StatefulSet on farm.jobs, through an existing TriggerAuthentication;
    # the identities are keyed by the pods' names.
    identities = secret_keys("farm-worker-identities")
    for name, scaled in by_kind.get("ScaledObject", {}).items():
        target = scaled["spec"]["scaleTargetRef"]
        if target.get("kind", "Deployment") != "StatefulSet" or target["name"] not in by_kind.get("StatefulSet", {}):
            errors.append(f"ScaledObject/{name}: target {target} is not a StatefulSet here")
        wanted = {f"{target['name']}-{n}" for n in range(int(scaled["spec"].get("maxReplicaCount", 100)))}
        if not wanted & identities or identities - wanted:
            errors.append(f"ScaledObject/{name}: Secret farm-worker-identities has no key of its pods' names")
        for trigger in scaled["spec"]["triggers"]:
            if trigger["metadata"].get("queueName") != "farm.jobs":
                errors.append(f"ScaledObject/{name}: trigger queue is not farm.jobs")
            auth = trigger.get("authenticationRef", {}).get("name")
            if auth not in by_kind.get("TriggerAuthentication", {}):
                errors.append(f"ScaledObject/{name}: TriggerAuthentication {auth!r} missing")
            elif not any(ref["parameter"] == "host" for ref in by_kind["TriggerAuthentication"][auth]["spec"].get("secretTargetRef", [])):
                if "host" not in trigger["metadata"] and "hostFromEnv" not in trigger["metadata"]:
                    errors.append(f"ScaledObject/{name}: no AMQP host (metadata or TriggerAuthentication)")
    for name, auth in by_kind.get("TriggerAuthentication", {}).items():
        for ref in auth["spec"].get("secretTargetRef", []):
            if ref["key"] not in secret_keys(ref["name"]):
                errors.append(f"TriggerAuthentication/{name}: Secret {ref['name']} has no key {ref['key']}")

    # Pods: resources, probes, annotations, env sources.
    workloads = {**{("Deployment", n): d for n, d in by_kind.get("Deployment", {}).items()},
                 **{("StatefulSet", n): d for n, d in by_kind.get("StatefulSet", {}).items()}}
    for (kind, name), workload in workloads.items():
        template = workload["spec"]["template"]
        annotations = template["metadata"].get("annotations", {})
        if annotations.get("prometheus.io/scrape") != "true" or "prometheus.io/port" not in annotations:
            errors.append(f"{kind}/{name}: pods lack prometheus.io/scrape and prometheus.io/port")
        for container in template["spec"]["containers"]:
            where = f"{kind}/{name}/{container['name']}"
            resources = container.get("resources", {})
            for part in ("requests", "limits"):
                for resource in ("cpu", "memory"):
                    if resource not in resources.get(part, {}):
                        errors.append(f"{where}: no {part}.{resource}")
            for resource in ("cpu", "memory"):
                try:
                    request = quantity(resource, resources["requests"][resource])
                    limit = quantity(resource, resources["limits"][resource])
                except (KeyError, AttributeError):
                    continue
                if limit < request:
                    errors.append(f"{where}: {resource} limit below its request")
            for source in container.get("envFrom", []):
                if "configMapRef" in source and source["configMapRef"]["name"] not in config_maps:
                    errors.append(f"{where}: ConfigMap {source['configMapRef']['name']} missing")
                if "secretRef" in source and source["secretRef"]["name"] not in secrets:
                    errors.append(f"{where}: Secret {source['secretRef']['name']} missing")

    # Workers: a grace period longer than their drain.
    drain = 60
    for config in config_maps.values():
        drain = int(config.get("data", {}).get("FARM_DRAIN_SECS", drain))
    worker = by_kind.get("StatefulSet", {}).get("farm-worker")
    if worker is None:
        errors.append("no StatefulSet farm-worker")
    else:
        grace = worker["spec"]["template"]["spec"].get("terminationGracePeriodSeconds", 30)
        if grace <= drain:
            errors.append(f"farm-worker: terminationGracePeriodSeconds {grace} is not above FARM_DRAIN_SECS {drain}")
        # Its identity: the pod's name, signed in with the password of that key.
        pod = worker["spec"]["template"]["spec"]
        env = {v["name"]: v for c in pod["containers"] for v in c.get("env", [])}
        if env.get("FARM_WORKER_ID", {}).get("valueFrom", {}).get("fieldRef", {}).get("fieldPath") != "metadata.name":
            errors.append("farm-worker: FARM_WORKER_ID is not the pod's name")
        mounted = {v["name"] for v in pod.get("volumes", []) if v.get("secret", {}).get("secretName") == "farm-worker-identities"}
        paths = {m["mountPath"] for c in pod["containers"] for m in c.get("volumeMounts", []) if m["name"] in mounted}
        if env.get("FARM_IDENTITY_DIR", {}).get("value") not in paths:
            errors.append("farm-worker: FARM_IDENTITY_DIR is not where the Secret farm-worker-identities is mounted")

    # Coordinator: one replica, its ledger on a claim.
    coordinator = by_kind.get("StatefulSet", {}).get("farm-coordinator")
    if coordinator is None:
        errors.append("no StatefulSet farm-coordinator")
    else:
        if coordinator["spec"].get("replicas", 1) != 1:
            errors.append("farm-coordinator: more than one replica (the ledger is one SQLite file)")
        claims = {claim["metadata"]["name"] for claim in coordinator["spec"].get("volumeClaimTemplates", [])}
        mounts = {m["name"]: m["mountPath"] for c in coordinator["spec"]["template"]["spec"]["containers"] for m in c.get("volumeMounts", [])}
        if not any(name in claims for name in mounts):
            errors.append("farm-coordinator: the ledger is not on a PersistentVolumeClaim")
    if "farm-coordinator" not in by_kind.get("Service", {}):
        errors.append("no Service farm-coordinator")
    for key in ("FARM_API_TOKEN", "FARM_AMQP_URL", "FARM_STORAGE__ACCESS_KEY", "FARM_STORAGE__SECRET_KEY"):
        if not any(key in secret_keys(name) for name in secrets):
            errors.append(f"no Secret holds {key}")

    # The registry's credentials: the workers' alone.
    registry_keys = ("FARM_DOCKER__REGISTRY_USER", "FARM_DOCKER__REGISTRY_PASSWORD")

    def reads(workload):
        """The Secrets a workload's containers read, whole or by key: {name: keys or None}."""
        read = {}
        pod = workload["spec"]["template"]["spec"]
        for container in pod.get("containers", []) + pod.get("initContainers", []):
            for source in container.get("envFrom", []):
                if "secretRef" in source:
                    read[source["secretRef"]["name"]] = None
            for variable in container.get("env", []):
                ref = variable.get("valueFrom", {}).get("secretKeyRef")
                if ref and read.get(ref["name"], set()) is not None:
                    read.setdefault(ref["name"], set()).add(ref["key"])
        return read

    holders = {name for name in secrets if "FARM_DOCKER__REGISTRY_PASSWORD" in secret_keys(name)}
    if not holders:
        errors.append("no Secret holds FARM_DOCKER__REGISTRY_PASSWORD")
    if worker is not None:
        worker_reads = reads(worker)
        for key in registry_keys:
            if not any(key in secret_keys(name) and (keys is None or key in keys) for name, keys in worker_reads.items()):
                errors.append(f"farm-worker: reads {key} from no Secret")
    for (kind, name), workload in workloads.items():
        if (kind, name) == ("StatefulSet", "farm-worker"):
            continue
        for secret, keys in reads(workload).items():
            if secret in holders and (keys is None or "FARM_DOCKER__REGISTRY_PASSWORD" in keys):
                errors.append(f"{kind}/{name}: reads Secret {secret}, which holds the registry's password")
    for name, auth in by_kind.get("TriggerAuthentication", {}).items():
        for ref in auth["spec"].get("secretTargetRef", []):
            if ref["name"] in holders and ref["key"] == "FARM_DOCKER__REGISTRY_PASSWORD":
                errors.append(f"TriggerAuthentication/{name}: reads the registry's password")

    # The S3 keys: one Secret each for the coordinator and the workers, not shared.
    storage_secrets = {}
    for part in ("farm-coordinator", "farm-worker"):
        workload = by_kind.get("StatefulSet", {}).get(part)
        if workload is None:
            continue
        storage_secrets[part] = {
            secret for secret, keys in reads(workload).items()
            if "FARM_STORAGE__SECRET_KEY" in secret_keys(secret) and (keys is None or "FARM_STORAGE__SECRET_KEY" in keys)
        }
        if len(storage_secrets[part]) != 1:
            errors.append(f"{part}: reads FARM_STORAGE__SECRET_KEY from {len(storage_secrets[part])} Secrets, not one")
    if len(storage_secrets) == 2 and storage_secrets["farm-coordinator"] & storage_secrets["farm-worker"]:
        errors.append("farm-coordinator and farm-worker read the same S3 key: each needs its own")

    for error in errors:
        print(f"error: {error}", file=sys.stderr)
    if errors:
        return 1
    print(f"ok: {len(docs)} resources ({', '.join(sorted(by_kind))}); KEDA resources match their schemas")
    return 0


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    sys.exit(main(sys.argv[1]))
