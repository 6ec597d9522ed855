"""Saved uploads are swept only when no team's job refers to them (issue 31, seen on PostgreSQL)."""

from __future__ import annotations

import os
import time

import pytest

import funes
from funes.store.tenancy import acting_for


@pytest.fixture
def mem(backend_mem: funes.Funes) -> funes.Funes:
    return backend_mem


def test_one_teams_upload_never_sweeps_another_teams_saved_upload(mem: funes.Funes) -> None:
    # As the team server does: each request acts for its team, so row-level security is in force.
    with acting_for("team-a"):
        accepted = mem.upload("plan.md", b"# Plan\n\nThe okapi exhibit opens in May.\n", tenant="team-a")
    with acting_for("team-a"):
        job = mem.uploads.upload_job(accepted["job_id"], tenant="team-a")
    saved = mem.uploads.folder / str(job.payload["upload"])
    assert saved.is_dir()
    old = time.time() - 2 * 3600
    os.utime(saved, (old, old))  # older than the sweep's hour, like an upload waiting for a retry
    with acting_for("team-b"):
        mem.upload("notes.md", b"# Notes\n\nThe tapir enclosure is being repainted.\n", tenant="team-b")
    assert saved.is_dir(), "team-b's upload swept team-a's saved file"
