"""`refcheck review FILE --web`: the page on 127.0.0.1, over real HTTP: it labels the file as
the terminal does, and refuses calls without the page's token or for another host name.
The page's script in a real browser: test_review_web_browser.py."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from review_server import review_server

RECORD = {
    "audit": True,
    "request_id": "r1",
    "question": "How tall is the tower?",
    "response": "The tower is 330 metres tall. It is <b>red</b>.",
    "references": [{"id": "doc", "text": "The tower is 330 metres tall."}],
    "claims": ["The tower is 330 metres tall.", "It is <b>red</b>."],
    "labels": [None, None],
    "predicted": ["Entailment", "Neutral"],
    "probabilities": [None, None],
    "evidence": [{"reference_index": 0, "start": 0, "end": 29}, None],
}


@pytest.fixture
def page(tmp_path: Path) -> Iterator[tuple[str, str, Path]]:
    """(the page's address, its token, the audit file) of a running `refcheck review --web`."""
    path = tmp_path / "audit.jsonl"
    path.write_text(json.dumps(RECORD) + "\n", encoding="utf-8")
    with review_server(path) as (address, token):
        yield address, token, path


def test_the_page_labels_the_file(page: tuple[str, str, Path]) -> None:
    address, token, path = page
    with httpx.Client(base_url=address, headers={"X-Refcheck-Token": token}) as client:
        html = client.get("/", params={"token": token})
        assert html.status_code == 200 and "e Entailment" in html.text
        assert "330 metres" not in html.text  # the app's text comes as JSON, set as text
        state = client.get("/api/view").json()
        assert state["view"]["position"] == 0 and state["total"] == 2
        assert state["view"]["evidence"]["marked"] == "The tower is 330 metres tall."
        state = client.post("/api/act", json={"action": "label", "label": "Entailment"}).json()
        assert state["view"]["position"] == 1 and state["labelled"] == 1
        assert state["view"]["claim"]["before"] == "It is <b>red</b>."
        client.post("/api/act", json={"action": "label", "label": "Bogus"})
        state = client.post("/api/act", json={"action": "label", "label": "Neutral"}).json()
        assert state["view"] is None and state["labelled"] == 2
    assert json.loads(path.read_text(encoding="utf-8"))["labels"] == ["Entailment", "Neutral"]


def test_calls_without_the_token_or_for_another_host_are_refused(
    page: tuple[str, str, Path],
) -> None:
    address, token, path = page
    before = path.read_bytes()
    with httpx.Client(base_url=address) as client:
        assert client.get("/api/view").status_code == 403
        wrong = client.post("/api/act", json={"action": "label", "label": "Neutral"})
        assert wrong.status_code == 403
        rebound = client.get(
            "/api/view", headers={"X-Refcheck-Token": token, "Host": "attacker.example"}
        )
        assert rebound.status_code == 403
        assert client.get("/elsewhere").status_code == 404
    assert path.read_bytes() == before
