"""Run search (issue 15 item 4): the run list's search box over 1,000,000 steps.

Target: <= 300 ms p95 for a common word and a rare one (English and Chinese).

Seeds a scratch database with COPY: 50,000 runs of 20 steps (1,000,000 steps),
text drawn from a Zipf-like vocabulary, a fifth of the steps in Chinese, each
step's search column built by tracing.core.stepsearch as the writers build it.
Then times the search as the run list runs it (the matching runs, newest
first, a page of 50, and the first matching step of each) and the whole page
through Django's test client, prints EXPLAIN ANALYZE of both plans, and
measures what the search column costs the write path (recorder and COPY per
step: no search at all, the column deferred to the indexer, written inline).

    .venv/bin/python bench/search.py            # seed, then measure
    .venv/bin/python bench/search.py --reuse    # measure again on the seeded database
    .venv/bin/python bench/search.py --reuse --no-writes   # the search only
    .venv/bin/python bench/search.py --smoke    # 300 runs, seconds
    .venv/bin/python bench/search.py --writes-only   # the write path's variants alone, a few minutes
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import random
import statistics
import sys
import time

import _django
from dashboard import _RUN_COLUMNS, _copy, _esc, _run_row

# BENCH_DB: another scratch database, so two checkouts can measure side by side.
DB = _django.bench_db("agentlab_bench_search")
N_RUNS = _django.sized(50_000, 300)
STEPS_PER_RUN = 20
REPEAT = _django.sized(20, 2)
# Page requests per query: p95 of 40 is the second-worst, not the worst.
PAGE_REPEAT = _django.sized(40, 2)

_EN = ["search", "report", "revenue", "annual", "company", "birthplace", "author", "novel", "station", "ticket",
       "price", "timetable", "result", "observation", "query", "page", "source", "figure", "adjusted", "reported",
       "city", "river", "museum", "train", "ferry", "harbour", "lantern", "salt", "ledger", "archive", "bridge",
       "entity", "premise", "answer"]
_ZH = ["北京", "上海", "作者", "出生", "小说", "公司", "年报", "收入", "车站", "票价", "河流", "博物馆", "港口", "灯笼"]
RARE_EN = "quixotically"
RARE_ZH = "麒麟阁"
# One step in ~100,000 gets the rare word.
RARE_EVERY = _django.sized(100_000, 1_000)


def _sentence(rng: random.Random, zh: bool) -> str:
    if zh:
        return "，".join(rng.choice(_ZH[: rng.randint(3, len(_ZH))]) + rng.choice(["的", "在", "是"]) +
                        rng.choice(_ZH) for _ in range(rng.randint(3, 12))) + "。"
    # Zipf-ish: early words are much more frequent than late ones.
    words = [_EN[min(int(rng.paretovariate(1.2)) - 1, len(_EN) - 1)] for _ in range(rng.randint(8, 60))]
    return " ".join(words).capitalize() + "."


def seed() -> int:
    from django.contrib.auth.models import User
    from django.db import connection

    from tracing.core.stepsearch import step_document

    project = _django.bench_project(User.objects.create_user("bench", password="bench"))
    rng = random.Random(5)
    runs = io.StringIO()
    for i in range(N_RUNS):
        runs.write(_run_row(i, None, rng, project.pk))
    _copy("runs_run", _RUN_COLUMNS, runs)
    with connection.cursor() as cur:
        cur.execute("SELECT setval('runs_run_id_seq', %s)", [N_RUNS + 1])
    buf = io.StringIO()
    n = 0
    kinds = ["thought", "action", "observation"]
    for i in range(N_RUNS):
        for j in range(STEPS_PER_RUN):
            kind = kinds[j % 3] if j < STEPS_PER_RUN - 1 else "final"
            text = _sentence(rng, zh=rng.random() < 0.2)
            n += 1
            if n % RARE_EVERY == 0:
                text += f" {RARE_EN} {RARE_ZH}"
            args = json.dumps({"query": _sentence(rng, False)[:40]}) if kind == "action" else None
            tool = "search" if kind == "action" else ""
            doc = step_document(text, tool, json.loads(args) if args else None)
            buf.write(f"{i + 1}\t{j}\t{kind}\t{_esc(text)}\t{tool}\t{_esc(args) if args else chr(92) + 'N'}\t{{}}\t0\t0\t0"
                      f"\t2026-11-01 00:00:00+00\t{doc}\n")
        if buf.tell() > 50_000_000:
            _copy("tracing_step", "run_id, index, kind, text, tool, args, meta, prompt_tokens, completion_tokens, "
                  "latency_ms, created_at, search", buf)
            buf = io.StringIO()
    _copy("tracing_step", "run_id, index, kind, text, tool, args, meta, prompt_tokens, completion_tokens, "
          "latency_ms, created_at, search", buf)
    with connection.cursor() as cur:
        cur.execute("VACUUM ANALYZE")
    return n


def _time(fn) -> tuple[float, float, object]:
    fn()
    times = []
    out = None
    for _ in range(REPEAT):
        t = time.perf_counter()
        out = fn()
        times.append((time.perf_counter() - t) * 1000)
    return _django.percentile(times, 50), _django.percentile(times, 95), out


def _paired_pages(client, q: str) -> tuple[list[float], list[float], list[float]]:
    """Wall ms of the run list with ?q=, of the same list without it, and the
    CPU ms of the first (Python: views, templates), request by request alternated."""
    client.get("/runs/", {"q": q})
    with_q, without_q, cpu = [], [], []
    for _ in range(PAGE_REPEAT):
        t, c = time.perf_counter(), time.process_time()
        response = client.get("/runs/", {"q": q})
        with_q.append((time.perf_counter() - t) * 1000)
        cpu.append((time.process_time() - c) * 1000)
        assert response.status_code == 200, response.status_code
        t = time.perf_counter()
        client.get("/runs/")
        without_q.append((time.perf_counter() - t) * 1000)
    return with_q, without_q, cpu


def bench_search() -> None:
    from django.contrib.auth.models import User
    from django.db import connection
    from django.test import Client

    from runs.core.models import Run
    from runs.search.selectors import first_hits, query_tokens, runs_with_text
    from tracing.core.stepsearch import tsquery_literal
    from tracing.store.step_queries import FIRST_HITS_SQL, step_match_params

    client = Client()
    client.force_login(User.objects.get(username="bench"))
    cases = {"common word (search)": "search", "common Chinese word (北京)": "北京", "rare word": RARE_EN,
             "rare Chinese word": RARE_ZH, "two words, both common": "revenue company",
             "no match": "zzzunknownword"}
    print(f"\nload average before: {os.getloadavg()[0]:.1f}; page: {PAGE_REPEAT} requests with the search, each "
          "paired with one of the same list without it (alternating, so both see the same load)")
    print(f"{'query':30} {'matching':>9} {'sql p50':>8} {'sql p95':>8} {'page p50':>9} {'page p95':>9} "
          f"{'no-q p95':>9} {'cpu p95':>8}   target p95 <= 300 ms")
    for name, q in cases.items():
        toks = query_tokens(q)

        def page(toks=toks):
            runs = list(runs_with_text(Run.objects.all(), toks).order_by("-created_at", "-id")
                        .only("id", "created_at")[:51])
            return first_hits([r.pk for r in runs], toks)

        p50, p95, hits = _time(page)
        with connection.cursor() as cur:
            cur.execute("SELECT count(*) FROM tracing_step WHERE search @@ %s::tsquery", [tsquery_literal(toks)])
            total = cur.fetchone()[0]
        with_q, without_q, cpu = _paired_pages(client, q)
        print(f"{name:30} {total:>9} {p50:>8.1f} {p95:>8.1f} {_django.percentile(with_q, 50):>9.1f} "
              f"{_django.percentile(with_q, 95):>9.1f} {_django.percentile(without_q, 95):>9.1f} "
              f"{_django.percentile(cpu, 95):>8.1f}")
    print(f"load average after: {os.getloadavg()[0]:.1f} (ms; cpu: this process's CPU time for the page with the "
          "search, which a loaded machine does not inflate)")
    for q in ("search", RARE_EN):
        toks = query_tokens(q)
        qs = runs_with_text(Run.objects.all(), toks).order_by("-created_at", "-id").only("id", "created_at")[:51]
        sql, params = qs.query.sql_with_params()
        with connection.cursor() as cur:
            cur.execute("EXPLAIN (ANALYZE, BUFFERS) " + sql, params)
            print(f"\nEXPLAIN ANALYZE, run page of {q!r}:\n" + "\n".join(r[0] for r in cur.fetchall()))
        ids = [r.pk for r in qs]
        with connection.cursor() as cur:
            cur.execute("EXPLAIN (ANALYZE, BUFFERS) " + FIRST_HITS_SQL, [ids, *step_match_params(toks)])
            print(f"\nEXPLAIN ANALYZE, first matching step of each run on the page ({q!r}):\n"
                  + "\n".join(r[0] for r in cur.fetchall()))


# The write path's variants (issue 31 item 4), paired round by round:
# "none" is a step table with no search at all (its GIN and partial indexes
# dropped for the variant, the column NULL), "deferred" today's default (NULL,
# built later by tracing.store.step_indexer), "inline" the document written
# with the step (STEP_SEARCH_INLINE, what every writer did before).
WRITE_VARIANTS = ("none", "deferred", "inline")
WRITE_ROUNDS = _django.sized(5, 1)
_SEARCH_INDEXES = ("step_search_gin", "step_unindexed_idx")


@contextlib.contextmanager
def _without_search_indexes():
    from django.db import connection

    with connection.cursor() as cur:
        cur.execute("SELECT indexdef FROM pg_indexes WHERE indexname = ANY(%s)", [list(_SEARCH_INDEXES)])
        defs = [row[0] for row in cur.fetchall()]
        cur.execute(f"DROP INDEX {', '.join(_SEARCH_INDEXES)}")
    try:
        yield
    finally:
        with connection.cursor() as cur:
            for sql in defs:
                cur.execute(sql)


def bench_writes() -> None:
    """Per-step cost of the recorder and of COPY under each WRITE_VARIANTS, the
    variants alternated round by round (each round in a rotated order) so all
    see the same load; then what the deferred steps cost the indexer later."""
    from django.db import connection
    from django.test import override_settings

    import tracing.store.ingest.writes as writes
    import tracing.store.recorder as recorder
    from runs.core.models import Run
    from tracing.core.steps import Step as StepRecord
    from tracing.store.step_indexer import index_pending_steps

    rng = random.Random(9)
    texts = [_sentence(rng, zh=rng.random() < 0.2) * 3 for _ in range(2000)]

    def steps(n: int) -> list[StepRecord]:
        return [StepRecord(index=i, kind=["thought", "action", "observation"][i % 3], text=texts[i % len(texts)],
                           tool="search" if i % 3 == 1 else None, args={"query": texts[i % 50][:40]} if i % 3 == 1 else None)
                for i in range(n)]

    writers = (("recorder, one step per commit", _django.sized(2000, 100), "record"),
               ("COPY (ingest / import)", _django.sized(50_000, 2_000), "copy"))
    us: dict[tuple[str, str], list[float]] = {}
    p95: dict[tuple[str, str], list[float]] = {}
    cpu: dict[tuple[str, str], list[float]] = {}
    indexer: list[float] = []
    for rnd in range(WRITE_ROUNDS):
        order = WRITE_VARIANTS[rnd % 3:] + WRITE_VARIANTS[:rnd % 3]
        for variant in order:
            with contextlib.ExitStack() as stack:
                if variant == "none":
                    stack.enter_context(_without_search_indexes())
                stack.enter_context(override_settings(STEP_SEARCH_INLINE=variant == "inline"))
                for name, n, write in writers:
                    run = Run.objects.create(prompt="bench writes", project=_django.bench_project())
                    batch = steps(n)
                    each = []
                    t, c = time.perf_counter(), time.process_time()
                    if write == "record":
                        for step in batch:
                            t1 = time.perf_counter()
                            recorder.record_step(run.pk, step)
                            each.append((time.perf_counter() - t1) * 1e6)
                    else:
                        writes.copy_steps([(run.pk, batch)])
                    us.setdefault((name, variant), []).append((time.perf_counter() - t) / n * 1e6)
                    cpu.setdefault((name, variant), []).append((time.process_time() - c) / n * 1e6)
                    if each:
                        p95.setdefault((name, variant), []).append(_django.percentile(each, 95))
                    if variant == "deferred":
                        t = time.perf_counter()
                        while index_pending_steps(batches=100):
                            pass
                        indexer.append((time.perf_counter() - t) / n * 1e6)
                    # Gone again, so a later search run (--reuse) measures the seeded runs only,
                    # and vacuumed so no variant inherits another's dead rows.
                    Run.objects.filter(pk=run.pk).delete()
                    with connection.cursor() as cur:
                        cur.execute("VACUUM tracing_step")
    print(f"\nwrite path, {WRITE_ROUNDS} rounds, variants alternated; µs per step, median of the rounds "
          f"(load average {os.getloadavg()[0]:.1f})")
    print(f"{'writer':32} {'no search':>10} {'deferred':>10} {'inline':>10} {'deferred÷none':>14} "
          f"{'inline÷none':>12}   target deferred÷none: recorder <= 1.2, COPY <= 1.3")
    for name, _, _ in writers:
        med = {v: statistics.median(us[(name, v)]) for v in WRITE_VARIANTS}
        print(f"{name:32} {med['none']:>10.0f} {med['deferred']:>10.0f} {med['inline']:>10.0f} "
              f"{med['deferred'] / med['none']:>14.2f} {med['inline'] / med['none']:>12.2f}")
        for label, figures in (("  p95 of one step", p95), ("  this process's CPU", cpu)):
            if (name, "none") in figures:
                fig = {v: statistics.median(figures[(name, v)]) for v in WRITE_VARIANTS}
                print(f"{label:32} {fig['none']:>10.0f} {fig['deferred']:>10.0f} {fig['inline']:>10.0f} "
                      f"{fig['deferred'] / fig['none']:>14.2f} {fig['inline'] / fig['none']:>12.2f}")
    print(f"indexer, later and off the writers' path: {statistics.median(indexer):.0f} µs per deferred step "
          "(median of the writers' batches)")


def main() -> None:
    if "--writes-only" in sys.argv:  # the write path alone, on an empty scratch database
        _django.ensure_database(DB)
        bench_writes()
        return
    if "--reuse" in sys.argv:  # the database of an earlier run, already seeded
        _django.setup(DB)
    else:
        _django.ensure_database(DB)
        t0 = time.perf_counter()
        n = seed()
        print(f"seeded {N_RUNS} runs, {n} steps in {time.perf_counter() - t0:.0f} s")
    with __import__("django.db", fromlist=["connection"]).connection.cursor() as cur:
        cur.execute("SELECT pg_size_pretty(pg_relation_size('step_search_gin')), "
                    "pg_size_pretty(pg_total_relation_size('tracing_step'))")
        gin, table = cur.fetchone()
    print(f"GIN index on steps' search column: {gin}; steps table with indexes: {table}")
    bench_search()
    if "--no-writes" not in sys.argv:
        bench_writes()


if __name__ == "__main__":
    main()
