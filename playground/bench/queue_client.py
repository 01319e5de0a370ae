"""A lean client of gradio's queue for the load benches: join an event, read the session's stream.

The benches' simulated users run on the same 2 cores as the server they measure, so whatever
a client spends is taken from the server. gradio_client spends a lot: it waits for each message
in a 50 ms polling loop (up to 50 ms added to every latency), copies each partial output to
apply a diff, and runs a heartbeat stream and a cancel poller per session. Twenty of its
sessions used as much CPU as the server itself while 20 users generated (1.1-2.1 s per round
against the server's 1.2-1.8 s). This client does what a browser does on the wire and nothing
else: POST `/gradio_api/queue/join`, then read `/gradio_api/queue/data` (server-sent events) until the
event's `process_completed`, over one keep-alive connection per user.

Only named endpoints without file inputs are supported (what the benches call). State inputs
are sent as None and state outputs left out of the result, as gradio_client does.
"""
from __future__ import annotations

import json
import secrets
import time
from typing import Any

import httpx

SKIPPED_OUTPUTS = {"state", "row", "column", "tabs", "tab", "tabitem", "box", "form", "accordion", "group",
                   "interpretation", "dataset"}  # not part of an endpoint's result (gradio_client's list)


class QueueError(RuntimeError):
    """The server answered the event with an error (its message), or not in time."""


class QueueClient:
    """One user: a session on a gradio server, calling named endpoints through the queue."""

    def __init__(self, url: str, timeout_s: float = 60.0) -> None:
        self.http = httpx.Client(base_url=url.rstrip("/"), timeout=httpx.Timeout(timeout_s, connect=10.0))
        self.session_hash = secrets.token_hex(6)
        config = self.http.get("/config")
        config.raise_for_status()
        cfg = config.json()
        self._types = {c["id"]: c.get("type") for c in cfg["components"]}
        self._endpoints = {f"/{d['api_name']}": d for d in cfg["dependencies"] if d.get("api_name")}

    def predict(self, *args: Any, api_name: str, timeout_s: float = 120.0) -> list[Any]:
        """Call an endpoint with its API inputs (state inputs left out, as with gradio_client);
        its outputs (state outputs left out). QueueError on an error or after `timeout_s`."""
        dep = self._endpoints.get(api_name)
        if dep is None:
            raise QueueError(f"no endpoint {api_name}")
        values = iter(args)
        data = [None if self._types.get(i) == "state" else next(values, None) for i in dep["inputs"]]
        joined = self.http.post("/gradio_api/queue/join", json={
            "data": data, "fn_index": dep["id"], "session_hash": self.session_hash, "event_data": None,
            "trigger_id": None})
        joined.raise_for_status()
        event_id = joined.json()["event_id"]
        deadline = time.monotonic() + timeout_s
        with self.http.stream("GET", "/gradio_api/queue/data", params={"session_hash": self.session_hash}) as resp:
            resp.raise_for_status()
            for line in resp.iter_lines():
                if time.monotonic() > deadline:
                    raise QueueError(f"{api_name}: no result in {timeout_s:.0f} s")
                if not line.startswith("data:"):
                    continue
                msg = json.loads(line[5:])
                if msg.get("event_id") != event_id or msg.get("msg") != "process_completed":
                    continue
                output = msg.get("output") or {}
                if not msg.get("success", True):
                    raise QueueError(str(output.get("error") or output)[:300])
                return [v for v, i in zip(output.get("data", []), dep["outputs"])
                        if self._types.get(i) not in SKIPPED_OUTPUTS]
        raise QueueError(f"{api_name}: the stream ended without a result")

    def close(self) -> None:
        self.http.close()
