"""The REST API as the `trellis` CLI sees it: one HTTP client, errors as one line, the
answer kept exactly as the API sent it, and a run's live events over SSE."""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote

import httpx

API = "/api/v1"
# The stream ends after one of these (temporal_workflows/read_model.py's TERMINAL_EVENTS).
TERMINAL_EVENTS = frozenset({"run_completed", "run_failed", "run_cancelled"})
TERMINAL_STATUSES = frozenset({"completed", "failed", "cancelled"})
# How long `events` keeps trying to resume a run's stream while no API answers (a restart
# of `trellis dev`, a deploy, a replica going away), and its waits between tries.
RESUME_PATIENCE_SECONDS = 120.0
RESUME_DELAYS = (0.2, 0.5, 1.0, 2.0)
# Answers that say the API is there but not serving now: tried again like a refused connection.
_UNAVAILABLE = frozenset({502, 503, 504})


class ApiError(Exception):
    """The API answered with an error, or could not be reached; the message is one line."""

    def __init__(self, message: str, body: str = "") -> None:
        super().__init__(message)
        self.body = body


@dataclass
class Answer:
    """A successful answer: its parsed JSON, and its text exactly as the API sent it."""

    data: Any
    text: str
    # The resource's ETag when the API sent one: sent back in If-Match by a read-change-write.
    etag: str | None = None


@dataclass
class SseEvent:
    id: str | None
    event: str
    data: str

    @property
    def json(self) -> dict[str, Any]:
        parsed = json.loads(self.data)
        return parsed if isinstance(parsed, dict) else {"data": parsed}


def segment(value: Any) -> str:
    """An id as one segment of a path: `x?y`, `x#y` or `..` given as an id stays that id,
    never another path or a query (the API answers that it is not a valid id). No id has a
    `/`; the API would route an escaped one (`%2F`) as a separator all the same, to another
    endpoint (`workflows show ID/runs` read a list of runs as a workflow), so it is refused."""
    if "/" in str(value):
        raise ApiError(f"{str(value)[:140]!r} is not an id: ids have no '/'")
    quoted = quote(str(value), safe="")
    # `.` and `..` are not escaped by `quote`, and the URL would drop them as dot segments.
    return quoted.replace(".", "%2E") if quoted.strip(".") == "" else quoted


def if_match(read: Answer) -> dict[str, str]:
    """`If-Match` with the ETag of `read`: a write based on it is refused (412) once the
    resource changed since; none when the API sent no tag (an older API)."""
    return {"If-Match": read.etag} if read.etag else {}


def path_of(run: dict[str, Any]) -> str:
    """`/workflows/{workflow}/runs/{run}` of a run record."""
    return f"/workflows/{segment(run['workflowDefinitionId'])}/runs/{segment(run['id'])}"


class TrellisApi:
    """A client of one Trellis API (`TRELLIS_URL`), with a bearer token when given."""

    def __init__(self, url: str, token: str | None = None, timeout: float = 30.0) -> None:
        self.url = url.rstrip("/")
        headers = {"Authorization": f"Bearer {token}"} if token else {}
        self._http = httpx.Client(base_url=self.url, headers=headers, timeout=timeout)
        # The last answer read as a success: what a command reading it finds not in the
        # API's shape is said of it (`read_as_answered`).
        self._last: httpx.Response | None = None

    def close(self) -> None:
        self._http.close()

    @contextmanager
    def read_as_answered(self) -> Iterator[None]:
        """A command reading an answer that is not in the API's shape (`{}` where a list of
        workflows is due: something else at the URL, or not this API) fails as an answer
        not the API's does, in one line: it was a KeyError or TypeError traceback."""
        try:
            yield
        except (KeyError, TypeError, AttributeError, IndexError) as exc:
            if self._last is None:
                raise  # nothing read yet: the CLI's own mistake, not the answer's
            what = f"no {exc.args[0]!r}" if isinstance(exc, KeyError) and exc.args else str(exc)
            raise ApiError(
                f"{self._last.request.url} answered {self._last.status_code} with JSON not in "
                f"the shape the Trellis API answers ({what}): is it the Trellis API? set "
                "TRELLIS_URL or --url"
            ) from None

    def request(
        self,
        method: str,
        path: str,
        *,
        json: Any = None,
        params: dict[str, Any] | None = None,
        headers: dict[str, str] | None = None,
    ) -> Answer:
        """Send one request to `/api/v1{path}`; ApiError unless it succeeded."""
        try:
            response = self._http.request(
                method, f"{API}{path}", json=json, params=params, headers=headers
            )
        except httpx.HTTPError as exc:
            raise ApiError(
                f"cannot reach the Trellis API at {self.url} ({type(exc).__name__}); "
                "set TRELLIS_URL or --url"
            ) from None
        if response.is_error:
            raise ApiError(_error_line(response), response.text)
        return self._answer(response)

    def get(self, path: str, **params: Any) -> Answer:
        return self.request("GET", path, params={k: v for k, v in params.items() if v is not None})

    def post(self, path: str, body: Any = None, key: str | None = None) -> Answer:
        """POST `body`; with `key`, as its `Idempotency-Key`."""
        headers = {"Idempotency-Key": key} if key is not None else None
        return self.request("POST", path, json=body, headers=headers)

    def run_path(self, run_id: str) -> str:
        """`/workflows/{workflow}/runs/{run}` for a bare run id (the API says whose it is)."""
        # Counts, not node runs: only the run's workflow is wanted here.
        return path_of(self.get(f"/runs/{segment(run_id)}", nodeRuns="summary").data)

    def console_config(self, path: str) -> dict[str, Any] | None:
        """The console's facts of this platform (outside /api/v1), or None when they cannot
        be read: what a command adds from them is a convenience, never a failure."""
        try:
            response = self._http.get(path)
            data = response.json() if response.status_code == 200 else None
        except (httpx.HTTPError, ValueError):
            return None
        return data if isinstance(data, dict) else None

    def events(
        self, run_path: str, after: str | None = None, patience: float = RESUME_PATIENCE_SECONDS
    ) -> Iterator[SseEvent]:
        """The run's events as they happen, until the run has ended.

        A stream that drops, or that the API ends because it is shutting down (a restart, a
        deploy: it closes streams cleanly so clients resume elsewhere), is resumed after the
        last event seen (`Last-Event-ID`) once an API answers again, waiting up to `patience`
        seconds while none answers. A stream that ends cleanly is over only when the run is."""
        last = after
        tries = 0
        quiet_since: float | None = None
        while True:
            try:
                with self._http.stream(
                    "GET", f"{API}{run_path}/events", headers=_stream_headers(last), timeout=None
                ) as response:
                    if response.status_code not in _UNAVAILABLE:
                        if response.is_error:
                            response.read()
                            raise ApiError(_error_line(response), response.text)
                        # An API answers: patience counts from the next time none does. A
                        # run waiting at a gate sends no event for days, and each restart
                        # of the API ends its stream; that is not an API gone for good.
                        tries, quiet_since = 0, None
                        for event in _parse_sse(response.iter_lines()):
                            last = event.id or last
                            tries, quiet_since = 0, None
                            yield event
                            if event.event in TERMINAL_EVENTS:
                                return
                # Ended without the run's end: the run had ended already (a run the reconciler
                # closed has no terminal event), or the API is going away; the run says which.
                if response.status_code not in _UNAVAILABLE and self._run_ended(run_path):
                    return
            except httpx.TransportError:
                pass
            now = time.monotonic()
            quiet_since = quiet_since if quiet_since is not None else now
            if now - quiet_since >= patience:
                raise ApiError(
                    f"lost the event stream of {run_path} and could not resume it for "
                    f"{patience:.0f} s (API at {self.url})"
                )
            time.sleep(RESUME_DELAYS[min(tries, len(RESUME_DELAYS) - 1)])
            tries += 1

    def get_when_up(
        self,
        path: str,
        patience: float = RESUME_PATIENCE_SECONDS,
        waiting: Callable[[str], None] | None = None,
    ) -> Answer:
        """`get`, tried again while no API answers (refused, 502/503/504) for up to
        `patience` seconds, as `events` resumes a stream: a watch started during a restart
        or a deploy waits for the API instead of failing. `waiting` is told once."""
        deadline = time.monotonic() + patience
        tries = 0
        while True:
            try:
                response = self._http.get(f"{API}{path}")
                if response.status_code not in _UNAVAILABLE:
                    if response.is_error:
                        raise ApiError(_error_line(response), response.text)
                    return self._answer(response)
                why = f"HTTP {response.status_code}"
            except httpx.TransportError as exc:
                why = type(exc).__name__
            if time.monotonic() >= deadline:
                raise ApiError(
                    f"cannot reach the Trellis API at {self.url} ({why}) for {patience:.0f} s; "
                    "set TRELLIS_URL or --url"
                )
            if tries == 0 and waiting is not None:
                waiting(f"the Trellis API at {self.url} is not answering ({why}); waiting")
            time.sleep(RESUME_DELAYS[min(tries, len(RESUME_DELAYS) - 1)])
            tries += 1

    def _run_ended(self, run_path: str) -> bool:
        """Whether the run has ended; a deleted run has. httpx.TransportError while no API
        answers; False while the API answers 502/503/504."""
        response = self._http.get(f"{API}{run_path}")
        if response.status_code == 404:
            return True
        if response.status_code in _UNAVAILABLE:
            return False
        if response.is_error:
            raise ApiError(_error_line(response), response.text)
        return bool(self._answer(response).data.get("status") in TERMINAL_STATUSES)

    def _answer(self, response: httpx.Response) -> Answer:
        """A successful answer; one that is not JSON came from something else at the URL
        (the console, a proxy's page, the Temporal UI), not from an API to read as one.
        The API answers every request with JSON but a DELETE, answered 204 and nothing
        else: an empty 200 was read as no data (a traceback, or `--json` printing nothing
        with exit 0, so a script believed a run had started)."""
        etag = response.headers.get("etag")
        if not response.content:
            if response.status_code == 204 and response.request.method == "DELETE":
                return Answer(None, "", etag)
            kind = "no body"
        else:
            try:
                answer = Answer(response.json(), response.text, etag)
            except ValueError:
                kind = response.headers.get("content-type", "no content type")
            else:
                self._last = response
                return answer
        raise ApiError(
            f"{response.request.url} answered {response.status_code}{_to(response)} with "
            f"{kind}, not JSON: is it the Trellis API? set TRELLIS_URL or --url"
        )


def _to(response: httpx.Response) -> str:
    """Where a redirect points (` to https://…/login`). The API redirects nowhere: it is
    something else at the URL that does (a proxy's sign-in, http to https), and the CLI
    does not follow it (its token is not sent on to another address)."""
    location = response.headers.get("location")
    return f" to {location[:200]}" if response.is_redirect and location else ""


def _stream_headers(last_event_id: str | None) -> dict[str, str]:
    headers = {"Accept": "text/event-stream"}
    if last_event_id is not None:
        headers["Last-Event-ID"] = last_event_id
    return headers


def _parse_sse(lines: Iterator[str]) -> Iterator[SseEvent]:
    """Server-Sent Events from text lines (comments and keep-alives skipped)."""
    event_id: str | None = None
    kind = "message"
    data: list[str] = []
    for line in lines:
        if not line:
            if data:
                yield SseEvent(event_id, kind, "\n".join(data))
            event_id, kind, data = None, "message", []
            continue
        if line.startswith(":"):
            continue
        field, _, value = line.partition(":")
        value = value.removeprefix(" ")
        if field == "data":
            data.append(value)
        elif field == "event":
            kind = value
        elif field == "id":
            event_id = value


def _error_line(response: httpx.Response) -> str:
    """`404 resource_not_found: Run 'x' not found` from the API's one error shape."""
    try:
        body = response.json()
    except ValueError:
        return _not_ours(response, response.text[:200])
    error = body.get("error") if isinstance(body, dict) else None
    if not isinstance(error, dict):
        return _not_ours(response, json.dumps(body)[:300])
    line = f"{response.status_code} {error.get('code', '')}: {error.get('message', '')}"
    # The message often holds the details already, as `path: message` (a definition's
    # problems) or `path message` (a form's): each one is said once, the extra ones added.
    extra = [
        f"{d.get('path')}: {d.get('message')}"
        for d in error.get("details") or []
        if isinstance(d, dict) and not _says(line, d)
    ]
    return "; ".join([line, *extra[:5]])


def _says(line: str, detail: dict[str, Any]) -> bool:
    """Whether `line` holds the detail's text already, in either form."""
    path, message = detail.get("path"), detail.get("message")
    return f"{path}: {message}" in line or f"{path} {message}" in line


def _not_ours(response: httpx.Response, shown: str) -> str:
    """An error that is not in the API's one shape came from something else at the URL
    (the Temporal UI's `{"code": 5, …}`, a proxy's empty 404): say so, as for a non-JSON
    success."""
    said = f": {shown.strip()}" if shown.strip() else ""
    return (
        f"{response.request.url} answered {response.status_code}{said}, not as the Trellis "
        "API answers: is it the Trellis API? set TRELLIS_URL or --url"
    )
