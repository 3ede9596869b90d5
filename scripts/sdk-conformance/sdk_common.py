"""Shared harness of the Python conformance scripts: one line per operation, exit status.

Each operation is a function run by `Run.op(name, fn)`: it passes when `fn` returns without
raising, and prints `ok   <sdk> <name>`; otherwise it prints `FAIL <sdk> <name>: <why>` with the
HTTP status and body when the SDK raised an API error. `Run.finish()` exits 1 if any failed.
"""

import datetime
import json
import os
import sys
import traceback
import uuid


class Skip(Exception):
    """An operation that cannot run because one it depends on failed."""


class Run:
    def __init__(self, sdk):
        self.sdk = sdk
        self.failed = 0
        self.passed = 0
        self.url = os.environ["TESSERA_URL"].rstrip("/")
        self.key = os.environ["TESSERA_KEY"]
        # A private application whose rule on / reveals: what reads and writes tokens (under
        # --implicit-transform mask the admin's own permissions show masks, as in Basis Theory).
        self.token_key = os.environ.get("TESSERA_TOKEN_KEY", self.key)
        self.echo = os.environ.get("ECHO_URL", "")
        # One suffix per run so that searches and filters find only this run's tokens.
        self.run_id = uuid.uuid4().hex[:12]

    def op(self, name, fn, *args):
        try:
            value = fn(*args)
        except Skip as e:
            self.failed += 1
            print(f"FAIL {self.sdk} {name}: not run, {e}", flush=True)
            return None
        except Exception as e:  # noqa: BLE001 - every failure is reported the same way
            self.failed += 1
            print(f"FAIL {self.sdk} {name}: {describe(e)}", flush=True)
            if os.environ.get("SDK_CONFORMANCE_DEBUG"):
                traceback.print_exc()
            return None
        self.passed += 1
        print(f"ok   {self.sdk} {name}", flush=True)
        return value

    def finish(self):
        print(f"# {self.sdk}: {self.passed} ok, {self.failed} failed", flush=True)
        sys.exit(1 if self.failed else 0)


def describe(e):
    status = getattr(e, "status", None)
    body = getattr(e, "body", None)
    if status is not None:
        if isinstance(body, bytes):
            body = body.decode("utf-8", "replace")
        body = (body or "").replace("\n", " ")
        if len(body) > 400:
            body = body[:400] + "…"
        return f"{type(e).__name__} status {status}: {body}"
    text = str(e).replace("\n", " ")
    if len(text) > 400:
        text = text[:400] + "…"
    return f"{type(e).__name__}: {text}"


def need(value, what):
    if value is None:
        raise Skip(f"needs {what}")
    return value


def check(cond, msg):
    if not cond:
        raise AssertionError(msg)


def eq(actual, expected, what):
    if actual != expected:
        raise AssertionError(f"{what}: expected {expected!r}, got {actual!r}")


def expect_error(fn, exc_type, status):
    """Calls fn, which must raise exc_type with the given HTTP status."""
    try:
        fn()
    except exc_type as e:
        got = getattr(e, "status", None)
        if got != status:
            raise AssertionError(f"{exc_type.__name__} with status {got}, expected {status}")
        return e
    except Exception as e:  # noqa: BLE001
        raise AssertionError(f"expected {exc_type.__name__} ({status}), got {describe(e)}")
    raise AssertionError(f"expected {exc_type.__name__} ({status}), the call succeeded")


def future(days=30):
    t = datetime.datetime.now(datetime.timezone.utc) + datetime.timedelta(days=days)
    return t.replace(microsecond=0).isoformat().replace("+00:00", "Z")


def same_instant(a, b):
    """Compares two RFC 3339 timestamps (strings or datetimes) as instants."""

    def parse(v):
        if isinstance(v, datetime.datetime):
            return v
        return datetime.datetime.fromisoformat(str(v).replace("Z", "+00:00"))

    return parse(a) == parse(b)


def plain(value):
    """An SDK model (or anything holding them) as plain JSON-like data."""
    if hasattr(value, "to_dict"):
        return plain(value.to_dict())
    if isinstance(value, dict):
        return {k: plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [plain(v) for v in value]
    return value


def dumps(value):
    return json.dumps(plain(value), default=str, sort_keys=True)
