#!/usr/bin/env python3
"""A Tocsin webhook receiver using only Python's standard library.

It checks the signature and the timestamp of every delivery, answers at once, and
ignores deliveries it has already seen (retries keep their webhookId).

    TOCSIN_WEBHOOK_SECRET=whsec_... python3 receiver.py

During a secret rotation, give both secrets, new first: TOCSIN_WEBHOOK_SECRET=new,old.
"""

import hashlib
import hmac
import json
import os
import sys
import threading
import time
from collections import OrderedDict
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

TOLERANCE_SECONDS = 300
REMEMBERED_IDS = 10_000

SECRETS = [s.strip() for s in os.environ.get("TOCSIN_WEBHOOK_SECRET", "").split(",") if s.strip()]
if not SECRETS:
    sys.exit("set TOCSIN_WEBHOOK_SECRET to the workspace's webhook secret (whsec_...)")

# Webhook ids already handled, oldest first. A real service keeps these in its database.
seen = OrderedDict()
seen_lock = threading.Lock()


def verify(timestamp: str, body: bytes, signature: str) -> str | None:
    """Return why the delivery must be refused, or None when it is genuine."""
    try:
        sent = int(timestamp)
    except ValueError:
        return "missing or malformed X-Service-Timestamp"
    if abs(time.time() - sent) > TOLERANCE_SECONDS:
        return "stale timestamp"
    signed = timestamp.encode() + b"." + body
    for secret in SECRETS:
        expected = "sha256=" + hmac.new(secret.encode(), signed, hashlib.sha256).hexdigest()
        if hmac.compare_digest(expected, signature):
            return None
    return "signature does not match"


def first_time(webhook_id: str) -> bool:
    with seen_lock:
        if webhook_id in seen:
            return False
        seen[webhook_id] = True
        while len(seen) > REMEMBERED_IDS:
            seen.popitem(last=False)
        return True


def handle(event: dict) -> None:
    """Do the real work here (after answering): page someone, open a ticket, ..."""
    print(f"accepted {event['webhookId']} {event['event']}", flush=True)


class Receiver(BaseHTTPRequestHandler):
    def do_POST(self):
        body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
        problem = verify(
            self.headers.get("X-Service-Timestamp", ""),
            body,
            self.headers.get("X-Service-Signature", ""),
        )
        if problem:
            print(f"rejected {problem}", flush=True)
            status = 400 if problem == "stale timestamp" else 401
            return self.answer(status, {"error": problem})
        event = json.loads(body)
        if not first_time(event["webhookId"]):
            print(f"duplicate {event['webhookId']}", flush=True)
            return self.answer(200, {"status": "duplicate"})
        self.answer(200, {"status": "accepted"})
        handle(event)

    def answer(self, status: int, payload: dict) -> None:
        data = json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *args):
        pass


if __name__ == "__main__":
    host = os.environ.get("HOST", "127.0.0.1")
    server = ThreadingHTTPServer((host, int(os.environ.get("PORT", "8000"))), Receiver)
    print(f"listening on http://{host}:{server.server_address[1]}", flush=True)
    server.serve_forever()
