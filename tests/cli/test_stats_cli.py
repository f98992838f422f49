"""``gradercal stats``: JSON shape, table output, bad-file messages, exit codes."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result

from gradercal.cli.stats import NO_BOOTSTRAP_NOTE, min_resamples, read_ratings_csv, stats
from gradercal.stats import (
    WEIGHT_SCHEMES,
    WEIGHTED_KEYS,
    clustered_bootstrap,
    rating_statistics,
    statistic_keys,
)

#: The keys the command must give at the nominal level (every one the registry has there,
#: in the registry's order, is checked against :data:`UNWEIGHTED`).
ASKED_UNWEIGHTED = [
    "percent_agreement",
    "cohen_kappa",
    "scott_pi",
    "conger_kappa",
    "light_kappa",
    "bennett_s",
    "fleiss_kappa",
    "krippendorff_alpha",
    "gwet_ac1",
]
#: The keys §6 of issue #12 asks for with --weights W (cohen/conger weighted under
#: weighted_* names; the plain names stay unweighted).
ASKED_WEIGHTED = [
    "weighted_percent_agreement",
    "weighted_cohen_kappa",
    "weighted_scott_pi",
    "weighted_conger_kappa",
    "weighted_fleiss_kappa",
    "weighted_bennett_s",
    "gwet_ac2",
    "weighted_krippendorff_alpha",
]
#: What the command gives, from the statistics registry (a new statistic needs no edit).
UNWEIGHTED = list(statistic_keys("nominal"))
WEIGHTED = [k for k in statistic_keys("nominal", "quadratic") if k not in UNWEIGHTED]
#: The interval-level statistics issue #12 asks for besides the nominal ones.
ASKED_INTERVAL = [
    *("icc1", "icc2", "icc3", "icc1k", "icc2k", "icc3k"),
    *("pearson_r", "spearman_rho", "kendall_tau"),
]


def test_the_keys_asked_for_are_registered() -> None:
    assert set(ASKED_UNWEIGHTED) <= set(UNWEIGHTED)
    assert set(ASKED_WEIGHTED) <= set(WEIGHTED)
    assert set(ASKED_INTERVAL) <= set(statistic_keys("interval")) - set(UNWEIGHTED)


# Krippendorff (2011) example C: 4 observers × 12 units, blank = missing.
KRIPP = [
    "1 2 3 3 2 1 4 1 2 . . .",
    "1 2 3 3 2 2 4 1 2 5 . 3",
    ". 3 3 3 2 3 4 2 2 5 1 .",
    "1 2 3 3 2 4 4 1 2 5 1 .",
]


def kripp_csv(tmp_path: Path, with_task: bool = True) -> Path:
    lines = ["unit,rater,value,task,comment"]
    for r, row in enumerate(KRIPP):
        for u, v in enumerate(row.split()):
            lines.append(f"u{u},{'ABCD'[r]},{'' if v == '.' else v},t{u // 3},free text")
    path = tmp_path / "ratings.csv"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def write(tmp_path: Path, text: str, name: str = "ratings.csv") -> Path:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


def run(*args: Any) -> Result:
    return CliRunner().invoke(stats, [str(a) for a in args])


def two_raters(tmp_path: Path) -> Path:
    # 2×2 table [[20, 5], [10, 15]] in long format
    rows = ["unit,rater,value"]
    u = 0
    for a, b, n in ((1, 1, 20), (1, 0, 5), (0, 1, 10), (0, 0, 15)):
        for _ in range(n):
            rows += [f"{u},A,{a}", f"{u},B,{b}"]
            u += 1
    return write(tmp_path, "\n".join(rows) + "\n")


def test_help() -> None:
    result = run("--help")
    assert result.exit_code == 0
    for option in ("--level", "--weights", "--bootstrap", "--ci", "--seed", "--cluster", "--json"):
        assert option in result.output
    assert "RATINGS.csv" in result.output


def test_json_two_raters(tmp_path: Path) -> None:
    result = run(two_raters(tmp_path), "--json")
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert list(data) == ["n_units", "n_raters", "n_ratings", *UNWEIGHTED]
    assert (data["n_units"], data["n_raters"], data["n_ratings"]) == (50, 2, 100)
    assert data["cohen_kappa"] == {"value": pytest.approx(0.4, abs=1e-15), "weights": "none"}
    # two raters: Conger's and Light's kappas are Cohen's
    assert data["conger_kappa"]["value"] == pytest.approx(0.4, abs=1e-15)
    assert data["light_kappa"]["value"] == pytest.approx(0.4, abs=1e-15)
    assert data["krippendorff_alpha"]["level"] == "nominal"
    assert data["scott_pi"]["value"] == pytest.approx(13 / 33, abs=1e-15)
    assert data["gwet_ac1"]["value"] == pytest.approx(41 / 101, abs=1e-15)


def test_json_matches_library_and_has_notes(tmp_path: Path) -> None:
    path = kripp_csv(tmp_path)
    result = run(path, "--json", "--level", "interval", "--weights", "quadratic")
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    expected_keys = list(statistic_keys("interval", "quadratic"))
    assert expected_keys[: len(UNWEIGHTED) + len(WEIGHTED)] == [*UNWEIGHTED, *WEIGHTED]
    assert list(data) == ["n_units", "n_raters", "n_ratings", *expected_keys]
    assert (data["n_units"], data["n_raters"], data["n_ratings"]) == (12, 4, 41)
    assert data["krippendorff_alpha"]["value"] == pytest.approx(951 / 1120, abs=1e-15)
    assert data["gwet_ac2"]["value"] == pytest.approx(0.914000723551605, abs=2e-15)
    # irrCAC's weighted alpha with quadratic weights is Krippendorff's interval alpha
    assert data["weighted_krippendorff_alpha"]["value"] == pytest.approx(951 / 1120, abs=1e-14)
    assert data["cohen_kappa"] == {
        "value": None,
        "note": "needs exactly two raters (found 4)",
        "weights": "none",
    }
    assert data["weighted_cohen_kappa"] == {
        "value": None,
        "note": "needs exactly two raters (found 4)",
        "weights": "quadratic",
    }
    for key in expected_keys:
        assert data[key]["weights"] == ("quadratic" if key in WEIGHTED else "none"), key
    assert data["icc2"]["value"] is None
    assert data["icc2"]["note"].startswith("incomplete data: 4 of 12 units")
    # identical to the library, to the last digit
    parsed = read_ratings_csv(path, level="interval", weighted=True)
    lib = rating_statistics(parsed.frame, "interval", "quadratic")
    for key, stat in lib.items():
        assert data[key]["value"] == stat.value


def test_bootstrap_json(tmp_path: Path) -> None:
    path = kripp_csv(tmp_path)
    args = [path, "--json", "--bootstrap", "400", "--seed", "3", "--cluster", "task"]
    result = run(*args)
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert data["bootstrap"] == {
        "n_boot": 400,
        "ci": 0.95,
        "method": "expanded_percentile",
        "seed": 3,
        "cluster": "task",
        "n_clusters": 4,
    }
    alpha = data["krippendorff_alpha"]
    assert alpha["value"] == pytest.approx(113 / 152, abs=1e-15)
    low, high = alpha["ci"]
    assert low <= high
    assert "only 4 clusters" in alpha["ci_note"]
    assert data["cohen_kappa"]["ci"] is None
    assert "ci_note" not in data["cohen_kappa"]  # undefined: the note says why
    # Conger's and Light's kappas are resampled too (recomputed on each resample)
    for key in ("conger_kappa", "light_kappa"):
        assert data[key]["ci"] is not None, key
        assert data[key]["ci"][0] <= data[key]["value"] <= data[key]["ci"][1], key
    # same seed, same output; every unit its own cluster without --cluster
    assert run(*args).stdout == result.stdout
    unclustered = json.loads(run(path, "--json", "--bootstrap", "400").stdout)
    assert unclustered["bootstrap"]["n_clusters"] == 12


def test_table_output(tmp_path: Path) -> None:
    result = run(kripp_csv(tmp_path), "--bootstrap", "200", "--cluster", "task", "--ci", "0.9")
    assert result.exit_code == 0, result.output
    out = result.stdout
    assert "12 units, 4 raters, 41 ratings" in out
    assert "Fleiss' kappa" in out
    assert "0.7612" in out  # Fleiss' kappa, 0.76117 (irrCAC)
    assert "0.7434" in out  # alpha nominal, 113/152
    assert "90% CI" in out
    assert "needs exactly two raters (found 4)" in out
    assert (
        "expanded_percentile intervals from 200 bootstrap resamples of 4 clusters of 'task'" in out
    )
    assert "Conger's kappa" in out
    assert "Light's kappa" in out


def test_table_output_labels_weighted_statistics(tmp_path: Path) -> None:
    result = run(kripp_csv(tmp_path), "--weights", "ordinal")
    assert result.exit_code == 0, result.output
    out = result.stdout
    assert "weights ordinal" in out
    assert "Weighted Fleiss' kappa (ordinal)" in out
    assert "Gwet's AC2 (ordinal)" in out
    assert "Fleiss' kappa (ordinal)" not in out.replace("Weighted Fleiss' kappa (ordinal)", "")


def test_categories_option(tmp_path: Path) -> None:
    path = write(tmp_path, "unit,rater,value\n1,a,1\n1,b,1\n2,a,1\n2,b,1\n")
    plain = json.loads(run(path, "--json").stdout)
    assert plain["gwet_ac1"]["value"] is None
    stated = json.loads(run(path, "--json", "--categories", "0,1").stdout)
    assert stated["gwet_ac1"]["value"] == 1.0
    assert stated["bennett_s"]["value"] == 1.0
    assert stated["cohen_kappa"]["value"] is None
    bad = run(path, "--categories", "0,x")
    assert bad.exit_code == 2


def test_text_values_at_nominal_level(tmp_path: Path) -> None:
    path = write(tmp_path, "unit,rater,value\n1,a,met\n1,b,met\n2,a,not met\n2,b,met\n")
    data = json.loads(run(path, "--json").stdout)
    assert data["percent_agreement"]["value"] == 0.5
    assert data["cohen_kappa"]["value"] == pytest.approx(0.0, abs=1e-15)


# --- bad files -----------------------------------------------------------------------


def fails(result: Result, *messages: str) -> None:
    assert result.exit_code == 1, result.output
    for message in messages:
        assert message in result.stderr, result.stderr
    assert result.stdout == ""


def test_missing_column(tmp_path: Path) -> None:
    path = write(tmp_path, "unit,judge,value\n1,a,1\n")
    fails(run(path), f"{path}:1: rater: missing column (header has: unit, judge, value)")


def test_empty_file(tmp_path: Path) -> None:
    path = write(tmp_path, "")
    fails(run(path), f"{path}:1: empty file")


def test_header_only(tmp_path: Path) -> None:
    path = write(tmp_path, "unit,rater,value\n")
    fails(run(path), f"{path}: no ratings")


def test_non_numeric_value_with_interval_level(tmp_path: Path) -> None:
    path = write(tmp_path, "unit,rater,value\n1,a,1\n1,b,x\n\n2,a,2\n2,b,high\n")
    fails(
        run(path, "--level", "interval"),
        f"{path}:3: value: not a number: 'x' (--level interval needs numbers)",
        f"{path}:6: value: not a number: 'high'",  # line numbers count the blank line
    )
    # the same file is fine at the nominal level (text categories)
    assert run(path).exit_code == 0
    fails(run(path, "--weights", "linear"), "(--weights needs numbers)")


def test_negative_value_ratio(tmp_path: Path) -> None:
    path = write(tmp_path, "unit,rater,value\n1,a,1\n1,b,-2\n")
    fails(run(path, "--level", "ratio"), f"{path}:3: value: negative value -2")


def test_duplicate_rating(tmp_path: Path) -> None:
    path = write(tmp_path, "unit,rater,value\n1,a,1\n1,b,1\n1,a,0\n")
    fails(run(path), f"{path}:4: rater: 'a' already rated unit '1' on line 2")


def test_cluster_errors(tmp_path: Path) -> None:
    path = write(tmp_path, "unit,rater,value,task\n1,a,1,t1\n1,b,1,t2\n2,a,0,\n")
    fails(
        run(path, "--cluster", "task", "--bootstrap", "400"),
        f"{path}:3: task: unit '1' is in task 't2' here but 't1' on line 2",
        f"{path}:4: task: empty",
    )
    fails(run(path, "--cluster", "batch", "--bootstrap", "400"), f"{path}:1: batch: missing column")


def test_short_row_and_empty_ids(tmp_path: Path) -> None:
    path = write(tmp_path, 'unit,rater,value\n1,a\n,b,1\n"2",,1\n')
    fails(
        run(path),
        f"{path}:2: expected 3 fields, found 2",
        f"{path}:3: unit: empty",
        f"{path}:4: rater: empty",
    )


def test_unreadable_and_value_outside_categories(tmp_path: Path) -> None:
    fails(run(tmp_path / "missing.csv"), "missing.csv: cannot read")
    path = write(tmp_path, "unit,rater,value\n1,a,1\n1,b,2\n")
    fails(run(path, "--categories", "0,1"), f"{path}:3: value: '2' is not in --categories")
    binary = tmp_path / "bin.csv"
    binary.write_bytes(b"unit,rater,value\n1,a,\xff\n")
    fails(run(binary), "not UTF-8 text")


def test_usage_errors_exit_2(tmp_path: Path) -> None:
    path = two_raters(tmp_path)
    assert run(path, "--level", "cardinal").exit_code == 2
    assert run(path, "--weights", "cubic").exit_code == 2
    assert run(path, "--ci", "1.5").exit_code == 2
    assert run(path, "--bootstrap", "-1").exit_code == 2


# --- §6: the irrCAC family from the command line ----------------------------------------


@pytest.mark.parametrize("raters", [2, 4])
def test_weights_quadratic_json_has_every_key_of_section_6(tmp_path: Path, raters: int) -> None:
    path = two_raters(tmp_path) if raters == 2 else kripp_csv(tmp_path)
    result = run(path, "--weights", "quadratic", "--json")
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert list(data) == ["n_units", "n_raters", "n_ratings", *UNWEIGHTED, *WEIGHTED]
    assert list(WEIGHTED_KEYS) == WEIGHTED
    lib = rating_statistics(read_ratings_csv(path, weighted=True).frame, weights="quadratic")
    for key in (*UNWEIGHTED, *WEIGHTED):
        entry = data[key]
        assert entry["weights"] == ("quadratic" if key in WEIGHTED else "none"), key
        assert entry["value"] == lib[key].value, key
        if entry["value"] is None:
            assert entry["note"], key
    two_rater_only = ("cohen_kappa", "scott_pi", "weighted_cohen_kappa", "weighted_scott_pi")
    for key in two_rater_only:
        if raters == 2:
            assert data[key]["value"] is not None, key
        else:
            assert data[key]["note"] == "needs exactly two raters (found 4)", key
    if raters == 2:
        # 2×2 table: quadratic weights on two categories are the identity
        for plain, weighted in (
            ("cohen_kappa", "weighted_cohen_kappa"),
            ("scott_pi", "weighted_scott_pi"),
        ):
            assert data[weighted]["value"] == pytest.approx(data[plain]["value"], abs=1e-15)


@pytest.mark.parametrize("family", [s for s in WEIGHT_SCHEMES if s != "identity"])
def test_every_weight_family(tmp_path: Path, family: str) -> None:
    result = run(kripp_csv(tmp_path), "--weights", family, "--json")
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    lib = rating_statistics(
        read_ratings_csv(kripp_csv(tmp_path), weighted=True).frame,
        weights=family,  # type: ignore[arg-type]
    )
    for key in WEIGHTED:
        assert data[key]["weights"] == family
        assert data[key]["value"] == lib[key].value, key
    assert data["gwet_ac2"]["value"] is not None


def test_weights_need_numbers_and_ratio_positive_values(tmp_path: Path) -> None:
    text = write(tmp_path, "unit,rater,value\n1,a,x\n1,b,y\n", "text.csv")
    for family in ("ordinal", "ratio", "circular", "bipolar"):
        fails(
            run(text, "--weights", family),
            f"{text}:2: value: not a number: 'x' (--weights needs numbers)",
        )
    zero = write(tmp_path, "unit,rater,value\n1,a,0\n1,b,2\n2,a,1\n2,b,1\n", "zero.csv")
    fails(
        run(zero, "--weights", "ratio"),
        f"{zero}:2: value: value 0 (--weights ratio needs values > 0)",
    )
    assert run(zero, "--weights", "ordinal").exit_code == 0
    fails(run(two_raters(tmp_path), "--weights", "ratio"), "(--weights ratio needs values > 0)")
    positive = write(tmp_path, "unit,rater,value\n1,a,1\n1,b,2\n", "positive.csv")
    assert run(positive, "--weights", "ratio").exit_code == 0
    fails(
        run(positive, "--weights", "ratio", "--categories", "0,1,2"),
        "ratio weights need positive category values (found 0)",
    )


# --- §5: options that do nothing must say so ----------------------------------------------


def test_min_resamples() -> None:
    assert (min_resamples(0.95), min_resamples(0.9), min_resamples(0.99)) == (400, 200, 2000)
    assert min_resamples(0.5) == 40


def test_too_few_resamples_refused(tmp_path: Path) -> None:
    path = kripp_csv(tmp_path)
    result = run(path, "--bootstrap", "5")
    assert result.exit_code == 2
    assert "--bootstrap" in result.output
    assert "5 resamples are too few for 95% intervals: use at least 400" in result.output
    assert run(path, "--bootstrap", "399").exit_code == 2
    assert run(path, "--bootstrap", "400", "--json").exit_code == 0
    # the minimum follows the confidence level
    assert run(path, "--bootstrap", "400", "--ci", "0.99").exit_code == 2
    assert run(path, "--bootstrap", "200", "--ci", "0.9", "--json").exit_code == 0
    # 0 means no bootstrap
    assert run(path, "--bootstrap", "0", "--json").exit_code == 0


@pytest.mark.parametrize(
    ("args", "named"),
    [
        (["--cluster", "task"], "--cluster only applies"),
        (["--ci", "0.9"], "--ci only applies"),
        (["--ci-method", "bca"], "--ci-method only applies"),
        (["--seed", "0"], "--seed only applies"),  # even the default value, when typed
        (["--seed", "3", "--cluster", "task"], "--cluster, --seed only apply"),
        (["--bootstrap", "0", "--ci-method", "percentile"], "--ci-method only applies"),
    ],
)
def test_bootstrap_options_without_bootstrap_refused(
    tmp_path: Path, args: list[str], named: str
) -> None:
    result = run(kripp_csv(tmp_path), *args)
    assert result.exit_code == 2, result.output
    assert named in result.output
    assert "add --bootstrap N" in result.output


def test_weighted_bootstrap_intervals_are_the_bootstraps(tmp_path: Path) -> None:
    rows = ["unit,rater,value,task"]
    for u in range(40):
        a = u % 4
        b = a if u % 3 else (a + 1) % 4
        rows += [f"u{u},A,{a},t{u // 2}", f"u{u},B,{b},t{u // 2}"]
    path = write(tmp_path, "\n".join(rows) + "\n")
    args = ["--json", "--weights", "linear", "--bootstrap", "400", "--cluster", "task"]
    data = json.loads(run(path, *args).stdout)
    frame = read_ratings_csv(path, weighted=True, cluster_col="task").frame
    common: dict[str, Any] = {"n_boot": 400, "seed": 0, "method": "expanded_percentile"}
    plain = clustered_bootstrap(frame, "task", ["cohen_kappa", "gwet_ac1"], **common)
    weighted = clustered_bootstrap(
        frame,
        "task",
        ["cohen_kappa", "gwet_ac2", "weighted_percent_agreement"],
        weights="linear",
        **common,
    )
    # unweighted keys: unweighted intervals; weighted keys: the weighted ones
    assert data["cohen_kappa"]["ci"] == [plain["cohen_kappa"].ci_low, plain["cohen_kappa"].ci_high]
    assert data["gwet_ac1"]["ci"] == [plain["gwet_ac1"].ci_low, plain["gwet_ac1"].ci_high]
    assert data["weighted_cohen_kappa"]["ci"] == [
        weighted["cohen_kappa"].ci_low,
        weighted["cohen_kappa"].ci_high,
    ]
    assert data["gwet_ac2"]["ci"] == [weighted["gwet_ac2"].ci_low, weighted["gwet_ac2"].ci_high]
    assert data["weighted_cohen_kappa"]["ci"] != data["cohen_kappa"]["ci"]
    assert data["weighted_cohen_kappa"]["value"] == weighted["cohen_kappa"].value
    assert data["cohen_kappa"]["value"] == plain["cohen_kappa"].value
    # every other key of §6 has its interval, resampled under that key's own weights
    rest_weighted = [
        "weighted_scott_pi",
        "weighted_conger_kappa",
        "weighted_fleiss_kappa",
        "weighted_bennett_s",
        "weighted_krippendorff_alpha",
    ]
    more = clustered_bootstrap(frame, "task", rest_weighted, weights="linear", **common)
    rest_plain = clustered_bootstrap(frame, "task", ["conger_kappa", "light_kappa"], **common)
    for key, boot in [*((k, more[k]) for k in rest_weighted), *rest_plain.items()]:
        assert data[key]["value"] == boot.value, key
        assert data[key]["ci"] == [boot.ci_low, boot.ci_high], key
        assert data[key].get("ci_note") != NO_BOOTSTRAP_NOTE, key
    # the weighted ones differ from their unweighted namesakes
    assert data["weighted_fleiss_kappa"]["ci"] != data["fleiss_kappa"]["ci"]
    assert data["weighted_conger_kappa"]["value"] != data["conger_kappa"]["value"]


def test_extra_fields_and_nul_bytes_are_refused_by_line(tmp_path: Path) -> None:
    path = write(tmp_path, "unit,rater,value\n1,a,1\n1,b,1,surplus\n2,a\x00x,0\n2,b,0\n")
    fails(
        run(path),
        f"{path}:3: expected 3 fields, found 4",
        f"{path}:4: rater: contains a NUL character",
    )
