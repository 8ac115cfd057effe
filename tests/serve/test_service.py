"""The service on a real local Ray cluster (CPU, 127.0.0.1), called by real app processes.

One cluster for the module, three applications on it: the embedded checker (with the sentence
extractor), a tiny NLI model built from a config and loaded by path, and a checker with a bug.
App processes run `RefCheckMonitor` with `RemoteChecker` (tests/helpers/remote_app.py); their
labels must be those of the same checker in this process, and the service's batch records must
show claims of two apps in one checker call. A caller with a large call holds a replica for one
part of it at a time, and a call over the claim limit is refused with how to split it.
"""

from __future__ import annotations

import asyncio
import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from app_processes import RAG_ANSWERS, RemoteApp
from free_ports import PortTaken, start_on_a_port
from required import import_or_skip
from tiny_nli import save_model

ray = import_or_skip("ray", "the serve extra is not installed")
from ray import serve  # noqa: E402

from refcheck_callbacks import RefCheckMonitor  # noqa: E402
from refcheck_callbacks.check.embedded.checker import EmbeddedChecker  # noqa: E402
from refcheck_callbacks.check.nli.checker import NLIChecker  # noqa: E402
from refcheck_callbacks.check.remote import RemoteChecker  # noqa: E402
from refcheck_callbacks.contract.components import Checker  # noqa: E402
from refcheck_callbacks.errors import ServiceStartError  # noqa: E402
from refcheck_callbacks.remote.options import RemoteOptions  # noqa: E402
from refcheck_callbacks.remote.wire import CheckCall  # noqa: E402
from refcheck_callbacks.serve import launch  # noqa: E402
from refcheck_callbacks.serve.app import Scaling, ServiceArgs, build_application  # noqa: E402
from refcheck_callbacks.serve.component import BatchSettings  # noqa: E402
from refcheck_callbacks.serve.gateway import token_digest  # noqa: E402
from refcheck_callbacks.serve.launch import (  # noqa: E402
    LOCAL_PROXY_READY_TIMEOUT_S,
    PROXY_READY_TIMEOUT_ENV,
)
from refcheck_callbacks.types import CheckItem, Claim, Label, Reference, Verdict  # noqa: E402

pytestmark = pytest.mark.slow

TOKEN = "service-test-token"
MAX_REQUEST_BYTES = 256 * 1024
MAX_CALL_INPUTS = 1000
CALLER_SHARE = 100
"""The poisoned service's claim limit per call, and a caller's claims per checker call."""
HELPERS = Path(__file__).resolve().parents[1] / "helpers"


def start_http(port: int) -> None:
    """Serve's HTTP proxy on 127.0.0.1:`port`; `PortTaken` when another process holds it (the
    proxy binds in an actor of its own: it cannot take port 0 and say which it got)."""
    try:
        launch.start_http({"host": "127.0.0.1", "port": port})
    except ServiceStartError as exc:
        if launch.PORT_TAKEN not in str(exc):
            raise
        serve.shutdown()
        raise PortTaken(str(exc)) from None


@pytest.fixture(scope="module")
def cluster() -> Iterator[str]:
    """A local Ray cluster of our own with Serve on 127.0.0.1; its base URL."""
    os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")  # nothing leaves the machine
    # As `refcheck serve` does for its own cluster: a busy host starts the proxy slowly.
    os.environ.setdefault(PROXY_READY_TIMEOUT_ENV, str(LOCAL_PROXY_READY_TIMEOUT_S))
    temp = tempfile.mkdtemp(prefix="rc", dir="/tmp")  # short: Ray's socket paths must fit
    ray.init(
        address="local",
        num_cpus=4,
        include_dashboard=False,
        log_to_driver=False,
        namespace="serve",
        _temp_dir=temp,
        # The replicas import the test helpers' buggy checker by module path.
        runtime_env={"env_vars": {"PYTHONPATH": str(HELPERS)}},
    )
    _, port = start_on_a_port(start_http)
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        serve.shutdown()
        ray.shutdown()
        shutil.rmtree(temp, ignore_errors=True)


def _deploy(
    base: str,
    name: str,
    checker: str,
    extractor: str | None = None,
    max_call_inputs: int = 4096,
    caller_share: int = 256,
) -> str:
    args = ServiceArgs(
        checker=checker,
        extractor=extractor,
        max_request_bytes=MAX_REQUEST_BYTES,
        max_call_inputs=max_call_inputs,
        token_sha256=token_digest(TOKEN),
    )
    # A long batch wait: calls from two apps that arrive together share one checker call.
    batching = BatchSettings(
        max_batch_size=2, batch_wait_timeout_s=0.5, max_caller_inputs=caller_share
    )
    application = build_application(
        args, Scaling(num_cpus=0, batch=batching), Scaling(num_cpus=0, batch=batching)
    )
    serve.run(application, name=name, route_prefix=f"/{name}")
    return f"{base}/{name}"


@pytest.fixture(scope="module")
def nli_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    order = {0: "entailment", 1: "neutral", 2: "contradiction"}
    return save_model(tmp_path_factory.mktemp("served-nli") / "bert", "bert", order)


@pytest.fixture(scope="module")
def services(cluster: str, nli_dir: Path) -> dict[str, str]:
    return {
        "embedded": _deploy(cluster, "embedded", "embedded", extractor="sentence"),
        "nli": _deploy(cluster, "nli", f"nli:{nli_dir}"),
        "poisoned": _deploy(
            cluster,
            "poisoned",
            "py:poisoned_checker:PoisonedChecker",
            max_call_inputs=MAX_CALL_INPUTS,
            caller_share=CALLER_SHARE,
        ),
    }


def _in_process_labels(checker: Checker) -> list[list[str | None]]:
    with RefCheckMonitor(checker=checker, exporters=[]) as monitor:
        results = [monitor.check(**answer) for answer in RAG_ANSWERS]
    return [[None if v.label is None else v.label.value for v in r.verdicts] for r in results]


def _stats(url: str) -> dict[str, Any]:
    reply = httpx.get(f"{url}/v1/stats", headers={"authorization": f"Bearer {TOKEN}"})
    reply.raise_for_status()
    stats: dict[str, Any] = reply.json()
    return stats


def _shared_batch(url: str, clients: set[str]) -> bool:
    return any(clients <= set(b["clients"]) for b in _stats(url)["checker"]["recent"])


@pytest.mark.parametrize("kind", ["embedded", "nli"])
def test_two_apps_get_in_process_labels_and_share_a_checker_batch(
    kind: str, services: dict[str, str], embedded_checker: EmbeddedChecker, nli_dir: Path
) -> None:
    url = services[kind]
    checker: Checker = embedded_checker if kind == "embedded" else NLIChecker(nli_dir)
    expected = _in_process_labels(checker)
    apps = [RemoteApp(url, token=TOKEN) for _ in range(2)]
    try:
        for _ in range(3):  # the first round also opens the apps' connections
            for app in apps:
                app.send(RAG_ANSWERS)
            replies = [app.receive() for app in apps]
            for reply in replies:
                results = reply["results"]
                assert [r["outcome"] for r in results] == ["checked"] * len(RAG_ANSWERS)
                assert [r["labels"] for r in results] == expected
                assert all(r["placement"] == r["span_placement"] == "service" for r in results)
                assert all(r["parent_is_app_span"] for r in results)
            if _shared_batch(url, {app.client for app in apps}):
                break
        else:
            pytest.fail(f"no checker batch held both apps' claims: {_stats(url)['checker']}")
        assert [app.quit() for app in apps] == [0, 0]
    finally:
        for app in apps:
            app.kill()


def test_extraction_through_the_service_gives_the_same_results(
    services: dict[str, str], embedded_checker: EmbeddedChecker
) -> None:
    app = RemoteApp(services["embedded"], "--remote-extractor", token=TOKEN)
    try:
        results = app.check(RAG_ANSWERS)["results"]
        assert [r["labels"] for r in results] == _in_process_labels(embedded_checker)
        assert app.quit() == 0
    finally:
        app.kill()
    extractor = _stats(services["embedded"])["extractor"]
    assert extractor["name"] == "sentence" and extractor["inputs"] >= len(RAG_ANSWERS)


def test_a_checker_that_raises_fails_only_the_request_that_made_it(
    services: dict[str, str],
) -> None:
    poisoned = {"answer": "This sentence is POISON for the checker.", "references": ["poison"]}
    app = RemoteApp(services["poisoned"], token=TOKEN)
    try:
        results = app.check([RAG_ANSWERS[0], poisoned, RAG_ANSWERS[1]])["results"]
        assert app.quit() == 0
    finally:
        app.kill()
    assert [r["outcome"] for r in results] == ["checked", "error", "checked"], results
    assert "choked on a poisoned claim" in results[1]["message"]
    recent = _stats(services["poisoned"])["checker"]["recent"]
    assert sum(b["failed_requests"] for b in recent) == 1


def _valid_body() -> bytes:
    item = CheckItem(
        claim=Claim(text="Paris is in France."),
        references=[Reference(text="Paris is the capital of France.")],
        request_id="r",
        claim_index=0,
    )
    return CheckCall.of([item]).model_dump_json().encode()


def test_bad_calls_get_a_4xx_that_says_why_and_the_service_keeps_serving(
    services: dict[str, str],
) -> None:
    url = services["embedded"]
    auth = {"authorization": f"Bearer {TOKEN}"}
    oversized = b'{"requests": [], "claims": [], "client": "' + b"x" * MAX_REQUEST_BYTES + b'"}'
    nan_score = _valid_body().replace(b'"score":null', b'"score":NaN')
    huge_index = _valid_body().replace(b'"claim_index":0', b'"claim_index":4294967296')

    def chunks() -> Iterator[bytes]:  # no Content-Length: the cap is enforced while reading
        for _ in range(8):
            yield b" " * (MAX_REQUEST_BYTES // 4)

    with httpx.Client(base_url=url, timeout=30) as client:
        cases = [
            (client.post("/v1/check", content=_valid_body()), 401, "needs an Authorization"),
            (
                client.post(
                    "/v1/check", content=_valid_body(), headers={"authorization": "Bearer no"}
                ),
                401,
                "token is wrong",
            ),
            (client.post("/v1/check", content=b'{"claims": [', headers=auth), 400, "not JSON"),
            (
                client.post("/v1/check", content=b'{"claims": [{"claim": {}}]}', headers=auth),
                422,
                "claims.0.claim.text: Field required",
            ),
            (client.post("/v1/check", content=oversized, headers=auth), 413, "cap"),
            (
                client.post("/v1/check", content=nan_score, headers=auth),
                422,
                "requests.0.references.0.score is nan; numbers must be finite",
            ),
            (
                client.post("/v1/check", content=huge_index, headers=auth),
                422,
                "claims.0.claim_index: Input should be less than or equal to 2147483647",
            ),
            (client.post("/v1/check", content=chunks(), headers=auth), 413, "cap"),
            (client.get("/v1/check", headers=auth), 405, "takes POST"),
            (client.post("/v2/check", content=_valid_body(), headers=auth), 404, "/v1/check"),
        ]
        for response, status, words in cases:
            assert response.status_code == status, response.text
            assert response.json()["error"] and words in response.json()["message"]
        assert cases[0][0].headers["www-authenticate"] == "Bearer"
        served = client.post("/v1/check", content=_valid_body(), headers=auth)
        assert served.status_code == 200 and served.json()["verdicts"][0]["label"] is not None
        assert client.get("/healthz").json() == {"status": "ok"}
        ready = client.get("/readyz").json()
        assert ready == {"status": "ready", "checker": "embedded", "extractor": "sentence"}


def _claims(caller: str, count: int) -> list[CheckItem]:
    """`count` claims in requests of 10; every other one is in the reference."""
    references = [Reference(text="paris is the capital of france")]
    return [
        CheckItem(claim=Claim(text="paris is in italy" if i % 2 else "paris is the capital"),
                  references=references, request_id=f"{caller}-{i // 10}", claim_index=i % 10)
        for i in range(count)
    ]  # fmt: skip


def _labels(verdicts: list[Verdict]) -> list[Label | None]:
    return [v.label for v in verdicts]


def test_a_caller_with_a_large_call_holds_the_replica_for_one_part_at_a_time(
    services: dict[str, str],
) -> None:
    url = services["poisoned"]
    big, small = (
        RemoteChecker(url, RemoteOptions(token=TOKEN)),
        RemoteChecker(url, RemoteOptions(token=TOKEN)),
    )
    finished: list[RemoteChecker] = []

    async def call(checker: RemoteChecker, items: list[CheckItem], after: float) -> list[Verdict]:
        await asyncio.sleep(after)
        verdicts = await checker.check(items)
        finished.append(checker)
        return verdicts

    async def both() -> list[list[Verdict]]:
        return await asyncio.gather(
            call(big, _claims("big", MAX_CALL_INPUTS), 0.0), call(small, _claims("small", 1), 0.5)
        )

    big_verdicts, small_verdicts = asyncio.run(both())
    assert finished == [small, big]  # the small call did not wait for the whole large one
    assert _labels(small_verdicts) == [Label.ENTAILMENT]
    assert _labels(big_verdicts) == [Label.ENTAILMENT, Label.NEUTRAL] * (MAX_CALL_INPUTS // 2)
    recent = _stats(url)["checker"]["recent"]
    with_big = [b for b in recent if big.client.client_id in b["clients"]]
    assert sum(b["inputs"] for b in with_big) >= MAX_CALL_INPUTS
    assert max(b["inputs"] for b in with_big) <= CALLER_SHARE + 1, with_big
    assert any(small.client.client_id in b["clients"] for b in with_big)


def test_a_call_over_the_claim_limit_gets_a_413_and_a_client_with_a_higher_limit_splits(
    services: dict[str, str],
) -> None:
    url = services["poisoned"]
    over = CheckCall.of(_claims("over", MAX_CALL_INPUTS + 1)).model_dump_json()
    refused = httpx.post(
        f"{url}/v1/check", content=over, headers={"authorization": f"Bearer {TOKEN}"}, timeout=60
    )
    assert refused.status_code == 413 and refused.json()["error"] == "too_large"
    assert (
        "the call holds 1,001 claims; this service takes at most 1,000 claims per call: split "
        "it into calls of at most 1,000" in refused.json()["message"]
    )
    checker = RemoteChecker(url, RemoteOptions(token=TOKEN, max_call_inputs=4096))
    verdicts = asyncio.run(checker.check(_claims("over", MAX_CALL_INPUTS + 1)))
    assert None not in _labels(verdicts) and len(verdicts) == MAX_CALL_INPUTS + 1
    assert checker.stats()["failures"] == {} and checker.stats()["calls"] == 3
