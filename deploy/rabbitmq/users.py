#!/usr/bin/env python3
"""RabbitMQ definitions for the farm's users, each with least privilege.

    FARM_RABBITMQ_COORDINATOR_PASSWORD=... deploy/rabbitmq/users.py [--vhost /] \\
        [--admin-user NAME] [--worker-user NAME] > definitions.json
    rabbitmqctl import_definitions definitions.json     # or load_definitions in rabbitmq.conf

Each worker has a user of its own, which is who the coordinator believes its answers
are from: `farm-coordinator workers add NAME` makes one through the management API (the
rights are permissions.json's, beside this script); --worker-user makes one here.

The passwords come from the environment, never the command line (where `ps` shows
them); the file holds only their salted SHA-256 hashes, as RabbitMQ stores them.

- The coordinator declares the topology, publishes jobs and reads results and dead
  letters: every right on the `farm.*` queues and exchanges, and publishing through the
  default exchange (`amq.default`), which reaches farm.jobs.
- A worker consumes jobs and audits and publishes results, nothing else: it reads
  `farm.jobs`, `farm.audits` and `farm.builds` and writes to the `farm.results` exchange
  (and to `farm.live`, the frames of the matches the coordinator watches); to hear the
  coordinator (`farm.control`, a fanout exchange) it declares a server-named queue of
  its own (`amq.gen-*`) and binds it there. It can neither publish a job or an audit
  (it may not write to the default exchange), nor read results, nor declare or delete
  anything of the farm's; it checks that the topology exists instead of declaring it
  (farm-runtime's declare_or_check_topology). An audit it may not take (it played that
  match) it rejects, and RabbitMQ itself moves it to `farm.audits.wait`.
"""

import argparse
import base64
import hashlib
import json
import os
import secrets
import sys

# The rights of each user, as RabbitMQ's configure / write / read regular expressions:
# permissions.json beside this script, which `farm-coordinator workers add` reads too.
with open(os.path.join(os.path.dirname(os.path.abspath(__file__)), "permissions.json")) as rights:
    PERMISSIONS = json.load(rights)


def password_hash(password: str) -> str:
    """RabbitMQ's rabbit_password_hashing_sha256: base64(salt + sha256(salt + password))."""
    salt = secrets.token_bytes(4)
    return base64.b64encode(salt + hashlib.sha256(salt + password.encode()).digest()).decode()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--vhost", default="/", help="the virtual host the farm uses (default /)")
    parser.add_argument("--coordinator-user", default="farm-coordinator", help="default farm-coordinator")
    parser.add_argument("--worker-user", help="also one worker's user (tagged farm-worker), its password from "
                        "FARM_RABBITMQ_WORKER_PASSWORD; each worker needs a user of its own: farm-coordinator "
                        "workers add makes them one at a time")
    parser.add_argument("--admin-user", help="also an administrator (for operators and the management UI), "
                        "its password from FARM_RABBITMQ_ADMIN_PASSWORD: RabbitMQ makes no default user "
                        "when it loads definitions at boot")
    args = parser.parse_args()
    users, permissions = [], []
    if args.admin_user:
        password = os.environ.get("FARM_RABBITMQ_ADMIN_PASSWORD", "")
        if len(password) < 16:
            print("error: set FARM_RABBITMQ_ADMIN_PASSWORD to the administrator's password, at least 16 characters",
                  file=sys.stderr)
            return 2
        users.append({"name": args.admin_user, "password_hash": password_hash(password),
                      "hashing_algorithm": "rabbit_password_hashing_sha256", "tags": "administrator"})
        permissions.append({"user": args.admin_user, "vhost": args.vhost, "configure": ".*", "write": ".*", "read": ".*"})
    roles = [("coordinator", args.coordinator_user, "")]
    if args.worker_user:
        roles.append(("worker", args.worker_user, "farm-worker"))
    for role, name, tags in roles:
        variable = f"FARM_RABBITMQ_{role.upper()}_PASSWORD"
        password = os.environ.get(variable, "")
        if len(password) < 16:
            print(f"error: set {variable} to the {role}'s password, at least 16 characters", file=sys.stderr)
            return 2
        users.append({"name": name, "password_hash": password_hash(password),
                      "hashing_algorithm": "rabbit_password_hashing_sha256", "tags": tags})
        permissions.append({"user": name, "vhost": args.vhost, **PERMISSIONS[role]})
    json.dump({"users": users, "vhosts": [{"name": args.vhost}], "permissions": permissions}, sys.stdout, indent=2)
    print()
    return 0


if __name__ == "__main__":
    sys.exit(main())
