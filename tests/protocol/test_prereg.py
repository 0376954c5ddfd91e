"""The pre-registration document and its defaults."""

from __future__ import annotations

from pathlib import Path

from pytest_mtpsweep.interface import registry
from pytest_mtpsweep.kindapi import KindRun
from pytest_mtpsweep.ladder import Ladder, run_plan
from pytest_mtpsweep.protocol import preregistration as preregistration
from pytest_mtpsweep.protocol.loader import load_ladder
from pytest_mtpsweep.wishes.request import RunRequest

LADDERS = Path(__file__).resolve().parents[2] / "experiments" / "ladders"


def kind_of(lad: Ladder) -> KindRun:
    """The ladder's kind (decode here): it fills in its multiplicity and writes its section."""
    return registry.prepare(lad, RunRequest(ladder=lad.name, search_dirs=(), cwd=LADDERS,
                                            invocation=()))  # fmt: skip


def test_defaults_fill_what_the_ladder_leaves_out() -> None:
    lad = load_ladder(LADDERS / "drafters-cpu.toml")
    plan = run_plan([t.key for t in lad.treatments], lad.cycles)
    reg = preregistration.effective(lad, plan)
    assert reg.multiplicity == ""  # the protocol states none; the kind does
    reg = kind_of(lad).registration(reg)
    assert reg.primary_contrasts == ("ngram-simple vs none", "ngram-mod vs none")
    assert reg.never_drop == "none:c4"  # the final baseline: without it cycle 4 has no pairs
    assert (
        reg.drop_order[:2] == ("ngram-simple:c4", "ngram-mod:c4")
        and "none:c4" not in reg.drop_order
    )
    assert "2 treatment(s) x 2 subsets x 2 endpoints = 8 intervals" in reg.multiplicity


def test_render_holds_question_invocation_plan_and_is_hashed() -> None:
    lad = load_ladder(LADDERS / "lowerarm-cpu.toml")
    plan = run_plan([t.key for t in lad.treatments], lad.cycles)
    text = preregistration.render(
        lad, plan, plan[:3], ["pytest", "--ladder=lowerarm-cpu"], "R1", "T0"
    )
    assert lad.question in text and "    pytest --ladder=lowerarm-cpu" in text
    assert "| 4 | gate_0.25 | 2 | no |" in text and "| 1 | none | 1 | yes |" in text
    assert "[treatment]" in text  # the curtailment sentence, verbatim with its placeholder
    assert preregistration.digest(text) == preregistration.digest(text)
    assert preregistration.digest(text) != preregistration.digest(text + " ")


SEED_SENTENCE = (
    "This run was curtailed: [treatment] holds only its cycle-1 position, so its contrast is not "
    "counterbalanced and monotone evening drift loads onto it in an unknown direction; that cell "
    "is reported as order-confounded and no conclusion rests on it."
)


def test_the_lowerarm_ladders_carry_the_users_preregistration_verbatim() -> None:
    for name in ("lowerarm", "lowerarm-cpu"):
        lad = load_ladder(LADDERS / f"{name}.toml")
        plan = run_plan(lad.treatment_keys, lad.cycles)
        kind = kind_of(lad)
        reg = kind.registration(preregistration.effective(lad, plan))
        assert reg.drop_order == ("gate_0.25:c2", "gate_0.10:c2")
        assert reg.never_drop == "none:c2"
        assert reg.curtailment_sentence == SEED_SENTENCE
        assert reg.primary_contrasts == ("gate_0.10 vs none", "gate_0.25 vs none")
        assert reg.secondary_contrasts == ("gate_0.25 vs gate_0.10",)
        assert lad.preflight.self_test is True  # "mtpsweep suite: N tests / OK"
        text = preregistration.render(
            lad, plan, plan, ["pytest"], "R1", "T0", kind.prereg_lines(reg)
        )
        assert f'"{SEED_SENTENCE}"' in text
        assert "Secondary contrasts (exploratory): gate_0.25 vs gate_0.10." in text
        assert "Drop order: gate_0.25:c2, gate_0.10:c2." in text
    lowerarm = load_ladder(LADDERS / "lowerarm.toml")
    assert lowerarm.prereg.scope.startswith(
        "This design bounds where the gain starts; it does not locate a knee"
    )
    assert "knee" not in lowerarm.question  # said once, as the scope
    plan = run_plan(lowerarm.treatment_keys, lowerarm.cycles)
    text = preregistration.render(lowerarm, plan, plan, ["pytest"], "R1", "T0")
    assert f"Scope: {lowerarm.prereg.scope}" in text
