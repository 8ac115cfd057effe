"""`RemoteExtractor`: the extractor protocol over HTTP, against a `refcheck serve` service.

One request per engine batch carries every answer (with its question; references, metadata and
trace context stay in the app). A failure becomes an `Extraction(error=...)` for each answer of
the batch, counted in `stats()`; the engine then ends those requests as errors.
"""

from __future__ import annotations

from collections.abc import Sequence

from refcheck_callbacks.contract.components import Extraction
from refcheck_callbacks.errors import RemoteCallError
from refcheck_callbacks.remote.http import RemoteComponent
from refcheck_callbacks.remote.wire import EXTRACT_PATH, ExtractCall, ExtractReply
from refcheck_callbacks.types import CheckRequest


class RemoteExtractor(RemoteComponent):
    """Extracts claims on a service (`refcheck serve --extractor SPEC`) instead of in the app.

    Args are those of `RemoteComponent` (`RemoteOptions.deadline`: keep it under
    `StageTimeouts.extract`, 60 s by default). `served_by` is the service's extractor name once
    it has answered.
    """

    async def extract(self, requests: Sequence[CheckRequest]) -> list[Extraction]:
        if not requests:
            return []
        call = ExtractCall.of(requests, self.client.client_id)
        extractions: list[Extraction] = []
        for part, reply in await self.client.send(EXTRACT_PATH, call, ExtractReply):
            if isinstance(reply, RemoteCallError):
                error = f"remote extraction failed ({reply.kind}): {reply}"
                failed = Extraction(error=error, error_type=RemoteCallError.__name__)
                extractions.extend(failed for _ in range(len(part)))
            else:
                self.served_by = reply.extractor
                extractions.extend(reply.extractions)
        return extractions
