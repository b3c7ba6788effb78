"""The large-batch study's recommendation rule, on fabricated measured points (issue 30)."""
from nnconsole.engine.plan.batch_recommendation import recommend
from nnconsole.engine.rundir.batch_study import StudyPoint


def _p(workers, policy, error, warmup=0.0, state="complete"):
    return StudyPoint(workers=workers, policy=policy, warmup_epochs=warmup, logical_batch=32 * workers,
                      state=state, validation_error=error)


def test_largest_count_within_half_a_point_of_one_worker():
    points = [_p(1, "none", 0.060), _p(1, "linear", 0.058),
              _p(2, "none", 0.061), _p(2, "linear", 0.059),
              _p(4, "none", 0.070), _p(4, "linear", 0.062, warmup=2),
              _p(8, "none", 0.110), _p(8, "linear", 0.0631), _p(8, "linear", 0.060, warmup=2),
              _p(16, "linear", 0.090, warmup=2), _p(16, "sqrt", 0.085)]
    rec = recommend(points)
    assert (rec.workers, rec.policy, rec.warmup_epochs) == (8, "linear", 2)
    assert rec.baseline_error == 0.058 and rec.validation_error == 0.060
    assert "8 workers (logical batch 256)" in rec.reason and "warm-up" in rec.reason
    assert "At 16 workers the best error was 8.50%" in rec.reason


def test_tolerance_is_the_users():
    points = [_p(1, "linear", 0.050), _p(2, "linear", 0.054), _p(4, "linear", 0.058)]
    assert recommend(points, tolerance=0.003).workers == 1
    assert recommend(points).workers == 2
    assert recommend(points, tolerance=0.01).workers == 4


def test_exact_boundary_counts_as_within():
    points = [_p(1, "linear", 0.1), _p(2, "linear", 0.1 + 0.005)]
    assert recommend(points, tolerance=0.005).workers == 2


def test_only_complete_measured_points_count():
    points = [_p(1, "linear", 0.05), _p(8, "linear", 0.01, state="failed"), _p(4, "linear", 0.02, state="running"),
              _p(2, "linear", None)]
    assert recommend(points).workers == 1


def test_no_baseline_no_recommendation():
    assert recommend([_p(2, "linear", 0.05), _p(1, "linear", 0.04, state="stopped")]) is None
    assert recommend([]) is None


def test_ties_prefer_lower_error_then_simpler_setting():
    points = [_p(1, "none", 0.05), _p(4, "sqrt", 0.052), _p(4, "linear", 0.052), _p(4, "linear", 0.052, warmup=1),
              _p(4, "none", 0.053)]
    rec = recommend(points)
    assert (rec.workers, rec.policy, rec.warmup_epochs) == (4, "linear", 0)
