"""Review queue server time with 50,000 interruptions (issue 5).

Targets: <= 100 ms server time for any queue page and filter; <= 50 ms for the
labelling round trip; (the item pane and the figures are timed alongside).

    .venv/bin/python bench/review_queue.py [--smoke: 200 runs]
Seeds a scratch database `agentlab_bench_reviews` (runs with bulk_create, steps,
items and labels with COPY), then times the views through Django's test client
(server time: no network, no browser).
"""

from __future__ import annotations

import io
import json
import random
import statistics
import time

import _django

DB = _django.bench_db("agentlab_bench_reviews")
N_RUNS = _django.sized(10_000, 200)
# The deep pages start at this item; requests per case; items labelled.
DEEP = _django.sized(40_000, 100)
REPEAT = _django.sized(30, 2)
LABELLED = _django.sized(60, 8)
# Steps per run and which of them are interruptions: 5 per run -> 50,000 items.
STEPS = 12
INTERRUPTIONS = {3: ("repetition", "hint"), 5: ("observation", "redirect"), 7: ("drift", "redirect"),
                 9: ("stagnation", "stop"), 11: ("budget", "stop")}
LABELLED_SHARE = 0.2   # items with one label
SECOND_SHARE = 0.05    # items with a second reviewer too


def _copy(table: str, cols: str, buf: io.StringIO) -> None:
    from django.db import connection

    with connection.cursor() as cur, cur.connection.cursor().copy(f"COPY {table} ({cols}) FROM STDIN") as copy:
        copy.write(buf.getvalue())


def seed() -> None:
    """Runs, steps, review items and labels of the scratch database."""
    from django.contrib.auth.models import Permission, User

    perm = Permission.objects.get(codename="label_interruption")
    reviewers = []
    for name in ("bench", "bench2"):
        u = User.objects.create_user(name, password="bench")
        _django.bench_project(u)
        u.user_permissions.add(perm)
        reviewers.append(u)
    rng = random.Random(11)
    _seed_steps_and_items(_seed_runs(rng), rng)
    _seed_labels(reviewers, rng)


def _seed_runs(rng: random.Random) -> list[tuple]:
    from django.db import connection
    from django.utils import timezone

    from runs.core.models import Policy, Run, Task

    tasks = [Task.objects.create(slug=f"task-{i}", title=f"Task {i}", prompt=f"Question {i}?", gold_answer="x")
             for i in range(25)]
    policies = [Policy.objects.get_or_create(project=_django.bench_project(), name="default", version=1, defaults={"config": {}})[0],
                Policy.objects.get_or_create(project=_django.bench_project(), name="strict", version=2, defaults={"config": {}})[0]]
    t0 = timezone.now() - timezone.timedelta(days=200)
    runs = []
    project = _django.bench_project()
    for i in range(N_RUNS):
        task = rng.choice(tasks)
        runs.append(Run(task=task, project=project, prompt=task.prompt, status=rng.choice(["stopped", "finished", "finished"]),
                        model_name=rng.choice(["sim", "gpt-4o-mini", "gemma-3-270m"]), policy=rng.choice(policies),
                        seed=i, step_count=STEPS, intervention_count=len(INTERRUPTIONS)))
    Run.objects.bulk_create(runs, batch_size=2000)
    # created_at is auto_now_add: spread it over 200 days so "newest" means something.
    with connection.cursor() as cur:
        cur.execute("UPDATE runs_run SET created_at = %s + (id %% 200000) * interval '86 seconds'", [t0])
    return list(Run.objects.order_by("pk").values_list("pk", "task_id", "model_name", "policy__name",
                                                         "policy__version", "status", "created_at"))


# The threshold each detector's interruptions record (tracing.core.watchdog): its
# name and value, and the score of the evidence that met it.
THRESHOLDS = {"repetition": ("thresholds.repetition_similarity", 0.8, "similarity"),
              "observation": ("windows.invalid_run", 2, "invalid_run"),
              "drift": ("windows.drift_patience", 2, "stalled"),
              "stagnation": ("ladder.stop_streak", 6, "streak")}


def _evidence(detector: str, rng: random.Random, index: int, pname: str, pversion: int) -> dict:
    scores = {"similarity": round(rng.uniform(0.8, 1.0), 3), "invalid_run": rng.randint(2, 4),
              "stalled": rng.randint(2, 4), "streak": rng.randint(6, 9), "k": 6}
    if detector == "budget":
        return {"limit": "max_steps", "turns": 30, "max_steps": 30}
    name, value, score = THRESHOLDS[detector]
    return {"detector": detector, "scores": scores, "steps": [1, index], "policy": pname, "policy_version": pversion,
            "threshold": {"name": name, "value": value, "score": scores[score], "op": ">="}}


def _seed_steps_and_items(runs: list[tuple], rng: random.Random) -> None:
    from django.utils import timezone

    from runs.reviews.priors import threshold_snapshot

    steps, items = io.StringIO(), io.StringIO()
    for run_id, task_id, model, pname, pversion, status, created in runs:
        for index in range(STEPS):
            at = created + timezone.timedelta(seconds=index)
            if index in INTERRUPTIONS:
                detector, tier = INTERRUPTIONS[index]
                evidence = _evidence(detector, rng, index, pname, pversion)
                meta = {"detector": detector, "tier": tier, "evidence": evidence}
                key, snapshot, prior = threshold_snapshot(detector, evidence)
                steps.write(f"{run_id}\t{index}\tintervention\tThe watchdog says: change approach.\t\t\\N\t"
                            f"{json.dumps(meta)}\t0\t0\t0\t{at.isoformat()}\n")
                items.write("\t".join([
                    str(run_id), str(index), detector, tier, pname, str(pversion), key, json.dumps(snapshot),
                    str(task_id), model, status, at.isoformat(), "unlabelled", "0", str(prior), str(prior),
                    "\\N", "", "\\N", "",
                ]) + "\n")
            else:
                kind = ("thought", "action", "observation")[index % 3]
                args = json.dumps({"query": f"q {index}"}) if kind == "action" else "\\N"
                steps.write(f"{run_id}\t{index}\t{kind}\t{kind} {index} lorem ipsum dolor\t"
                            f"{'search' if kind != 'thought' else ''}\t{args}\t{{}}\t300\t20\t50\t{at.isoformat()}\n")
    _copy("tracing_step", "run_id, index, kind, text, tool, args, meta, prompt_tokens, completion_tokens, latency_ms, "
          "created_at", steps)
    _copy("runs_reviewitem", "run_id, step_index, detector, tier, policy_name, policy_version, threshold, thresholds, "
          "task_id, model_name, run_status, created_at, label, label_count, prior, uncertainty, fork_id, "
          "fork_outcome, fork_turns, fork_reason", items)


def _seed_labels(reviewers: list, rng: random.Random) -> None:
    """One reviewer on a fifth of the items, two on a twentieth; the items'
    denormalised state is then set from them in one statement."""
    from django.db import connection
    from django.utils import timezone

    from runs.reviews.models import ReviewItem

    ids = list(ReviewItem.objects.values_list("pk", flat=True))
    labels = io.StringIO()
    for pk in rng.sample(ids, int(len(ids) * LABELLED_SHARE)):
        first = rng.choice(["justified", "justified", "wrongly_killed", "unsure"])
        labels.write(f"{pk}\t{reviewers[0].pk}\t{first}\t\t{timezone.now().isoformat()}\tt\t\\N\n")
        if rng.random() < SECOND_SHARE / LABELLED_SHARE:
            second = first if rng.random() < 0.7 else rng.choice(["justified", "wrongly_killed"])
            labels.write(f"{pk}\t{reviewers[1].pk}\t{second}\t\t{timezone.now().isoformat()}\tt\t\\N\n")
    _copy("runs_reviewlabel", "item_id, reviewer_id, value, note, created_at, is_current, superseded_by_id", labels)
    with connection.cursor() as cur:
        cur.execute("""
            UPDATE runs_reviewitem i SET label_count = l.n,
                   label = CASE WHEN l.k > 1 THEN 'disputed' ELSE l.v END,
                   uncertainty = CASE WHEN l.k > 1 THEN 1.0 WHEN l.v = 'unsure' THEN 0.9 ELSE i.prior * 0.1 END
            FROM (SELECT item_id, count(*) n, count(DISTINCT value) k, min(value) v FROM runs_reviewlabel
                  WHERE is_current GROUP BY item_id) l
            WHERE l.item_id = i.id""")
        cur.execute("UPDATE runs_reviewitem SET fork_outcome = (ARRAY['succeeded','failed','looped','error'])"
                    "[1 + id % 4], fork_turns = 1 + id % 5 WHERE tier = 'stop' AND id % 7 = 0")
        cur.execute("ANALYZE")


def timed(client, method: str, url: str, n: int = REPEAT, data=None, headers=None, status=200) -> list[float]:
    times = []
    for _ in range(n):
        t0 = time.perf_counter()
        response = getattr(client, method)(url, data, headers=headers or {})
        times.append((time.perf_counter() - t0) * 1000)
        assert response.status_code == status, (url, response.status_code, response.content[:300])
    return times


def row(name: str, t: list[float], target: float) -> None:
    med, p95 = statistics.median(t), _django.percentile(t, 95)
    print(f"{name:46} {med:9.1f} {p95:8.1f} {max(t):8.1f}   {'ok' if p95 <= target else 'OVER'} (<= {target:.0f})")


def main() -> None:
    _django.ensure_database(DB)
    t0 = time.perf_counter()
    seed()
    from runs.reviews.models import ReviewItem, ReviewLabel
    from runs.reviews.views import MORE_ROWS_ID

    print(f"seeded {ReviewItem.objects.count():,} interruptions of {N_RUNS:,} runs and "
          f"{ReviewLabel.objects.count():,} labels in {time.perf_counter() - t0:.1f} s")
    from django.contrib.auth.models import User
    from django.test import Client

    client = Client()
    client.force_login(User.objects.get(username="bench"))
    deep = ReviewItem.objects.order_by("-created_at", "-id")[DEEP]
    deep_u = ReviewItem.objects.order_by("-uncertainty", "-id")[DEEP]
    # The "older" link swaps its own row, which htmx names in HX-Target.
    hx_rows = {"HX-Request": "true", "HX-Target": MORE_ROWS_ID}
    pages = {
        "queue, first page": ("/reviews/", None),
        "queue, most uncertain first": ("/reviews/?sort=uncertain", None),
        f"queue, page at item {DEEP:,} (newest)": (f"/reviews/?before={deep.created_at.isoformat()}_{deep.pk}", None),
        f"queue, page at item {DEEP:,} (uncertain)": (f"/reviews/?sort=uncertain&before={deep_u.uncertainty!r}_{deep_u.pk}",
                                                   None),
        "queue rows (htmx), next page": (f"/reviews/?before={deep.created_at.isoformat()}_{deep.pk}", hx_rows),
        "filter detector=drift": ("/reviews/?detector=drift", None),
        "filter tier=stop": ("/reviews/?tier=stop", None),
        "filter policy=strict:2": ("/reviews/?policy=strict:2", None),
        "filter task=task-3": ("/reviews/?task=task-3", None),
        "filter model=gemma-3-270m": ("/reviews/?model=gemma-3-270m", None),
        "filter label=unlabelled": ("/reviews/?label=unlabelled", None),
        "filter label=disputed": ("/reviews/?label=disputed", None),
        "filter label=wrongly_killed, uncertain": ("/reviews/?label=wrongly_killed&sort=uncertain", None),
        "filter detector+tier+task+model+label": (
            "/reviews/?detector=stagnation&tier=stop&task=task-7&model=sim&label=unlabelled", None),
        "filter matching nothing": ("/reviews/?model=nope", None),
        "false-kill figures (all)": ("/reviews/figures/", {"HX-Request": "true"}),
        "false-kill figures, detector=repetition": ("/reviews/figures/?detector=repetition", {"HX-Request": "true"}),
    }
    some = ReviewItem.objects.order_by("?").first()
    pages["item pane (htmx)"] = (f"/reviews/{some.run_id}/{some.step_index}/", {"HX-Request": "true"})
    print(f"{'case':46} {'median ms':>9} {'p95 ms':>8} {'max ms':>8}")
    for name, (url, headers) in pages.items():
        timed(client, "get", url, 3, headers=headers)  # warm
        row(name, timed(client, "get", url, headers=headers), 100)
    # The labelling round trip: a reviewer labels item after item by keyboard.
    targets = list(ReviewItem.objects.order_by("?").values_list("run_id", "step_index")[:LABELLED])
    times = []
    for i, (run_id, index) in enumerate(targets):
        value = ("justified", "wrongly_killed", "unsure")[i % 3]
        times += timed(client, "post", f"/reviews/{run_id}/{index}/label/", 1, {"value": value, "note": ""},
                       headers={"HX-Request": "true"})
    row("label round trip (htmx POST)", times[5:], 50)
    changed = []
    for i, (run_id, index) in enumerate(targets[:LABELLED // 2]):
        changed += timed(client, "post", f"/reviews/{run_id}/{index}/label/", 1, {"value": "unsure" if i % 2 else "justified"},
                         headers={"HX-Request": "true"})
    row("label change (supersedes the old one)", changed, 50)
    t = time.perf_counter()
    body = b"".join(client.get("/reviews/export.csv").streaming_content)
    lines = body.count(b"\n") - 1
    print(f"export.csv of {lines:,} labels: {(time.perf_counter() - t) * 1000:.0f} ms")


if __name__ == "__main__":
    main()
