"""Hand-written content of the gradercal demo benchmark (``samples/demo/``).

Everything here was written for gradercal: the tasks, rubrics, model responses and the
"true" verdicts are fictional (made-up compounds, genes and data) and are not taken from
any public benchmark. ``build_demo.py`` turns this module into the benchmark folder and
adds the generated artifacts and the noisy grader judgments.

Conventions
-----------
* ``TASKS``: one dict per task, in the shape of a ``tasks.jsonl`` line, except that rubric
  items may carry ``"ambiguous": True`` (internal: graders disagree more on them; the key
  is stripped before writing).
* ``RESPONSES``: one dict per ``responses.jsonl`` line.
* ``TRUTH``: per response id, the two-level judgment criteria that are truly met
  (``met``, a space-separated string of criterion ids; every other one is not met), the
  true level of each 3-level criterion (``levels``; 2 = fully met, 1 = partial) and
  optional short evidence notes (``notes``) that graders reuse as rationales.
* ``UNCLEAR``: the judgments on which a human grader flagged the criterion as unclear.
"""

from __future__ import annotations

from typing import Any

BENCHMARK: dict[str, Any] = {
    "name": "gradercal demo: life-science research tasks",
    "pass_threshold": 0.7,
    "format_version": 1,
}

MODELS = {"atlas": "atlas-7b", "borealis": "borealis-large", "cobalt": "cobalt-pro"}

AUTHOR = "gradercal demo (synthetic content)"


def md(text: str) -> str:
    """Strip the leading newline of a triple-quoted Markdown block and trailing spaces."""
    return text.strip("\n").rstrip() + "\n"


def crit(
    cid: str,
    points: int,
    text: str,
    *tags: str,
    levels: int | None = None,
    auto: dict[str, Any] | None = None,
    ambiguous: bool = False,
) -> dict[str, Any]:
    item: dict[str, Any] = {"id": cid, "criterion": text, "points": points, "tags": list(tags)}
    if levels is not None:
        item["levels"] = levels
    if auto is not None:
        item["auto"] = auto
    if ambiguous:
        item["ambiguous"] = True
    return item


ACC, COMP, REAS, SAFE, COMM = (
    "axis:accuracy",
    "axis:completeness",
    "axis:reasoning",
    "axis:safety",
    "axis:communication",
)

# --------------------------------------------------------------------------------------
# T01 — evidence handling, immunology (PDF report)
# --------------------------------------------------------------------------------------

T01: dict[str, Any] = {
    "id": "T01",
    "workflow": "evidence handling",
    "domain": "immunology",
    "answer_format": "free text",
    "tags": ["flow cytometry", "regulatory T cells", "critical appraisal", "statistics"],
    "metadata": {"author": AUTHOR, "difficulty": "postdoc", "estimated_minutes": 25},
    "artifacts": [
        {
            "path": "artifacts/T01/treg_flow_report.pdf",
            "title": "Flow core analysis report FCR-0412 (3 pages)",
        }
    ],
    "prompt": md(
        """
## Does GX-17 expand regulatory T cells?

Our flow cytometry core has just sent the attached analysis report
(`treg_flow_report.pdf`, 3 pages) on our small molecule GX-17. My PI wants to put this
sentence into a grant progress report next week:

> "GX-17 expands human regulatory T cells in vitro (6.1% → 9.8% of CD4+ T cells,
> p < 0.001)."

Please read the report as a critical reviewer would.

1. Do the data support this sentence? Point to the specific numbers in the report that
   support or undermine it.
2. What could we honestly write instead?
3. What is the minimum set of additional experiments you would want before making the
   claim?
"""
    ),
    "rubric": [
        crit(
            "c1",
            10,
            "Concludes that the report does not support the sentence as written "
            "(the finding is at best preliminary).",
            ACC,
            "skill:critical-appraisal",
        ),
        crit(
            "c2",
            8,
            "Notes that the mean increase is driven by donors D4–D6 (batch 2, about +6.5 "
            "to +6.7 points) while the batch-1 donors D1–D3 change by only about 0.5–1.1 "
            "points.",
            ACC,
            "skill:data-interpretation",
        ),
        crit(
            "c3",
            8,
            "Identifies that batch 2 (D4–D6) was stained without a viability dye, so dead "
            "cells were not excluded.",
            ACC,
            "skill:flow-cytometry",
        ),
        crit(
            "c4",
            7,
            "Links the lower viability with GX-17 in batch 1 (about 58–63% vs 80–84% live "
            "cells) to the risk that dead or dying cells inflate CD25/FOXP3 positivity in "
            "batch 2.",
            REAS,
            "skill:data-interpretation",
        ),
        crit(
            "c5",
            6,
            "Points out that the FOXP3 gate was set on an isotype control although the FMO "
            "control puts about 2.9% of CD4+ events in the gate (vs 0.4% for the isotype).",
            ACC,
            "skill:flow-cytometry",
        ),
        crit(
            "c6",
            6,
            "Explains that anti-CD3/CD28 plus IL-2 stimulation induces CD25 and transient "
            "FOXP3 in conventional CD4+ T cells, so CD25+FOXP3+ is not a reliable Treg "
            "definition in this culture.",
            REAS,
            "skill:domain-knowledge",
        ),
        crit(
            "c7",
            5,
            "Notes that the CD127-low share of the gated cells falls with GX-17 (e.g. D4 "
            "71% → 52%), suggesting the additional cells are not classic CD127-low Tregs.",
            ACC,
            "skill:data-interpretation",
        ),
        crit(
            "c8",
            6,
            "Identifies pseudoreplication: the unpaired t-test treats 18 wells per arm as "
            "independent although the experimental unit is the donor (n = 6).",
            REAS,
            "skill:statistics",
        ),
        crit(
            "c9",
            4,
            "Recommends a paired analysis on donor-level values (paired t-test, Wilcoxon "
            "signed-rank test, or a mixed model with donor and batch).",
            COMP,
            "skill:statistics",
        ),
        crit(
            "c10",
            3,
            "Notes that batch is confounded with donor (D1–D3 vs D4–D6), so batch effects "
            "cannot be separated from donor differences in this design.",
            REAS,
            "skill:experimental-design",
            ambiguous=True,
        ),
        crit(
            "c11",
            5,
            "Recommends repeating the experiment with a viability dye in every sample, "
            "ideally with all donors processed and acquired together.",
            COMP,
            "skill:experimental-design",
        ),
        crit(
            "c12",
            5,
            "Recommends a more specific Treg readout than CD25+FOXP3+: CD127-low gating "
            "plus Helios, and/or TSDR demethylation (partial: a single extra marker "
            "without justification).",
            COMP,
            "skill:domain-knowledge",
            levels=3,
        ),
        crit(
            "c13",
            4,
            "Recommends a functional suppression assay with sorted cells.",
            COMP,
            "skill:experimental-design",
        ),
        crit(
            "c14",
            3,
            "Recommends reporting absolute Treg counts (e.g. with counting beads), since "
            "killing of other cells can raise a percentage without any expansion.",
            REAS,
            "skill:data-interpretation",
        ),
        crit(
            "c15",
            4,
            "Proposes honest replacement wording (e.g. a preliminary association in a subset "
            "of donors, pending a repeat) or advises leaving the claim out.",
            COMM,
            ambiguous=True,
        ),
        crit(
            "c16",
            3,
            "Supports each concern with specific numbers from the report.",
            COMM,
            ambiguous=True,
        ),
        crit(
            "c17",
            2,
            "Puts the verdict first, followed by the issues and then the experiments.",
            COMM,
            ambiguous=True,
        ),
        crit(
            "c18",
            3,
            "Suggests testing GX-17 over a dose range with a parallel viability or "
            "cytotoxicity readout.",
            COMP,
            "skill:experimental-design",
            ambiguous=True,
        ),
        crit(
            "c19",
            -10,
            "States or implies that the data support the sentence as written.",
            ACC,
            "skill:critical-appraisal",
        ),
        crit(
            "c20",
            -6,
            "Recommends increasing the FOXP3 antibody concentration to 'improve separation' "
            "without titration or proper gating controls.",
            ACC,
            "skill:flow-cytometry",
        ),
        crit(
            "c21",
            -5,
            "Misreads the report, e.g. states that a viability dye was used for all donors "
            "or swaps the batch assignments.",
            ACC,
        ),
        crit(
            "c22",
            -4,
            "Recommends dropping donors D4–D6 after the fact and claiming significance on "
            "the remaining donors.",
            REAS,
            "skill:statistics",
        ),
    ],
}

T01_RESPONSES: list[dict[str, Any]] = [
    {
        "id": "T01-atlas",
        "task_id": "T01",
        "model": MODELS["atlas"],
        "text": md(
            """
The data generally support the statement. GX-17 increased CD4+CD25+FOXP3+ regulatory
T cells from 6.1% to 9.8%, a 61% relative increase, and the result is highly significant
(p < 0.001) with 18 replicates per group. All six donors moved in the same direction,
which shows that the effect is robust across individuals.

Some points to consider before submission:

* The report used a viability dye to exclude dead cells and an isotype control to set
  the FOXP3 gate, which is standard practice.
* The batch 2 donors had a stronger response, which probably reflects donor-to-donor
  variability in the size of the Treg precursor pool.
* It would strengthen the claim to show that the expanded Tregs are suppressive, for
  example with a suppression assay.
* Consider adding a second concentration of GX-17.

Suggested sentence: *"GX-17 robustly expands human regulatory T cells in vitro
(6.1% → 9.8% of CD4+ T cells, p < 0.001)."*
"""
        ),
    },
    {
        "id": "T01-borealis",
        "task_id": "T01",
        "model": MODELS["borealis"],
        "text": md(
            """
## Assessment

The sentence overstates what the data show; the claim is premature.

**Main concerns**

- **Batch effect.** Donors D4–D6 (batch 2) show much larger increases (about 6–7
  percentage points) than D1–D3 (under 1.5 points). The average of 6.1% → 9.8% is
  therefore driven by batch 2.
- **Viability.** Batch 2 was run without a viability dye, so dead cells were not
  excluded from the analysis.
- **Statistics.** The t-test uses wells as replicates. With six donors you should use a
  paired test on the donor means.
- **Marker choice.** CD25+FOXP3+ is a reasonable Treg definition, but adding Helios
  would make it more specific.

**Suggestions**

1. Repeat the experiment with a viability dye in all samples.
2. FOXP3 staining looks dim in Figure 1B; increase the anti-FOXP3 antibody concentration
   to improve separation of the positive population.
3. Use a paired t-test across donors.
4. Add Helios to the panel.

**Alternative wording:** "GX-17 may increase Treg frequency; further experiments are
ongoing."
"""
        ),
    },
    {
        "id": "T01-cobalt",
        "task_id": "T01",
        "model": MODELS["cobalt"],
        "text": md(
            """
**Short answer: no, not as written.** The headline difference comes almost entirely from
the three donors that were stained without a viability dye, and several features of the
report suggest that the extra "Tregs" are dead or activated conventional T cells rather
than bona fide Tregs.

### What the report shows

| Issue | Evidence in the report | Why it matters |
|---|---|---|
| Batch-driven effect | D1–D3: +0.8, +0.5, +1.1 points; D4–D6: +6.5, +6.7, +6.6 | The whole 6.1 → 9.8% shift comes from batch 2 |
| No live/dead gate in batch 2 | Table 1: viability dye "no" for D4–D6 | Dead cells bind antibodies non-specifically after fix/perm |
| GX-17 is cytotoxic | Batch 1 live cells 80–84% (vehicle) vs 58–63% (GX-17) | In batch 2 these extra dead cells end up in the gate |
| Gate set on isotype | Table 2: isotype 0.4% vs FMO 2.9% inside the FOXP3 gate | The gate is too permissive; the FMO is the right control |
| Phenotype shift | CD127-low share of gated cells drops, e.g. D4 71 → 52%, D5 69 → 49% | The added cells are CD127+, not classic Tregs |
| Activation context | Anti-CD3/CD28 beads + IL-2 for 72 h | Activated conventional CD4+ T cells up-regulate CD25 and, transiently, FOXP3 |
| Pseudoreplication | Unpaired t-test on 18 wells per arm | The experimental unit is the donor (n = 6), not the well |

A paired analysis on donor means (differences 0.8, 0.5, 1.1, 6.5, 6.7, 6.6) gives
roughly p ≈ 0.04 (paired t-test, n = 6), but even that is uninterpretable: the effect
size is completely confounded with batch, and batch coincides with a different donor set
and with the missing viability stain.

### What we could honestly write

"In a preliminary experiment, GX-17 was associated with a higher frequency of
CD25+FOXP3+ CD4+ T cells in a subset of donors; because of technical limitations this is
being re-tested." Or leave it out until the repeat is done.

### Minimum additional experiments

1. Repeat with all donors in one batch, a viability dye in every sample and the FOXP3
   gate set on FMO controls.
2. Define Tregs as CD25+CD127-low FOXP3+ and add Helios; ideally confirm with TSDR
   demethylation on sorted cells.
3. Report absolute Treg numbers (counting beads), not only frequencies, because GX-17
   kills other cells.
4. Test GX-17 on unstimulated cells and over a dose range with a viability readout.
5. Run a suppression assay with sorted CD25+CD127-low cells from both arms.
6. Pre-specify the analysis: paired test, or a mixed model with donor as a random effect.
"""
        ),
    },
]

T01_TRUTH: dict[str, dict[str, Any]] = {
    "T01-atlas": {
        "met": "c13 c17 c19 c21",
        "levels": {"c12": 0},
        "notes": {
            "c1": "Endorses the claim instead of questioning it.",
            "c2": "Mentions a stronger batch-2 response but attributes it to donor variability.",
            "c3": "Wrongly states that a viability dye was used for all donors.",
            "c19": "Says the data 'generally support' the sentence and makes it stronger.",
            "c21": "Claims a viability dye was used; Table 1 says no dye for D4–D6.",
            "c13": "Suggests a suppression assay.",
            "c18": "A 'second concentration' is not a dose range with viability readout.",
        },
    },
    "T01-borealis": {
        "met": "c1 c2 c3 c8 c9 c11 c16 c17 c20",
        "levels": {"c12": 1},
        "notes": {
            "c4": "Does not connect GX-17 toxicity to the missing viability dye.",
            "c5": "No mention of the isotype vs FMO issue.",
            "c6": "Calls CD25+FOXP3+ a reasonable Treg definition in stimulated cultures.",
            "c12": "Adds Helios only, without CD127 or TSDR.",
            "c15": "'May increase Treg frequency' still asserts the Treg interpretation.",
            "c20": "Suggests increasing anti-FOXP3 concentration to fix dim staining.",
        },
    },
    "T01-cobalt": {
        "met": "c1 c2 c3 c4 c5 c6 c7 c8 c9 c10 c11 c13 c14 c15 c16 c17 c18",
        "levels": {"c12": 2},
        "notes": {
            "c2": "Lists the per-donor differences by batch.",
            "c4": "Table row 'GX-17 is cytotoxic' links batch-1 viability to batch 2.",
            "c5": "Cites isotype 0.4% vs FMO 2.9%.",
            "c10": "States batch coincides with a different donor set.",
            "c18": "Item 4: dose range with a viability readout.",
        },
    },
}

# --------------------------------------------------------------------------------------
# T02 — analysis, pharmacology (CSV; JSON answer with auto criteria)
# --------------------------------------------------------------------------------------

#: Targets of the auto criteria of T02; ``build_demo.py`` refits the CSV and checks them.
T02_TARGETS: dict[str, Any] = {
    "ic50_uM": 0.47,
    "hill_slope": 1.23,
    "top_pct": 99.3,
    "bottom_pct": 6.1,
    "excluded_well": "C05",
}

T02: dict[str, Any] = {
    "id": "T02",
    "workflow": "analysis",
    "domain": "pharmacology",
    "answer_format": "json",
    "tags": ["dose-response", "curve fitting", "cell viability", "structured answer"],
    "metadata": {"author": AUTHOR, "difficulty": "graduate", "estimated_minutes": 20},
    "artifacts": [
        {
            "path": "artifacts/T02/gc114_viability.csv",
            "title": "GC-114 CellTiter-Glo plate, raw and normalised (CSV)",
        }
    ],
    "prompt": md(
        """
## Fit a dose–response curve and report it as JSON

We ran a 72 h CellTiter-Glo viability assay on A549 cells with our compound GC-114
(10-point, 3-fold dilution from 30 µM, triplicates in rows B–D of one 96-well plate).
The attached `gc114_viability.csv` has the raw luminescence of every well and the
percentage viability, already normalised to the mean of the vehicle wells (0.1% DMSO,
column 12 = 100%) and of the medium-only wells (column 1 = 0%).

One compound well looks like a pipetting failure. Please:

1. Identify that well and say why you would exclude it.
2. Fit a four-parameter logistic model to % viability versus concentration,
   `y = bottom + (top − bottom) / (1 + (x / IC50)^h)`, reporting `h` as a positive
   number.
3. Give the result as a JSON object with exactly these keys (concentrations in µM):

```json
{"ic50_uM": 0.0, "hill_slope": 0.0, "top_pct": 0.0, "bottom_pct": 0.0,
 "excluded_well": "A01"}
```

Below the JSON, briefly explain how you fitted the curve and give an uncertainty
estimate for the IC50.
"""
    ),
    "rubric": [
        crit(
            "c1",
            10,
            "Reports an IC50 within 15% of 0.47 µM.",
            ACC,
            "skill:curve-fitting",
            auto={"key": "answer.ic50_uM", "target": 0.47, "rel_tol": 0.15},
        ),
        crit(
            "c2",
            5,
            "Reports a Hill slope within ±0.2 of 1.23.",
            ACC,
            "skill:curve-fitting",
            auto={"key": "answer.hill_slope", "target": 1.23, "abs_tol": 0.2},
        ),
        crit(
            "c3",
            3,
            "Reports a top plateau within ±5 points of 99.3%.",
            ACC,
            "skill:curve-fitting",
            auto={"key": "answer.top_pct", "target": 99.3, "abs_tol": 5},
        ),
        crit(
            "c4",
            3,
            "Reports a bottom plateau within ±4 points of 6.1%.",
            ACC,
            "skill:curve-fitting",
            auto={"key": "answer.bottom_pct", "target": 6.1, "abs_tol": 4},
        ),
        crit(
            "c5",
            5,
            "Names C05 as the failed well.",
            ACC,
            "skill:quality-control",
            auto={"key": "answer.excluded_well", "target": "C05"},
        ),
        crit(
            "c6",
            5,
            "Justifies the exclusion with the data (C05 reads about 94% where its "
            "replicates B05 and D05 read about 26–30%), not just by preference.",
            REAS,
            "skill:quality-control",
        ),
        crit(
            "c7",
            4,
            "States how the model was fitted: on log concentration, and which parameters "
            "(if any) were constrained.",
            COMM,
            "skill:curve-fitting",
        ),
        crit(
            "c8",
            4,
            "Gives an uncertainty estimate for the IC50 (e.g. a 95% CI of roughly "
            "0.40–0.55 µM, or a standard error).",
            COMP,
            "skill:statistics",
        ),
        crit(
            "c9",
            2,
            "Comments on fit quality (e.g. both plateaus defined by data, residuals, R²).",
            COMP,
            "skill:curve-fitting",
            ambiguous=True,
        ),
        crit(
            "c10",
            -6,
            "Reports the IC50 in the wrong unit (e.g. nM in the µM field) or as a log value.",
            ACC,
        ),
        crit(
            "c11",
            -4,
            "Keeps the failed well in the final fit without comment.",
            REAS,
            "skill:quality-control",
        ),
    ],
}

T02_RESPONSES: list[dict[str, Any]] = [
    {
        "id": "T02-atlas",
        "task_id": "T02",
        "model": MODELS["atlas"],
        "text": md(
            """
```json
{"ic50_uM": 734, "hill_slope": -0.88, "top_pct": 100.5, "bottom_pct": 0.7,
 "excluded_well": "C03"}
```

Well C03 (3.8%) is lower than its replicates at 10 µM (8.7% and 8.5%), so it was
excluded as an outlier. The remaining 29 points were fitted with a four-parameter
logistic curve. GC-114 has an IC50 of 734 and a Hill slope of −0.88, which indicates a
shallow inhibition curve. The compound is moderately potent.
"""
        ),
        "answer": {
            "ic50_uM": 734,
            "hill_slope": -0.88,
            "top_pct": 100.5,
            "bottom_pct": 0.7,
            "excluded_well": "C03",
        },
    },
    {
        "id": "T02-borealis",
        "task_id": "T02",
        "model": MODELS["borealis"],
        "text": md(
            """
```json
{"ic50_uM": 0.54, "hill_slope": 1.00, "top_pct": 100.6, "bottom_pct": 0,
 "excluded_well": "C05"}
```

**Excluded well.** C05 (1.11 µM, replicate 2) reads 94.3% viability, while B05 and D05
at the same concentration read 25.8% and 29.7%. That is consistent with the compound not
being dispensed into that well, so I removed it.

**Fit.** Four-parameter logistic regression of % viability on log10(concentration), 29
points, with the bottom fixed at 0% because the data were normalised to the medium-only
wells. Top and IC50 and Hill slope were free.

IC50 ≈ 0.54 µM.
"""
        ),
        "answer": {
            "ic50_uM": 0.54,
            "hill_slope": 1.0,
            "top_pct": 100.6,
            "bottom_pct": 0,
            "excluded_well": "C05",
        },
    },
    {
        "id": "T02-cobalt",
        "task_id": "T02",
        "model": MODELS["cobalt"],
        "text": md(
            """
```json
{"ic50_uM": 0.468, "hill_slope": 1.23, "top_pct": 99.3, "bottom_pct": 6.1,
 "excluded_well": "C05"}
```

**Excluded well: C05.** At 1.11 µM the three replicates read 25.8% (B05), 94.3% (C05)
and 29.7% (D05). C05 is ~65 points above its replicates and sits at the level of
untreated cells, which fits a missed compound addition rather than biological variation;
no other well deviates from its replicates by more than ~10 points.

**Fit.** Ordinary least squares 4PL on log10(concentration) with all four parameters
free, 29 compound wells (C05 excluded), unweighted.

| parameter | estimate | approx. 95% CI |
|---|---|---|
| IC50 | 0.468 µM | 0.40–0.55 µM |
| Hill slope | 1.23 | 1.02–1.44 |
| top | 99.3% | 96.8–101.8% |
| bottom | 6.1% | 2.6–9.5% |

The CIs come from the asymptotic standard errors (IC50 on the log scale). Both plateaus
are well defined: the three lowest concentrations average ~99% and the two highest
~7%, and residuals show no trend (R² ≈ 0.99). The non-zero bottom (~6%) suggests a small
resistant or slowly dying fraction at 72 h, so I did not force the bottom to 0%.
Including C05 would shift the IC50 to ~0.75 µM and flatten the slope to ~0.88, which is
why the exclusion matters.
"""
        ),
        "answer": {
            "ic50_uM": 0.468,
            "hill_slope": 1.23,
            "top_pct": 99.3,
            "bottom_pct": 6.1,
            "excluded_well": "C05",
        },
    },
]

T02_TRUTH: dict[str, dict[str, Any]] = {
    "T02-atlas": {
        "met": "c10 c11",
        "notes": {
            "c6": "Excludes C03, which is within a few points of its replicates.",
            "c7": "Says four-parameter logistic but gives no details on the x scale.",
            "c10": "IC50 given as 734 in a µM field: the value is in nM.",
            "c11": "C05 (94%) is kept in the fit and not mentioned.",
        },
    },
    "T02-borealis": {
        "met": "c6 c7",
        "notes": {
            "c6": "Cites C05 94.3% against B05 25.8% and D05 29.7%.",
            "c7": "States log10 concentration and the fixed bottom.",
            "c8": "No CI or standard error for the IC50.",
            "c9": "No comment on fit quality; fixing the bottom at 0 ignores the ~6% plateau.",
        },
    },
    "T02-cobalt": {
        "met": "c6 c7 c8 c9",
        "notes": {
            "c8": "Table with a 95% CI of 0.40–0.55 µM.",
            "c9": "Discusses plateaus, residuals and R².",
        },
    },
}

# --------------------------------------------------------------------------------------
# T03 — design and optimization, molecular biology (FASTA)
# --------------------------------------------------------------------------------------

#: Made-up coding exons of the made-up gene SLC99A1 (written to the FASTA artifact).
SLC99A1_EXONS = [
    (
        "SLC99A1_exon2",
        "coding exon 2 of 9 | constitutive (isoforms a and b) | 186 bp | plus strand",
        "TTCCCCCAGTATCTCGTCCTCGATTTTCCAGCACCTGGTAGCGGACTTATACGATGCTCACTGTCGTACCTAGCTGACCGT"
        "GATCAGCTACGAGGTGTTCAGTTCGCGAGCCTGTATGGTCGTGTCGTTCTTCAACGCCATCTTCGGAGCCTGGCAAGAAAT"
        "GGGCATTCGTGCCTTTCGGCGTTC",
    ),
    (
        "SLC99A1_exon3",
        "coding exon 3 of 9 | skipped in isoform b | 141 bp | plus strand",
        "TTCACTAAGAGAGTGCCAGCGCTATCCATCGGGACCGAACCCAATCGCCGAGGACCTGCTCATCGCCGTGCAGGGGCCAG"
        "GGATGCGGGATGCCAGTTCCTACCGCATAACCCGAGCTCAATTACCGTCCCTCATCCCTCC",
    ),
    (
        "SLC99A1_exon9",
        "coding exon 9 of 9 (last coding exon, ends with the stop codon) | 237 bp | plus strand",
        "GCACCCTTACGGGTCAAACAGCGGAGCGACGTCGGCGCCAGCAGCTTCGAGTACCGCAACTGGTTGGGAGCAACGGAGGCC"
        "TTAGATAAGTTTGCAGTCAGTAAACTCAGCCAATGCCGCCTTAAGGGCGAAAGTTCGTCGTGGCTGCCGCCGACTCAGTATA"
        "CACGCACGGCCAAGACGTGTGCGCAGCCTTCGCGAAGCCTAAGGGCGAGAGTCCACATTTTGCGCAGAAGTTGA",
    ),
]

#: Protospacers quoted by the responses: (exon, 1-based start, protospacer, PAM).
T03_GUIDES = {
    "g2-tttt": ("SLC99A1_exon2", 22, "GATTTTCCAGCACCTGGTAG", "CGG"),
    "g2-a": ("SLC99A1_exon2", 73, "GCTGACCGTGATCAGCTACG", "AGG"),
    "g2-b": ("SLC99A1_exon2", 132, "TCAACGCCATCTTCGGAGCC", "TGG"),
    "g3": ("SLC99A1_exon3", 53, "GACCTGCTCATCGCCGTGCA", "GGG"),
    "g9": ("SLC99A1_exon9", 41, "GCAGCTTCGAGTACCGCAAC", "TGG"),
}

T03: dict[str, Any] = {
    "id": "T03",
    "workflow": "design and optimization",
    "domain": "molecular biology",
    "answer_format": "free text",
    "tags": ["CRISPR", "sgRNA design", "knockout validation", "sequence analysis"],
    "metadata": {"author": AUTHOR, "difficulty": "postdoc", "estimated_minutes": 30},
    "artifacts": [
        {
            "path": "artifacts/T03/slc99a1_exons.fasta",
            "title": "SLC99A1 coding exons 2, 3 and 9 (FASTA)",
        }
    ],
    "prompt": md(
        """
## sgRNAs for a clean SLC99A1 knockout

We want to knock out *SLC99A1* (a solute carrier with 9 coding exons; the gene name is a
placeholder for an unpublished target) in HEK293T cells. Our RNA-seq shows two isoforms
at similar levels: isoform a (all exons) and isoform b, which skips exon 3. The attached
FASTA has the coding sequence of exons 2, 3 and 9 (exon 9 is the last coding exon; exon 1
is extremely GC-rich and we would rather not target it).

The guides will be cloned into lentiCRISPRv2 (U6 promoter, SpCas9) and transduced cells
selected with puromycin.

Please propose **two** sgRNAs (20-nt protospacer plus PAM, taken from the sequences
provided), justify the choice, and outline how you would validate the knockout.
"""
    ),
    "rubric": [
        crit(
            "c1",
            10,
            "Places both guides in exon 2 (early and shared by both isoforms) rather than in "
            "exon 3 (skipped in isoform b) or exon 9 (last exon).",
            ACC,
            "skill:sequence-analysis",
        ),
        crit(
            "c2",
            6,
            "Each proposed protospacer is 20 nt and is immediately followed by an NGG PAM in "
            "the provided sequence.",
            ACC,
            "skill:sequence-analysis",
        ),
        crit(
            "c3",
            5,
            "Explains that frameshifts in an early exon should trigger nonsense-mediated "
            "decay, whereas indels in the last exon escape NMD and can leave a truncated, "
            "partly functional protein.",
            REAS,
            "skill:domain-knowledge",
        ),
        crit(
            "c4",
            4,
            "Notes that exon 3 is 141 bp (a multiple of 3), so isoform b, which lacks it, stays "
            "in frame and would survive an exon-3 knockout.",
            REAS,
            "skill:sequence-analysis",
        ),
        crit(
            "c5",
            5,
            "Avoids protospacers with a TTTT run, which terminates U6 (Pol III) transcription.",
            ACC,
            "skill:domain-knowledge",
            ambiguous=True,
        ),
        crit(
            "c6",
            3,
            "Notes that U6 transcription starts with a G and adds a 5′ G where the "
            "protospacer starts with another base.",
            ACC,
            "skill:domain-knowledge",
        ),
        crit(
            "c7",
            2,
            "Considers the GC content of the guides (roughly 40–70%).",
            COMP,
            "skill:sequence-analysis",
            ambiguous=True,
        ),
        crit(
            "c8",
            5,
            "Recommends genome-wide off-target prediction (e.g. CRISPOR, Cas-OFFinder) and "
            "checking the top predicted sites in the final clones.",
            COMP,
            SAFE,
            ambiguous=True,
        ),
        crit(
            "c9",
            6,
            "Validates at the DNA level by sequencing the target site (Sanger with ICE/TIDE "
            "deconvolution, or amplicon NGS).",
            COMP,
            "skill:validation",
        ),
        crit(
            "c10",
            6,
            "Validates loss of protein (western blot or flow cytometry) with an antibody of "
            "known specificity, not only mRNA levels.",
            COMP,
            "skill:validation",
        ),
        crit(
            "c11",
            4,
            "Recommends single-cell clones with every allele carrying a frameshift, noting "
            "that HEK293T is hypotriploid so more than two alleles may be present.",
            REAS,
            "skill:validation",
        ),
        crit(
            "c12",
            4,
            "Uses two independent guides or clones (ideally with a rescue) to control for "
            "off-target effects.",
            REAS,
            "skill:experimental-design",
        ),
        crit(
            "c13",
            2,
            "Includes a non-targeting guide control processed in parallel.",
            COMP,
            "skill:experimental-design",
            ambiguous=True,
        ),
        crit(
            "c14",
            2,
            "Presents the guides clearly (e.g. a table with sequence, exon, position, strand, "
            "PAM and GC%).",
            COMM,
            ambiguous=True,
        ),
        crit(
            "c15",
            -8,
            "Proposes a protospacer containing TTTT for expression from the U6 promoter.",
            ACC,
            "skill:domain-knowledge",
        ),
        crit(
            "c16",
            -8,
            "Proposes a guide in the last coding exon (exon 9) as a knockout guide.",
            ACC,
            "skill:domain-knowledge",
        ),
        crit(
            "c17",
            -4,
            "Relies on reduced mRNA (qPCR) as the main proof of knockout.",
            REAS,
            "skill:validation",
        ),
    ],
}

T03_RESPONSES: list[dict[str, Any]] = [
    {
        "id": "T03-atlas",
        "task_id": "T03",
        "model": MODELS["atlas"],
        "text": md(
            """
Here are two guides for SLC99A1:

1. **sgRNA-1 (exon 2):** `GATTTTCCAGCACCTGGTAG` with PAM `CGG` (positions 22–41).
   It is close to the start of the exon and has 50% GC.
2. **sgRNA-2 (exon 9):** `GCAGCTTCGAGTACCGCAAC` with PAM `TGG` (positions 41–60).
   Targeting the last exon makes sure that all isoforms are hit, because exon 9 is
   present in both isoform a and isoform b.

**Validation plan**

- Transduce HEK293T with each lentiCRISPRv2 construct and select with puromycin
  (2 µg/mL) for 3–4 days.
- Extract RNA and measure *SLC99A1* mRNA by qPCR; a reduction of more than 70% indicates
  a successful knockout.
- Optionally confirm by western blot.
"""
        ),
    },
    {
        "id": "T03-borealis",
        "task_id": "T03",
        "model": MODELS["borealis"],
        "text": md(
            """
### Proposed guides

| guide | exon | protospacer (5′→3′) | PAM | GC |
|---|---|---|---|---|
| sg1 | 2 | GCTGACCGTGATCAGCTACG | AGG | 60% |
| sg2 | 3 | GACCTGCTCATCGCCGTGCA | GGG | 65% |

Both targets are in early exons, so frameshift indels should produce a truncated
protein and nonsense-mediated decay. Both have an NGG PAM on the plus strand and
moderate GC content. Using two guides in different exons lowers the chance that a
single off-target effect explains the phenotype.

### Validation

1. Check both guides in CRISPOR for predicted off-target sites.
2. After puromycin selection, amplify the target region and run a T7 endonuclease I
   assay to estimate editing efficiency; confirm by Sanger sequencing with ICE analysis.
3. Derive single-cell clones and confirm loss of SLC99A1 protein by western blot.
4. Keep a non-targeting sgRNA control through the whole process.
"""
        ),
    },
    {
        "id": "T03-cobalt",
        "task_id": "T03",
        "model": MODELS["cobalt"],
        "text": md(
            """
### Where to cut

- **Exon 2** is early and present in both isoforms; a frameshift there should produce a
  premature stop far upstream of the last exon junction and trigger NMD of both
  transcripts.
- **Exon 3** is a trap: it is 141 bp (47 codons), so isoform b, which skips it, stays in
  frame. Cells could lose isoform a and still make isoform b.
- **Exon 9** is the last coding exon: indels there escape NMD and can leave a C-terminally
  truncated, possibly functional protein.

### Guides (both in exon 2, plus strand)

| guide | position in exon 2 | protospacer (5′→3′) | PAM | GC | note |
|---|---|---|---|---|---|
| sgA | 73–92 | GCTGACCGTGATCAGCTACG | AGG | 60% | starts with G: fine for U6 |
| sgB | 132–151 | TCAACGCCATCTTCGGAGCC | TGG | 60% | add a 5′ G (gTCAACG…) for U6 |

I avoided the guide at positions 22–41 (`GATTTTCCAG…`): its TTTT run would terminate
U6/Pol III transcription. Both chosen guides should still be checked genome-wide in
CRISPOR or Cas-OFFinder; discard either if it has off-targets with ≤2 mismatches in
exons.

### Validation

1. **Pools:** amplicon PCR around each cut site, Sanger sequencing and ICE/TIDE to
   estimate the indel and frameshift fraction.
2. **Clones:** single-cell clones, then amplicon NGS (or TOPO cloning) to genotype every
   allele; HEK293T is hypotriploid, so expect up to three or more alleles and accept
   only clones in which all alleles are frameshifted.
3. **Protein:** western blot with an antibody validated against an over-expression or
   siRNA control, ideally raised against an epitope downstream of exon 2.
4. **Specificity:** at least two clones from each guide, a non-targeting sgRNA control
   carried in parallel, sequencing of the top predicted off-target sites, and a rescue
   with an sgRNA-resistant cDNA for the key phenotype.

qPCR alone is not enough: NMD is often incomplete, and an edited transcript can still be
detected.
"""
        ),
    },
]

T03_TRUTH: dict[str, dict[str, Any]] = {
    "T03-atlas": {
        "met": "c2 c7 c15 c16 c17",
        "notes": {
            "c1": "One guide in exon 2, the other in exon 9.",
            "c2": "Both quoted protospacers match the FASTA and are followed by NGG.",
            "c7": "Quotes 50% GC for sgRNA-1.",
            "c5": "sgRNA-1 contains TTTT.",
            "c15": "sgRNA-1 GATTTTCCAG… has a TTTT run.",
            "c16": "sgRNA-2 is in exon 9, the last coding exon.",
            "c17": "qPCR mRNA reduction is the main criterion for knockout.",
            "c10": "Western blot is only 'optional'.",
        },
    },
    "T03-borealis": {
        "met": "c2 c5 c7 c8 c9 c10 c12 c13 c14",
        "notes": {
            "c1": "sg2 is in exon 3, which isoform b skips.",
            "c3": "Mentions NMD for early exons but not the last-exon escape.",
            "c4": "Does not notice that exon 3 is in-frame (141 bp).",
            "c11": "Single-cell clones, but nothing about multiple alleles in HEK293T.",
            "c12": "Two guides in different exons.",
        },
    },
    "T03-cobalt": {
        "met": "c1 c2 c3 c4 c5 c6 c7 c8 c9 c10 c11 c12 c13 c14",
        "notes": {
            "c4": "Explicitly notes 141 bp = 47 codons.",
            "c6": "Adds a 5′ G to sgB.",
            "c11": "Mentions hypotriploidy and genotyping all alleles.",
        },
    },
}

# --------------------------------------------------------------------------------------
# T04 — scientific reasoning, neuroscience (no artifact)
# --------------------------------------------------------------------------------------

T04: dict[str, Any] = {
    "id": "T04",
    "workflow": "scientific reasoning",
    "domain": "neuroscience",
    "answer_format": "free text",
    "tags": ["synaptic transmission", "electrophysiology", "presynaptic", "interpretation"],
    "metadata": {"author": AUTHOR, "difficulty": "postdoc", "estimated_minutes": 15},
    "artifacts": [],
    "prompt": md(
        """
## Release probability or synapse number?

In DIV14 cultured rat hippocampal neurons, lentiviral shRNA knockdown of a presynaptic
scaffold protein (call it P; ~75% knockdown by western blot) gave these results,
compared with a scrambled shRNA:

| measurement | scrambled | shRNA-P | statistics |
|---|---|---|---|
| mEPSC frequency (Hz) | 3.1 ± 0.3 | 1.7 ± 0.2 | p < 0.001 |
| mEPSC amplitude (pA) | 18.2 ± 0.9 | 17.6 ± 1.0 | n.s. |
| evoked EPSC amplitude (nA) | 2.4 ± 0.2 | 1.7 ± 0.2 | p = 0.01 |
| paired-pulse ratio, 50 ms | 1.45 ± 0.06 | 1.48 ± 0.07 | n.s. |
| synapsin-1/PSD-95 puncta per 10 µm dendrite | 6.8 ± 0.4 | 4.1 ± 0.3 | p < 0.001 |

Electrophysiology: 24 and 22 cells from 3 independent cultures; imaging: 30 dendrites
per condition from the same cultures. Mean ± SEM, t-tests on cells.

A rotation student concluded: **"P controls presynaptic release probability."** Is that
conclusion justified? What is the most parsimonious interpretation, and which experiments
would distinguish the alternatives?
"""
    ),
    "rubric": [
        crit(
            "c1",
            10,
            "Concludes that the data argue against a primary change in release probability, "
            "mainly because the paired-pulse ratio is unchanged.",
            ACC,
            "skill:data-interpretation",
        ),
        crit(
            "c2",
            8,
            "Proposes fewer synapses (or fewer functional release sites) as the most "
            "parsimonious explanation, matching the ~40% drop in puncta to the ~45% drop in "
            "mEPSC frequency.",
            REAS,
            "skill:data-interpretation",
        ),
        crit(
            "c3",
            5,
            "Explains that the unchanged mEPSC amplitude argues against a postsynaptic "
            "change in quantal size.",
            REAS,
            "skill:domain-knowledge",
        ),
        crit(
            "c4",
            4,
            "Notes that the ~30% smaller evoked EPSC is consistent with fewer release sites "
            "(N) at unchanged release probability.",
            REAS,
            "skill:data-interpretation",
        ),
        crit(
            "c5",
            4,
            "Raises presynaptically silent synapses (puncta present but not releasing) as an "
            "alternative or complementary explanation.",
            REAS,
            "skill:domain-knowledge",
            ambiguous=True,
        ),
        crit(
            "c6",
            5,
            "Proposes an experiment that measures release per bouton (e.g. "
            "synaptophysin-pHluorin, FM dye uptake, iGluSnFR imaging).",
            COMP,
            "skill:experimental-design",
        ),
        crit(
            "c7",
            4,
            "Proposes a direct estimate of release probability (e.g. MK-801 progressive "
            "block of NMDA EPSCs, variance–mean analysis).",
            COMP,
            "skill:experimental-design",
        ),
        crit(
            "c8",
            4,
            "Proposes a rescue with an shRNA-resistant P and/or a second independent shRNA.",
            COMP,
            "skill:experimental-design",
        ),
        crit(
            "c9",
            3,
            "Suggests sparse or mosaic knockdown to test whether the effect is presynaptic "
            "and cell-autonomous.",
            COMP,
            "skill:experimental-design",
            ambiguous=True,
        ),
        crit(
            "c10",
            3,
            "Notes possible confounds such as neuronal health, dendritic arbor size or "
            "culture density after lentiviral knockdown.",
            REAS,
        ),
        crit(
            "c11",
            2,
            "Notes that cells are nested in only 3 cultures and suggests an analysis that "
            "accounts for it (culture-level means or a mixed model).",
            REAS,
            "skill:statistics",
            ambiguous=True,
        ),
        crit(
            "c12",
            -8,
            "Agrees that P controls release probability.",
            ACC,
            "skill:data-interpretation",
        ),
        crit(
            "c13",
            -4,
            "Misstates a reported result (e.g. says the paired-pulse ratio increased "
            "significantly).",
            ACC,
        ),
    ],
}

T04_RESPONSES: list[dict[str, Any]] = [
    {
        "id": "T04-atlas",
        "task_id": "T04",
        "model": MODELS["atlas"],
        "text": md(
            """
Yes, the conclusion is reasonable. A reduction in mEPSC frequency with no change in
amplitude is the classic signature of a presynaptic defect, and the increase in
paired-pulse ratio (1.45 → 1.48) confirms that release probability is lower, because
synapses with low release probability facilitate more. The smaller evoked EPSC fits
with the same picture.

The lower puncta density probably reflects the reduced synaptic activity, since
synapses that release less glutamate are less stable over time.

Next steps:

- Rescue the phenotype by re-expressing P.
- Measure calcium influx in boutons with a genetically encoded calcium indicator to see
  whether P couples calcium channels to release sites.
"""
        ),
    },
    {
        "id": "T04-borealis",
        "task_id": "T04",
        "model": MODELS["borealis"],
        "text": md(
            """
**Not justified as stated.** The data point to fewer synapses rather than a lower release
probability (Pr).

1. **PPR is unchanged** (1.45 vs 1.48, n.s.). A Pr decrease would normally raise the
   paired-pulse ratio, so Pr at the remaining synapses looks normal.
2. **mEPSC frequency falls ~45% and puncta density falls ~40%.** The two numbers match:
   fewer synapses give fewer spontaneous events.
3. **mEPSC amplitude is unchanged**, so quantal size and postsynaptic receptors look
   normal.
4. **Evoked EPSC −30%** is what you expect from a smaller number of release sites (N)
   with the same Pr.

A variant of this: some boutons may still be there but be presynaptically silent, which
would lower frequency without changing PPR at the active ones.

**Experiments to tell these apart**

- **Release per bouton:** synaptophysin-pHluorin or FM1-43 loading to measure the
  fraction of active boutons and their release.
- **Pr directly:** progressive block of NMDA-receptor EPSCs by MK-801.
- **Specificity:** rescue with an shRNA-resistant P and a second shRNA.
- **Cell autonomy:** sparse transfection so that a knockdown axon contacts a wild-type
  dendrite.
- **Confounds:** check dendritic length, neuronal survival and culture density after
  knockdown.

Statistically, n is really 3 cultures; analyse with culture as a random effect.
"""
        ),
    },
    {
        "id": "T04-cobalt",
        "task_id": "T04",
        "model": MODELS["cobalt"],
        "text": md(
            """
The conclusion does not follow. The most parsimonious reading is a loss of synapses
(fewer release sites) rather than a change in release probability:

- Paired-pulse ratio is unchanged (1.45 vs 1.48); a lower Pr would usually increase it.
- mEPSC frequency drops by ~45% and synapsin/PSD-95 puncta by ~40%, which is close enough
  to explain the frequency change by synapse number alone.
- mEPSC amplitude is unchanged, which argues against a postsynaptic change.

**What I would do next**

1. Image synaptophysin-pHluorin responses to field stimulation to count active boutons
   and measure release per bouton.
2. Estimate Pr with the MK-801 progressive-block assay.
3. Confirm specificity with a rescue construct resistant to the shRNA.

One caveat: lentiviral knockdown at this level could affect neuronal health or dendrite
growth; compare dendritic length and cell density between conditions.
"""
        ),
    },
]

T04_TRUTH: dict[str, dict[str, Any]] = {
    "T04-atlas": {
        "met": "c3 c12 c13",
        "notes": {
            "c1": "Argues for a release-probability defect.",
            "c3": "Reads the unchanged amplitude as pointing away from a postsynaptic change.",
            "c12": "Explicitly agrees with the student.",
            "c13": "Calls 1.45 → 1.48 an increase that confirms lower Pr; it is n.s.",
            "c8": "Re-expressing P without an shRNA-resistant construct is not a rescue.",
            "c2": "Treats lower puncta density as a consequence, not the cause.",
        },
    },
    "T04-borealis": {
        "met": "c1 c2 c3 c4 c5 c6 c7 c8 c9 c10 c11",
        "notes": {
            "c5": "Mentions presynaptically silent boutons.",
            "c9": "Sparse transfection, knockdown axon onto wild-type dendrite.",
            "c11": "Says n is really 3 cultures.",
        },
    },
    "T04-cobalt": {
        "met": "c1 c2 c3 c6 c7 c8 c10",
        "notes": {
            "c4": "Does not discuss the evoked EPSC.",
            "c5": "No mention of silent synapses.",
            "c9": "No sparse/mosaic experiment.",
            "c11": "No comment on nesting within cultures.",
        },
    },
}

# --------------------------------------------------------------------------------------
# T05 — analysis, structural biology (PDB + SDF)
# --------------------------------------------------------------------------------------

T05: dict[str, Any] = {
    "id": "T05",
    "workflow": "analysis",
    "domain": "structural biology",
    "answer_format": "free text",
    "tags": ["crystallography", "ligand validation", "structure-based design"],
    "metadata": {"author": AUTHOR, "difficulty": "postdoc", "estimated_minutes": 25},
    "artifacts": [
        {
            "path": "artifacts/T05/rcx_gxl2_model.pdb",
            "title": "Model of RCX (chain A) + peptide PX (chain B) + GXL-2 (PDB)",
        },
        {"path": "artifacts/T05/gxl2.sdf", "title": "GXL-2 ligand pose (SDF)"},
    ],
    "prompt": md(
        """
## How much should we trust this ligand pose?

A collaborator sent us a crystal-structure model (attached `rcx_gxl2_model.pdb`; the
ligand is also attached as `gxl2.sdf`) of our compound GXL-2 bound between our receptor
fragment RCX (chain A, a helix, residues 40–55) and its peptide partner PX (chain B,
residues 1–7). They propose to start structure-based design of analogs from this model.

1. List the protein residues that have any heavy atom within 4.0 Å of the ligand.
2. Based only on what is in the file, how much do you trust the ligand pose? Cite the
   relevant numbers.
3. What would you ask the collaborator for, or check yourself, before starting design?
"""
    ),
    "rubric": [
        crit(
            "c1",
            8,
            "Lists the six protein residues within 4.0 Å of the ligand (A: Ala47, Phe50, "
            "Leu51; B: Thr3, Leu4, Val5) with at most one missing or extra residue.",
            ACC,
            "skill:structure-analysis",
        ),
        crit(
            "c2",
            6,
            "Notes the ligand's partial occupancy (0.50).",
            ACC,
            "skill:structure-validation",
        ),
        crit(
            "c3",
            6,
            "Notes that the ligand B-factors (about 84–95 Å²) are far higher than those of "
            "the contacting residues (about 25–45 Å²), suggesting weak density or a mobile or "
            "partly absent ligand.",
            ACC,
            "skill:structure-validation",
        ),
        crit(
            "c4",
            4,
            "Notes that at 2.85 Å resolution the orientation of a small, nearly planar "
            "ligand is poorly defined (e.g. the ring could be flipped).",
            REAS,
            "skill:structure-validation",
            ambiguous=True,
        ),
        crit(
            "c5",
            3,
            "Notes the gap between R-free (0.298) and R-work (0.231).",
            ACC,
            "skill:structure-validation",
            ambiguous=True,
        ),
        crit(
            "c6",
            6,
            "Asks for structure factors and maps, including an unbiased omit (or polder) "
            "map for the ligand.",
            COMP,
            "skill:structure-validation",
        ),
        crit(
            "c7",
            3,
            "Suggests checking ligand fit and geometry statistics (e.g. RSCC/RSR, the wwPDB "
            "validation report, ligand strain).",
            COMP,
            "skill:structure-validation",
        ),
        crit(
            "c8",
            3,
            "Notes that the ligand sits at the A/B interface, contacting both the helix and "
            "the peptide, so binding may depend on the peptide being present.",
            REAS,
            "skill:structure-analysis",
        ),
        crit(
            "c9",
            4,
            "Recommends orthogonal confirmation of binding (SPR, ITC, NMR) and/or SAR "
            "consistent with the pose before design.",
            COMP,
            "skill:experimental-design",
        ),
        crit(
            "c10",
            3,
            "Concludes that the pose is a hypothesis, not a sufficient basis for "
            "structure-based design on its own.",
            ACC,
            ambiguous=True,
        ),
        crit(
            "c11",
            2,
            "Answers the three questions in an organized way.",
            COMM,
            ambiguous=True,
        ),
        crit(
            "c12",
            -6,
            "Describes specific hydrogen bonds or salt bridges that the coordinates do not "
            "support (e.g. with residues that are not within 4 Å).",
            ACC,
            "skill:structure-analysis",
        ),
        crit(
            "c13",
            -5,
            "Treats the model as reliable enough to start analog design without reservations.",
            ACC,
            SAFE,
        ),
    ],
}

T05_RESPONSES: list[dict[str, Any]] = [
    {
        "id": "T05-atlas",
        "task_id": "T05",
        "model": MODELS["atlas"],
        "text": md(
            """
The ligand GXL-2 sits in a well-defined pocket on the surface of chain A. Key
interactions:

- The phenol OH forms a hydrogen bond with the side chain of **Glu49**.
- The amide carbonyl accepts a hydrogen bond from the **Lys46** NZ amine.
- The chlorine fills a hydrophobic pocket formed by **Leu44** and **Phe50**.
- The N-methyl group packs against **Ala47**.

The structure is of good quality (R-free 0.298) and the ligand is clearly placed in the
binding site, so it is a solid starting point for design. I would start by growing the
molecule from the N-methyl group towards the solvent and replacing the chlorine with a
bromine to strengthen the hydrophobic contact.
"""
        ),
    },
    {
        "id": "T05-borealis",
        "task_id": "T05",
        "model": MODELS["borealis"],
        "text": md(
            """
**1. Residues within 4 Å of the ligand:** A Leu43, A Ala47, A Leu51, B Leu4, B Val5.

**2. Confidence in the pose: moderate.** The ligand was refined at 0.50 occupancy, and
its B-factors (~90 Å²) are much higher than those of the protein, which suggests either
partial binding or weak density. The resolution (2.85 Å) is acceptable for identifying
the binding site but limits the level of detail.

**3. What to request**

- The electron density maps, to check that there is clear density for the ligand
  (ideally an omit map).
- Binding affinity data (ITC or SPR) to confirm the interaction.

If the density is convincing, the model can be used for design.
"""
        ),
    },
    {
        "id": "T05-cobalt",
        "task_id": "T05",
        "model": MODELS["cobalt"],
        "text": md(
            """
### 1. Residues within 4.0 Å of GXL-2

| chain | residue | closest heavy-atom distance (Å) |
|---|---|---|
| A | Ala47 | 3.36 |
| A | Phe50 | 3.95 |
| A | Leu51 | 3.57 |
| B | Thr3 | 3.33 |
| B | Leu4 | 3.32 |
| B | Val5 | 3.65 |

The ligand lies in a groove between the helix (chain A) and the peptide (chain B); half
of the contacts come from the peptide, so the site may not exist without it. Leu43 is
just outside the cutoff (4.1 Å). The only polar contact is the ligand amide N to the
Leu4 backbone carbonyl O (3.5 Å), at best a weak hydrogen bond; everything else is van
der Waals contact.

### 2. How much to trust the pose: not much, yet

- **Occupancy 0.50** for every ligand atom: the refinement supports only half a ligand.
- **B-factors 84–95 Å²** (mean ≈ 90) for the ligand versus ≈ 25–45 Å² for the
  contacting residues. A well-ordered ligand has B-factors close to its surroundings;
  together with the half occupancy this points to weak or partial density.
- **Resolution 2.85 Å**: a small, nearly planar benzamide can be placed flipped (Cl and
  OH swapped, amide rotated) with little change in fit at this resolution.
- REMARK 3: the ligand was built into 2.5σ Fo–Fc density after protein refinement —
  weak evidence on its own.

### 3. Before design

1. Structure factors and maps, including an omit or polder map around the ligand.
2. Ligand fit statistics (RSCC/RSR from a wwPDB validation report) and ligand geometry.
3. Refinement of alternative poses (flipped ring) and of occupancy to see whether the
   data discriminate between them.
4. Orthogonal binding data: SPR or ITC with and without the peptide, since both chains
   form the site.
5. A small SAR set that tests the pose (e.g. removing the Cl).

Until then I would treat the pose as a hypothesis, not as a design template.
"""
        ),
    },
]

T05_TRUTH: dict[str, dict[str, Any]] = {
    "T05-atlas": {
        "met": "c12 c13",
        "notes": {
            "c1": "Names Glu49, Lys46 and Leu44, which are not within 4 Å; misses chain B.",
            "c12": "Glu49 and Lys46 are 5 Å or more from the ligand; the H-bonds are invented.",
            "c13": "Calls it a solid starting point for design.",
            "c2": "Occupancy is not mentioned.",
        },
    },
    "T05-borealis": {
        "met": "c2 c3 c6 c9 c11",
        "notes": {
            "c1": "Includes Leu43 (4.1 Å) and misses Phe50 and Thr3.",
            "c4": "Says the resolution 'limits detail' without the orientation problem.",
            "c10": "Makes design conditional on the density only.",
        },
    },
    "T05-cobalt": {
        "met": "c1 c2 c3 c4 c6 c7 c8 c9 c10 c11",
        "notes": {
            "c1": "Table lists the six residues with distances.",
            "c5": "R-work and R-free are not discussed.",
            "c8": "Groove between helix and peptide; half the contacts from chain B.",
        },
    },
}

# --------------------------------------------------------------------------------------
# T06 — validation and operations, microbiology (XLSX)
# --------------------------------------------------------------------------------------

T06: dict[str, Any] = {
    "id": "T06",
    "workflow": "validation and operations",
    "domain": "microbiology",
    "answer_format": "free text",
    "tags": ["antimicrobial susceptibility testing", "quality control", "root cause"],
    "metadata": {"author": AUTHOR, "difficulty": "senior scientist", "estimated_minutes": 25},
    "artifacts": [
        {
            "path": "artifacts/T06/ast_qc_log.xlsx",
            "title": "Broth microdilution QC log, media lots and clinical runs (XLSX)",
        }
    ],
    "prompt": md(
        """
## Can the results we released stand?

Our clinical microbiology lab runs broth microdilution MICs. The attached workbook
(`ast_qc_log.xlsx`) has three sheets: the daily QC log for our reference strains
(`QC_log`), the medium lots (`Media_lots`) and the clinical runs (`Clinical_runs`).

The lab supervisor asks: are the results released on runs R12–R20 valid, and what should
we do now? Review the workbook and give a short assessment followed by a
corrective-action plan.
"""
    ),
    "rubric": [
        crit(
            "c1",
            10,
            "Identifies that the P. aeruginosa ATCC 27853 gentamicin and amikacin QC results "
            "are above range on several runs from R13 on, after the switch to lot L2417 at "
            "R12.",
            ACC,
            "skill:data-interpretation",
        ),
        crit(
            "c2",
            8,
            "Identifies double cation supplementation (SOP-114 supplement added to an "
            "already cation-adjusted lot) as the likely root cause.",
            REAS,
            "skill:root-cause-analysis",
        ),
        crit(
            "c3",
            5,
            "Explains that excess Ca2+/Mg2+ antagonises aminoglycoside activity against "
            "P. aeruginosa, raising MICs.",
            REAS,
            "skill:domain-knowledge",
        ),
        crit(
            "c4",
            4,
            "Notes that the E. coli QC results, although in range, shifted upward after the "
            "lot change, which is consistent with the same cause and is not reassuring.",
            REAS,
            "skill:data-interpretation",
            ambiguous=True,
        ),
        crit(
            "c5",
            4,
            "Notes that no QC was recorded on R16 although clinical results were released.",
            ACC,
            "skill:data-interpretation",
        ),
        crit(
            "c6",
            8,
            "Recommends reviewing or recalling the aminoglycoside results released since QC "
            "went out of range and issuing corrected reports to the clinicians concerned.",
            SAFE,
            "skill:quality-management",
        ),
        crit(
            "c7",
            5,
            "Recommends retesting the stored affected isolates in correctly prepared medium "
            "with QC in range.",
            COMP,
            "skill:quality-management",
        ),
        crit(
            "c8",
            4,
            "Recommends stopping the supplement for the pre-adjusted lot (or quarantining the "
            "lot) and correcting SOP-114.",
            COMP,
            "skill:quality-management",
        ),
        crit(
            "c9",
            3,
            "Recommends documenting the event as a nonconformance with root-cause analysis "
            "and CAPA.",
            COMP,
            "skill:quality-management",
        ),
        crit(
            "c10",
            3,
            "Recommends verifying new medium lots (CoA review and QC) before they are used "
            "for patient testing.",
            COMP,
            "skill:quality-management",
        ),
        crit(
            "c11",
            3,
            "Mentions that other cation-sensitive agents tested in the same medium may also "
            "be affected.",
            COMP,
            "skill:domain-knowledge",
            ambiguous=True,
        ),
        crit(
            "c12",
            2,
            "Keeps the answer short and actionable (assessment, then numbered actions).",
            COMM,
            ambiguous=True,
        ),
        crit(
            "c13",
            -10,
            "Concludes that the R12–R20 results can stand because most QC results were in range.",
            SAFE,
            "skill:quality-management",
        ),
        crit(
            "c14",
            -5,
            "Blames the QC strain (e.g. only recommends a fresh QC stock) without addressing "
            "the medium.",
            REAS,
            "skill:root-cause-analysis",
        ),
        crit(
            "c15",
            -3,
            "Misstates the QC ranges, the size of the deviation or its direction.",
            ACC,
        ),
    ],
}

T06_RESPONSES: list[dict[str, Any]] = [
    {
        "id": "T06-atlas",
        "task_id": "T06",
        "model": MODELS["atlas"],
        "text": md(
            """
Overall the QC performance is acceptable. About 85% of QC results were within range, and
the E. coli ATCC 25922 results were in range on every run.

The P. aeruginosa ATCC 27853 results that were out of range were only one doubling
dilution above the upper limit, which is within the normal variability of broth
microdilution (±1 dilution). The released results can therefore stand.

Recommended actions:

1. The QC strain may have drifted after repeated subculture. Prepare a fresh working stock
   of P. aeruginosa ATCC 27853 from the frozen master stock.
2. Continue monitoring QC daily and escalate if three consecutive runs are out of range.
"""
        ),
    },
    {
        "id": "T06-borealis",
        "task_id": "T06",
        "model": MODELS["borealis"],
        "text": md(
            """
### Assessment

- **P. aeruginosa ATCC 27853** QC for gentamicin (0.5–2 µg/mL) and amikacin (1–4 µg/mL)
  was above range on R13, R14 and R17–R20. This coincides with the switch to medium lot
  L2417 on R12.
- **E. coli ATCC 25922** QC stayed within range for both agents.
- **R16** has no QC recorded.

Aminoglycoside activity against *P. aeruginosa* is sensitive to the divalent cation
content of the medium, so the new lot may have a different cation content or be
defective.

### Actions

1. Stop using lot L2417 and contact the supplier about the lot.
2. Review the aminoglycoside results for *P. aeruginosa* reported since R13 and issue
   corrected reports to the requesting clinicians where results change.
3. Retest the stored isolates once QC is back in range with a different lot.
4. Repeat QC daily until five consecutive runs are in range.
"""
        ),
    },
    {
        "id": "T06-cobalt",
        "task_id": "T06",
        "model": MODELS["cobalt"],
        "text": md(
            """
## Assessment: aminoglycoside results from R13 onward are not valid; review R12–R20

**What the workbook shows**

- *P. aeruginosa* ATCC 27853: gentamicin (range 0.5–2 µg/mL) and amikacin (1–4 µg/mL)
  are above range on R13, R14 and R17–R20 (gentamicin 4–8, amikacin 8); on R12 and R15
  they sit at the top of the range.
- R16 has no QC recorded for any strain, yet its clinical results were released.
- *E. coli* ATCC 25922 stays in range, but gentamicin moved from 0.25–0.5 to mostly
  1 µg/mL and ciprofloxacin from 0.004–0.008 to 0.008–0.016 µg/mL. The whole system shifted upward;
  "still in range" is not reassuring here.
- Every change starts at R12, the first run with medium lot L2417.

**Likely root cause: double cation adjustment.** L2417 is already cation-adjusted CAMHB
(CoA: Ca2+ 23.4 mg/L, Mg2+ 11.2 mg/L), but the SOP-114 supplement, written for the
unadjusted MHB lot L2309, was still added, roughly doubling Ca2+ and Mg2+. Excess
divalent cations compete with aminoglycosides at the *P. aeruginosa* outer membrane and
reduce their uptake, so MICs rise.

**Patient impact.** 69 isolates were tested on R12–R20, 14 of them *P. aeruginosa*,
and aminoglycoside results were reported for all runs. Falsely high MICs mainly create
false resistance, but any result near a breakpoint is unreliable.

## Corrective actions

1. Stop adding the SOP-114 supplement to L2417 today; quarantine the prepared medium.
2. Hold aminoglycoside reporting until QC is in range with correctly prepared medium.
3. Review all results released on R12–R20 (aminoglycosides and *P. aeruginosa* first,
   plus everything from R16); retest stored isolates and send corrected reports, with
   a call to the clinicians of affected patients.
4. Record a nonconformance with root-cause analysis and CAPA; revise SOP-114 to say
   which products need supplementation; require CoA review and QC of every new lot
   before patient testing.
5. Find out why out-of-range QC on R13 did not stop reporting ("repeated next run") and
   why R16 ran without QC.
"""
        ),
    },
]

T06_TRUTH: dict[str, dict[str, Any]] = {
    "T06-atlas": {
        "met": "c13 c14 c15",
        "notes": {
            "c1": "Mentions out-of-range P. aeruginosa results but not the lot change.",
            "c13": "'The released results can therefore stand.'",
            "c14": "Only action on the cause is a fresh QC stock.",
            "c15": "Gentamicin 8 µg/mL on R18 is two dilutions above range, not one.",
            "c6": "No review of patient results.",
        },
    },
    "T06-borealis": {
        "met": "c1 c3 c5 c6 c7 c12",
        "notes": {
            "c2": "Suspects the lot's cation content but misses the double supplementation.",
            "c4": "Says E. coli stayed in range without noticing the upward shift.",
            "c8": "Quarantines the lot but says nothing about SOP-114.",
            "c6": "Reviews P. aeruginosa aminoglycoside results since R13, corrected reports.",
        },
    },
    "T06-cobalt": {
        "met": "c1 c2 c3 c4 c5 c6 c7 c8 c9 c10 c12",
        "notes": {
            "c2": "SOP-114 supplement added to pre-adjusted CAMHB lot L2417.",
            "c11": "Other cation-sensitive agents are not considered.",
            "c4": "Points out the upward E. coli shift after R12.",
        },
    },
}

# --------------------------------------------------------------------------------------
# T07 — translation, pharmacology (URL reference)
# --------------------------------------------------------------------------------------

T07: dict[str, Any] = {
    "id": "T07",
    "workflow": "translation",
    "domain": "pharmacology",
    "answer_format": "free text",
    "tags": ["first-in-human", "MABEL", "immunomodulator", "dose calculation", "safety"],
    "metadata": {"author": AUTHOR, "difficulty": "postdoc", "estimated_minutes": 30},
    "artifacts": [
        {
            "url": "https://www.fda.gov/media/72309/download",
            "title": "FDA guidance: estimating the maximum safe starting dose in initial "
            "clinical trials in adult healthy volunteers (2005)",
        }
    ],
    "prompt": md(
        """
## First-in-human starting dose for an agonist antibody

GCX-301 is a humanised IgG4 (S228P) **agonist** antibody (~150 kDa) against a T-cell
co-stimulatory receptor of the TNF-receptor superfamily. The sponsor proposes a
single-ascending-dose first-in-human study in healthy volunteers.

Data package:

- K<sub>D</sub> to the human receptor 2 nM (SPR); to the cynomolgus receptor 3 nM; no
  binding to the mouse receptor.
- Human PBMC assay (soluble antibody, 24 h): EC50 for IL-2 release 0.8 µg/mL, EC10
  0.05 µg/mL.
- Cynomolgus 4-week GLP toxicology (weekly IV at 1, 3 and 10 mg/kg): NOAEL 10 mg/kg (a
  transient IL-6 increase at 10 mg/kg was judged non-adverse).

Propose a starting dose. Show (a) a NOAEL-based calculation and (b) a MABEL-based
calculation, say which one you would use and why, and list the key safety measures for
the first cohorts. The FDA starting-dose guidance is linked for reference.
"""
    ),
    "rubric": [
        crit(
            "c1",
            10,
            "Recommends a MABEL-based starting dose because GCX-301 is an immune-activating "
            "agonist, rather than a NOAEL-based one.",
            ACC,
            SAFE,
        ),
        crit(
            "c2",
            6,
            "Computes the concentration for ~10% receptor occupancy from KD = 2 nM "
            "(C = KD·RO/(1−RO) ≈ 0.22 nM ≈ 33 ng/mL for a 150 kDa antibody) (partial: right "
            "approach with a numerical or unit slip).",
            ACC,
            "skill:pharmacokinetics",
            levels=3,
        ),
        crit(
            "c3",
            5,
            "Converts that concentration to a dose using the plasma volume (~40–50 mL/kg), "
            "giving about 1–2 µg/kg.",
            ACC,
            "skill:pharmacokinetics",
        ),
        crit(
            "c4",
            4,
            "Uses the PBMC EC10 (0.05 µg/mL, ≈2 µg/kg) as a second MABEL anchor and takes the "
            "more conservative value.",
            REAS,
            "skill:pharmacokinetics",
        ),
        crit(
            "c5",
            4,
            "Computes a NOAEL-based MRSD correctly (mg/kg scaling for a mAb: HED 10 mg/kg, "
            "MRSD 1 mg/kg with a 10-fold factor; body-surface-area scaling would give "
            "0.32 mg/kg).",
            ACC,
            "skill:pharmacokinetics",
        ),
        crit(
            "c6",
            4,
            "Explains why the NOAEL-based dose (hundreds of times higher) is misleading for "
            "an agonist, e.g. species differences in receptor expression or function, with "
            "the TGN1412 precedent.",
            REAS,
            "skill:domain-knowledge",
        ),
        crit(
            "c7",
            5,
            "Questions whether healthy volunteers are appropriate for an immune agonist and "
            "suggests considering patients.",
            SAFE,
            "skill:clinical-design",
        ),
        crit(
            "c8",
            5,
            "Recommends sentinel dosing and staggered dosing within cohorts with adequate "
            "observation between subjects.",
            SAFE,
            "skill:clinical-design",
        ),
        crit(
            "c9",
            3,
            "Recommends slow infusion and readiness for cytokine release syndrome "
            "(e.g. tocilizumab, intensive care access).",
            SAFE,
            "skill:clinical-design",
        ),
        crit(
            "c10",
            3,
            "Recommends cytokine and receptor-occupancy/PD monitoring to guide escalation.",
            COMP,
            "skill:clinical-design",
        ),
        crit(
            "c11",
            3,
            "Recommends conservative escalation steps (e.g. half-log or smaller at low doses).",
            COMP,
            "skill:clinical-design",
        ),
        crit(
            "c12",
            2,
            "Comments on the IgG4 S228P format (Fc-receptor engagement or Fab-arm exchange) "
            "as relevant to agonist activity.",
            COMP,
            "skill:domain-knowledge",
            ambiguous=True,
        ),
        crit(
            "c13",
            2,
            "Notes that similar cynomolgus affinity (3 nM) supports the species' relevance "
            "but does not guarantee similar receptor expression or signalling.",
            REAS,
            "skill:domain-knowledge",
            ambiguous=True,
        ),
        crit(
            "c14",
            3,
            "Shows the calculation steps with units.",
            COMM,
        ),
        crit(
            "c15",
            2,
            "States the recommended starting dose as a clear number with units.",
            COMM,
            ambiguous=True,
        ),
        crit(
            "c16",
            -15,
            "Recommends starting at or near the NOAEL-based MRSD (0.1 mg/kg or more).",
            SAFE,
        ),
        crit(
            "c17",
            -6,
            "Makes an arithmetic or unit error of 10-fold or more in the MABEL calculation.",
            ACC,
            "skill:pharmacokinetics",
        ),
        crit(
            "c18",
            -4,
            "Applies body-surface-area scaling to the antibody without noting that mg/kg "
            "scaling is recommended for proteins above 100 kDa.",
            ACC,
            "skill:pharmacokinetics",
        ),
    ],
}

T07_RESPONSES: list[dict[str, Any]] = [
    {
        "id": "T07-atlas",
        "task_id": "T07",
        "model": MODELS["atlas"],
        "text": md(
            """
**NOAEL-based dose**

- Cynomolgus NOAEL = 10 mg/kg
- Human equivalent dose (HED) = 10 mg/kg × (12/37) = 3.2 mg/kg
- With a 10-fold safety factor, MRSD = 0.32 mg/kg (≈ 22 mg for a 70 kg adult)

**MABEL**

A MABEL approach based on receptor occupancy would give a much lower dose, but it would
take many cohorts to reach pharmacologically active exposures, which exposes more
volunteers to sub-therapeutic doses.

**Recommendation:** start at 0.3 mg/kg, which is below the MRSD, with sentinel dosing
(one subject dosed 24 h before the rest of the cohort) and standard safety monitoring.
"""
        ),
    },
    {
        "id": "T07-borealis",
        "task_id": "T07",
        "model": MODELS["borealis"],
        "text": md(
            """
### (a) NOAEL-based

HED = 10 mg/kg × (12/37) = 3.2 mg/kg; with a 10-fold safety factor the MRSD is
**0.32 mg/kg**.

### (b) MABEL-based

1. Receptor occupancy: RO = C / (C + KD). For 10% RO, C = KD × 0.1/0.9 = 0.22 nM.
2. 0.22 nM × 150,000 g/mol = 0.33 µg/mL.
3. Dose = 0.33 µg/mL × 40 mL/kg (plasma volume) = **13 µg/kg**.
4. PBMC EC10 = 0.05 µg/mL → 0.05 × 40 = **2 µg/kg**.

### Recommendation

Use the MABEL, because GCX-301 is an agonist and the TGN1412 trial showed that NOAEL-based
doses can be dangerous for such antibodies. Take the lower MABEL estimate:
**2 µg/kg**.

Safety measures: sentinel dosing of one subject per cohort, cytokine monitoring
(IL-6, IFN-γ, TNF) for 48 h after dosing.
"""
        ),
    },
    {
        "id": "T07-cobalt",
        "task_id": "T07",
        "model": MODELS["cobalt"],
        "text": md(
            """
### (a) NOAEL-based MRSD (for comparison only)

For antibodies above 100 kDa the FDA guidance scales by body weight (mg/kg), not body
surface area: HED = 10 mg/kg → MRSD = 10 / 10 = **1 mg/kg** (BSA scaling, 10 × 12/37,
would give 0.32 mg/kg).

### (b) MABEL

| anchor | calculation | concentration | dose (× 40 mL/kg plasma) |
|---|---|---|---|
| 10% receptor occupancy | C = KD·RO/(1−RO) = 2 nM × 0.1/0.9 = 0.22 nM; × 150,000 g/mol | 33 ng/mL | ≈ 1.3 µg/kg |
| PBMC IL-2 release EC10 | measured | 50 ng/mL | ≈ 2 µg/kg |

Taking the more conservative anchor, the MABEL is **≈ 1 µg/kg (about 70–90 µg flat)**,
roughly 750-fold below the NOAEL-based MRSD.

### Which to use

MABEL. GCX-301 is a T-cell agonist: the monkey NOAEL reflects how cynomolgus T cells
respond, and similar affinity (3 vs 2 nM) does not guarantee similar receptor expression
or signalling. The TGN1412 disaster started at a NOAEL-based dose that was 500-fold
below the monkey NOAEL and still caused a cytokine storm.

### Safety measures for the first cohorts

- Reconsider healthy volunteers: for an immune agonist, a patient population may give a
  better benefit–risk balance.
- Sentinel dosing (1 active + 1 placebo) with at least 24–48 h before the rest of the
  cohort; staggered dosing within cohorts.
- Slow IV infusion, a unit with intensive-care access, and a CRS plan (tocilizumab,
  steroids).
- Cytokines (IL-6, IFN-γ, TNF, IL-2) and receptor occupancy on circulating T cells to
  guide escalation.
- Half-log (≈3-fold) or smaller steps at low doses, with PK/PD review before each step.
"""
        ),
    },
]

T07_TRUTH: dict[str, dict[str, Any]] = {
    "T07-atlas": {
        "met": "c5 c8 c14 c15 c16 c18",
        "levels": {"c2": 0},
        "notes": {
            "c1": "Rejects MABEL as too slow and starts at a NOAEL-based dose.",
            "c16": "Recommends 0.3 mg/kg, essentially the NOAEL-based MRSD.",
            "c18": "Uses the 12/37 BSA factor for an antibody without comment.",
            "c5": "BSA arithmetic itself is correct (0.32 mg/kg).",
        },
    },
    "T07-borealis": {
        "met": "c1 c4 c5 c6 c8 c10 c14 c15 c17 c18",
        "levels": {"c2": 1},
        "notes": {
            "c2": "Right formula, but 0.22 nM is 0.033 µg/mL, not 0.33 µg/mL.",
            "c3": "Plasma-volume step is right but the result is 10-fold too high (13 µg/kg).",
            "c17": "0.22 nM × 150,000 g/mol = 0.033 µg/mL; 10-fold error.",
            "c7": "Healthy volunteers not questioned.",
            "c4": "Takes the lower estimate (2 µg/kg from the PBMC EC10).",
        },
    },
    "T07-cobalt": {
        "met": "c1 c3 c4 c5 c6 c7 c8 c9 c10 c11 c13 c14 c15",
        "levels": {"c2": 2},
        "notes": {
            "c2": "0.22 nM ≈ 33 ng/mL shown in the table.",
            "c7": "Suggests reconsidering healthy volunteers.",
            "c12": "The IgG4 S228P format is not discussed.",
        },
    },
}

# --------------------------------------------------------------------------------------
# T08 — scientific communication, genomics (PNG + CSV)
# --------------------------------------------------------------------------------------

T08: dict[str, Any] = {
    "id": "T08",
    "workflow": "scientific communication",
    "domain": "genomics",
    "answer_format": "free text",
    "tags": ["RNA-seq", "volcano plot", "figure legend", "interferon"],
    "metadata": {"author": AUTHOR, "difficulty": "graduate", "estimated_minutes": 15},
    "artifacts": [
        {"path": "artifacts/T08/ifnl1_volcano.png", "title": "Volcano plot, IFN-λ1 vs mock (PNG)"},
        {"path": "artifacts/T08/top_de_genes.csv", "title": "Top 15 genes by adjusted p (CSV)"},
    ],
    "prompt": md(
        """
## Legend and results paragraph for a volcano plot

For our manuscript, please write

- **(a)** a figure legend (at most 120 words) and
- **(b)** a results paragraph (at most 200 words)

for the attached volcano plot (`ifnl1_volcano.png`; the top genes are in
`top_de_genes.csv`).

Details: primary human bronchial epithelial cells (HBEC) from four donors, treated with
IFN-λ1 (100 ng/mL) or mock for 24 h; bulk RNA-seq; DESeq2 with a paired design
(`~ donor + treatment`); 14,000 genes tested after filtering; thresholds |log2FC| ≥ 1
and Benjamini–Hochberg adjusted p < 0.05. Please do not over-interpret.
"""
    ),
    "rubric": [
        crit(
            "c1",
            6,
            "The legend defines both axes (log2 fold change IFN-λ1 vs mock; −log10 "
            "BH-adjusted p-value).",
            COMM,
            "skill:figure-writing",
        ),
        crit(
            "c2",
            6,
            "States the thresholds (|log2FC| ≥ 1, adjusted p < 0.05) and the correct counts "
            "(287 up, 178 down).",
            ACC,
            "skill:data-interpretation",
        ),
        crit(
            "c3",
            4,
            "States the design: four donors, paired analysis with donor in the model, DESeq2.",
            COMP,
            "skill:figure-writing",
        ),
        crit(
            "c4",
            4,
            "Identifies the labelled up-regulated genes as interferon-stimulated genes.",
            ACC,
            "skill:domain-knowledge",
        ),
        crit(
            "c5",
            4,
            "Avoids claims the data cannot support (e.g. antiviral protection, mechanism).",
            ACC,
            "skill:critical-appraisal",
            ambiguous=True,
        ),
        crit(
            "c6",
            3,
            "Respects the word limits (legend ≤ 120 words, paragraph ≤ 200 words).",
            COMM,
            ambiguous=True,
        ),
        crit(
            "c7",
            3,
            "Quotes an effect size for at least one gene that matches the table (e.g. IFIT1 "
            "log2FC 7.9).",
            ACC,
            "skill:data-interpretation",
        ),
        crit(
            "c8",
            2,
            "Explains the colour coding and the dashed threshold lines.",
            COMM,
            "skill:figure-writing",
        ),
        crit(
            "c9",
            -5,
            "Misreports the number of differentially expressed genes or swaps up and down.",
            ACC,
        ),
        crit(
            "c10",
            -4,
            "Uses 'significant' loosely, e.g. for nominal p < 0.05 or for genes that miss the "
            "fold-change threshold.",
            ACC,
            "skill:statistics",
        ),
        crit(
            "c11",
            -3,
            "Calls IFN-λ a type I interferon (it is a type III interferon).",
            ACC,
            "skill:domain-knowledge",
        ),
    ],
}

T08_RESPONSES: list[dict[str, Any]] = [
    {
        "id": "T08-atlas",
        "task_id": "T08",
        "model": MODELS["atlas"],
        "text": md(
            """
**Figure legend.** Volcano plot of gene expression in bronchial epithelial cells after
IFN-λ1 treatment. Significant genes are shown in red and blue.

**Results.** IFN-λ1 treatment significantly changed the expression of 465 genes
(p < 0.05), of which 178 were upregulated and 287 downregulated. The most strongly
induced genes included IFIT1, MX1 and ISG15. These results show that IFN-λ1 protects
airway epithelial cells against viral infection by inducing an antiviral gene program.
"""
        ),
    },
    {
        "id": "T08-borealis",
        "task_id": "T08",
        "model": MODELS["borealis"],
        "text": md(
            """
**Figure 3. IFN-λ1 induces an interferon-stimulated gene signature in airway
epithelium.** Volcano plot comparing IFN-λ1-treated (100 ng/mL, 24 h) with mock-treated
primary bronchial epithelial cells. The x-axis shows the log2 fold change and the y-axis
the −log10 adjusted p-value. Red and blue points mark genes up- and down-regulated with
|log2FC| ≥ 1 and adjusted p < 0.05; dashed lines indicate these thresholds. Selected
interferon-stimulated genes are labelled.

**Results.** IFN-λ1 is a type I interferon that signals through the IFNLR1/IL10RB
receptor complex, which is expressed mainly on epithelial cells. Treatment of primary
bronchial epithelial cells with IFN-λ1 changed the expression of 465 genes (287 up, 178
down; |log2FC| ≥ 1, adjusted p < 0.05). The most strongly induced genes were classical
interferon-stimulated genes such as IFIT1, MX1, ISG15, RSAD2 and OAS1, along with the
chemokine CXCL10. These data indicate that airway epithelial cells respond robustly to
IFN-λ1.
"""
        ),
    },
    {
        "id": "T08-cobalt",
        "task_id": "T08",
        "model": MODELS["cobalt"],
        "text": md(
            """
**(a) Figure legend**

**Figure X. Transcriptional response of primary human bronchial epithelial cells to
IFN-λ1.** Volcano plot of differential expression between IFN-λ1-treated (100 ng/mL,
24 h) and mock-treated cells from the same four donors (DESeq2, paired design
~ donor + treatment; 14,000 genes tested). x-axis, log2 fold change (IFN-λ1 vs mock);
y-axis, −log10 Benjamini–Hochberg-adjusted p-value. Dashed lines mark |log2FC| = 1 and
adjusted p = 0.05. Red, up-regulated genes (n = 287); blue, down-regulated genes
(n = 178); grey, genes below either threshold. Selected interferon-stimulated genes are
labelled.

**(b) Results**

To define the epithelial response to type III interferon, we compared IFN-λ1-treated and
mock-treated primary bronchial epithelial cells from four donors (Fig. X). At
|log2 fold change| ≥ 1 and BH-adjusted p < 0.05, 465 genes were differentially
expressed: 287 up-regulated and 178 down-regulated. The strongest changes were in
canonical interferon-stimulated genes (ISGs), including IFIT1 (log2FC 7.9,
adjusted p = 1.4 × 10⁻⁵⁸), MX1 (6.1), ISG15 (5.4), IFI44L, RSAD2 and OAS1, and the
chemokine CXCL10. Down-regulated genes showed smaller fold changes and weaker
significance. Thus, bronchial epithelial cells mount a robust ISG response to IFN-λ1 at
24 h; whether this response protects against viral infection was not tested here.
"""
        ),
    },
]

T08_TRUTH: dict[str, dict[str, Any]] = {
    "T08-atlas": {
        "met": "c6 c9 c10",
        "notes": {
            "c1": "Axes are not defined.",
            "c4": "Calls them an 'antiviral gene program', never interferon-stimulated genes.",
            "c9": "Up and down counts are swapped (178 up, 287 down).",
            "c10": "'Significantly changed … (p < 0.05)' ignores adjustment and fold change.",
            "c5": "Claims protection against viral infection, which was not tested.",
        },
    },
    "T08-borealis": {
        "met": "c1 c2 c4 c5 c6 c8 c11",
        "notes": {
            "c3": "No mention of four donors, the paired design or DESeq2.",
            "c11": "Calls IFN-λ1 a type I interferon.",
            "c7": "No fold change or p-value for any gene.",
        },
    },
    "T08-cobalt": {
        "met": "c1 c2 c3 c4 c5 c6 c7 c8",
        "notes": {
            "c7": "IFIT1 log2FC 7.9 and padj 1.4e-58 match the table.",
        },
    },
}

# --------------------------------------------------------------------------------------
# T09 — scientific reasoning, cell biology (no artifact, short rubric)
# --------------------------------------------------------------------------------------

T09: dict[str, Any] = {
    "id": "T09",
    "workflow": "scientific reasoning",
    "domain": "cell biology",
    "answer_format": "free text",
    "tags": ["RNAi", "off-target effects", "cell cycle"],
    "metadata": {"author": AUTHOR, "difficulty": "graduate", "estimated_minutes": 10},
    "artifacts": [],
    "prompt": md(
        """
## Two siRNAs, two phenotypes

In U2OS cells we knocked down the kinase KX (an unpublished target) with two
independent siRNAs. At 72 h both reduce KX protein by about 80% on western blots.
Propidium-iodide cell-cycle profiles (two biological replicates, consistent):

| condition | G1 | S | G2/M |
|---|---|---|---|
| non-targeting siRNA | 55% | 27% | 18% |
| si-KX-1 | 38% | 24% | 38% |
| si-KX-2 | 54% | 26% | 20% |

A student wants to write "KX is required for mitotic progression". What do you conclude,
and what would you do next?
"""
    ),
    "rubric": [
        crit(
            "c1",
            10,
            "Recognises that two siRNAs with equal knockdown but discordant phenotypes point "
            "to an off-target (e.g. seed-mediated) effect of si-KX-1 rather than loss of KX.",
            REAS,
            "skill:critical-appraisal",
        ),
        crit(
            "c2",
            6,
            "Proposes a rescue with an siRNA-resistant KX cDNA (ideally with a kinase-dead "
            "control).",
            COMP,
            "skill:experimental-design",
        ),
        crit(
            "c3",
            4,
            "Proposes more independent perturbations (additional siRNAs, CRISPR knockout, "
            "degron or inhibitor).",
            COMP,
            "skill:experimental-design",
        ),
        crit(
            "c4",
            3,
            "Notes that the ~20% residual protein might suffice, so the absence of a "
            "phenotype with si-KX-2 does not exclude a role for KX.",
            REAS,
            ambiguous=True,
        ),
        crit(
            "c5",
            3,
            "Points out that PI staining cannot separate G2 from M and suggests a mitotic "
            "marker (phospho-histone H3), EdU pulse or live imaging.",
            COMP,
            "skill:domain-knowledge",
        ),
        crit(
            "c6",
            2,
            "Suggests a seed-match or transcriptome analysis of si-KX-1 off-targets.",
            COMP,
            "skill:domain-knowledge",
            ambiguous=True,
        ),
        crit(
            "c7",
            -10,
            "Accepts that KX is required for mitotic progression on the basis of si-KX-1.",
            ACC,
            "skill:critical-appraisal",
        ),
    ],
}

T09_RESPONSES: list[dict[str, Any]] = [
    {
        "id": "T09-atlas",
        "task_id": "T09",
        "model": MODELS["atlas"],
        "text": md(
            """
si-KX-1 doubles the G2/M fraction (18% → 38%), a strong and reproducible phenotype, so
the conclusion that KX is required for mitotic progression is supported. si-KX-2 probably
did not work as well in the cell-cycle experiment, even though the western blot looked
similar.

Next steps: use si-KX-1 for follow-up experiments, for example time-lapse imaging to see
where in mitosis the cells arrest, and phospho-histone H3 staining.
"""
        ),
    },
    {
        "id": "T09-borealis",
        "task_id": "T09",
        "model": MODELS["borealis"],
        "text": md(
            """
The claim is not yet justified. Both siRNAs reduce KX to a similar degree, but only
si-KX-1 causes G2/M accumulation. The most likely explanation is an off-target effect of
si-KX-1.

Next steps:

1. Test a third and fourth siRNA against KX, or a CRISPR knockout.
2. Rescue experiment: express an siRNA-resistant KX cDNA in si-KX-1-treated cells; if the
   G2/M arrest persists, it is off-target.
3. Check the si-KX-1 seed region for matches in the 3′ UTRs of known cell-cycle genes.
"""
        ),
    },
    {
        "id": "T09-cobalt",
        "task_id": "T09",
        "model": MODELS["cobalt"],
        "text": md(
            """
**Conclusion:** the data do not support "KX is required for mitotic progression". Two
siRNAs that deplete KX equally (~80%) give different phenotypes, so the si-KX-1 phenotype
is most likely an off-target effect, typically through its seed region acting like a
microRNA. A caveat runs the other way: 20% residual KX may be enough for function, so
si-KX-2 does not prove KX is dispensable either.

**Next steps**

1. **Rescue:** siRNA-resistant KX cDNA (silent mutations in the si-KX-1 site), wild type
   and kinase-dead. Only an arrest reversed by wild-type KX counts as on-target.
2. **Independent tools:** two more siRNAs, a CRISPR knockout or an inducible degron for
   near-complete loss, and a selective inhibitor if one exists.
3. **Better read-out:** PI cannot separate G2 from M. Use phospho-histone H3 (Ser10) to
   score mitotic cells, an EdU pulse for S-phase entry, and live imaging to time mitosis.
4. **Off-target check:** RNA-seq after si-KX-1 vs si-KX-2, looking for down-regulated
   transcripts with seed matches in their 3′ UTRs.
"""
        ),
    },
]

T09_TRUTH: dict[str, dict[str, Any]] = {
    "T09-atlas": {
        "met": "c7",
        "notes": {
            "c7": "Says the conclusion is supported on the basis of si-KX-1.",
            "c5": "Suggests phospho-H3 but never says that PI cannot separate G2 from M.",
            "c1": "Attributes the discordance to si-KX-2 'not working'.",
        },
    },
    "T09-borealis": {
        "met": "c1 c2 c3 c6",
        "notes": {
            "c4": "Does not consider that residual KX may suffice.",
            "c5": "No comment on the limits of PI staining.",
        },
    },
    "T09-cobalt": {
        "met": "c1 c2 c3 c4 c5 c6",
        "notes": {},
    },
}

# --------------------------------------------------------------------------------------
# T10 — validation and operations, molecular biology (data in the prompt)
# --------------------------------------------------------------------------------------

T10: dict[str, Any] = {
    "id": "T10",
    "workflow": "validation and operations",
    "domain": "molecular biology",
    "answer_format": "free text",
    "tags": ["qPCR", "assay validation", "limit of detection"],
    "metadata": {"author": AUTHOR, "difficulty": "senior technician", "estimated_minutes": 10},
    "artifacts": [],
    "prompt": md(
        """
## Can we sign off this qPCR assay?

Our core wants to sign off a SYBR Green qPCR assay that quantifies viral genome copies in
organoid culture supernatants, with a claimed lower limit of **10 copies per reaction**.
Validation run (plasmid standard, triplicates):

| copies/reaction | Ct 1 | Ct 2 | Ct 3 | mean Ct |
|---|---|---|---|---|
| 10⁶ | 15.0 | 15.1 | 15.2 | 15.1 |
| 10⁵ | 18.8 | 18.9 | 19.0 | 18.9 |
| 10⁴ | 22.7 | 22.9 | 22.8 | 22.8 |
| 10³ | 26.6 | 26.8 | 26.7 | 26.7 |
| 10² | 30.2 | 30.9 | 30.4 | 30.5 |
| 10¹ | 33.2 | 34.6 | undetermined | 33.9 |
| no-template control | 35.2 | undetermined | 35.4 | – |

Linear fit of mean Ct on log10(copies): slope −3.79, intercept 37.9, R² = 0.9995.
Melt curves: a single peak at 84.5 °C for all standards; the two positive NTC wells peak
at 76.0 °C.

Would you sign the assay off as validated down to 10 copies? Answer briefly and justify.
"""
    ),
    "rubric": [
        crit(
            "c1",
            8,
            "Computes the efficiency from the slope (−3.79 → about 84%) and notes that it is "
            "below the usual 90–110% acceptance range.",
            ACC,
            "skill:assay-validation",
        ),
        crit(
            "c2",
            6,
            "Identifies the NTC signal as primer-dimer (76.0 °C vs 84.5 °C melt peak) and "
            "notes that at Ct ~35 it is only 1–2 cycles behind the 10-copy standard.",
            ACC,
            "skill:assay-validation",
        ),
        crit(
            "c3",
            5,
            "Concludes that 10 copies is not reliably detected or quantified (one replicate "
            "undetermined, 1.4-cycle spread) and recommends a formal LOD/LOQ study with many "
            "replicates.",
            REAS,
            "skill:assay-validation",
        ),
        crit(
            "c4",
            4,
            "Recommends primer redesign or optimisation (concentration, annealing "
            "temperature) or a probe-based assay.",
            COMP,
            "skill:assay-validation",
        ),
        crit(
            "c5",
            3,
            "Mentions other validation items (specificity, inhibition or spike-in controls "
            "in the sample matrix, inter-run precision, MIQE reporting).",
            COMP,
            "skill:assay-validation",
            ambiguous=True,
        ),
        crit(
            "c6",
            -8,
            "Signs the assay off as validated down to 10 copies.",
            ACC,
            SAFE,
        ),
    ],
}

T10_RESPONSES: list[dict[str, Any]] = [
    {
        "id": "T10-atlas",
        "task_id": "T10",
        "model": MODELS["atlas"],
        "text": md(
            """
Yes. The standard curve is excellent (R² = 0.9995) and covers six orders of magnitude,
and the 10-copy standard was detected in two of three wells. The NTC signal appears only
at Ct > 35, which is late enough to be ignored. The assay can be signed off as validated
from 10 to 10⁶ copies per reaction.
"""
        ),
    },
    {
        "id": "T10-borealis",
        "task_id": "T10",
        "model": MODELS["borealis"],
        "text": md(
            """
Not yet.

- **Efficiency:** a slope of −3.79 corresponds to about 92% efficiency, which is
  acceptable.
- **NTC:** two NTC wells amplified with a melt peak at 76 °C, i.e. primer-dimer. At
  Ct ~35 this is close to the 10-copy standard (Ct ~34), so low-copy results could be
  false positives.
- **Lower limit:** one of three 10-copy replicates failed and the other two differ by
  1.4 cycles. Run an LOD study (e.g. 20 replicates at 5–50 copies) and set the limit
  where ≥95% of replicates are detected.
- Optimise the primer concentration or annealing temperature to remove the dimer.
"""
        ),
    },
    {
        "id": "T10-cobalt",
        "task_id": "T10",
        "model": MODELS["cobalt"],
        "text": md(
            """
**No, not down to 10 copies.**

1. **Efficiency:** E = 10^(−1/slope) − 1 = 10^(1/3.79) − 1 ≈ 0.84, i.e. **84%**, below
   the usual 90–110% acceptance window despite the excellent R².
2. **NTC:** two of three NTCs amplify at Ct 35.2–35.4 with a 76.0 °C melt peak, versus
   84.5 °C for the product: primer-dimer. That is only ~1.5 cycles after the 10-copy
   standard (mean Ct 33.9), so at that level specific signal and dimer cannot be told
   apart by Ct.
3. **Lower limit:** at 10 copies one replicate is undetermined and the other two differ by
   1.4 cycles. Stochastic sampling alone makes 10 copies unreliable; define LOD and LOQ
   with ≥20 replicates per level (LOD = 95% detection, LOQ by a CV criterion).
4. **Fixes:** redesign or re-optimise the primers (concentration, annealing temperature)
   or move to a hydrolysis probe, which does not detect primer-dimer.
5. **Still missing for sign-off:** inter-run precision, specificity against related
   viruses and host DNA, and an inhibition/spike-in control in supernatant matrix,
   reported per MIQE.

A realistic claim today would be reliable quantification from ~10² copies per reaction,
pending the LOD study.
"""
        ),
    },
]

T10_TRUTH: dict[str, dict[str, Any]] = {
    "T10-atlas": {
        "met": "c6",
        "notes": {
            "c6": "Signs off 10 to 10⁶ copies.",
            "c2": "Dismisses the NTC signal without looking at the melt curve.",
        },
    },
    "T10-borealis": {
        "met": "c2 c3 c4",
        "notes": {
            "c1": "Slope −3.79 gives ~84%, not 92%, and 84% is not acceptable.",
        },
    },
    "T10-cobalt": {
        "met": "c1 c2 c3 c4 c5",
        "notes": {},
    },
}

# --------------------------------------------------------------------------------------
# Assembly
# --------------------------------------------------------------------------------------

TASKS: list[dict[str, Any]] = [T01, T02, T03, T04, T05, T06, T07, T08, T09, T10]

RESPONSES: list[dict[str, Any]] = [
    *T01_RESPONSES,
    *T02_RESPONSES,
    *T03_RESPONSES,
    *T04_RESPONSES,
    *T05_RESPONSES,
    *T06_RESPONSES,
    *T07_RESPONSES,
    *T08_RESPONSES,
    *T09_RESPONSES,
    *T10_RESPONSES,
]

TRUTH: dict[str, dict[str, Any]] = {
    **T01_TRUTH,
    **T02_TRUTH,
    **T03_TRUTH,
    **T04_TRUTH,
    **T05_TRUTH,
    **T06_TRUTH,
    **T07_TRUTH,
    **T08_TRUTH,
    **T09_TRUTH,
    **T10_TRUTH,
}

#: Judgments on which a human grader flagged the criterion as unclear.
UNCLEAR: list[dict[str, str]] = [
    {
        "response_id": "T05-borealis",
        "criterion_id": "c1",
        "grader": "expert-ben",
        "note": "Does 'at most one missing or extra residue' mean one error in total or one "
        "of each? This response fails either way, but the wording should be fixed.",
    },
    {
        "response_id": "T08-cobalt",
        "criterion_id": "c6",
        "grader": "expert-chloe",
        "note": "Do the bold figure title and the section labels count towards the word "
        "limits? It does not matter here (both parts are well under), but it should be said.",
    },
]

# --------------------------------------------------------------------------------------
# Facts shared with build_demo.py (checked there against the generated artifacts)
# --------------------------------------------------------------------------------------

#: Protein residues with a heavy atom within 4.0 Å of the T05 ligand.
T05_CONTACTS = [
    ("A", 47, "ALA"),
    ("A", 50, "PHE"),
    ("A", 51, "LEU"),
    ("B", 3, "THR"),
    ("B", 4, "LEU"),
    ("B", 5, "VAL"),
]

#: Clinical isolates (all, P. aeruginosa) tested and released on runs R12–R20 (T06).
T06_RELEASED = (69, 14)

#: Named genes of the T08 volcano plot: (gene, log2FC, p-value, baseMean); top 15 by padj.
T08_NAMED_GENES = [
    ("IFIT1", 7.9, 1e-62, 2150.0),
    ("MX1", 6.1, 3e-58, 3400.0),
    ("ISG15", 5.4, 2e-55, 5200.0),
    ("IFI44L", 6.8, 5e-51, 880.0),
    ("RSAD2", 8.3, 1e-48, 640.0),
    ("OAS1", 4.6, 4e-46, 1900.0),
    ("IFIT3", 5.9, 2e-44, 2600.0),
    ("CXCL10", 5.6, 8e-42, 310.0),
    ("OASL", 5.1, 3e-40, 720.0),
    ("MX2", 5.7, 1e-38, 1450.0),
    ("IFI6", 4.2, 6e-37, 4100.0),
    ("HERC5", 4.4, 2e-36, 530.0),
    ("USP18", 3.9, 5e-35, 410.0),
    ("IFIT2", 4.8, 1e-34, 980.0),
    ("XAF1", 3.1, 4e-34, 760.0),
]
T08_LABELLED = ["IFIT1", "MX1", "ISG15", "IFI44L", "RSAD2", "OAS1", "CXCL10"]
T08_TESTED = 14000
T08_COUNTS = {"tested": 14000, "up": 287, "down": 178}
