"""A `dns` monitor plugin for Tocsin, in Python.

It resolves `hostname` through the host's `net` interface and passes when the answer
contains every address in `expect` (or any address, when `expect` is empty).

Build:  ./build.sh   (componentize-py, from PyPI)
"""

import json

import wit_world
from wit_world.imports import net
from wit_world.imports.types import Capability, FieldError, PluginInfo, PluginKind
from wit_world.exports.monitor_plugin import CheckOutcome, CheckRequest
from componentize_py_types import Err

SCHEMA = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "title": "dns monitor",
    "type": "object",
    "additionalProperties": False,
    "required": ["hostname"],
    "properties": {
        "hostname": {"type": "string", "minLength": 1, "maxLength": 253,
                     "description": "Name to resolve."},
        "expect": {"type": "array", "items": {"type": "string"}, "default": [],
                   "description": "Addresses that must be in the answer (IPv4 or IPv6)."},
    },
}


def parse(text: str):
    """The configuration with defaults, or a list of field errors."""
    try:
        config = json.loads(text)
    except ValueError as e:
        return None, [FieldError("config", f"is not valid JSON: {e}")]
    if not isinstance(config, dict):
        return None, [FieldError("config", "must be a JSON object")]
    problems = []
    for key in config:
        if key not in ("hostname", "expect"):
            problems.append(FieldError(key, "is not a field of a dns monitor"))
    hostname = config.get("hostname")
    if not isinstance(hostname, str) or not hostname.strip() or len(hostname) > 253:
        problems.append(FieldError("hostname", "is required: a host name of 1 to 253 characters"))
    expect = config.get("expect", [])
    if not isinstance(expect, list) or not all(isinstance(a, str) and a for a in expect):
        problems.append(FieldError("expect", "must be a list of IP addresses"))
    if problems:
        return None, problems
    return {"hostname": hostname.strip(), "expect": expect}, []


class MonitorPlugin(wit_world.exports.MonitorPlugin):
    def describe(self) -> PluginInfo:
        return PluginInfo(
            name="dns-lookup",
            kind=PluginKind.MONITOR,
            version="0.1.0",
            description="Resolves a name and checks the answer holds the expected addresses.",
            config_schema=json.dumps(SCHEMA),
            capabilities=[Capability.NET],
            # Contract 0.3.0: what a channel asks of the server; a monitor asks nothing.
            abilities=[],
            https_only=[],
        )

    def validate_config(self, config: str) -> str:
        parsed, problems = parse(config)
        if problems:
            raise Err(problems)
        return json.dumps(parsed)

    def check(self, req: CheckRequest) -> CheckOutcome:
        config, problems = parse(req.config)
        if problems:
            return CheckOutcome(False, f"Invalid configuration: {problems[0].field} {problems[0].message}",
                                None, None, "{}")
        try:
            answer = net.resolve(config["hostname"], req.timeout_ms)
        except Err as e:
            return CheckOutcome(False, f"Cannot resolve {config['hostname']}: {describe(e.value)}",
                                None, None, "{}")
        details = json.dumps({"addresses": answer})
        missing = [a for a in config["expect"] if a not in answer]
        if missing:
            return CheckOutcome(False, f"{config['hostname']} resolves to {', '.join(answer)}, "
                                f"not {', '.join(missing)}", None, None, details)
        return CheckOutcome(True, None, None, None, details)


def describe(error) -> str:
    """A net error variant as a sentence."""
    value = getattr(error, "value", None)
    return str(value) if value is not None else type(error).__name__
