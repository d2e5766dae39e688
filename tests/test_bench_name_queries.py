"""bench.name_queries: which names become queries, how an answer is scored, and one real run."""

from __future__ import annotations

import json
from pathlib import Path

from bench.name_queries import main, make_file_queries, make_queries, score
from tests.conftest import commit_files

ROWS = [
    ("web/src/utils/validation.ts", "validateEmail", "function"),
    ("backend/accounts/validation.py", "validate_email", "function"),  # same words, another place
    ("backend/orders/models.py", "PlacedOrder", "class"),
    ("backend/tests/conftest.py", "placed_order", "function"),  # a test's: not an answer
    ("backend/tests/conftest.py", "only_in_tests", "function"),
    ("backend/orders/models.py", "Order._check", "method"),  # private
    ("backend/orders/models.py", "Order.get", "method"),  # too short
    ("docs/conf.py", "setup_docs", "function"),  # docs, not source
]


def test_names_come_from_source_files_once_per_words_with_every_place_defining_them() -> None:
    queries = make_queries(ROWS, sample=10)
    words = {q["words"]: q for q in queries if q["form"] == "words"}
    assert set(words) == {"validate email", "placed order"}
    assert words["validate email"]["gold"] == [
        ("backend/accounts/validation.py", "validate_email"),
        ("web/src/utils/validation.ts", "validateEmail"),
    ]
    assert not words["validate email"]["unique"] and words["placed order"]["unique"]
    assert words["placed order"]["gold"] == [("backend/orders/models.py", "PlacedOrder")]  # not the fixture
    kinds = {q["text"] for q in queries if q["form"] == "with kind"}
    assert kinds == {"validate email function", "placed order class"}
    assert make_queries(ROWS, sample=10) == queries  # a fixed sample


def test_an_answer_scores_its_first_defining_file_and_span_in_any_spelling() -> None:
    (q,) = [q for q in make_queries(ROWS, sample=10) if q["text"] == "placed order"]
    first = score(q, [["backend/orders/models.py", "PlacedOrder"]])
    assert first == {"file@1": 1.0, "file@5": 1.0, "span@1": 1.0, "span@5": 1.0, "mrr": 1.0}
    later = score(
        q,
        [
            ["backend/orders/repository.py", "OrderRepository.placed_between"],
            ["backend/orders/models.py", "Order"],
            ["backend/orders/models.py", "PlacedOrder"],
        ],
    )
    assert later == {"file@1": 0.0, "file@5": 1.0, "span@1": 0.0, "span@5": 1.0, "mrr": 0.5}
    assert score(q, [["backend/tests/conftest.py", "placed_order"]])["file@5"] == 0.0


def test_files_are_asked_by_name_and_by_path_with_every_file_so_named() -> None:
    files = ["shop/checkout/service.py", "shop/cart/service.py", "shop/adapters.py", "tests/test_cart.py", "README"]
    queries = make_file_queries(files, sample=10)
    texts = {q["text"]: q for q in queries}
    assert len(texts) == len(queries)  # each name asked once
    assert set(texts) == {"service.py", "checkout/service.py", "cart/service.py", "adapters.py", "shop/adapters.py"}
    assert [g for g, _ in texts["service.py"]["gold"]] == ["shop/cart/service.py", "shop/checkout/service.py"]
    assert not texts["service.py"]["unique"] and texts["checkout/service.py"]["unique"]
    got = score(texts["adapters.py"], [["shop/cart/service.py", "add"], ["shop/adapters.py", "HTTPAdapter"]])
    assert got == {"file@1": 0.0, "file@5": 1.0, "span@1": 0.0, "span@5": 1.0, "mrr": 0.5}


def test_a_run_on_a_real_workspace_writes_its_table(repo: Path, tmp_path: Path) -> None:
    commit_files(
        repo,
        {
            "billing/refunds.py": "def refund_captured_payment(payment_id):\n    return payment_id\n",
            "web/cart.ts": "export function addToCart(id: string): void {\n  console.log(id);\n}\n",
            "web/money.ts": "export function formatPrice(cents: number): string {\n  return `${cents}`;\n}\n",
        },
    )
    out = tmp_path / "nq.json"
    assert main(["--workspace", str(repo), "--work-dir", str(tmp_path / "work"), "--out", str(out)]) == 0
    got = json.loads(out.read_text())
    assert got["meta"]["names"] == 3
    allq = got["results"]["now"]["lexical"]["all"]
    assert allq["n"] == 6 and allq["file@1"] == 100.0 and allq["span@1"] == 100.0
