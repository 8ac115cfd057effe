"""`RemoteChecker`: the checker protocol over HTTP, against a `refcheck serve` service.

The app's monitor hands it a batch of claims and it sends them in one request (each request's
references once), so the service can merge them with other apps' claims into one model call.
A batch over the request size cap, or over `max_call_inputs` claims (4,096, the service's own
limit by default), is split at request boundaries, never into one request per claim; a single
request with more claims than a call takes is cut between its claims, each part carrying its
references. Whatever goes wrong (the service down, overloaded past the deadline, a rejected
call, a malformed reply, one over `max_reply_bytes`, one whose evidence points outside the
call) becomes a `Verdict(label=None, error=...)` for each claim it held, counted in `stats()`;
nothing is raised into the engine, let alone the app.
"""

from __future__ import annotations

from collections.abc import Sequence

from refcheck_callbacks.errors import RemoteCallError
from refcheck_callbacks.remote.http import RemoteComponent
from refcheck_callbacks.remote.wire import CHECK_PATH, CheckCall, CheckReply
from refcheck_callbacks.types import CheckItem, Placement, Verdict


class RemoteChecker(RemoteComponent):
    """Checks claims on a checker service (`refcheck serve`) instead of in the app.

    Args are those of `RemoteComponent`: url, options (`RemoteOptions`: token, default
    `REFCHECK_SERVE_TOKEN`; deadline, 55 s, keep it under `StageTimeouts.check`; concurrency,
    retry and the caps) and name. `served_by` is the service's checker name once it has
    answered. Set `needs_references = False` for a service
    whose checker judges without references (an LLM judge in correctness mode).
    """

    placement = Placement.SERVICE
    needs_references = True

    async def check(self, items: Sequence[CheckItem]) -> list[Verdict]:
        if not items:
            return []
        call = CheckCall.of(items, self.client.client_id)
        verdicts: list[Verdict] = []
        for part, reply in await self.client.send(CHECK_PATH, call, CheckReply):
            if isinstance(reply, RemoteCallError):
                error = f"remote check failed ({reply.kind}): {reply}"
                verdicts.extend(Verdict(label=None, error=error) for _ in range(len(part)))
            else:
                self.served_by = reply.checker
                verdicts.extend(reply.verdicts)
        return verdicts
